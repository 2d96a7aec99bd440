"""Records of one ReFrame process: one results run per experiment, one record per case and
repetition, built from the case's plan and its stage directory.
"""

from __future__ import annotations

import collections
import os
import shutil
import time
from pathlib import Path

import reframe
from reframe.core.logging import getlogger

from . import site
from ..errors import IolabError
from ..experiment.model import Experiment
from ..experiment.order import Order
from ..results.record import Observed, Provenance, Record
from ..results.state import progress_text
from .shims import shim_path
from ..results.provenance import base_manifest, git_state, sha256_file, utcnow
from ..results import recordcache
from ..results.runfiles import new_run_id, results_root
from ..results.rundir import RunDir
from ..software import lock_specs, spack_packages
from ..layers.registry import registry
from . import allocation, continuation, internals, jobscript, observe


class _Run:
    def __init__(self, exp: Experiment):
        self.exp = exp
        self.run_id = new_run_id(exp.sha256)
        self.dir: RunDir | None = None
        self.git = git_state(exp.root, _used_files(exp))
        self.pending: dict[tuple[str, int], int] = {}   # (write case, repetition) -> reads left
        self.planned: list[dict] = []                   # {part, case_id, repetition, system}
        self.counts: collections.Counter = collections.Counter()   # records written, by status
        self.recorded: set[tuple[str, int, str]] = set()            # (case_id, repetition, system)
        self.skip_reasons: set[str] = set()                         # why its skipped jobs were
        self.unsaved: str | None = None      # why some records are in a fallback file, not records.jsonl
        self.started = time.time()
        self.order: Order | None = None      # the jobs' run order (runorder.py), once asked
        self.digested = 0                    # records the run's digest was last written for

    def run_order(self, test_cls) -> list[tuple[str, str, int]]:
        """Every job of the experiment's test class in this run's order (experiment/order.py):
        the order is decided at the first call, and the manifest records it."""
        if self.order is None:
            self.order = continuation.order(self.exp, test_cls._iolab_repetitions,
                                            test_cls._iolab_references)
        reps = max(self.order.repetitions, test_cls._iolab_repetitions)
        return self.order.jobs(list(test_cls._iolab_cases.values()), test_cls._iolab_producer, reps)

    def store_lock(self, lock: Path) -> None:
        """The Spack environment's spack.lock, once per run, next to the manifest."""
        if self.dir is not None and not (self.dir.path / "spack.lock").exists():
            try:
                (self.dir.path / "spack.lock").write_bytes(lock.read_bytes())
            except OSError as exc:    # the records still carry its sha256
                getlogger().error(f"iolab: could not store spack.lock in run {self.run_id}: {exc}")

    def open(self, system: str, system_extras: dict | None = None) -> RunDir:
        if self.dir is None:
            shim = shim_path(self.exp.root / "reframe" / "generated", self.exp.id)
            extra = {"run_id": self.run_id, "reframe": reframe.VERSION, **self.git,
                     # e.g. same_machine_as: which published studies this system reproduces
                     "system_extras": system_extras or {}}
            if self.planned:
                extra["planned"] = self.planned         # in the order the jobs run
            if self.order is not None:
                extra["order"] = self.order.as_dict()
            extra.update(continuation.manifest_extra(self.exp.id))
            config = _config_file(self.exp.root)
            if config:
                extra["reframe_config"] = config
            manifest = base_manifest(self.exp, origin="reframe", system=system,
                                     shim_text=shim.read_text() if shim.is_file() else None,
                                     extra=extra)
            # held by this process until the session ends (session.py): one writer per run
            self.dir = RunDir.create(results_root(self.exp.root), self.exp.id, self.run_id, manifest,
                                     hold=True)
            _note_run(self.exp.id, self.run_id)
            if self.order is not None:
                getlogger().info(f"iolab: {self.exp.id} run {self.run_id}: {len(self.planned)} jobs, "
                                 f"{self.order.describe()}")
        return self.dir

    def append(self, rec: Record) -> None:
        try:
            self.dir.append(rec)
        except IolabError as exc:
            # The record is in a fallback file beside the run (the message names it and says
            # how to merge it back); the run goes on and its end says it is not complete.
            getlogger().error(f"iolab: {exc}")
            self.unsaved = str(exc)
        self.counts[rec.status] += 1
        if rec.status == "skipped" and rec.error:
            self.skip_reasons.add(rec.error)
        self.recorded.add((rec.case_id, rec.repetition, rec.provenance.system))
        done = sum(self.counts.values())
        try:        # the digest grows with the run (recordcache.grow_run_digest)
            if not self.unsaved and recordcache.grow_run_digest(self.dir.path, done, self.digested):
                self.digested = done
        except (IolabError, OSError, ValueError) as exc:    # readers decode records.jsonl instead
            getlogger().warning(f"iolab: run {self.run_id}: its digest was not written: {exc}")
        getlogger().info(f"iolab: {self.exp.id} run {self.run_id}: "
                         + progress_text(sum(self.counts.values()), len(self.planned) or None,
                                         self.counts, time.time() - self.started))


_RUNS: dict[str, _Run] = {}


def _used_files(exp: Experiment) -> list[Path]:
    """The files a run depends on besides installed code: its YAML, its shim, the system config."""
    files = [exp.path, shim_path(exp.root / "reframe" / "generated", exp.id)]
    try:
        files += [Path(f) for f in internals.config_files() if str(f).endswith(".py")]
    except Exception:  # noqa: BLE001 - outside a ReFrame session
        pass
    return files


def for_experiment(exp: Experiment) -> _Run:
    run = _RUNS.get(exp.id)
    if run is None or run.exp.sha256 != exp.sha256:
        run = _RUNS[exp.id] = _Run(exp)
    return run


def record(test, *, status: str, error: str | None, parsed, stage: Path | None,
           observed: dict | None = None, flags: list[str] | None = None, partition=None) -> Record:
    """partition: for a case that never reached setup (ReFrame sets current_partition there)."""
    exp, case = test._iolab_exp, test._iolab_case
    run = for_experiment(exp)
    partition = test.current_partition or partition
    system = partition.fullname
    rundir = run.open(system, site.of(partition).raw)
    plan = getattr(test, "_iolab_plan", None)
    spec = plan.spec if plan else None

    raw = {}
    if stage is not None and stage.is_dir():
        names = ["rfm_job.sh", "rfm_job.out", "rfm_job.err", *(spec.outputs if spec else []),
                 *(name for layer in registry() for name in layer.raw_files),
                 *sorted(p.name for p in stage.glob("iolab-*.txt"))]
        raw = rundir.store_raw(case.case_id, test.repetition, [stage / n for n in dict.fromkeys(names)],
                               compress={n for layer in registry() for n in layer.compress})
        for problem in raw.get("errors", []):
            getlogger().warning(f"iolab: {case.case_id} rep {test.repetition}: raw output not stored: "
                                f"{problem}")

    job = test.job
    launcher = " ".join(job.launcher.run_command(job).split()) if job is not None and spec else ""
    binary = _binary(stage / jobscript.BINARY_FILE) if stage else {}
    if observed is None:
        observed = {}
        if stage is not None and status != "skipped":
            observed = observe.observed_files(stage, case)
    rec = Record(
        experiment=exp.id, experiment_sha256=exp.sha256, profile=exp.profile, run_id=run.run_id,
        case_id=case.case_id, part=case.part, benchmark=case.benchmark, repetition=test.repetition,
        params=case.params, varied=list(test._iolab_varied[case.part]),
        observed=Observed.from_json(observed), flags=flags,     # None: from observed
        metrics=list(parsed.metrics) if parsed else [], status=status, error=error, raw=raw,
        recorded=utcnow(),
        provenance=Provenance("reframe", system, {
            **run.git,
            "reframe": reframe.VERSION,
            "environ": test.current_environ.name if test.current_environ else None,
            "jobid": str(job.jobid) if job is not None and job.jobid is not None else None,
            # job: a Slurm job (or a local process) of its own; allocation: a step of one
            **allocation.provenance(partition),
            "nodelist": nodelist(stage, job),
            "binary": {"name": spec.executable if spec else None, **binary,
                       "version": parsed.version if parsed else None},
            "stack": _stack(test, run, binary.get("path")),
            "input": plan.input if plan else None,
            # exactly what the job script ran (the executable may carry a preload prefix)
            "command": (" ".join([launcher, test.executable, *map(str, test.executable_opts)]).strip()
                        if spec else None),
            "env": {**_partition_env(test), **(plan.env_values if plan else {})},
            "case_dir": test.iolab_case_dir,
            # the benchmark's own start and end, and iolab's work after it (unix seconds)
            "timing": timing(stage, getattr(test, "_iolab_post_start", None)),
            "stagedir": str(stage) if stage else None,
            # a drift reference's job (experiment/order.py): not one of the case's repetitions
            **({"role": role} if (role := _role(run, case, test.repetition)) else {}),
        }),
    )
    run.append(rec)
    _after_record(test, run, rec)
    return rec


def _role(run: _Run, case, repetition: int) -> str | None:
    return run.order.role(case.part, case.case_id, repetition) if run.order is not None else None


def _after_record(test, run: _Run, rec: Record) -> None:
    """Data shared between a write case and its reads: remove it after the last read, and
    record the reads as skipped when their write failed (ReFrame skips them silently)."""
    case, rep = test._iolab_case, test.repetition
    keep = test.iolab_keep_data()
    readers = test._iolab_consumers.get(case.case_id, [])
    if readers:
        if rec.ok:
            run.pending[(case.case_id, rep)] = len(readers)
        else:
            cont = continuation.current(case.experiment)
            for reader in readers:
                if cont is not None and not cont.wants(test._iolab_cases[reader].part, reader, rep):
                    continue        # a read the chain already has ok: not part of this run
                run.append(_skipped(rec, reader, test._iolab_cases[reader].params,
                                    f"the write case {case.case_id} it reads did not succeed"))
            if not keep and test.iolab_case_dir:
                shutil.rmtree(test.iolab_case_dir, ignore_errors=True)
    source = plan.input if (plan := getattr(test, "_iolab_plan", None)) else None
    if source:
        key = (source["case_id"], source["repetition"])
        run.pending[key] = run.pending.get(key, 1) - 1
        if run.pending[key] <= 0 and not keep:
            shutil.rmtree(source["case_dir"], ignore_errors=True)


def _skipped(rec: Record, case_id: str, params: dict, why: str) -> Record:
    """A case that never ran, with the run-level fields of `rec`."""
    return Record(experiment=rec.experiment, experiment_sha256=rec.experiment_sha256,
                  profile=rec.profile, run_id=rec.run_id, case_id=case_id, part=rec.part,
                  benchmark=rec.benchmark, repetition=rec.repetition, params=params,
                  varied=rec.varied, status="skipped", error=why, flags=[],
                  recorded=rec.recorded, provenance=Provenance("reframe", rec.provenance.system))


def _partition_env(test) -> dict:
    """Variables the shipped system config exports (e.g. Open MPI's run-as-root pair)."""
    env = {}
    for source in (test.current_partition, test.current_environ):
        if source is None:
            continue
        local = getattr(source, "local_env", source)
        env.update(getattr(local, "env_vars", {}) or {})
    return env


def timing(stage: Path | None, post_start: float | None) -> dict:
    lines = (_read(stage / jobscript.TIMES_FILE) or "").split() if stage else []
    stamps = []
    for token in lines[:2]:
        try:
            stamps.append(float(token.replace(",", ".")))   # EPOCHREALTIME follows the locale
        except ValueError:
            stamps.append(None)
    stamps += [None] * (2 - len(stamps))
    return {"benchmark_start": stamps[0], "benchmark_end": stamps[1],
            "postprocess_start": post_start, "recorded": time.time()}


def nodelist(stage: Path | None, job) -> list[str]:
    """The job's nodes as the job itself saw them ($SLURM_JOB_NODELIST, expanded), else what
    ReFrame recorded (which can miss nodes of a short Slurm job)."""
    seen = (_read(stage / jobscript.NODES_FILE) or "") if stage else ""
    if seen:
        return expand_nodelist(seen)
    return list(job.nodelist or []) if job is not None else []


def expand_nodelist(text: str) -> list[str]:
    """A Slurm node list ("node[1-3],x") as its node names."""
    from reframe.utility import nodelist_expand

    try:
        return list(nodelist_expand(text))
    except Exception:  # noqa: BLE001 - an unexpected form: keep it as written
        return [text]


def _note_run(exp_id: str, run_id: str) -> None:
    """IOLAB_RUN_ID_FILE: a line 'EXPERIMENT RUN' for each run this session creates, so that
    scripts/run shows the table of its own run, not the latest of another started at the same
    second."""
    where = os.environ.get("IOLAB_RUN_ID_FILE")
    if where:
        try:
            with open(where, "a") as f:
                f.write(f"{exp_id} {run_id}\n")
        except OSError as exc:
            getlogger().warning(f"iolab: IOLAB_RUN_ID_FILE={where}: {exc}")


def _binary(path: Path) -> dict:
    """iolab-binary.txt: `command -v` output, then `sha256sum` of that file."""
    text = _read(path) or ""
    lines = text.splitlines()
    out = {"path": lines[0] if lines else None, "sha256": None}
    if len(lines) > 1 and lines[1].split():
        out["sha256"] = lines[1].split()[0]
    return out


def _stack(test, run: _Run, binary_path: str | None) -> dict | None:
    stack = test._iolab_plan.stack if getattr(test, "_iolab_plan", None) else None
    if stack is None:
        return None
    out = stack.describe(binary_path)
    fixture = getattr(test, "iolab_stack", None)
    if stack.provider == "spack" and fixture is not None:
        lock = Path(fixture.lock_path)
        if lock.is_file():
            out["spack_env"] = fixture.env_path
            out["spack_lock_sha256"] = sha256_file(lock)
            run.store_lock(lock)
        # the versions Spack installed: the benchmarks' and Darshan's, whatever they print
        installed = fixture.installed()
        out["versions"] = {name: installed[name]["version"] for name in
                           dict.fromkeys(spack_packages().values()) if name in installed}
        out["hashes"] = {name: installed[name]["hash"] for name in out["versions"]}
    elif stack.built_env:
        lock = Path(stack.built_env) / "spack.lock"
        if lock.is_file():
            out["spack_lock_sha256"] = sha256_file(lock)
            run.store_lock(lock)
            installed = lock_specs(lock)
            out["versions"] = {name: installed[name]["version"] for name in
                               dict.fromkeys(spack_packages().values()) if name in installed}
            out["hashes"] = {name: installed[name]["hash"] for name in out["versions"]}
    return out


def _config_file(root: Path) -> str | None:
    """The ReFrame configuration file this run uses, relative to the project (for resume)."""
    try:
        sources = [s for s in internals.config_files() if s != "<builtin>"]
    except Exception:  # noqa: BLE001 - outside a session, or another ReFrame
        return None
    for source in reversed(sources):
        try:
            return str(Path(source).resolve().relative_to(root.resolve()))
        except ValueError:
            continue
    return None


def _read(path: Path) -> str | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return text or None



# --- the session around ReFrame's run: planned jobs first, a record for each at the end ---
