"""The one ReFrame test class every experiment's cases run through.

Generated shims create a subclass per experiment with two parameters, `case` and `repetition`.
Site facts (scratch root, cores per node, MPI flavour, launcher options) come from the
partition's `extras['iolab']`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import run_after, run_before, sanity_function, variable
from reframe.core.exceptions import ReframeError, SanityError
from reframe.core.logging import getlogger

from .. import echo, failure, lustre, mpiio, shell
from ..benchmarks import get as get_benchmark
from ..errors import IolabError
from ..load import Darshan
from ..matrix import describe, hints_of
from ..stack import Stack, spack_packages
from ..stack import from_extras as stack_from_extras
from . import darshan_files, jobshape, session

EXIT_FILE = "iolab-exit-code.txt"
BINARY_FILE = "iolab-binary.txt"
CASEDIR_FILE = "iolab-casedir.txt"
MKDIR_FILE = "iolab-mkdir.txt"
TIMES_FILE = "iolab-times.txt"
NODES_FILE = "iolab-nodes.txt"
MPI_LAUNCHERS = ("mpirun", "mpiexec", "mpirun-openmpi")
DEFAULT_FLAVOUR = "openmpi-ompio"
# Where each storage target's case directories go, unless the partition's extras say otherwise.
STORAGE_DEFAULTS = {"scratch": "/tmp/iolab-scratch", "burst_buffer": None, "node_local": "/tmp"}
STORAGE_KEYS = {"scratch": "scratch", "burst_buffer": "burst_buffer", "node_local": "node_local"}


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
    _iolab_param_vars: dict = {}    # loggable variable name -> parameter key

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
        for name, key in self._iolab_param_vars.items():
            value = case.params.get(key)
            setattr(self, name, "" if value is None else str(value))
        self.executable = get_benchmark(case.benchmark).executable
        self.sourcesdir = None
        self._iolab_recorded = False
        self._iolab_env = {}            # what iolab exported for the job, as values (provenance)
        self._iolab_hints = None
        self._iolab_spec = None
        self._iolab_input = None
        self._iolab_darshan = None
        writer = self._iolab_producer.get(case.case_id)
        if writer:
            # A read runs after the write (same repetition) whose file it reads.
            self.depends_on(self._iolab_variant(writer, self.repetition))

    @classmethod
    def _iolab_variant(cls, case_id: str, repetition: int) -> str:
        (num,) = cls.get_variant_nums(case=lambda c: c == case_id,
                                      repetition=lambda r: r == repetition)
        return cls.variant_name(num)

    # --- setup: everything is decided here, on the login node, before the job is written ---

    @run_after("setup")
    def _iolab_prepare(self):
        exp, case = self._iolab_exp, self._iolab_case
        extras = self.current_partition.extras.get("iolab", {})
        adapter = get_benchmark(case.benchmark)
        # A case that cannot run here is still prepared in full, so that its record shows the
        # exact command it would have run; it is skipped at the end, with every reason.
        self._iolab_unrunnable = []
        storage = case.get("storage", "scratch")
        base = extras.get(STORAGE_KEYS[storage], STORAGE_DEFAULTS[storage])
        if base is None and storage == "burst_buffer":
            base = "$DW_JOB_STRIPED"  # the job as it would be on a DataWarp system
            if not self.is_dry_run():
                self._iolab_unrunnable.append(
                    f"storage {storage!r}: system {self.current_partition.fullname} declares no "
                    f"burst buffer (extras['iolab']['burst_buffer'])")
        # Variables known here expand now; job-time ones ($DW_JOB_STRIPED) expand in the job.
        base = os.path.expandvars(base)
        run = session.for_experiment(exp)
        self._iolab_case_dir = f"{base}/{exp.id}/{run.run_id}/{case.case_id}-r{self.repetition}"
        req = lustre.requested(case.params)
        on_lustre = self._iolab_check_lustre(base, storage, req)

        hints = {}
        if adapter.uses_mpiio(case):
            hints = self._iolab_translate_hints(case, extras)
        writer = self._iolab_producer.get(case.case_id)
        if writer:
            dep = self.getdep(self._iolab_variant(writer, self.repetition))
            self._iolab_input = {"case_id": writer, "repetition": self.repetition,
                                 "case_dir": dep._iolab_case_dir}
        spec = adapter.run_spec(case, self._iolab_case_dir, hints=hints,
                                show_hints=bool(self._iolab_hints and
                                                self._iolab_hints["verify"] != "unverified"),
                                keep_files=bool(req) and on_lustre,
                                input_dir=self._iolab_input["case_dir"] if self._iolab_input else None)
        self._iolab_spec = spec
        self._iolab_stack = stack = self._iolab_use_stack(extras, case.benchmark)
        if not self.is_dry_run() and stack.available(spec.executable, case.benchmark) is False:
            where = {"prefix": f"in {stack.prefix}/bin or on PATH", "path": "on PATH",
                     "modules": "on PATH, and no module is configured for it"}[stack.provider]
            self._iolab_unrunnable.append(
                f"benchmark binary {spec.executable!r} not found {where}; provide it with Spack "
                f"(spack.yaml), a module, or a prefix (see README)")

        stage = Path(self.stagedir)
        for name, text in {**spec.files, **(self._iolab_hints or {}).get("files", {})}.items():
            (stage / name).write_text(text)
        # ReFrame joins executable and options with spaces: each is made one literal word here.
        self.executable = shell.word(spec.executable, "executable")
        self.executable_opts = shell.words(spec.args, "benchmark argument")
        self._iolab_export(spec.env)
        d = shell.path_word(self._iolab_case_dir, "case directory")
        exe = shell.word(spec.executable)
        self.prerun_cmds = [
            # a case directory that cannot be made stops the job before the benchmark, with why
            f"mkdir -p {d} 2> {MKDIR_FILE} || "
            + shell.stop_job(f"cannot create the case directory {self._iolab_case_dir}", MKDIR_FILE),
            f"printf '%s\\n' {d} > {CASEDIR_FILE}",
            *lustre.prerun_lines(self._iolab_case_dir, req,
                                 stop_on_failure=self._iolab_exp.verify.layout == "fail"),
            # which binary ran, and its checksum: versions are not always printed
            f"{{ command -v {exe} && sha256sum \"$(command -v {exe})\"; }} > {BINARY_FILE}",
            # the nodes the scheduler gave the job, as the job sees them (Slurm)
            f"printf '%s\\n' \"${{SLURM_JOB_NODELIST:-}}\" > {NODES_FILE}"]
        # $? of the benchmark must be read first, before any other command runs.
        self.postrun_cmds = [f"echo $? > {EXIT_FILE}"]
        if spec.workdir:
            # the benchmark runs where it writes; the job's own files stay in the stage dir
            self.prerun_cmds.append(f"cd {shell.path_word(spec.workdir, 'working directory')}")
            self.postrun_cmds = [f"iolab_rc=$?; cd - >/dev/null; echo $iolab_rc > {EXIT_FILE}"]
        # When the benchmark itself started and ended (bash's clock, no process forked).
        times = shell.word(str(stage / TIMES_FILE))
        self.prerun_cmds.append(f"printf '%s\\n' \"${{EPOCHREALTIME:-$(date +%s.%N)}}\" > {times}")
        self.postrun_cmds.insert(1, f"printf '%s\\n' \"${{EPOCHREALTIME:-$(date +%s.%N)}}\" >> {times}")
        if req:
            self.postrun_cmds += lustre.postrun_lines(self._iolab_case_dir)
        # A write whose file later reads use keeps it; iolab removes it after the last of them.
        if not self._iolab_keep_data() and case.case_id not in self._iolab_consumers:
            self.postrun_cmds.append(f"rm -rf {d}")
        self._iolab_shape_job(case, spec, extras)
        self._iolab_instrument(case, spec, extras)
        # ReFrame gives the job its task counts only when it submits it; the command a skipped
        # case records needs them now
        self.job.num_tasks, self.job.num_tasks_per_node = self.num_tasks, self.num_tasks_per_node
        if self._iolab_unrunnable:
            self._iolab_skip("; ".join(self._iolab_unrunnable))

    def _iolab_check_lustre(self, base: str, storage: str, req: dict) -> bool:
        """Before submission: require_lustre, and a stripe count above the OST count.

        Returns whether the case directory will (probably) be on Lustre: paths that only exist
        at job time ($DW_JOB_STRIPED) count as yes; the job checks again before it stripes.
        """
        if "$" in base:
            return True
        if not (req or self._iolab_exp.require_lustre):
            return False
        fstype = lustre.detect_fstype(base)
        if self._iolab_exp.require_lustre and fstype != "lustre":
            self._iolab_unrunnable.append(f"require_lustre: {storage} ({base}) is {fstype}, not Lustre")
        if req and fstype == "lustre" and shutil.which("lfs"):
            out = subprocess.run(["lfs", "df", base], capture_output=True, text=True, timeout=60)
            try:
                osts = lustre.parse_lfs_df(out.stdout)
            except ValueError:
                return True
            problem = lustre.check_request(req, osts)
            if problem:
                self._iolab_fail(problem)
        return fstype == "lustre"

    def _iolab_translate_hints(self, case, extras) -> dict[str, str]:
        flavour = extras.get("mpi_flavour", DEFAULT_FLAVOUR)
        hints = hints_of(case)
        launcher = self.current_partition.launcher_type.registered_name
        try:
            plan = mpiio.translate(hints, flavour, launcher)
        except IolabError as exc:
            self._iolab_unrunnable.append(f"MPI flavour {flavour}: {exc}")
            plan = mpiio.HintPlan()
        self._iolab_export(plan.env)
        self.job.launcher.options += plan.launcher_options
        self._iolab_hints = {"flavour": flavour, "requested": hints, "verify": plan.verify,
                             "notes": plan.notes, "files": plan.files}
        return hints

    def _iolab_export(self, env: dict, shell_ready: bool = False) -> None:
        """Variables for the job script. ReFrame writes `export NAME=value` as given, so values
        are quoted here (shell_ready: already shell words, e.g. PATH with "$PATH")."""
        for name, value in env.items():
            self.env_vars[name] = value if shell_ready else shell.assignment_value(value, name)
            self._iolab_env[name] = value

    def _iolab_shape_job(self, case, spec, extras) -> None:
        if not spec.mpi:
            self.job.launcher = getlauncher("local")()
        else:
            self.job.launcher.options += list(extras.get("launcher_options", []))
            if self.current_partition.launcher_type.registered_name in MPI_LAUNCHERS:
                cores = extras.get("cores_per_node")
                if cores and case.tasks_per_node > int(cores):
                    self.job.launcher.options += ["--oversubscribe"]
        # Directives and resources the scheduler would drop without a word are refused instead.
        problem = (jobshape.check_directives(self.current_partition, case.job.extra_directives)
                   or jobshape.check_resources(self.current_partition, case.job.resources))
        if problem:
            self._iolab_fail(problem)
        # Lines such as '#DW jobdw ...' go verbatim into the preamble (ReFrame keeps '#WORD' options).
        self.job.options += list(case.job.extra_directives)
        if case.job.resources:
            # Merge, never replace: -S may have set some already.
            merged = dict(self.extra_resources)
            for name, values in case.job.resources.items():
                merged[name] = {**merged.get(name, {}), **{k: str(v) for k, v in values.items()}}
            self.extra_resources = merged

    def _iolab_use_stack(self, extras, benchmark) -> Stack:
        """Make the stack's binaries visible to the job: PATH for a prefix, modules, or a load
        from the Spack environment the partition's fixture built."""
        try:
            stack = stack_from_extras(extras)
        except IolabError as exc:
            self._iolab_fail(f"system config: {exc}")
        self._iolab_export(stack.env(), shell_ready=True)
        self.modules = stack.modules_for(benchmark, darshan=self._iolab_darshan_conf(extras).enabled)
        if stack.provider == "spack":
            fixture = getattr(self, "iolab_stack", None)
            if fixture is not None:
                # ReFrame's Spack build system, run-only: the job gets
                # eval `spack -e <env> load --sh <package>` from the fixture's environment
                stack.spack_env = fixture.env_path
                self.build_system = "Spack"
                self.build_system.environment = fixture.env_path
                self.build_system.specs = [spack_packages()[benchmark]]
        return stack

    def _iolab_darshan_conf(self, extras) -> Darshan:
        return self._iolab_exp.darshan or Darshan(**(extras.get("darshan") or {}))

    def _iolab_instrument(self, case, spec, extras) -> None:
        """Darshan, when the experiment (or the system, by default) asks for it. LD_PRELOAD goes
        to the application only, through the launcher, never to the job's shell or mpirun."""
        conf = self._iolab_darshan_conf(extras)
        if not conf.enabled:
            return
        preload = self._iolab_stack.darshan_preload()
        if preload is None:
            self._iolab_darshan = {"status": "not available",
                                   "reason": f"no darshan-runtime in the {self._iolab_stack.provider} "
                                             f"stack (set extras['iolab']['stack']['darshan_lib'])"}
            return
        lib, lib_word = preload
        env = {"DARSHAN_LOGFILE": str(Path(self.stagedir) / darshan_files.LOG),
               # Darshan 3.4's default log hints corrupt logs under Open MPI's ompio (#1000/#1064).
               "DARSHAN_LOGHINTS": darshan_files.LOGHINTS}
        if not spec.mpi:
            env["DARSHAN_ENABLE_NONMPI"] = "1"
        if conf.dxt:
            env["DARSHAN_MOD_ENABLE"] = "DXT_POSIX,DXT_MPIIO"
        self._iolab_export(env)
        launcher = self.job.launcher.registered_name if hasattr(self.job.launcher, "registered_name") \
            else type(self.job.launcher).__name__
        exe = shell.word(spec.executable)
        if not spec.mpi:
            self.executable = f"LD_PRELOAD={lib_word} {exe}"
        elif launcher in MPI_LAUNCHERS:
            self.job.launcher.options += ["-x", f"LD_PRELOAD={lib_word}",
                                          *[o for k in sorted(env) for o in ("-x", k)]]
        elif launcher == "srun":
            self.job.launcher.options += [f"--export=ALL,LD_PRELOAD={lib_word}"]
        else:
            self.executable = f"env LD_PRELOAD={lib_word} {exe}"
        self._iolab_darshan = {"status": "enabled", "lib": lib, "dxt": conf.dxt, "env": env}

    def _iolab_skip(self, reason: str):
        """The case cannot run here. It is recorded as skipped with the reason, and the ReFrame
        run fails with it: a run that did not do what was asked never ends as PASSED."""
        self._iolab_record(status="skipped", error=reason)
        raise ReframeError(f"iolab: not run: {reason}")

    def _iolab_fail(self, reason: str):
        self._iolab_record(status="failed", error=reason)
        raise ReframeError(f"iolab: {reason}")

    # --- run: failures of the job itself surface in these stages ---

    def run(self):
        return self._iolab_guard(super().run, "job submission failed")

    def run_complete(self):
        return self._iolab_guard(super().run_complete, "job failed")

    def run_wait(self):
        result = self._iolab_guard(super().run_wait, "job failed")
        # ReFrame frees the partition's job slot when this returns, and may start the next job
        # at once: everything iolab does with this case's outputs happens before that.
        self._iolab_postprocess()
        return result

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

    # --- sanity: parse, observe, compare, record ---

    def _iolab_postprocess(self):
        """Parse, observe, compare and record, while this case still holds its job slot."""
        if self._iolab_recorded:
            return
        case = self._iolab_case
        adapter = get_benchmark(case.benchmark)
        stage = Path(self.stagedir)
        self._iolab_post_start = time.time()
        observed, flags, parsed = self._iolab_observe(stage), [], None
        try:
            code = _read(stage / EXIT_FILE)
            if code is None:
                raise IolabError(_read(stage / shell.JOB_ERROR_FILE) or
                                 "the job did not reach the end of its script (no exit code)"
                                 + _last_line(stage / "rfm_job.err"))
            if code != "0":
                out, err = _read(stage / "rfm_job.out") or "", _read(stage / "rfm_job.err") or ""
                raise IolabError(failure.explain(self._iolab_spec.executable, code,
                                                 adapter.error_lines(out, err, self._iolab_spec),
                                                 out, err))
            parsed = adapter.parse_outputs(stage, self._iolab_spec)
            observed["benchmark"] = parsed.echo
            problem = adapter.check_echo(parsed, case, self._iolab_spec)
            if problem:
                raise IolabError(problem)
            flags = session.describe_flags(observed)
            failing = self._iolab_failing(observed)
            if failing:
                raise IolabError(failing)
        except IolabError as exc:
            self._iolab_outcome = str(exc)
            self._iolab_record(status="failed", error=str(exc), parsed=parsed, observed=observed,
                               flags=flags or session.describe_flags(observed))
            return
        self._iolab_parsed = parsed
        self._iolab_outcome = None
        self._iolab_record(status="ok", parsed=parsed, observed=observed, flags=flags)

    @sanity_function
    def _iolab_sanity(self):
        outcome = getattr(self, "_iolab_outcome", "iolab did not post-process this case")
        if outcome is not None:
            raise SanityError(outcome)
        return sn.assert_true(True)

    def _iolab_observe(self, stage: Path) -> dict:
        observed = {"storage": {"target": self._iolab_case.get("storage", "scratch"),
                                "path": _read(stage / CASEDIR_FILE)}}
        observed["lustre"] = lustre.observed(stage, lustre.requested(self._iolab_case.params))
        out, err = _read(stage / "rfm_job.out"), _read(stage / "rfm_job.err")
        replay = echo.replayed(err, out)
        if replay:
            observed["replayed"] = replay       # a test stand-in's replay: never a measurement
        if self._iolab_hints:
            h = self._iolab_hints
            text = (out or "") + "\n" + (err or "")
            effective = mpiio.effective_hints(text, h["flavour"])
            observed["mpiio_hints"] = {
                "flavour": h["flavour"], "verify": h["verify"], "requested": h["requested"],
                "effective": effective,
                "comparison": mpiio.compare_hints(h["requested"], effective, mpiio.not_applicable(
                    h["requested"], observed["lustre"].get("fs_type"))),
                "echo": mpiio.parse_ior_showhints(text), "notes": h["notes"]}
        if self._iolab_darshan is not None:
            observed["darshan"] = self._iolab_observe_darshan(stage, observed)
        return observed

    def _iolab_observe_darshan(self, stage: Path, observed: dict) -> dict:
        """Summary, findings and observed aggregators from the case's Darshan log; its Lustre
        records are a second witness of the layout, next to lfs getstripe."""
        from .. import darshan

        info = dict(self._iolab_darshan)
        if info["status"] != "enabled":
            return info
        log = stage / darshan_files.LOG
        if not log.is_file():
            return {**info, "status": "no log",
                    "reason": f"the job wrote no {darshan_files.LOG} (was libdarshan.so preloaded?)"}
        try:
            own = [str(stage / n) for n in (*self._iolab_spec.files, *self._iolab_spec.outputs,
                                             *(self._iolab_hints or {}).get("files", {}))]
            summary = darshan.summarize(log, own_files=own)
        except IolabError as exc:          # PyDarshan itself is missing
            return {**info, "status": "unreadable", "reason": str(exc)}
        if summary["status"] != "ok":
            return {**info, "status": "unreadable", "reason": summary.get("reason")}
        params = self._iolab_case.params
        hints = (observed.get("mpiio_hints") or {}).get("requested") or {}
        cb_nodes = int(hints["cb_nodes"]) if str(hints.get("cb_nodes", "")).isdigit() else None
        requested = {"collective": params.get("collective"), "cb_nodes": cb_nodes,
                     "api": params.get("api")}
        out = {**info, "status": "ok", "summary": summary,
               "findings": darshan.findings(summary, requested),
               "aggregators": darshan.observed_aggregators(summary, cb_nodes)}
        req = lustre.requested(params)
        layouts = darshan.lustre_layouts(summary)
        if req and layouts:
            lay = observed.get("lustre", {})
            out["lustre_witness"] = lustre.compare_layout(req, layouts, lay.get("ost_count"))
        return out

    def _iolab_failing(self, observed: dict) -> str | None:
        """A difference that the experiment says must fail the case."""
        verify = self._iolab_exp.verify
        lay = observed.get("lustre", {})
        if verify.layout == "fail" and lay.get("mismatches"):
            return f"Lustre layout not as requested: {lay['reason']}"
        hints = observed.get("mpiio_hints") or {}
        changed = [c for c in hints.get("comparison", []) if c["status"] in ("changed", "missing")]
        if verify.hints == "fail" and changed:
            return "MPI-IO hints not applied: " + "; ".join(
                f"{c['key']} requested {c['requested']}, effective {c['effective']}" for c in changed)
        return None

    @run_before("performance")
    def _iolab_perf(self):
        parsed = getattr(self, "_iolab_parsed", None)
        if parsed is None:
            return
        self.perf_variables = {
            m.name: sn.make_performance_function(sn.defer(m.value), m.unit) for m in parsed.metrics}

    def _iolab_record(self, *, status, error=None, parsed=None, observed=None, flags=None):
        if self._iolab_recorded or self.is_dry_run():
            return
        self._iolab_recorded = True
        stage = Path(self.stagedir) if self.stagedir else None
        try:
            session.record(self, status=status, error=error, parsed=parsed, stage=stage,
                           observed=observed, flags=flags)
        except Exception as exc:  # noqa: BLE001 - a bug here must not lose the case silently
            getlogger().error(f"iolab: could not record {self.case} rep {self.repetition}: {exc!r}")
            raise SanityError(f"iolab could not store this case's record: {exc!r}") from exc


class BrokenExperiment(rfm.RunOnlyRegressionTest):
    """Stands for an experiment that could not be loaded (register.py names a subclass after it):
    it fails at setup with the reason, on any system, so the run cannot end as PASSED."""

    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    executable = "true"
    iolab_error = variable(str, value="")

    @run_after("init")
    def _iolab_describe(self):
        self.descr = f"cannot run: {self.iolab_error}"

    @run_before("setup")
    def _iolab_refuse(self):
        raise ReframeError(f"iolab: {self.iolab_error}")

    @sanity_function
    def _iolab_never(self):
        return sn.assert_true(False, msg=f"iolab: {self.iolab_error}")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:500]


def _last_line(path: Path) -> str:
    text = _read(path)
    return f": {failure.shorten(text.splitlines()[-1])}" if text else ""


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None
