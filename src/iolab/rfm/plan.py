"""Everything a case's job is, decided on the login node before it is written: a JobPlan.

It composes the parts: what each layer of the I/O stack adds (layers/: where the case's directory
is and its layout, the MPI-IO hints, Darshan), where the binaries come from (software), how the
launcher passes the environment to the ranks (launch), the lines around the benchmark
(jobscript), and what the scheduler can take of the experiment's job section (jobshape).
IolabTest only applies the plan to ReFrame; nothing here needs ReFrame.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import benchmarks, shell
from ..benchmarks import RunSpec
from ..experiment.site import SiteConfig
from ..layers.base import Contribution, PlanContext
from ..layers.registry import registry
from ..software import Stack, spack_packages
from . import allocation, jobscript, jobshape, launch


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
    case_dir: str                     # the case's fresh directory (job-time variables left)
    spec: RunSpec
    stack: Stack | None
    starts: dict = field(default_factory=dict)  # layer name -> what its observation starts from
    input: dict | None = None         # the write case whose data a read uses
    executable: str = ""              # shell text
    args: list[str] = field(default_factory=list)          # shell words
    env: dict[str, str] = field(default_factory=dict)      # name -> shell text, for the script
    env_values: dict[str, str] = field(default_factory=dict)  # name -> value, for the record
    files: dict[str, str] = field(default_factory=dict)    # stage-relative name -> content
    layer_files: list[str] = field(default_factory=list)   # of those, the layers' own
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
        return [*self.spec.files, *self.spec.outputs, *self.layer_files]


def plan(case, exp, *, repetition: int, run_id: str, stage: Path, partition: Partition,
         producer_dir: str | None, keep_data: bool, consumed: bool, dry_run: bool,
         spack_env: str | None = None) -> JobPlan:
    """The job of one case and repetition. A case that cannot run here is still planned in full,
    so that its record shows the exact command it would have run (see `unrunnable`)."""
    site = partition.site
    bench = benchmarks.get(case.benchmark)
    policy = launch.policy(site.mpi_runtime, partition.launcher)
    ctx = PlanContext(exp, site, partition.name, run_id, repetition, stage, dry_run, bench, policy)
    # Before the benchmark's command: where its directory is, what the command must be told.
    asked: dict[str, Contribution] = {}
    for layer in registry():
        asked[layer.name] = part = layer.request(case, ctx)
        if part.case_dir:
            ctx = replace(ctx, case_dir=part.case_dir)
    options = {"hints": {}, "show_hints": False, "keep_files": False}
    for part in asked.values():
        options.update(part.spec_options)
    # data kept on request (IOLAB_KEEP_DATA, keep_data:) is kept by the benchmark too: IOR
    # removes its own file at the end unless told -k
    options["keep_files"] = options["keep_files"] or keep_data
    spec = bench.run_spec(case, ctx.case_dir, input_dir=producer_dir, **options)
    # in an allocation every benchmark is a step: a program that is not MPI too (one task), or
    # the shell would run it where ReFrame runs, not on a node of the allocation
    in_step = partition.launcher == allocation.LAUNCHER
    launched = spec.mpi or in_step
    out = JobPlan(ctx.case_dir, spec, None, local_launcher=not launched,
                  unrunnable=[r for part in asked.values() for r in part.unrunnable],
                  failure=next((p.failure for p in asked.values() if p.failure), None),
                  files=dict(spec.files), starts={n: p.start for n, p in asked.items()})
    for part in asked.values():
        out.files.update(part.files)
        out.layer_files += list(part.files)
    out.executable = shell.word(spec.executable, "executable")
    out.args = shell.words(spec.args, "benchmark argument")
    out.export(spec.env)
    for part in asked.values():
        out.export(part.env)

    out.stack = stack = site.stack if spack_env is None else replace(site.stack, spack_env=spack_env)
    if spack_env is not None:
        out.spack_spec = spack_packages()[case.benchmark]
    out.export(stack.env(), shell_ready=True)
    out.modules = stack.modules_for(case.benchmark, [p for part in asked.values() for p in part.packages])
    if not dry_run and stack.available(spec.executable, case.benchmark) is False:
        where = {"prefix": f"in {stack.prefix}/bin or on PATH", "path": "on PATH",
                 "modules": "on PATH, and no module is configured for it"}[stack.provider]
        out.unrunnable.append(f"benchmark binary {spec.executable!r} not found {where}; provide it "
                              f"with Spack (spack.yaml), a module, or a prefix (see docs/benchmarks.md)")

    # Around it: each layer's lines, environment and launcher options, in the layers' order.
    ctx = replace(ctx, stack=stack, policy=policy if launched else launch.UNLAUNCHED)
    around = {layer.name: layer.wrap(case, ctx, spec, asked[layer.name].start) for layer in registry()}
    # a step of an allocation: on the allocation's first nodes, named in the record
    step = allocation.step(case.num_tasks // case.tasks_per_node) if in_step else None
    out.prerun, out.postrun = jobscript.lines(
        ctx.case_dir, spec, stage, [line for part in around.values() for line in part.prerun],
        [line for part in around.values() for line in part.postrun],
        remove_data=not keep_data and not consumed, nodes=step[:2] if step else None)
    out.launcher_options += step[2] if step else []
    if spec.mpi:
        out.launcher_options += list(site.launcher_options)
        cores = site.cores_per_node
        if cores and case.tasks_per_node > cores:
            out.launcher_options += list(policy.oversubscribe)
    # Directives and resources the scheduler would drop without a word are refused instead.
    out.failure = out.failure or (
        jobshape.check_directives(partition.scheduler, partition.name, case.job.extra_directives)
        or jobshape.check_resources(partition.name, partition.resources, case.job.resources))

    out.failure = out.failure or next((p.failure for p in around.values() if p.failure), None)
    for name, part in around.items():
        if part.start is not None:
            out.starts[name] = part.start
        out.export(part.env)
        out.launcher_options += part.launcher_options
        if part.prefix:
            out.executable = f"{part.prefix} {out.executable}"
    if spec.mpi:
        out.launcher_options += policy.forward_options(n for n in out.env_values
                                                        if n not in ("PATH", "LD_LIBRARY_PATH"))
    return out
