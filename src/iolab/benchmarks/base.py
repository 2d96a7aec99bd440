"""What every benchmark descriptor is (see the package's docstring): the Benchmark base class,
the RunSpec of one case's run, the metrics a parser yields."""

from __future__ import annotations

import fnmatch
import functools
import json
import shlex
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

def flag_of(arg: str) -> str:
    """The option an argument sets: `--name` (without `=value`), or the two-character `-x`."""
    return arg.split("=", 1)[0] if arg.startswith("--") else arg[:2]


def extra_arg_problem(arg: str, owned: dict, rejected: dict) -> str | None:
    """Why an `extra_args` item cannot be passed: a flag iolab sets from a typed parameter
    (owned: flag -> parameter) or one the benchmark's run cannot take (rejected: flag -> why)."""
    flag = flag_of(arg)
    if flag in rejected:
        return f"extra_args {arg!r}: {rejected[flag]}"
    if flag in owned:
        return f"extra_args {arg!r}: use the parameter {owned[flag]!r} instead"
    return None


@dataclass
class RunSpec:
    """Everything needed to run one case, independent of ReFrame."""

    executable: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)     # variables iolab sets for the benchmark
    files: dict[str, str] = field(default_factory=dict)   # stage-relative name -> rendered content
    outputs: list[str] = field(default_factory=list)      # stage-relative files kept with results
    mpi: bool = True                                      # launched with the MPI launcher
    workdir: str | None = None    # run there, not in the stage dir (for files a benchmark
                                  # names itself in its working directory)
    # Files (of `files`) that name a location known only in the job ($DW_JOB_STRIPED/...): the
    # job writes them, with that path expanded (shell.write_file): name -> (the path, the
    # longest line the program reads whole, or None)
    job_files: dict[str, tuple[str, int | None]] = field(default_factory=dict)

    @property
    def command(self) -> str:
        return " ".join(shlex.quote(a) for a in [self.executable, *self.args])


@dataclass(frozen=True)
class MetricSpec:
    """A metric a benchmark's parsers yield: its name (or an fnmatch pattern such as `*_bw`), its
    unit, and which side is better: 'higher' (bandwidth, rates), 'lower' (times) or None (sizes,
    spreads, counts)."""

    name: str
    unit: str
    better: str | None = "higher"
    description: str = ""

    def matches(self, metric: str) -> bool:
        return fnmatch.fnmatchcase(metric, self.name)


class Benchmark:
    name = ""
    executable = ""                      # the binary of most cases (see binaries)
    binaries: tuple[str, ...] = ()       # every binary a case may run
    spack_package = ""                   # the Spack package that provides the binaries
    links: tuple[str, ...] = ()          # libraries its recipe links (HDF5, PnetCDF): their modules
    table_metrics: tuple[str, ...] = ()  # the metrics a table shows unless told otherwise
    metrics: tuple[MetricSpec, ...] = ()  # every metric its parsers yield (first match wins)
    # Parameters that set how much one case writes (a laptop profile differs from a study here).
    size_params: tuple[str, ...] = ()
    # What the benchmark echoes of one parameter each: its name for it -> iolab's parameter
    # (`iolab import` fills parameters not given from these and checks the given ones).
    echo_params: dict[str, str] = {}
    # More of the same that only `iolab import` takes and checks: what a benchmark's command line
    # states of a parameter that a case's own check does not need (iolab built its arguments).
    imported_echo: dict[str, str] = {}

    # The benchmark's own options that run a program, load code, or name a path (which may lie
    # outside the case directory): the name an experiment's `allow:` gives -> what it does. In
    # raw options (extra_args) they are refused at load unless the experiment allows them by
    # name; a case that uses an allowed one says so in its record (guarded_in).
    guarded_options: dict[str, str] = {}

    def guarded_arg(self, arg: str, previous: str | None) -> str | None:
        """The guarded option one extra_args item sets (as `allow:` names it), or None; previous:
        the item before it (an option whose value this may be)."""
        name = flag_of(arg)
        name = name[2:] if name.startswith("--") else name     # --name as `allow: [name]`
        return name if name in self.guarded_options else None

    def guarded(self, key: str, value) -> list[tuple[int | None, str]]:
        """The guarded options a parameter's value sets: (its index in a list value, or None;
        the option's name)."""
        if key != "extra_args" or not isinstance(value, list):
            return []
        out = []
        for i, arg in enumerate(value):
            name = self.guarded_arg(str(arg), str(value[i - 1]) if i else None)
            if name is not None:
                out.append((i, name))
        return out

    def guarded_in(self, params: dict) -> dict[str, str]:
        """Every guarded option a case's parameters set (allowed, or it would not have loaded):
        name -> what it does."""
        return {name: self.guarded_options[name] for key, value in params.items()
                for _, name in self.guarded(key, value)}

    @functools.cached_property
    def params_schema(self) -> dict:
        """This benchmark's part of the experiment schema ($defs.params.<name>), from <name>.json."""
        text = resources.files(__package__).joinpath(f"{self.name}.json").read_text()
        return json.loads(text)

    def metric(self, name: str) -> MetricSpec | None:
        """The declared spec of a metric this benchmark yields (None: not declared)."""
        return next((m for m in self.metrics if m.matches(name)), None)

    def reported(self, params: dict) -> tuple[str, ...] | None:
        """Every metric a case with these resolved parameters reports, by name, as its parsers
        name them; None where only the run can tell (the patterns of `metrics` then bound it)."""
        return None

    def check(self, case) -> str | None:
        """A reason this case cannot run, found before anything is submitted."""
        return None

    def bytes_written(self, case) -> int:
        raise NotImplementedError

    def file_size(self, params: dict) -> int | None:
        """Bytes in one file after one write phase, where that is a property of the case."""
        return None

    def through_mpi_io(self, case) -> bool:
        """Whether this case opens files through MPI-IO (so hints apply and are verified)."""
        return False

    def produces(self, case) -> str | None:
        """For a write case: a key naming the data it leaves for later read cases."""
        return None

    def consumes(self, case) -> str | None:
        """For a read case: the key of the data it needs (written by another case)."""
        return None

    def run_spec(self, case, case_dir: str, hints: dict | None = None, show_hints: bool = False,
                 keep_files: bool = False, input_dir: str | None = None) -> RunSpec:
        raise NotImplementedError

    def parse_outputs(self, stage: Path, spec: RunSpec):
        raise NotImplementedError

    def parse_files(self, paths: list[Path]):
        """`iolab parse` and `iolab import`: auto-detect the format of each file."""
        raise NotImplementedError

    def requested_echo(self, case, spec: RunSpec | None) -> dict:
        """What the benchmark must say it ran for this case, under its own names (echo.py)."""
        return {ek: case.params[pk] for ek, pk in self.echo_params.items() if pk in case.params}

    def check_echo(self, parsed, case, spec: RunSpec) -> str | None:
        from ..parsers.echo import check

        return check(self.requested_echo(case, spec), parsed.echo)

    def error_lines(self, stdout: str, stderr: str, spec: RunSpec) -> list[str]:
        """The benchmark's own error lines (failure.explain quotes the first ones)."""
        return []

    # (layers.base.EvidenceSpec) what its own figures say that may explain a result (issue 39);
    # each reads a Measured
    evidence_specs: tuple = ()

    def evidence(self, metrics: dict[str, float], echo: dict | None, params: dict) -> list:
        """Each of evidence_specs for an ok record: a value, or not recorded with why."""
        from ..layers.base import gather

        return gather(self.evidence_specs, Measured(metrics, echo or {}, params),
                      f"the {self.name} record")


@dataclass(frozen=True)
class Measured:
    """What a benchmark's evidence reads of one record: its metrics (name -> value), what the
    benchmark echoed of its parameters, and the case's parameters."""

    metrics: dict
    echo: dict
    params: dict

    def metric(self, name: str) -> float:
        if name not in self.metrics:
            from ..layers.base import NotRecorded

            raise NotRecorded(f"the record has no {name}")
        return self.metrics[name]


def job_streams(bench: Benchmark, stage: Path, spec: RunSpec, label: str) -> tuple[str, str]:
    """The job's stdout and stderr; the benchmark's own error lines in them (error_lines) fail
    the case, quoted, even when it exited 0."""
    from ..errors import ParseError

    stdout = read_output(stage / "rfm_job.out", "stdout")
    stderr = read_output(stage / "rfm_job.err", "stderr")
    bad = bench.error_lines(stdout, stderr, spec)
    if bad:
        raise ParseError(f"{label} reported an error: " + " | ".join(bad[:3]))
    return stdout, stderr


def read_output(path: Path, what: str) -> str:
    from ..errors import ParseError

    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        raise ParseError(f"{what} {path.name} is missing: the benchmark did not write it") from None
