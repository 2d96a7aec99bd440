"""Per-process state of a ReFrame session: one results run per experiment, created lazily."""

from __future__ import annotations

import shutil
from pathlib import Path

import reframe

from ..load import Experiment
from . import darshan_files
from ..lustre import observed as lustre_observed
from ..lustre import requested as lustre_requested
from ..render import shim_path
from ..results import (RECORD_SCHEMA, RunDir, base_manifest, git_state, new_run_id, results_root,
                       sha256_file, utcnow)


class _Run:
    def __init__(self, exp: Experiment):
        self.exp = exp
        self.run_id = new_run_id(exp.sha256)
        self.dir: RunDir | None = None
        self.git = git_state(exp.root)
        self.pending: dict[tuple[str, int], int] = {}   # (write case, repetition) -> reads left

    def store_lock(self, lock: Path) -> None:
        """The Spack environment's spack.lock, once per run, next to the manifest."""
        if self.dir is not None and not (self.dir.path / "spack.lock").exists():
            (self.dir.path / "spack.lock").write_bytes(lock.read_bytes())

    def open(self, system: str, system_extras: dict | None = None) -> RunDir:
        if self.dir is None:
            shim = shim_path(self.exp.root / "reframe" / "generated", self.exp.id)
            manifest = base_manifest(self.exp, origin="reframe", system=system,
                                     shim_text=shim.read_text() if shim.is_file() else None,
                                     extra={"run_id": self.run_id, "reframe": reframe.VERSION,
                                            # e.g. same_machine_as: which published studies
                                            # this system reproduces absolutely
                                            "system_extras": system_extras or {}})
            self.dir = RunDir.create(results_root(self.exp.root), self.exp.id, self.run_id, manifest)
        return self.dir


_RUNS: dict[str, _Run] = {}


def for_experiment(exp: Experiment) -> _Run:
    run = _RUNS.get(exp.id)
    if run is None or run.exp.sha256 != exp.sha256:
        run = _RUNS[exp.id] = _Run(exp)
    return run


def describe_flags(observed: dict) -> list[str]:
    """Every difference between what was requested and what was applied, in words."""
    out = []
    lay = observed.get("lustre") or {}
    if lay.get("requested") and lay.get("applied") is False:
        out.append(f"striping not applied: {lay.get('reason', 'unknown reason')}")
    elif lay.get("requested") and lay.get("verified") is False:
        out.append("striping unverified: " + ", ".join(
            f"{u['key']}={u['requested']}" for u in lay.get("unverified", [])) if lay.get("unverified")
            else "striping unverified")
    hints = observed.get("mpiio_hints") or {}
    dar = observed.get("darshan") or {}
    for m in dar.get("lustre_witness") or []:
        if m["status"] == "changed":
            out.append(f"Darshan saw {m['key']} {m['observed']} on {m['path']} "
                       f"(requested {m['requested']})")
    if dar.get("status") in ("unreadable", "no log"):
        out.append(f"Darshan log {dar['status']}: {dar.get('reason')}")
    for c in hints.get("comparison", []):
        if c["status"] == "changed":
            out.append(f"hint {c['key']}: requested {c['requested']}, effective {c['effective']}")
        elif c["status"] == "missing":
            out.append(f"hint {c['key']}: requested {c['requested']}, not in effect (ignored)")
    if hints and hints.get("requested") and hints.get("effective") is None:
        out.append(f"hints unverified under {hints['flavour']}")
    return out


def record(test, *, status: str, error: str | None, parsed, stage: Path | None,
           observed: dict | None = None, flags: list[str] | None = None) -> dict:
    exp, case = test._iolab_exp, test._iolab_case
    run = for_experiment(exp)
    system = test.current_partition.fullname
    rundir = run.open(system, test.current_partition.extras.get("iolab", {}))
    spec = getattr(test, "_iolab_spec", None)

    raw = {}
    if stage is not None and stage.is_dir():
        names = ["rfm_job.sh", "rfm_job.out", "rfm_job.err", *(spec.outputs if spec else []),
                 darshan_files.LOG,
                 *sorted(p.name for p in stage.glob("iolab-*.txt"))]
        raw = rundir.store_raw(case.case_id, test.repetition, [stage / n for n in dict.fromkeys(names)],
                               compress={darshan_files.LOG})

    job = test.job
    launcher = " ".join(job.launcher.run_command(job).split()) if job is not None and spec else ""
    binary = _binary(stage / "iolab-binary.txt") if stage else {}
    if observed is None:
        observed = {}
        if stage is not None and status != "skipped":
            observed["lustre"] = lustre_observed(stage, lustre_requested(case.params))
    if flags is None:
        flags = describe_flags(observed)
    rec = {
        "schema": RECORD_SCHEMA,
        "experiment": exp.id,
        "experiment_sha256": exp.sha256,
        "profile": exp.profile,
        "run_id": run.run_id,
        "case_id": case.case_id,
        "part": case.part,
        "benchmark": case.benchmark,
        "repetition": test.repetition,
        "params": case.params,
        "varied": list(test._iolab_varied[case.part]),
        "observed": observed,
        "flags": flags,
        "metrics": [m.as_dict() for m in parsed.metrics] if parsed else [],
        "status": status,
        "error": error,
        "raw": raw,
        "recorded": utcnow(),
        "provenance": {
            "origin": "reframe",
            **run.git,
            "reframe": reframe.VERSION,
            "system": system,
            "environ": test.current_environ.name if test.current_environ else None,
            "jobid": str(job.jobid) if job is not None and job.jobid is not None else None,
            "nodelist": list(job.nodelist or []) if job is not None else [],
            "binary": {"name": spec.executable if spec else None, **binary,
                       "version": parsed.version if parsed else None},
            "stack": _stack(test, run, binary.get("path")),
            "input": getattr(test, "_iolab_input", None),
            # exactly what the job script ran (the executable may carry a preload prefix)
            "command": (" ".join([launcher, test.executable, *map(str, test.executable_opts)]).strip()
                        if spec else None),
            "env": {**_partition_env(test), **dict(test.env_vars)},
            "case_dir": getattr(test, "_iolab_case_dir", None),
            "stagedir": str(stage) if stage else None,
        },
    }
    rundir.append(rec)
    _after_record(test, run, rec)
    return rec


def _after_record(test, run: _Run, rec: dict) -> None:
    """Data shared between a write case and its reads: remove it after the last read, and
    record the reads as skipped when their write failed (ReFrame skips them silently)."""
    case, rep = test._iolab_case, test.repetition
    keep = test._iolab_keep_data()
    readers = test._iolab_consumers.get(case.case_id, [])
    if readers:
        if rec["status"] == "ok":
            run.pending[(case.case_id, rep)] = len(readers)
        else:
            for reader in readers:
                run.dir.append({**_skeleton(rec), "case_id": reader, "status": "skipped",
                                "params": test._iolab_cases[reader].params,
                                "error": f"the write case {case.case_id} it reads did not succeed"})
            if not keep and getattr(test, "_iolab_case_dir", None):
                shutil.rmtree(test._iolab_case_dir, ignore_errors=True)
    source = getattr(test, "_iolab_input", None)
    if source:
        key = (source["case_id"], source["repetition"])
        run.pending[key] = run.pending.get(key, 1) - 1
        if run.pending[key] <= 0 and not keep:
            shutil.rmtree(source["case_dir"], ignore_errors=True)


def _skeleton(rec: dict) -> dict:
    """The run-level fields of a record, for records of cases that never ran."""
    keep = ("schema", "experiment", "experiment_sha256", "profile", "run_id", "part", "benchmark",
            "repetition", "varied", "recorded")
    return {**{k: rec[k] for k in keep}, "observed": {}, "flags": [], "metrics": [], "raw": {},
            "provenance": {"origin": "reframe", "system": rec["provenance"]["system"]}}


def _partition_env(test) -> dict:
    """Variables the shipped system config exports (e.g. Open MPI's run-as-root pair)."""
    env = {}
    for source in (test.current_partition, test.current_environ):
        local = getattr(source, "local_env", source)
        env.update(getattr(local, "env_vars", {}) or {})
    return env


def _binary(path: Path) -> dict:
    """iolab-binary.txt: `command -v` output, then `sha256sum` of that file."""
    text = _read(path) or ""
    lines = text.splitlines()
    out = {"path": lines[0] if lines else None, "sha256": None}
    if len(lines) > 1 and lines[1].split():
        out["sha256"] = lines[1].split()[0]
    return out


def _stack(test, run: _Run, binary_path: str | None) -> dict | None:
    stack = getattr(test, "_iolab_stack", None)
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
    return out


def _read(path: Path) -> str | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return text or None

