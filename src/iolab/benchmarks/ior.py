"""IOR 4.0.0. Results always go to a JSON summary file; stdout and stderr are kept beside it."""

from __future__ import annotations

from pathlib import Path

from ..parsers import ior_json, ior_text
from ..layers import registry as layers
from ..layers.base import EvidenceSpec, NotRecorded
from ..render import render_template
from ..shell import JobPath
from ..units import ior_size_arg
from .base import Benchmark, MetricSpec, RunSpec, extra_arg_problem, job_streams, read_output

SUMMARY = "ior-summary.json"
HINTS_FILE = "iolab-ior-hints.txt"
_MODULE = {"MPIIO": "mpiio", "HDF5": "hdf5", "NCMPI": "ncmpi"}  # IOR's module option prefixes

# Flags that a typed parameter owns, or that break iolab's output handling.
_OWNED = {
    "-a": "api", "-b": "block_size", "-t": "transfer_size", "-s": "segments",
    "-F": "file_per_process", "-c": "collective", "--collective": "collective",
    "-C": "reorder_tasks", "-e": "fsync", "-i": "iterations", "-w": "write", "-r": "read",
    "-k": "keep_file", "-z": "random_offsets", "-o": "the case directory (iolab sets it)",
    "-D": "stonewall",
}
# IOR directives (-O key=value, keys in any case) that a typed parameter owns
_OWNED_DIRECTIVES = {"stonewallingwearout": "stonewall_wearout"}
_REJECTED = {
    "-U": "IOR 4 removed -U: give hints as mpiio.<hint> parameters",
    "-H": "IOR 4 removed -H: effective hints are collected by iolab",
    "-v": "-v makes IOR 4.0.0 write invalid JSON",
    "-f": "script files run several tests; iolab runs one per case",
}


# Options that name a path (IOR 4.0.0 runs no program of its own): IOR's directives (-O key=value,
# keys in any case) and its modules' hints files. -o is the case directory's (owned above).
_HINTS_FILE = "names a file IOR reads MPI-IO hints from (iolab writes its own from mpiio.* parameters)"
def hints_file(hints: dict[str, str]) -> str:
    """Content of IOR's hints file (--<module>.hintsFileName): `IOR_HINT__MPI__key=value` lines
    of the hints the MPI-IO layer checked."""
    return render_template("ior/hints.j2", hints=dict(sorted(hints.items())))


GUARDED = {
    "testFile": "names the file IOR writes (-O testFile=), in place of the case directory's",
    "hintsFileName": _HINTS_FILE,
    "stoneWallingStatusFile": "names a file IOR writes its stonewalling state to",
    "saveRankPerformanceDetailsCSV": "names a file IOR writes each rank's results to",
    **{f"{module}.hintsFileName": _HINTS_FILE for module in _MODULE.values()},
}
_DIRECTIVES = {name.lower(): name for name in GUARDED if "." not in name}


def _directive_keys(directives: str) -> set[str]:
    """The keys of '-O k=v[,k=v]' as IOR reads them: in any case, around spaces, up to a '#'."""
    return {item.split("=", 1)[0].strip().lower() for item in directives.split("#", 1)[0].split(",")}


def _summary_directive(args: list[str], i: int) -> str | None:
    """The argument that sets IOR's summary file or format: '-O k=v[,k=v]' in one argument or
    two, or '--summaryFile...'."""
    arg = args[i]
    if arg.lower().startswith(("--summaryfile", "--summaryformat")):
        return arg
    if arg == "-O" and i + 1 < len(args):
        arg = args[i + 1]
        directives = arg
    elif arg.startswith("-O"):
        directives = arg[2:]
    else:
        return None
    return arg if _directive_keys(directives) & {"summaryfile", "summaryformat"} else None


def _phase(m, op: str) -> None:
    if m.params.get(op) is False:
        raise NotRecorded(f"the case has no {op} phase")


def _iteration_spread(op: str):
    """(max - min) / mean of the phase's bandwidth over IOR's iterations, in %."""
    def read(m):
        _phase(m, op)
        if m.params.get("iterations", 1) < 2:
            raise NotRecorded("one IOR iteration per job: no spread within it")
        return 100.0 * (m.metric(f"{op}_bw_max") - m.metric(f"{op}_bw_min")) / m.metric(f"{op}_bw")
    return read


def _open_close_share(op: str):
    def read(m):
        _phase(m, op)
        return 100.0 * (m.metric(f"{op}_open_time") + m.metric(f"{op}_close_time")) \
            / m.metric(f"{op}_total_time")
    return read


def _transfer_size(m):
    if "transferSize" not in m.echo:
        raise NotRecorded("IOR's output did not echo its transfer size")
    return m.echo["transferSize"]


def _not_kept(m):
    raise NotRecorded("the record keeps IOR's mean over its iterations, not each one's time")


EVIDENCE = tuple(EvidenceSpec(name, unit, "ior", text, kind, read) for name, unit, text, kind, read in (
    ("request_size", "B", "bytes per request (IOR's transfer size, as it echoed it)", "bytes",
     _transfer_size),
    ("write_iteration_spread", "%", "spread of write bandwidth over IOR's iterations in one job: "
     "(max - min) / mean", "share", _iteration_spread("write")),
    ("read_iteration_spread", "%", "the same for reads", "share", _iteration_spread("read")),
    ("write_open_close_share", "%", "open and close share of the write phase's time", "time_share",
     _open_close_share("write")),
    ("read_open_close_share", "%", "open and close share of the read phase's time", "time_share",
     _open_close_share("read")),
    ("write_slowest_iteration_time", "s", "time of the slowest write iteration", "time", _not_kept),
))


class Ior(Benchmark):
    name = "ior"
    executable = "ior"
    binaries = ("ior",)
    spack_package = "ior"
    links = ("hdf5", "parallel-netcdf")
    table_metrics = ("write_bw", "read_bw")
    size_params = ("block_size", "segments")
    guarded_options = GUARDED
    evidence_specs = EVIDENCE
    metrics = (
        MetricSpec("*_bw_stddev", "MiB/s", None, "spread of bandwidth over IOR's repetitions"),
        MetricSpec("*_stonewall_rank_bw", "MiB/s", "higher",
                   "IOR's StoneWallbwMeanMIB (with stonewall_wearout): the bytes one rank moved by "
                   "the stonewall, on average, over the stonewall time: a per-rank figure"),
        MetricSpec("*_stonewall_bw", "MiB/s", "higher",
                   "all ranks' bytes by the stonewall over the stonewall time: IOR's per-rank "
                   "StoneWallbwMeanMIB times the tasks (with stonewall_wearout)"),
        MetricSpec("*_stonewall_time", "s", None,
                   "IOR's StoneWallTime: seconds until every rank stopped at the stonewall"),
        MetricSpec("*_moved_bytes", "B", None,
                   "bytes the phase moved, wear-out included, over which IOR computes its "
                   "bandwidth (with a stonewall: xsizeMiB)"),
        MetricSpec("*_ops_stddev", "ops/s", None, "spread of transfers per second"),
        MetricSpec("*_bw*", "MiB/s", "higher", "bandwidth: IOR's summary mean, max or min (with a "
                   "stonewall: over every byte the phase moved, wear-out included, as IO500 scores it)"),
        MetricSpec("*_ops*", "ops/s", "higher", "transfers per second"),
        MetricSpec("*_time", "s", "lower", "seconds of the phase (open, io, close, total)"),
    )

    def reported(self, params: dict) -> tuple[str, ...] | None:
        """Per phase run (-w, -r), the summary's figures and the phase's times (parsers/ior_json)."""
        names = ([n for n, _key, _unit in ior_json.SUMMARY_METRICS]
                 + [n for n, _key in ior_json.PHASE_TIMES]
                 + (list(ior_json.STONEWALL_METRICS) if params.get("stonewall") else [])
                 + (list(ior_json.WEAROUT_METRICS) if params.get("stonewall_wearout") else []))
        return tuple(f"{op}_{n}" for op in ("write", "read") if params[op] for n in names)

    def check(self, case) -> str | None:
        p = case.params
        block, xfer = p["block_size"], p["transfer_size"]
        if xfer == 0 or block == 0:
            return "block_size and transfer_size must be positive"
        if xfer % 8:
            return f"transfer_size ({xfer}) must be a multiple of 8 bytes (IOR's access size)"
        if block % xfer:
            return f"block_size ({block}) must be a multiple of transfer_size ({xfer})"
        if not p["write"] and not p["read"]:
            return "neither write nor read is enabled"
        if p["read"] and not p["write"]:
            return "read without write needs an existing file, but every case starts in a fresh directory"
        if p["api"] == "POSIX" and layers.mpi_io_keys(p):
            return "MPI-IO hints have no effect with api POSIX (IOR's POSIX backend does no MPI-IO)"
        if p["collective"] and p["api"] == "POSIX":
            return "collective I/O needs api MPIIO, HDF5 or NCMPI"
        if p["random_offsets"] and (p["api"] in ("HDF5", "NCMPI") or
                                    (p["api"] == "MPIIO" and p["collective"])):
            return "IOR rejects random_offsets with HDF5, NCMPI and collective MPIIO"
        if p["api"] == "NCMPI" and p["file_per_process"]:
            return "IOR's NCMPI backend rejects file_per_process"
        if p["stonewall_wearout"] and not p["stonewall"]:
            return "stonewall_wearout goes on after a stonewall: set stonewall (e.g. 300s)"
        phases = (p["write"] + p["read"]) * p["iterations"]
        if p["stonewall"] and p["stonewall"] * phases >= case.job.time_limit_seconds:
            return (f"{phases} stonewalled phase(s) of {p['stonewall']} s take at least "
                    f"{p['stonewall'] * phases} s, not less than the job's time limit "
                    f"({case.job.time_limit}): raise job.time_limit")
        args = p["extra_args"]
        for i, arg in enumerate(args):
            problem = extra_arg_problem(arg, _OWNED, _REJECTED)
            if problem:
                return problem
            owned = _summary_directive(args, i)
            if owned:
                return f"extra_args {owned!r}: iolab owns the summary file ({SUMMARY}, JSON)"
            directives = args[i + 1] if arg == "-O" and i + 1 < len(args) else \
                arg[2:] if arg.startswith("-O") else None
            typed = [_OWNED_DIRECTIVES[k] for k in sorted(_directive_keys(directives or ""))
                     if k in _OWNED_DIRECTIVES]
            if directives is not None and typed:
                return f"extra_args {directives!r}: use the parameter {typed[0]!r} instead"
        return None

    def guarded_arg(self, arg: str, previous: str | None) -> str | None:
        """A directive ('-O key=value' in one argument or two) or a module's hints file."""
        if previous == "-O" or (arg.startswith("-O") and arg != "-O"):
            keys = _directive_keys(arg if previous == "-O" else arg[2:])
            return next((_DIRECTIVES[k] for k in sorted(keys) if k in _DIRECTIVES), None)
        return super().guarded_arg(arg, previous)

    def bytes_written(self, case) -> int:
        p = case.params
        if not p["write"]:
            return 0
        return p["block_size"] * p["segments"] * case.num_tasks * p["iterations"]

    def file_size(self, params: dict) -> int | None:
        """One write phase's file: the shared file, or one rank's file."""
        per_rank = params["block_size"] * params.get("segments", 1)
        if params.get("file_per_process"):
            return per_rank
        return per_rank * params.get("scale.nodes", 1) * params.get("scale.tasks_per_node", 1)

    def through_mpi_io(self, case) -> bool:
        return case.params["api"] != "POSIX"

    def run_spec(self, case, case_dir: str, hints: dict | None = None, show_hints: bool = False,
                 keep_files: bool = False, input_dir: str | None = None) -> RunSpec:
        """hints: expanded MPI-IO hints, given to IOR's own hints file as well (it passes them
        through MPI_Info, which wins over ROMIO_HINTS); show_hints: print them at each open, which
        marks the data file's open in ROMIO's hint tables; keep_files: keep IOR's file for
        `lfs getstripe` (the case directory is removed afterwards anyway)."""
        p = case.params
        args = ["-a", p["api"], "-b", ior_size_arg(p["block_size"]),
                "-t", ior_size_arg(p["transfer_size"]), "-s", str(p["segments"]),
                "-i", str(p["iterations"])]
        for key, flag in (("file_per_process", "-F"), ("collective", "-c"), ("reorder_tasks", "-C"),
                          ("fsync", "-e"), ("write", "-w"), ("read", "-r"), ("keep_file", "-k"),
                          ("random_offsets", "-z")):
            if p[key] or (key == "keep_file" and keep_files):
                args.append(flag)
        if p["stonewall"]:
            args += ["-D", str(p["stonewall"])]
        if p["stonewall_wearout"]:
            args += ["-O", "stoneWallingWearOut=1"]
        args += ["-o", JobPath(f"{case_dir}/testfile"),
                 "-O", "summaryFormat=JSON", "-O", f"summaryFile={SUMMARY}"]
        files = {}
        module = _MODULE.get(p["api"])
        if module and hints:
            files[HINTS_FILE] = hints_file(hints)
            args.append(f"--{module}.hintsFileName={HINTS_FILE}")
        if module and show_hints:
            args.append(f"--{module}.showHints")
        args += list(p["extra_args"])
        return RunSpec(self.executable, args, files=files, outputs=[SUMMARY, *files], mpi=True)

    def parse_outputs(self, stage: Path, spec: RunSpec):
        job_streams(self, stage, spec, "IOR")
        return ior_json.parse(read_output(stage / SUMMARY, "IOR summary"), SUMMARY)

    def parse_files(self, paths):
        return [parse_any(Path(p)) for p in paths]

    echo_params = {"API": "api", "blockSize": "block_size", "transferSize": "transfer_size",
                   "segmentCount": "segments", "repetitions": "iterations",
                   "filePerProc": "file_per_process", "collective": "collective", "fsync": "fsync",
                   "reorderTasks": "reorder_tasks", "randomOffset": "random_offsets",
                   "writeFile": "write", "readFile": "read", "nodes": "scale.nodes",
                   "tasksPerNode": "scale.tasks_per_node", "deadlineForStonewall": "stonewall",
                   "stoneWallingWearOut": "stonewall_wearout"}
    # -k (iolab adds it to its own runs for lfs getstripe, so a run's check leaves it out)
    imported_echo = {"keepFile": "keep_file"}

    def requested_echo(self, case, spec) -> dict:
        return {"numTasks": case.num_tasks, **super().requested_echo(case, spec)}

    def error_lines(self, stdout, stderr, spec):
        return ior_text.errors(stderr) + ior_text.errors(stdout)


def parse_any(path: Path):
    text = read_output(path, "IOR output")
    if text.lstrip().startswith("{"):
        return ior_json.parse(text, path.name)
    return ior_text.parse(text, path.name)


BENCHMARK = Ior()
