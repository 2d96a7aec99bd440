"""The result format: one record per case and repetition, and a run's manifest, typed.

`Record`, `Observed`, `Provenance` and `Manifest` are the only readers and writers of
records.jsonl lines and manifest.json (results.py stores them durably). `from_json` reads every
format written so far (see tests/data/runs/README.md): fields a version did not write get their
defaults (an old record without `flags` gets them from its `observed` part), fields this version
does not know are kept as they were (`extra`), and a record of this version round-trips exactly
(`Record.from_json(d).to_json() == d`). Facts derived from a record (the number of
processes, the value a hint had in effect, whether the striping was applied, the flags) are
methods here and nowhere else.
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass, field, fields

from ..experiment.order import ROLE as DRIFT_REFERENCE     # a drift reference job's role
from ..layers.registry import observed_keys, owner, registry
from ..parsers import Metric

SCHEMA = 1
# ok: measured; failed: ran (or tried to) and did not give a valid result, with a reason;
# skipped: not run, with a reason; aborted: interrupted (SIGINT/SIGTERM) before it finished.
STATUSES = ("ok", "failed", "skipped", "aborted")
NUM_TASKS = "scale.num_tasks"
# observed.overlapping_jobs: other jobs on a case's nodes while it measured (rfm/witness.py)
OVERLAP = "overlapping_jobs"


# ------------------------------------------------------------------------------- parameters

# The error of a case a strict run failed because it could not run here (an absent benchmark...):
# a failure that never measured, which the run's summary counts apart from the jobs that ran.
NOT_RUN_STRICT = "not run (strict): "


def num_tasks(params: dict) -> int:
    """Processes of a case: nodes x tasks per node (1 each when not set)."""
    return params.get("scale.nodes", 1) * params.get("scale.tasks_per_node", 1)


def param_value(params: dict, key: str):
    """A parameter of a case, `scale.num_tasks` included."""
    if key == NUM_TASKS:
        return num_tasks(params)
    return params.get(key)


# ------------------------------------------------------------------------------------ parts

def _split(data: dict, names) -> tuple[dict, dict]:
    known = {k: data[k] for k in names if k in data}
    if len(known) == len(data):
        return known, {}
    names = _NAME_SETS.get(names) or _NAME_SETS.setdefault(names, frozenset(names))
    return known, {k: v for k, v in data.items() if k not in names}


_NAME_SETS: dict[tuple, frozenset] = {}     # a field-name tuple as a set: one lookup per key


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


@dataclass
class Observed:
    """What the system did with the request: one part per layer of the stack (storage, the
    Lustre layout, the MPI-IO hints in effect, Darshan's view: layers/registry.observed_keys),
    the benchmark's echo; `replayed` when a test stand-in replayed a recording."""

    parts: dict = field(default_factory=dict)
    benchmark: dict | None = None
    replayed: str | None = None
    extra: dict = field(default_factory=dict)

    _OWN = ("benchmark", "replayed")

    @classmethod
    def from_json(cls, data) -> Observed:
        data = _dict(data)
        keys = observed_keys()
        parts = {k: data[k] for k in keys if k in data}
        own, extra = _split({k: v for k, v in data.items() if k not in parts}, cls._OWN)
        return cls(parts, **own, extra=extra)

    def to_json(self) -> dict:
        out = {k: self.parts[k] for k in observed_keys() if self.parts.get(k) is not None}
        out.update({k: getattr(self, k) for k in self._OWN if getattr(self, k) is not None})
        return {**out, **self.extra}

    def get(self, key: str, default=None):
        """A part by its name in the record (what the layers read)."""
        value = self.parts.get(key)
        if value is None:
            value = getattr(self, key) if key in self._OWN else self.extra.get(key)
        return default if value is None else value

    # --- derived facts: the layer that owns a parameter or a part says them
    def effective(self, key: str):
        """The value in effect of a layer's parameter, typed as requested; None when the system
        did not say (or no layer reports one for it)."""
        layer = owner(key)
        return layer.effective(self, key) if layer else None

    def effective_shown(self, key: str):
        """What a table shows beside the request of `key` (layers/base.py)."""
        layer = owner(key)
        return layer.effective_shown(self, key) if layer else None

    def not_applied(self, key: str) -> str | None:
        """Why a layer's parameter was not applied at all (None: it was, or nothing says)."""
        layer = owner(key)
        return layer.not_applied(self, key) if layer else None

    def flags(self) -> list[str]:
        """Every difference between what was requested and what was applied, in words."""
        out = []
        if self.replayed:
            out.append(f"replayed by a test stand-in: not a measurement ({self.replayed})")
        for layer in registry():
            out += layer.flags(self)
        return out + overlap_flags(self.extra.get(OVERLAP))


def _span(start, end) -> str:
    """A job's time on the nodes, in UTC: "15:22:17-15:22:32 UTC", "from 15:22:17 UTC, still running"."""
    def clock(t) -> str:
        if not isinstance(t, (int, float)) or not math.isfinite(t):
            return "?"
        return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%H:%M:%S")

    if isinstance(end, (int, float)):
        return f"{clock(start)}-{clock(end)} UTC"
    return f"from {clock(start)} UTC, still running"


def overlap_flags(witness) -> list[str]:
    """The row's flag of the other jobs on a case's nodes while it measured, or of a check that
    could not be made: never read as "nothing overlapped"."""
    if not isinstance(witness, dict):
        return []
    if not witness.get("checked"):
        return [f"not checked for other jobs on its nodes: {witness.get('reason') or 'unknown why'}"]
    jobs = [j for j in witness.get("jobs") or [] if isinstance(j, dict)]
    if not jobs:
        return []
    return ["other jobs shared its nodes while it measured: " + "; ".join(
        f"job {j.get('job')} ({j.get('user')}, {j.get('name')}, on {j.get('nodes')}, "
        f"{_span(j.get('start'), j.get('end'))})" for j in jobs)]


@dataclass
class Provenance:
    """Where a record came from: the code (git), the system and job, the binary and stack, the
    exact command and environment, and the timing of the benchmark and of iolab's own work."""

    origin: str = "reframe"            # reframe | imported
    system: str | None = None
    extra: dict = field(default_factory=dict)    # git, reframe, environ, jobid, binary, stack...

    @classmethod
    def from_json(cls, data) -> Provenance:
        data = _dict(data)
        known, extra = _split(data, ("origin", "system"))
        return cls(known.get("origin", "reframe"), known.get("system"), extra)

    def to_json(self) -> dict:
        out = {"origin": self.origin}
        if self.system is not None:
            out["system"] = self.system
        return {**out, **self.extra}

    def get(self, key: str, default=None):
        return self.extra.get(key, default)

    @property
    def binary(self) -> dict:
        return _dict(self.extra.get("binary"))

    @property
    def binary_version(self) -> str | None:
        return self.binary.get("version")

    @property
    def binary_sha256(self) -> str | None:
        return self.binary.get("sha256")

    @property
    def stack(self) -> dict:
        return _dict(self.extra.get("stack"))

    @property
    def mode(self) -> str:
        """job: the case was a Slurm job (or local process) of its own; allocation: a step of
        the allocation `allocation` names. Records before allocation mode were jobs."""
        return self.extra.get("mode") or "job"

    @property
    def allocation(self) -> str | None:
        return self.extra.get("allocation")

    @property
    def nodelist(self) -> list[str]:
        nodes = self.extra.get("nodelist")
        return list(nodes) if isinstance(nodes, list) else []


_RECORD_FIELDS = ("schema", "experiment", "experiment_sha256", "profile", "run_id", "case_id",
                  "part", "benchmark", "repetition", "params", "varied", "observed", "flags",
                  "metrics", "status", "error", "raw", "recorded", "provenance")


@dataclass
class Record:
    """One case and repetition: what was asked (params), what happened (status, error, metrics),
    what was applied (observed, flags) and where it came from (provenance)."""

    experiment: str
    case_id: str
    benchmark: str
    status: str
    part: str = "main"
    repetition: int | None = None
    params: dict = field(default_factory=dict)
    varied: list[str] = field(default_factory=list)
    metrics: list[Metric] = field(default_factory=list)
    error: str | None = None
    observed: Observed = field(default_factory=Observed)
    flags: list[str] | None = None     # None: computed from observed (records that have none)
    provenance: Provenance = field(default_factory=Provenance)
    run_id: str = ""
    experiment_sha256: str | None = None
    profile: str | None = None
    raw: dict = field(default_factory=dict)
    recorded: str | None = None
    schema: int | None = SCHEMA
    extra: dict = field(default_factory=dict)    # fields of other versions, kept as written

    def __post_init__(self):
        if self.flags is None:
            self.flags = self.observed.flags()

    # --- the format
    @classmethod
    def from_json(cls, data: dict) -> Record:
        """A record as any version wrote it (a dict from one records.jsonl line)."""
        known, extra = _split(_dict(data), _RECORD_FIELDS)
        observed = Observed.from_json(known.get("observed"))
        flags = known.get("flags")
        metrics = known.get("metrics")
        return cls(
            experiment=str(known.get("experiment", "")), case_id=str(known.get("case_id", "")),
            benchmark=str(known.get("benchmark", "")),
            status=known["status"] if isinstance(known.get("status"), str) else "unknown",
            part=known.get("part") or "main", repetition=known.get("repetition"),
            params=_dict(known.get("params")), varied=list(known.get("varied") or []),
            metrics=[_metric(m) for m in metrics] if isinstance(metrics, list) else [],
            error=known.get("error"), observed=observed,
            # older records (no flags): what their observed part says was not applied
            flags=list(flags) if isinstance(flags, list) else observed.flags(),
            provenance=Provenance.from_json(known.get("provenance")),
            run_id=str(known.get("run_id") or ""), experiment_sha256=known.get("experiment_sha256"),
            profile=known.get("profile"), raw=_dict(known.get("raw")), recorded=known.get("recorded"),
            schema=known.get("schema"),
            extra={**extra, **{k: known[k] for k in ("flags", "metrics") if k in known
                               and not isinstance(known[k], list)}},
        )

    def to_json(self) -> dict:
        out = {"schema": self.schema, "experiment": self.experiment,
               "experiment_sha256": self.experiment_sha256, "profile": self.profile,
               "run_id": self.run_id, "case_id": self.case_id, "part": self.part,
               "benchmark": self.benchmark, "repetition": self.repetition, "params": self.params,
               "varied": self.varied, "observed": self.observed.to_json(), "flags": self.flags,
               "metrics": [m.as_dict() for m in self.metrics], "status": self.status,
               "error": self.error, "raw": self.raw, "recorded": self.recorded,
               "provenance": self.provenance.to_json()}
        if self.schema is None:
            del out["schema"]
        return {**out, **self.extra}

    # --- derived facts
    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def num_tasks(self) -> int:
        return num_tasks(self.params)

    def param(self, key: str):
        return param_value(self.params, key)

    @property
    def nodes(self) -> int:
        return self.params.get("scale.nodes", 1)

    def metric(self, name: str) -> Metric | None:
        return next((m for m in self.metrics if m.name == name), None)

    def value(self, name: str) -> float | None:
        m = self.metric(name)
        return None if m is None else m.value

    @property
    def drift_reference(self) -> bool:
        """A drift reference's extra job (experiment/order.py): kept out of its case's figures."""
        return self.provenance.extra.get("role") == DRIFT_REFERENCE

    @property
    def started(self) -> float | None:
        """When the job's benchmark started (unix seconds): its recorded timing, else the time
        the record was written (to the second); None when neither was recorded."""
        timing = self.provenance.get("timing")
        start = timing.get("benchmark_start") if isinstance(timing, dict) else None
        if isinstance(start, (int, float)) and math.isfinite(start):
            return float(start)
        if isinstance(self.recorded, str):
            try:
                return datetime.datetime.fromisoformat(self.recorded.replace("Z", "+00:00")).timestamp()
            except ValueError:
                return None
        return None

    @property
    def job(self) -> tuple:
        """(part, case_id, repetition): one planned job."""
        return (self.part, self.case_id, self.repetition)

    @property
    def measured(self) -> bool:
        """Whether the benchmark gave values (a case its verify policy failed did too)."""
        return self.ok or bool(self.metrics)

    def notes(self) -> list[str]:
        """Requested-vs-applied differences, for table footnotes. A job that measured nothing
        has no setting applied or not: what its observed part would flag is left out (records
        of a case that failed before its job started said 'striping not applied: unknown')."""
        flags = list(self.flags or [])
        if self.measured or not flags:
            return flags
        settings = set(self.observed.flags())
        return [f for f in flags if f not in settings]


def _metric(data) -> Metric:
    data = _dict(data)
    value = data.get("value")
    return Metric(str(data.get("name", "")),
                  float(value) if isinstance(value, (int, float)) and not isinstance(value, bool)
                  else math.nan,
                  str(data.get("unit") or ""), str(data.get("source") or ""))


# --------------------------------------------------------------------------------- manifest

_MANIFEST_FIELDS = ("schema", "experiment", "experiment_sha256", "experiment_yaml", "profile",
                    "origin", "created", "created_unix", "iolab", "host", "system", "shim", "git",
                    "dirty", "label", "planned", "finished")


@dataclass
class Manifest:
    """A run's manifest: the experiment as run, where and by which code, the plan, the end."""

    experiment: str = ""
    origin: str = "reframe"
    experiment_yaml: str | None = None
    experiment_sha256: str | None = None
    profile: str | None = None
    system: str | None = None
    created: str | None = None
    created_unix: float | None = None
    iolab: str | None = None
    git: str | None = None
    dirty: bool | None = None
    host: dict = field(default_factory=dict)
    label: str | None = None
    shim: str | None = None
    planned: list | None = None
    finished: dict | None = None
    schema: int | None = None
    extra: dict = field(default_factory=dict)    # spack_lock, system_extras, imported_files...

    @classmethod
    def from_json(cls, data) -> Manifest:
        known, extra = _split(_dict(data), _MANIFEST_FIELDS)
        kw = {f.name: known[f.name] for f in fields(cls) if f.name in known}
        for name in ("host",):
            kw[name] = _dict(kw.get(name))
        if not isinstance(kw.get("planned"), (list, type(None))):
            extra["planned"] = kw.pop("planned")
        if not isinstance(kw.get("finished"), (dict, type(None))):
            extra["finished"] = kw.pop("finished")
        if "origin" not in kw or not isinstance(kw["origin"], str):
            kw["origin"] = "reframe"
        return cls(**kw, extra=extra)

    def to_json(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"
               and (getattr(self, f.name) not in (None, {}) or f.name == "system")}
        return {**out, **self.extra}

    def get(self, key: str, default=None):
        return self.extra.get(key, default)

    def plan_later(self, read) -> None:
        """`planned` is read by read(self) (a campaign's plan: the bulk of its manifest) when
        first asked for, never before; it may set extra["planned"] like from_json does."""
        self.__dict__["_plan_later"] = read

    @property
    def system_extras(self) -> dict:
        return _dict(self.extra.get("system_extras"))


def _planned(self: Manifest) -> list | None:
    read = self.__dict__.get("_plan_later")
    if read is not None:
        value = read(self)          # an error leaves it to be read again, never None
        del self.__dict__["_plan_later"]
        self.__dict__["_planned"] = value
    return self.__dict__.get("_planned")


def _set_planned(self: Manifest, value: list | None) -> None:
    self.__dict__.pop("_plan_later", None)
    self.__dict__["_planned"] = value


# The plan as a property (the dataclass's field keeps its place in __init__, fields() and ==):
# a manifest read without its plan reads it on first use (Manifest.plan_later).
Manifest.planned = property(_planned, _set_planned)
