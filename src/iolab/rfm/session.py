"""Per-process state of a ReFrame session: one results run per experiment.

When ReFrame starts running (Runner.runall), each experiment's run directory is created with the
jobs this session plans; when it ends, however it ends, every planned job has a record (those
that an interrupt or ReFrame itself stopped are recorded as aborted or failed, their jobs are
killed and their scratch is removed) and the manifest says whether the run completed.
"""

from __future__ import annotations

import collections
import functools
import os
import shutil
import signal
import time
from pathlib import Path

import reframe
from reframe.core.logging import getlogger

from ..errors import IolabError
from ..load import Experiment
from . import darshan_files
from ..lustre import observed as lustre_observed
from ..lustre import requested as lustre_requested
from ..render import shim_path
from ..results import (RECORD_SCHEMA, RunDir, base_manifest, git_state, new_run_id, results_root,
                       sha256_file, utcnow)
from ..shell import has_variables
from ..stack import spack_packages


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
        self.unsaved: str | None = None      # why some records are in a fallback file, not records.jsonl

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
                extra["planned"] = self.planned
            manifest = base_manifest(self.exp, origin="reframe", system=system,
                                     shim_text=shim.read_text() if shim.is_file() else None,
                                     extra=extra)
            self.dir = RunDir.create(results_root(self.exp.root), self.exp.id, self.run_id, manifest)
        return self.dir

    def append(self, rec: dict) -> None:
        try:
            self.dir.append(rec)
        except IolabError as exc:
            # The record is in a fallback file beside the run (the message names it and says
            # how to merge it back); the run goes on and its end says it is not complete.
            getlogger().error(f"iolab: {exc}")
            self.unsaved = str(exc)
        self.counts[rec["status"]] += 1
        self.recorded.add((rec["case_id"], rec["repetition"], rec["provenance"].get("system")))


_RUNS: dict[str, _Run] = {}


def _used_files(exp: Experiment) -> list[Path]:
    """The files a run depends on besides installed code: its YAML, its shim, the system config."""
    files = [exp.path, shim_path(exp.root / "reframe" / "generated", exp.id)]
    try:
        from reframe.core.runtime import runtime

        files += [Path(f) for f in runtime().site_config.sources if str(f).endswith(".py")]
    except Exception:  # noqa: BLE001 - outside a ReFrame session
        pass
    return files


def for_experiment(exp: Experiment) -> _Run:
    run = _RUNS.get(exp.id)
    if run is None or run.exp.sha256 != exp.sha256:
        run = _RUNS[exp.id] = _Run(exp)
    return run


def describe_flags(observed: dict) -> list[str]:
    """Every difference between what was requested and what was applied, in words."""
    out = []
    if observed.get("replayed"):
        out.append(f"replayed by a test stand-in: not a measurement ({observed['replayed']})")
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
        elif c["status"] == "not applied":
            out.append(f"hint {c['key']} not applied: {c['reason']}")
    if hints and hints.get("requested") and hints.get("effective") is None:
        out.append(f"hints unverified under {hints['flavour']}")
    return out


def record(test, *, status: str, error: str | None, parsed, stage: Path | None,
           observed: dict | None = None, flags: list[str] | None = None, partition=None) -> dict:
    """partition: for a case that never reached setup (ReFrame sets current_partition there)."""
    exp, case = test._iolab_exp, test._iolab_case
    run = for_experiment(exp)
    partition = test.current_partition or partition
    system = partition.fullname
    rundir = run.open(system, partition.extras.get("iolab", {}))
    spec = getattr(test, "_iolab_spec", None)

    raw = {}
    if stage is not None and stage.is_dir():
        names = ["rfm_job.sh", "rfm_job.out", "rfm_job.err", *(spec.outputs if spec else []),
                 darshan_files.LOG,
                 *sorted(p.name for p in stage.glob("iolab-*.txt"))]
        raw = rundir.store_raw(case.case_id, test.repetition, [stage / n for n in dict.fromkeys(names)],
                               compress={darshan_files.LOG})
        for problem in raw.get("errors", []):
            getlogger().warning(f"iolab: {case.case_id} rep {test.repetition}: raw output not stored: "
                                f"{problem}")

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
            "nodelist": _nodelist(stage, job),
            "binary": {"name": spec.executable if spec else None, **binary,
                       "version": parsed.version if parsed else None},
            "stack": _stack(test, run, binary.get("path")),
            "input": getattr(test, "_iolab_input", None),
            # exactly what the job script ran (the executable may carry a preload prefix)
            "command": (" ".join([launcher, test.executable, *map(str, test.executable_opts)]).strip()
                        if spec else None),
            "env": {**_partition_env(test), **getattr(test, "_iolab_env", {})},
            "case_dir": getattr(test, "_iolab_case_dir", None),
            # the benchmark's own start and end, and iolab's work after it (unix seconds)
            "timing": _timing(stage, getattr(test, "_iolab_post_start", None)),
            "stagedir": str(stage) if stage else None,
        },
    }
    run.append(rec)
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
                run.append({**_skeleton(rec), "case_id": reader, "status": "skipped",
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
        if source is None:
            continue
        local = getattr(source, "local_env", source)
        env.update(getattr(local, "env_vars", {}) or {})
    return env


def _timing(stage: Path | None, post_start: float | None) -> dict:
    lines = (_read(stage / "iolab-times.txt") or "").split() if stage else []
    stamps = []
    for token in lines[:2]:
        try:
            stamps.append(float(token.replace(",", ".")))   # EPOCHREALTIME follows the locale
        except ValueError:
            stamps.append(None)
    stamps += [None] * (2 - len(stamps))
    return {"benchmark_start": stamps[0], "benchmark_end": stamps[1],
            "postprocess_start": post_start, "recorded": time.time()}


def _nodelist(stage: Path | None, job) -> list[str]:
    """The job's nodes as the job itself saw them ($SLURM_JOB_NODELIST, expanded), else what
    ReFrame recorded (which can miss nodes of a short Slurm job)."""
    from reframe.utility import nodelist_expand

    seen = (_read(stage / "iolab-nodes.txt") or "") if stage else ""
    if seen:
        try:
            return list(nodelist_expand(seen))
        except Exception:  # noqa: BLE001 - an unexpected form: keep it as written
            return [seen]
    return list(job.nodelist or []) if job is not None else []


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
        # the versions Spack installed: the benchmarks' and Darshan's, whatever they print
        installed = fixture.installed()
        out["versions"] = {name: installed[name]["version"] for name in
                           dict.fromkeys(spack_packages().values()) if name in installed}
        out["hashes"] = {name: installed[name]["hash"] for name in out["versions"]}
    return out


def stack_failure(tc) -> str | None:
    """Why a case never ran, when the Spack stack fixture it needs failed: Spack's own error."""
    from .spack import build_iolab_stack, failure

    for dep in getattr(tc, "deps", []) or []:
        check = getattr(dep, "check", None)
        if isinstance(check, build_iolab_stack):
            line = failure(check.stagedir)
            if line or not os.path.exists(check.lock_path):
                return (f"the Spack stack (fixture {check.unique_name} on "
                        f"{dep.partition.fullname}+{dep.environ.name}) did not build: "
                        f"{line or 'see its build output in ' + str(check.stagedir)}")
    return None


def _read(path: Path) -> str | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return text or None



# --- the session around ReFrame's run: planned jobs first, a record for each at the end ---

def _reason(exc: BaseException | None) -> str | None:
    if exc is None:
        return None
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted by SIGINT"
    text = str(exc)
    if type(exc).__name__ == "ForceExitError" and "signal" in text:
        num = int(text.rsplit(" ", 1)[-1]) if text.rsplit(" ", 1)[-1].isdigit() else None
        return f"interrupted by {signal.Signals(num).name}" if num else f"interrupted: {text}"
    if type(exc).__name__ == "FailureLimitError":
        return f"ReFrame stopped the run: {text}"
    if type(exc).__name__ == "RunSessionTimeout":
        return f"ReFrame stopped the run: {text}"
    return f"the run stopped: {type(exc).__name__}: {text}"


class _Session:
    """The iolab cases of one Runner.runall: what was planned, and its end."""

    def __init__(self, testcases):
        from .base import IolabTest

        self.cases = [tc for tc in testcases if isinstance(tc.check, IolabTest)]
        self.runs: dict[str, _Run] = {}
        for tc in self.cases:
            check = tc.check
            run = for_experiment(check._iolab_exp)
            self.runs[check._iolab_exp.id] = run
            run.planned.append({"part": check._iolab_case.part, "case_id": check._iolab_case.case_id,
                                "repetition": check.repetition, "system": tc.partition.fullname})
        # The run directories exist, with their plans, before the first job starts.
        for tc in self.cases:
            run = self.runs[tc.check._iolab_exp.id]
            if run.dir is None:
                run.open(tc.partition.fullname, tc.partition.extras.get("iolab", {}))

    def end(self, exc: BaseException | None) -> list[str]:
        """Record what has no record, clean up, mark each run finished; returns the problems that
        must fail the ReFrame run although every case passed (records in a fallback file)."""
        reason = _reason(exc)
        for tc in self.cases:
            check = tc.check
            run = self.runs[check._iolab_exp.id]
            key = (check._iolab_case.case_id, check.repetition, tc.partition.fullname)
            if key in run.recorded:
                continue
            _stop_job(getattr(check, "job", None))
            status = "aborted" if reason else "failed"
            why = reason or stack_failure(tc) or "ReFrame ended this case without a result (see its log)"
            try:
                check._iolab_recorded = True
                record(check, status=status, error=why, parsed=None,
                       stage=Path(check.stagedir) if check.stagedir else None, partition=tc.partition)
            except Exception as err:  # noqa: BLE001 - keep going: the other cases need records too
                getlogger().error(f"iolab: could not record {key}: {err!r}")
        # Nothing reads a case's data after the session: writes kept for reads that an interrupt
        # (or a failure) stopped are removed too, and so are the run's emptied directories.
        for tc in self.cases:
            check = tc.check
            case_dir = getattr(check, "_iolab_case_dir", None)
            if case_dir and not has_variables(case_dir) and not check._iolab_keep_data():
                shutil.rmtree(case_dir, ignore_errors=True)
                try:
                    os.rmdir(Path(case_dir).parent)
                except OSError:
                    pass
        for run in self.runs.values():
            planned = len(run.planned)
            missing = sum((p["case_id"], p["repetition"], p["system"]) not in run.recorded
                          for p in run.planned)
            why = reason or (f"records not in {run.dir.path.name}/records.jsonl: {run.unsaved}"
                             if run.unsaved else None)
            finished = {"complete": why is None and missing == 0, "reason": why,
                        "ended": utcnow(), "planned": planned, "counts": dict(run.counts)}
            try:
                run.dir.finish(finished)
            except Exception as err:  # noqa: BLE001 - readers then see an unfinished run
                getlogger().error(f"iolab: could not mark run {run.run_id} finished: {err!r}")
        return [f"run {r.run_id}: {r.unsaved}" for r in self.runs.values() if r.unsaved]


def _stop_job(job, grace: float = 5.0) -> None:
    """A local job whose ReFrame task was aborted got SIGTERM on its process group, and ReFrame
    will not poll it again: wait for the group to go, then SIGKILL what is left of it."""
    if job is None or getattr(job, "jobid", None) is None:
        return
    if job.scheduler.registered_name != "local":
        return      # the scheduler's cancel (scancel...) owns the job's processes
    pgid = int(job.jobid)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.waitpid(pgid, os.WNOHANG)      # the job script is ReFrame's child: reap it
        except ChildProcessError:
            pass
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


_INSTALLED = False


def install() -> None:
    """Wrap ReFrame's Runner.runall (once per process). ReFrame has no session hooks, and only
    here are the cases it will run known before the first one starts."""
    global _INSTALLED
    if _INSTALLED:
        return
    from reframe.frontend.executors import Runner

    original = Runner.runall

    @functools.wraps(original)
    def runall(runner, testcases, *args, **kwargs):
        if not testcases:
            # A misspelt -n would otherwise end as "Ran 0/0 ... PASSED", exit 0.
            from reframe.core.exceptions import ReframeError

            from .register import registered

            raise ReframeError("iolab: nothing to run: the selection (-n/-x/-t/--system) matched no "
                               f"test; experiments here: {', '.join(registered()) or 'none'}")
        if getattr(runner.policy, "dry_run_mode", False):
            return original(runner, testcases, *args, **kwargs)
        session = _Session(testcases)
        try:
            result = original(runner, testcases, *args, **kwargs)
        except BaseException as exc:
            session.end(exc)
            raise
        problems = session.end(None)
        if problems:
            from reframe.core.exceptions import ReframeError

            raise ReframeError("iolab: results could not all be written: " + "; ".join(problems))
        return result

    Runner.runall = runall
    _INSTALLED = True
