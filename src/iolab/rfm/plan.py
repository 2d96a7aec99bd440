"""Everything a case's job is, decided on the login node before it is written: a JobPlan.

It composes the parts: where the case's directory is (storage), how the MPI flavour takes the
hints (mpiio), where the binaries come from (stack), how the launcher passes the environment and
Darshan to the ranks (launch), the lines around the benchmark (jobscript), and what the
scheduler can take of the experiment's job section (jobshape). IolabTest only applies the plan
to ReFrame; nothing here needs ReFrame.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import benchmarks, shell
from ..layers import mpiio
from ..benchmarks import RunSpec
from ..errors import IolabError
from ..experiment.matrix import hints_of
from ..experiment.site import SiteConfig
from ..layers.software import Stack, spack_packages
from ..layers.darshan import preload as darshan
from . import jobscript, jobshape, launch
from ..layers.storage import place as storage


@dataclass(frozen=True)
class Partition:
    """The site facts a plan needs, as ReFrame's partition gives them."""

    name: str                     # fullname, e.g. localslurm:debug
    scheduler: str                # ReFrame's backend name: slurm, local, pbs...
    launcher: str                 # ReFrame's launcher name: mpirun, srun...
    site: SiteConfig              # its extras['iolab'], checked
    resources: dict = field(default_factory=dict)


@dataclass
class JobPlan:
    storage: storage.Storage
    spec: RunSpec
    stack: Stack | None
    hints: dict | None = None         # flavour, requested, verify, notes, files
    darshan: dict | None = None       # observed.darshan's start
    input: dict | None = None         # the write case whose data a read uses
    executable: str = ""              # shell text
    args: list[str] = field(default_factory=list)          # shell words
    env: dict[str, str] = field(default_factory=dict)      # name -> shell text, for the script
    env_values: dict[str, str] = field(default_factory=dict)  # name -> value, for the record
    files: dict[str, str] = field(default_factory=dict)    # stage-relative name -> content
    prerun: list[str] = field(default_factory=list)
    postrun: list[str] = field(default_factory=list)
    launcher_options: list[str] = field(default_factory=list)
    local_launcher: bool = False      # not an MPI program: no MPI launcher
    modules: list[str] = field(default_factory=list)
    spack_spec: str | None = None     # loaded from the Spack environment of the stack fixture
    unrunnable: list[str] = field(default_factory=list)   # reasons to skip, all of them
    failure: str | None = None        # a reason to fail before submission

    def export(self, env: dict, shell_ready: bool = False) -> None:
        """ReFrame writes `export NAME=value` as given: values are made shell words here
        (shell_ready: already shell text, e.g. PATH with "$PATH")."""
        for name, value in env.items():
            self.env[name] = value if shell_ready else shell.assignment_value(value, name)
            self.env_values[name] = value

    @property
    def own_files(self) -> list[str]:
        """iolab's files in the stage directory (inputs, hints, the outputs it asked for)."""
        return [*self.spec.files, *self.spec.outputs, *(self.hints or {}).get("files", {})]


def plan(case, exp, *, repetition: int, run_id: str, stage: Path, partition: Partition,
         producer_dir: str | None, keep_data: bool, consumed: bool, dry_run: bool,
         spack_env: str | None = None) -> JobPlan:
    """The job of one case and repetition. A case that cannot run here is still planned in full,
    so that its record shows the exact command it would have run (see `unrunnable`)."""
    site = partition.site
    bench = benchmarks.get(case.benchmark)
    place = storage.place(case, site, partition.name, experiment=exp.id, run_id=run_id,
                          repetition=repetition, require_lustre=exp.require_lustre, dry_run=dry_run)
    flavour = mpiio.flavour(site.mpi_flavour)
    policy = launch.policy(flavour.runtime, partition.launcher)
    hints, plan_hints = None, mpiio.HintPlan()
    unrunnable = list(place.unrunnable)
    if bench.uses_mpiio(case):
        requested = hints_of(case)
        try:
            plan_hints = flavour.translate(requested)
        except IolabError as exc:
            unrunnable.append(f"MPI flavour {flavour.name}: {exc}")
        hints = {"flavour": flavour.name, "requested": requested, "verify": plan_hints.verify,
                 "notes": plan_hints.notes, "files": plan_hints.files}
    req = case.striping
    spec = bench.run_spec(case, place.case_dir, hints=hints["requested"] if hints else {},
                          show_hints=bool(hints and hints["verify"] != "unverified"),
                          keep_files=bool(req) and place.on_lustre, input_dir=producer_dir)
    out = JobPlan(place, spec, None, hints=hints, unrunnable=unrunnable, failure=place.failure,
                  files={**spec.files, **plan_hints.files}, local_launcher=not spec.mpi)
    out.executable = shell.word(spec.executable, "executable")
    out.args = shell.words(spec.args, "benchmark argument")
    out.export(spec.env)
    out.export(plan_hints.env)

    conf = exp.darshan or site.darshan
    out.stack = stack = site.stack if spack_env is None else replace(site.stack, spack_env=spack_env)
    if spack_env is not None:
        out.spack_spec = spack_packages()[case.benchmark]
    out.export(stack.env(), shell_ready=True)
    out.modules = stack.modules_for(case.benchmark, darshan=conf.enabled)
    if not dry_run and stack.available(spec.executable, case.benchmark) is False:
        where = {"prefix": f"in {stack.prefix}/bin or on PATH", "path": "on PATH",
                 "modules": "on PATH, and no module is configured for it"}[stack.provider]
        out.unrunnable.append(f"benchmark binary {spec.executable!r} not found {where}; provide it "
                              f"with Spack (spack.yaml), a module, or a prefix (see README)")

    out.prerun, out.postrun = jobscript.lines(
        place.case_dir, spec, stage, req, stop_on_layout_failure=exp.verify.layout == "fail",
        remove_data=not keep_data and not consumed)
    if spec.mpi:
        out.launcher_options += list(site.launcher_options)
        cores = site.cores_per_node
        if cores and case.tasks_per_node > cores:
            out.launcher_options += list(policy.oversubscribe)
    # Directives and resources the scheduler would drop without a word are refused instead.
    out.failure = out.failure or (
        jobshape.check_directives(partition.scheduler, partition.name, case.job.extra_directives)
        or jobshape.check_resources(partition.name, partition.resources, case.job.resources))

    preload = darshan.preload(conf, stack, spec, stage, policy)
    if preload is not None:
        out.darshan = preload.info
        out.export(preload.env)
        out.launcher_options += preload.launcher_options
        if preload.prefix:
            out.executable = f"{preload.prefix} {out.executable}"
    if spec.mpi:
        out.launcher_options += policy.forward_options(n for n in out.env_values
                                                        if n not in ("PATH", "LD_LIBRARY_PATH"))
    return out
