"""The one ReFrame test class every experiment's cases run through.

Generated shims make a subclass per experiment with two parameters, `case` and `repetition`.
Everything about a case's job is decided by plan.py and read back by observe.py; this class
applies the plan to ReFrame, guards the run stages, and records.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import run_after, run_before, sanity_function
from reframe.core.exceptions import ReframeError, SanityError
from reframe.core.logging import getlogger

from .. import benchmarks
from . import site
from ..experiment.matrix import describe
from . import allocation, continuation, internals, measuring, observe, plan, recording, session, witness
from ..results.record import NOT_RUN_STRICT, overlap_flags
from .leftovers import QUEUED_BY_SLURM


def strict(partition) -> bool:
    """Whether a case that cannot run on this partition fails the run instead of being skipped:
    the system's `strict` setting, or IOLAB_STRICT=1 (scripts/run --strict) for any system."""
    return site.of(partition).strict_now


def _not_runnable(test, reason: str, partition) -> None:
    """A case that cannot run here is recorded as skipped with every reason. ReFrame skips it (its
    convention for a test that cannot run here) unless the system is strict: then the case is a
    failure, in its record as in ReFrame's report, and the run fails with it. A session where
    nothing ran fails anyway (session.py): never PASSED."""
    if strict(partition):
        test._iolab_record(status="failed", error=NOT_RUN_STRICT + reason)
        raise ReframeError(f"iolab: {NOT_RUN_STRICT}{reason}")
    test._iolab_record(status="skipped", error=reason)
    idle = session.last_skip_fails()
    if idle:
        raise ReframeError(idle)
    test.skip(f"iolab: not run: {reason}")


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
    _iolab_producer: dict = {}      # read case id -> write case id
    _iolab_consumers: dict = {}     # write case id -> read case ids
    _iolab_param_vars: dict = {}    # loggable variable name -> (parameter key, shown as text)
    _iolab_repetitions: int = 1     # repetitions this process has tests for
    _iolab_references: tuple = ()   # (part, case id, every) of each drift reference
    _iolab_reference_reps: dict = {}    # a drift reference's case id -> its last repetition

    @run_after("init")
    def _iolab_init(self):
        case = self._iolab_case = self._iolab_cases[self.case]
        continuation.skip_done(self, case)      # iolab resume: only the jobs not yet ok
        self.descr = f"{case.experiment} {case.case_id}: {describe(case, self._iolab_varied[case.part])}"
        self.num_tasks, self.num_tasks_per_node = case.num_tasks, case.tasks_per_node
        self.time_limit, self.exclusive_access = case.job.time_limit, case.job.exclusive
        self.tags = {case.experiment, case.benchmark, *self._iolab_exp.tags}
        for name, (key, text) in self._iolab_param_vars.items():
            value = case.params.get(key)    # typed as at load; lists (a BTIO grid) and mixes as text
            setattr(self, name, str(value) if text and value is not None else value)
        self.executable = benchmarks.get(case.benchmark).executable
        self.sourcesdir = None
        self._iolab_recorded, self._iolab_plan, self._iolab_outcome = False, None, None
        writer = self._iolab_producer.get(case.case_id)
        if writer:      # a read runs after the write (same repetition) whose file it reads
            self.depends_on(self._iolab_variant(writer, self.repetition))

    @classmethod
    def _iolab_variant(cls, case_id: str, repetition: int) -> str:
        (num,) = cls.get_variant_nums(case=lambda c: c == case_id, repetition=lambda r: r == repetition)
        return cls.variant_name(num)

    @property
    def iolab_case_dir(self) -> str | None:
        return self._iolab_plan.case_dir if self._iolab_plan else None

    def iolab_keep_data(self) -> bool:
        return self._iolab_exp.keep_data or os.environ.get("IOLAB_KEEP_DATA") == "1"

    @run_after("setup")
    def _iolab_prepare(self):
        case, part = self._iolab_case, self.current_partition
        writer = self._iolab_producer.get(case.case_id)
        producer = self.getdep(self._iolab_variant(writer, self.repetition)) if writer else None
        fixture = getattr(self, "iolab_stack", None)
        p = self._iolab_plan = plan.plan(
            case, self._iolab_exp, repetition=self.repetition,
            run_id=recording.for_experiment(self._iolab_exp).run_id, stage=Path(self.stagedir),
            partition=plan.Partition(part.fullname, part.scheduler.registered_name,
                                     part.launcher_type.registered_name, site.of(part),
                                     dict(part.resources)),
            producer_dir=producer.iolab_case_dir if producer else None, dry_run=self.is_dry_run(),
            keep_data=self.iolab_keep_data(), consumed=case.case_id in self._iolab_consumers,
            spack_env=fixture.env_path if fixture is not None else None)
        if producer:
            p.input = {"case_id": writer, "repetition": self.repetition, "case_dir": producer.iolab_case_dir}
        for name, text in p.files.items():
            (Path(self.stagedir) / name).write_text(text)
        self.executable, self.executable_opts = p.executable, p.args
        self.env_vars.update(p.env)
        self.prerun_cmds, self.postrun_cmds = p.prerun, p.postrun
        self.modules = p.modules
        if p.spack_spec:   # ReFrame's Spack build system, run-only: the job loads from the env
            self.build_system = "Spack"
            self.build_system.environment, self.build_system.specs = fixture.env_path, [p.spack_spec]
        if p.local_launcher:
            self.job.launcher = getlauncher("local")()
        self.job.launcher.options += p.launcher_options
        # '#DW ...' lines go verbatim into the preamble (ReFrame keeps '#WORD' options)
        self.job.options += list(case.job.extra_directives)
        if case.job.resources:      # merged, never replaced: -S may have set some already
            merged = dict(self.extra_resources)
            for name, values in case.job.resources.items():
                merged[name] = {**merged.get(name, {}), **{k: str(v) for k, v in values.items()}}
            self.extra_resources = merged
        # ReFrame gives the job its task counts only at submission; a skipped case's command needs them
        self.job.num_tasks, self.job.num_tasks_per_node = self.num_tasks, self.num_tasks_per_node
        if p.failure:
            self._iolab_record(status="failed", error=p.failure)
            raise ReframeError(f"iolab: {p.failure}")
        if p.unrunnable:
            _not_runnable(self, "; ".join(p.unrunnable), part)

    def run(self):
        # inside an allocation: a step that would outlive it is not started (allocation.py)
        run = recording.for_experiment(self._iolab_exp)
        allocation.check_clock(self.current_partition, self.time_limit, self._iolab_exp.id,
                               run.run_id, len(run.planned) - len(run.recorded))
        return _submit(self, super().run)

    def run_complete(self):
        return self._iolab_guard(super().run_complete, "job failed")

    def run_wait(self):
        result = self._iolab_guard(super().run_wait, "job failed")
        measuring.note_job(_job_note(self)[0], {"stage": self.stagedir, "ended": True})
        # ReFrame frees the partition's job slot when this returns and may start the next job at
        # once: everything iolab does with this case's outputs happens before that.
        if not self._iolab_recorded:
            self._iolab_post_start = time.time()
            out = self._iolab_outcome = _outcome(self)
            self._iolab_record(status=out.status, error=out.error, parsed=out.parsed,
                               observed=out.observed, flags=out.flags)
        return result

    def _iolab_guard(self, stage, what):
        try:
            return stage()
        except Exception as exc:
            self._iolab_record(status="failed", error=f"{what}: {' '.join(str(exc).split())[:500]}")
            # The job's own cleanup never ran; remove the data it left where we can reach it.
            if self.iolab_case_dir and not self.iolab_keep_data():
                shutil.rmtree(self.iolab_case_dir, ignore_errors=True)
            raise

    @sanity_function
    def _iolab_sanity(self):
        out = self._iolab_outcome
        if out is None or out.status != "ok":
            raise SanityError(out.error if out else "iolab did not post-process this case")
        return sn.assert_true(True)

    @run_before("performance")
    def _iolab_perf(self):
        out = self._iolab_outcome
        if out is not None and out.parsed is not None and out.status == "ok":
            self.perf_variables = {m.name: sn.make_performance_function(sn.defer(m.value), m.unit)
                                   for m in out.parsed.metrics}

    def _iolab_record(self, *, status, error=None, parsed=None, observed=None, flags=None):
        if self._iolab_recorded or self.is_dry_run():
            return
        self._iolab_recorded = True
        try:
            recording.record(self, status=status, error=error, parsed=parsed, observed=observed,
                           stage=Path(self.stagedir) if self.stagedir else None, flags=flags)
        except Exception as exc:  # noqa: BLE001 - a bug here must not lose the case silently
            getlogger().error(f"iolab: could not record {self.case} rep {self.repetition}: {exc!r}")
            raise SanityError(f"iolab could not store this case's record: {exc!r}") from exc


def _job_note(test) -> tuple[str, dict]:
    """The measurement lock's key of a case's job, and what its session notes about the job."""
    part = test.current_partition
    scheduler = part.scheduler.registered_name
    return measuring.key_of(scheduler, part.fullname), {
        "stage": test.stagedir, "scheduler": scheduler, "system": part.fullname,
        "experiment": test._iolab_exp.id, "run": recording.for_experiment(test._iolab_exp).run_id,
        "case": test._iolab_case.case_id, "rep": test.repetition, "pid": os.getpid()}


def _submit(test, submit):
    """The job submitted, noted before submission (a kill right after sbatch still leaves the
    stage directory to find the job by) and with its id after: leftovers.py."""
    key, note = _job_note(test)
    measuring.note_job(key, note)
    result = test._iolab_guard(submit, "job submission failed")
    measuring.note_job(key, {"stage": note["stage"], "jobid": str(test.job.jobid)})
    return result


def _outcome(test):
    """The case's outcome from its stage directory, with who else was on its nodes while it
    measured: a witness, and a flag on the row."""
    stage = Path(test.stagedir)
    out = observe.outcome(stage, test._iolab_case, benchmarks.get(test._iolab_case.benchmark),
                          test._iolab_plan, test._iolab_exp.verify)
    part = test.current_partition
    # a step of an allocation: the allocation is the Slurm job that others are set against
    alloc = allocation.of(part)
    seen = witness.of_job(QUEUED_BY_SLURM[0] if alloc else part.scheduler.registered_name,
                          alloc or test.job.jobid, recording.nodelist(stage, test.job),
                          recording.timing(stage, None))
    if seen is not None:
        out.observed[witness.OVERLAP] = seen
        out.flags = out.flags + overlap_flags(seen)
    return out


# No deprecated `variables` alias: see internals.drop_variables_alias.
internals.drop_variables_alias(IolabTest)
