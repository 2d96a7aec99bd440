"""The one ReFrame test class every experiment's cases run through.

Generated shims create a subclass per experiment with two parameters, `case` and `repetition`.
Site facts (scratch root, cores per node) come from the partition's `extras['iolab']`.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import run_after, run_before, sanity_function
from reframe.core.exceptions import SanityError
from reframe.core.logging import getlogger

from .. import lustre
from ..adapters import get_adapter
from ..errors import IolabError
from ..matrix import describe
from . import session

EXIT_FILE = "iolab-exit-code.txt"
BINARY_FILE = "iolab-binary.txt"
MPI_LAUNCHERS = ("mpirun", "mpiexec", "mpirun-openmpi")


class IolabTest(rfm.RunOnlyRegressionTest, special=True):
    """A case of an experiment, run once per repetition.

    `special=True` lets this class wrap the run stages: ReFrame has no hook after a failure, and a
    job that dies before sanity (time limit, launch error) must still leave a failed record.
    """

    valid_systems = ["+iolab"]
    valid_prog_environs = ["+iolab"]

    # Filled in by the generated subclass (see register.py).
    _iolab_exp = None
    _iolab_cases: dict = {}
    _iolab_varied: dict = {}

    @run_after("init")
    def _iolab_init(self):
        case = self._iolab_cases[self.case]
        self._iolab_case = case
        self.descr = f"{case.experiment} {case.case_id}: {describe(case, self._iolab_varied[case.part])}"
        self.num_tasks = case.num_tasks
        self.num_tasks_per_node = case.tasks_per_node
        self.time_limit = case.job.time_limit
        self.exclusive_access = case.job.exclusive
        self.tags = {case.experiment, case.benchmark, *self._iolab_exp.tags}
        self.executable = get_adapter(case.benchmark).executable
        self.sourcesdir = None
        self._iolab_recorded = False

    @run_after("setup")
    def _iolab_prepare(self):
        exp, case = self._iolab_exp, self._iolab_case
        extras = self.current_partition.extras.get("iolab", {})
        adapter = get_adapter(case.benchmark)
        run = session.for_experiment(exp)
        scratch = os.path.expandvars(extras.get("scratch", "/tmp/iolab-scratch"))
        self._iolab_case_dir = f"{scratch}/{exp.id}/{run.run_id}/{case.case_id}-r{self.repetition}"
        spec = adapter.run_spec(case, self._iolab_case_dir)
        self._iolab_spec = spec

        if not self.is_dry_run() and not _available(spec.executable):
            reason = (f"benchmark binary {spec.executable!r} not found on PATH; provide it with "
                      f"Spack (spack.yaml), a module, or a prefix on PATH")
            self._iolab_record(status="skipped", error=reason)
            self.skip(reason)

        stage = Path(self.stagedir)
        for name, text in spec.files.items():
            (stage / name).write_text(text)
        self.executable = spec.executable
        self.executable_opts = list(spec.args)
        self.env_vars.update(spec.env)
        d = shlex.quote(self._iolab_case_dir)
        self.prerun_cmds = [f"mkdir -p {d}",
                            *lustre.prerun_lines(self._iolab_case_dir, lustre.requested(case.params)),
                            f"command -v {shlex.quote(spec.executable)} > {BINARY_FILE}"]
        # $? of the benchmark must be read first, before any other command runs.
        self.postrun_cmds = [f"echo $? > {EXIT_FILE}"]
        if not self._iolab_keep_data():
            self.postrun_cmds.append(f"rm -rf {d}")
        if not spec.mpi:
            self.job.launcher = getlauncher("local")()
        elif self.current_partition.launcher_type.registered_name in MPI_LAUNCHERS:
            cores = extras.get("cores_per_node")
            if cores and case.tasks_per_node > int(cores):
                self.job.launcher.options += ["--oversubscribe"]

    # Failures of the job itself (submission, time limit, a node failure) surface in these stages.
    def run(self):
        return self._iolab_guard(super().run, "job submission failed")

    def run_complete(self):
        return self._iolab_guard(super().run_complete, "job failed")

    def run_wait(self):
        return self._iolab_guard(super().run_wait, "job failed")

    def _iolab_guard(self, stage, what):
        try:
            return stage()
        except Exception as exc:
            self._iolab_record(status="failed", error=f"{what}: {_one_line(exc)}")
            # The job's own cleanup never ran; remove the data it left where we can reach it.
            case_dir = getattr(self, "_iolab_case_dir", None)
            if case_dir and not self._iolab_keep_data():
                shutil.rmtree(case_dir, ignore_errors=True)
            raise

    def _iolab_keep_data(self) -> bool:
        return self._iolab_exp.keep_data or os.environ.get("IOLAB_KEEP_DATA") == "1"

    @sanity_function
    def _iolab_sanity(self):
        case = self._iolab_case
        adapter = get_adapter(case.benchmark)
        stage = Path(self.stagedir)
        try:
            code = _read(stage / EXIT_FILE)
            if code is None:
                raise IolabError("the job did not reach the end of its script (no exit code)")
            if code != "0":
                raise IolabError(f"{adapter.executable} exited with status {code}")
            parsed = adapter.parse_outputs(stage, self._iolab_spec)
        except IolabError as exc:
            self._iolab_record(status="failed", error=str(exc))
            raise SanityError(str(exc)) from None
        self._iolab_parsed = parsed
        self._iolab_record(status="ok", parsed=parsed)
        return sn.assert_true(True)

    @run_before("performance")
    def _iolab_perf(self):
        parsed = getattr(self, "_iolab_parsed", None)
        if parsed is None:
            return
        self.perf_variables = {
            m.name: sn.make_performance_function(_const(m.value), m.unit) for m in parsed.metrics}

    def _iolab_record(self, *, status, error=None, parsed=None):
        if self._iolab_recorded or self.is_dry_run():
            return
        self._iolab_recorded = True
        stage = Path(self.stagedir) if self.stagedir else None
        try:
            session.record(self, status=status, error=error, parsed=parsed, stage=stage)
        except Exception as exc:  # noqa: BLE001 - a bug here must not lose the case silently
            getlogger().error(f"iolab: could not record {self.case} rep {self.repetition}: {exc!r}")
            raise SanityError(f"iolab could not store this case's record: {exc!r}") from exc


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:500]


def _const(value):
    return sn.defer(value)


def _available(executable: str) -> bool:
    return shutil.which(executable) is not None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None
