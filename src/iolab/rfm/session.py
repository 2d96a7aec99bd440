"""The session around ReFrame's run: the jobs it plans, and a record for each at its end.

When ReFrame starts running (Runner.runall, see internals.wrap_runall), each experiment's run
directory is created with the jobs this session plans; when it ends, however it ends, every
planned job has a record (those that an interrupt or ReFrame itself stopped are recorded as
aborted or failed, their jobs are killed and their scratch is removed) and the manifest says
whether the run completed.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import sys
import time
from pathlib import Path

from reframe.core.exceptions import FailureLimitError, ForceExitError, ReframeError, RunSessionTimeout
from reframe.core.logging import getlogger

from . import site
from ..errors import IolabError
from ..results import recordcache
from ..results.provenance import utcnow
from ..shell import has_variables
from ..experiment.load import class_name, where_set
from ..layers import registry as layers
from . import internals, leftovers, measuring, runorder
from .recording import _Run, for_experiment, record
from .spack import build_iolab_stack, failure


def stack_failure(tc) -> str | None:
    """Why a case never ran, when the Spack stack fixture it needs failed: Spack's own error."""
    for dep in getattr(tc, "deps", []) or []:
        check = getattr(dep, "check", None)
        if isinstance(check, build_iolab_stack):
            line = failure(check.stagedir)
            if line or not os.path.exists(check.lock_path):
                return (f"the Spack stack (fixture {check.unique_name} on "
                        f"{dep.partition.fullname}+{dep.environ.name}) did not build: "
                        f"{line or 'see its build output in ' + str(check.stagedir)}")
    return None


def _reason(exc: BaseException | None) -> str | None:
    if exc is None:
        return None
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted by SIGINT"
    if getattr(exc, "iolab_reason", None):      # e.g. the allocation's clock (allocation.py)
        return exc.iolab_reason
    text = str(exc)
    if isinstance(exc, ForceExitError) and "signal" in text:
        # Only ReFrame's text names the signal: 'received signal 15' (newer 4.x) or 'received
        # TERM signal' (older 4.x)
        number, name = re.search(r"signal (\d+)\b", text), re.search(r"(\w+) signal\b", text)
        num = int(number[1]) if number else getattr(signal, f"SIG{name[1]}", None) if name else None
        return f"interrupted by {signal.Signals(num).name}" if num else f"interrupted: {text}"
    if isinstance(exc, (FailureLimitError, RunSessionTimeout)):
        return f"ReFrame stopped the run: {text}"
    return f"the run stopped: {type(exc).__name__}: {text}"


class _Session:
    """The iolab cases of one Runner.runall: what was planned, and its end."""

    def __init__(self, testcases, is_case):
        self.cases = [tc for tc in testcases if is_case(tc.check)]
        self.runs: dict[str, _Run] = {}
        self.idle_failed: str | None = None     # a last skipped job failed: nothing ran
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
                run.open(tc.partition.fullname, site.of(tc.partition).raw)

    def end(self, exc: BaseException | None) -> list[str]:
        """Record what has no record, clean up, mark each run finished, and give up the runs'
        locks however that goes; returns the problems that must fail the ReFrame run although
        every case passed (records in a fallback file)."""
        try:
            return self._end(exc)
        finally:
            for run in self.runs.values():
                if run.dir is not None:
                    run.dir.release()

    def nothing_ran(self) -> str | None:
        """Why the session measured nothing, when each of its planned jobs was skipped."""
        counts = [run.counts for run in self.runs.values()]
        if not counts or any(status != "skipped" and n for c in counts for status, n in c.items()):
            return None
        reasons = sorted({r for run in self.runs.values() for r in run.skip_reasons})
        return (f"iolab: nothing ran: all {sum(c.get('skipped', 0) for c in counts)} planned jobs "
                f"were skipped: {'; '.join(reasons) or 'see the records'}")

    def _end(self, exc: BaseException | None) -> list[str]:
        reason = _reason(exc)
        for tc in self.cases:
            check = tc.check
            run = self.runs[check._iolab_exp.id]
            key = (check._iolab_case.case_id, check.repetition, tc.partition.fullname)
            job = getattr(check, "job", None)
            if key in run.recorded:
                # recorded already (a failure listener may record an aborted task before this
                # runs): its job may still be running if ReFrame cancelled it without a wait
                if not _exited(job):
                    _stop_job(job)
                continue
            _stop_job(job)
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
            case_dir = check.iolab_case_dir
            if case_dir and not has_variables(case_dir) and not check.iolab_keep_data():
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
            if run.unsaved:     # complete once the fallback records are merged back
                finished["complete_once_merged"] = reason is None and missing == 0
            try:
                run.dir.finish(finished)
            except Exception as err:  # noqa: BLE001 - readers then see an unfinished run
                getlogger().error(f"iolab: could not mark run {run.run_id} finished: {err!r}")
                continue
            try:        # the records folded by case, for the run's first table
                recordcache.write_run_digest(run.dir.path)
            except (IolabError, OSError, ValueError) as err:   # readers decode records.jsonl
                getlogger().warning(f"iolab: run {run.run_id}: its digest was not written: {err}")
        return [f"run {r.run_id}: {r.unsaved}" for r in self.runs.values() if r.unsaved]


def sweep_scratch(cases) -> None:
    """The run directories in scratch (and the other storage roots this host sees) that a killed
    session left empty: removed before this session's first job, where no live process writes
    their run. Only empty directories go (rmdir): never a file, so never data that was kept or
    that a job still writes."""
    from ..results.runfiles import results_root
    from ..results.lock import read_lock

    seen = set()
    for tc in cases:
        exp = tc.check._iolab_exp
        conf = site.of(tc.partition)
        for target in ("scratch", "node_local", "burst_buffer"):
            root = conf.root(target)
            if not root or has_variables(root) or (root, exp.id) in seen:
                continue
            seen.add((root, exp.id))
            base = Path(os.path.expandvars(root)) / exp.id
            try:
                runs = [p for p in base.iterdir() if p.is_dir() and not p.is_symlink()]
            except OSError:
                continue
            for run in runs:
                lock = read_lock(results_root(exp.root) / exp.id / run.name)
                if lock is not None and lock.role is None and lock.alive is not False:
                    continue        # its writer runs (or another host's may): its directory
                _remove_empty(run)


def _remove_empty(top: Path) -> None:
    """rmdir `top` and its subdirectories, deepest first, as far as they hold nothing."""
    for where, dirs, _files in os.walk(top, topdown=False):
        for name in dirs:
            try:
                os.rmdir(os.path.join(where, name))
            except OSError:
                pass
    try:
        os.rmdir(top)
        getlogger().info(f"iolab: removed {top}, the empty scratch directory of a run that ended")
    except OSError:
        pass


def _exited(job) -> bool:
    """Whether ReFrame saw the job's process end (its exit code or signal is known)."""
    return job is None or getattr(job, "jobid", None) is None or (
        job.exitcode is not None or job.signal is not None)


_CURRENT: _Session | None = None


def last_skip_fails() -> str | None:
    """Why the job being skipped must fail instead: it is the session's last, and no job ran.
    ReFrame counts a skip as no failure and prints its summary before runall returns, so only a
    failing case keeps a run of which no job ran from ending "Ran 0/N ... PASSED"."""
    session = _CURRENT
    if session is None or any(len(run.recorded) < len(run.planned) for run in session.runs.values()):
        return None
    session.idle_failed = session.nothing_ran()
    return session.idle_failed


def _stop_job(job, grace: float = 5.0) -> None:
    """A local job whose ReFrame task was aborted got SIGTERM on its process group, and ReFrame
    will not poll it again: wait for the group to go, then SIGKILL what is left of it and wait
    for that too (a process killed in the middle of a write can take a while to end), so its
    data is removed only once nothing writes it."""
    if job is None or getattr(job, "jobid", None) is None:
        return
    if job.scheduler.registered_name != "local":
        return      # the scheduler's cancel (scancel...) owns the job's processes
    pgid = int(job.jobid)
    if not _gone(pgid, grace):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if not _gone(pgid, 2 * grace):
            getlogger().warning(f"iolab: job {pgid} is still running after SIGKILL")
    # A benchmark's workers may leave the job's process group (fio's call setsid): the group
    # gone, they would go on writing, orphans, while the case's data is removed. Whatever still
    # runs in the job's directory is the job's.
    workdir = getattr(job, "workdir", None)
    strays = leftovers.running_in(workdir) if workdir else []
    for pid in strays:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 2 * grace
    while strays and time.monotonic() < deadline:
        strays = [pid for pid in strays if _alive(pid)]
        time.sleep(0.05)
    if strays:
        getlogger().warning(f"iolab: job {pgid}: processes {strays} still run after SIGKILL")


def _alive(pid: int) -> bool:
    """Whether pid still runs (a zombie is reaped first, if it is our child)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _gone(pgid: int, seconds: float) -> bool:
    """Whether the process group ends within `seconds` (its leader, ReFrame's child, reaped)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            os.waitpid(pgid, os.WNOHANG)      # the job script is ReFrame's child: reap it
        except ChildProcessError:
            pass
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


_INSTALLED = False


def install(is_case, registered) -> None:
    """Wrap ReFrame's Runner.runall (once per process; internals.wrap_runall says why): only there
    are the cases it will run known before the first one starts, and its end seen. is_case(check):
    whether a test is an iolab case; registered(): the experiments with tests in this process."""
    global _INSTALLED
    if _INSTALLED:
        return
    internals.wrap_runall(functools.partial(_runall, is_case=is_case, registered=registered))
    _INSTALLED = True


def _run_session(original, runner, testcases, is_case, args, kwargs):
    """ReFrame's run of the cases, with their run directories made first; a run that ends by
    an exception is ended (records, clean-up) before it goes on."""
    global _CURRENT
    session = _CURRENT = _Session(testcases, is_case)
    try:
        return original(runner, testcases, *args, **kwargs), session
    except BaseException as exc:
        session.end(exc)
        raise


def _job_env(partition) -> dict[str, str]:
    """The environment a partition's jobs get beside this one's (CEPH_CONF...)."""
    env = dict(os.environ)
    for name, value in partition.local_env.env_vars.items():
        env[name] = os.path.expandvars(str(value))
    return env


def _preflight(cases) -> None:
    """What only the live system can tell of the cases (each layer's preflight: a file system's
    layouts), asked once before the run exists: a refusal ends the session with every reason, one
    line each, and no run is created."""
    refused = layers.preflight(((tc.check._iolab_exp, tc.check._iolab_case, site.of(tc.partition),
                                 _job_env(tc.partition)) for tc in cases), getlogger().warning,
                                where_set)
    if refused:
        raise ReframeError("iolab: not started, no run created:\n" + "\n".join(map(str, refused)))


def _runall(original, *, is_case, registered):
    @functools.wraps(original)
    def runall(runner, testcases, *args, **kwargs):
        if not testcases:
            # A misspelt -n would otherwise end as "Ran 0/0 ... PASSED", exit 0.
            # ReFrame names each experiment's test with '_' for '-': show both
            here = ", ".join(f"{i} (-n {class_name(i)})" for i in registered()) or "none"
            raise ReframeError("iolab: nothing to run: the selection (-n/-x/-t/--system) matched no "
                               f"test; experiments here: {here}")
        if internals.is_dry_run(runner):
            return original(runner, testcases, *args, **kwargs)
        note = runorder.exec_order_note(sys.argv)
        if note:
            getlogger().warning(note)
        try:
            testcases = runorder.arrange(
                testcases, is_case, lambda check: for_experiment(check._iolab_exp).run_order(type(check)))
        except IolabError as exc:
            raise ReframeError(f"iolab: {exc}") from None
        cases = [tc for tc in testcases if is_case(tc.check)]
        _preflight(cases)
        keys = [measuring.key_of(tc.partition.scheduler.registered_name, tc.partition.fullname)
                for tc in cases]
        # no other session measures on these systems while this one does (measuring.py)
        with contextlib.ExitStack() as held:
            try:
                held.enter_context(measuring.measuring(
                    keys, {tc.check._iolab_exp.id for tc in cases}, getlogger().warning))
            except IolabError as exc:
                raise ReframeError(f"iolab: {exc}") from None
            sweep_scratch(cases)
            result, session = _run_session(original, runner, testcases, is_case, args, kwargs)
            problems = session.end(None)
        if problems:
            raise ReframeError("iolab: results could not all be written: " + "; ".join(problems))
        idle = session.nothing_ran()
        if idle and not session.idle_failed:    # ReFrame skipped the last job itself
            raise ReframeError(idle)
        return result

    return runall
