"""mdtest 4.0.0 (built with IOR 4.0.0, same Spack package): metadata rates of files,
directories and the directory tree. Results are read from stdout's 'SUMMARY rate' table; the
per-rank CSV (--saveRankPerformanceDetails) is kept beside it and gives the spread over ranks.

Striping applies as to every benchmark: `lustre.*` parameters stripe the case directory, mdtest's
-d, and the directories and files it makes inherit that layout. Under Darshan, the POSIX module
counts mdtest's opens and their metadata time (findings: metadata share, many small files); a
Darshan 3.4.7 runtime wraps __xstat, so a binary linked against glibc 2.33 or later, whose stat
is a symbol of its own, shows 0 stats in the log although the stat phase ran. Darshan wraps no
mkdir, rmdir or unlink (libdarshan.so exports no such symbol): directory phases leave no records."""

from __future__ import annotations

from pathlib import Path

from ..errors import ParseError
from ..parsers import mdtest_csv, mdtest_text
from ..shell import JobPath
from .base import Benchmark, MetricSpec, RunSpec, extra_arg_problem, job_streams, read_output

RANKS_CSV = "mdtest-ranks.csv"
_PHASES = (("create", "-C"), ("stat", "-T"), ("read", "-E"), ("remove", "-r"))
# the metrics each requested phase must give, per kind of entry ('Directory read' is never
# printed by mdtest 4.0.0; the tree is made by the create phase and removed by the remove phase)
_REQUIRED = {"create": ("file_create", "dir_create", "tree_create"), "stat": ("file_stat", "dir_stat"),
             "read": ("file_read",), "remove": ("file_remove", "dir_remove", "tree_remove")}

# Flags that a typed parameter owns, or that break iolab's output handling.
_OWNED = {
    "-n": "items", "-F": "entries", "-D": "entries", "-z": "depth", "-b": "branching",
    "-u": "unique_dir", "-w": "write_bytes", "-e": "read_bytes", "-C": "create", "-T": "stat",
    "-E": "read", "-r": "remove", "-i": "iterations", "-S": "shared_file", "-W": "stonewall",
    "-y": "sync_file", "-d": "the case directory (iolab sets it)",
    "--saveRankPerformanceDetails": f"the per-rank CSV (iolab writes {RANKS_CSV})",
}
_REJECTED = {
    "-Z": "-Z prints times instead of rates: iolab reads the rate table",
    "-f": "-f/-l/-s run several task counts in one run; iolab runs one per case",
    "-l": "-f/-l/-s run several task counts in one run; iolab runs one per case",
    "-s": "-f/-l/-s run several task counts in one run; iolab runs one per case",
    "-x": "a stonewall status file splits phases across runs; iolab runs each case whole",
}
# Options that run commands or name a path (mdtest 4.0.0's --help; -d, -x and
# --saveRankPerformanceDetails are owned or refused above).
GUARDED = {
    "run-cmd-before-phase": "runs a shell command before each phase (outside the timing)",
    "run-cmd-after-phase": "runs a shell command after each phase (inside the timing)",
    **{f"{module}.hintsFileName": "names a file an MPI-IO backend reads hints from"
       for module in ("mpiio", "hdf5", "ncmpi")},
}


class Mdtest(Benchmark):
    name = "mdtest"
    executable = "mdtest"
    binaries = ("mdtest",)
    spack_package = "ior"
    table_metrics = ("file_create_rate", "file_stat_rate", "file_read_rate", "file_remove_rate")
    size_params = ("items", "write_bytes")
    guarded_options = GUARDED
    metrics = (
        MetricSpec("*_rank_rate_*", "ops/s", None, "slowest or fastest rank's rate (per-rank CSV)"),
        MetricSpec("*_rate_stddev", "ops/s", None, "spread of the rate over mdtest's iterations"),
        MetricSpec("*_rate*", "ops/s", "higher",
                   "items per second of all ranks: mdtest's mean, max or min over its iterations"),
    )

    def check(self, case) -> str | None:
        p = case.params
        if not any(p[phase] for phase, _ in _PHASES):
            return "no phase is enabled (create, stat, read, remove)"
        if p["shared_file"] and p["entries"] != "files":
            return "shared_file (-S) works on files only: set entries: files"
        if p["read_bytes"] and p["entries"] == "directories":
            return "read_bytes reads files, but entries is directories"
        if p["write_bytes"] and p["entries"] == "directories":
            return "write_bytes writes files, but entries is directories"
        if p["read"] and p["read_bytes"] > p["write_bytes"]:
            return (f"read_bytes ({p['read_bytes']}) exceeds write_bytes ({p['write_bytes']}): "
                    "mdtest would read past the end of each file")
        if (p["stat"] or p["read"] or p["remove"]) and not p["create"]:
            return ("stat, read or remove without create needs existing files, but every case "
                    "starts in a fresh directory")
        if p["stonewall"] and not p["create"]:
            return "stonewall stops the create phase, which is not enabled"
        for arg in p["extra_args"]:
            problem = extra_arg_problem(arg, _OWNED, _REJECTED)
            if problem:
                return problem
        return None

    def bytes_written(self, case) -> int:
        """At most: mdtest may round items down to fill the tree evenly, and a stonewall stops
        creates early."""
        p = case.params
        if not p["create"] or p["entries"] == "directories":
            return 0
        return p["items"] * p["write_bytes"] * case.num_tasks * p["iterations"]

    def file_size(self, params: dict) -> int | None:
        return params.get("write_bytes") if params.get("entries", "both") != "directories" else None

    def run_spec(self, case, case_dir: str, hints: dict | None = None, show_hints: bool = False,
                 keep_files: bool = False, input_dir: str | None = None) -> RunSpec:
        p = case.params
        args = ["-n", str(p["items"])]
        args += {"files": ["-F"], "directories": ["-D"], "both": []}[p["entries"]]
        if p["depth"]:
            args += ["-z", str(p["depth"])]
        if p["branching"] != 1:
            args += ["-b", str(p["branching"])]
        if p["unique_dir"]:
            args.append("-u")
        if p["write_bytes"]:
            args += ["-w", str(p["write_bytes"])]
        if p["read_bytes"]:
            args += ["-e", str(p["read_bytes"])]
        args += [flag for phase, flag in _PHASES if p[phase]]
        args += ["-i", str(p["iterations"])]
        if p["shared_file"]:
            args.append("-S")
        if p["stonewall"]:
            args += ["-W", str(p["stonewall"])]
        if p["sync_file"]:
            args.append("-y")
        args += ["-d", JobPath(case_dir), f"--saveRankPerformanceDetails={RANKS_CSV}", *p["extra_args"]]
        return RunSpec(self.executable, args, outputs=[RANKS_CSV], mpi=True)

    def parse_outputs(self, stage: Path, spec: RunSpec):
        stdout, _ = job_streams(self, stage, spec, "mdtest")
        parsed = mdtest_text.parse(stdout, "stdout")
        ranks = mdtest_csv.parse(read_output(stage / RANKS_CSV, "mdtest per-rank CSV"), RANKS_CSV)
        parsed.metrics += ranks.metrics
        parsed.echo.update(ranks.echo)
        got = parsed.by_name()
        missing = [m for m in required_metrics(spec.args) if m not in got]
        if missing:
            # a requested phase that printed nothing (or 0.000) fails the case, never shows as 0
            raise ParseError(f"mdtest gave no result for {', '.join(missing)}: "
                             "a requested phase did not run")
        return parsed

    # what mdtest prints of its run ("launched with 4 total task(s) on 1 node(s)", "of 3
    # iterations") -> iolab's parameter (`iolab import` fills parameters not given from these)
    echo_params = {"iterations": "iterations", "nodes": "scale.nodes",
                   "tasks_per_node": "scale.tasks_per_node"}
    # what its command line says (mdtest_text.command_line_echo); a run's check compares the
    # whole argument list instead
    imported_echo = {"items": "items", "entries": "entries", "depth": "depth",
                     "branch_factor": "branching", "unique_dir_per_task": "unique_dir",
                     "write_bytes": "write_bytes", "read_bytes": "read_bytes",
                     "create_only": "create", "stat_only": "stat", "read_only": "read",
                     "remove_only": "remove", "shared_file": "shared_file",
                     "stone_wall_timer_seconds": "stonewall", "sync_file": "sync_file",
                     "extra_args": "extra_args"}

    def requested_echo(self, case, spec) -> dict:
        want = {"tasks": case.num_tasks, **super().requested_echo(case, spec)}
        if spec is not None:
            args = list(spec.args)
            want["args"] = [mdtest_text.DIR if i and args[i - 1] == "-d" else a
                            for i, a in enumerate(args)]
        return want

    def error_lines(self, stdout, stderr, spec):
        return mdtest_text.errors(stdout) + mdtest_text.errors(stderr)

    def parse_files(self, paths):
        return [parse_any(Path(p)) for p in paths]


def required_metrics(args: list[str]) -> list[str]:
    """The rates a run of these arguments must give: every requested phase (all four when none
    is named, as mdtest does), for the entries it works on (-F files, -D directories)."""
    phases = [phase for phase, flag in _PHASES if flag in args] or [phase for phase, _ in _PHASES]
    files, dirs = "-F" in args, "-D" in args
    kinds = {"tree"} | ({"file"} if files or not dirs else set()) | ({"dir"} if dirs or not files else set())
    return [f"{name}_rate" for phase in phases for name in _REQUIRED[phase]
            if name.split("_")[0] in kinds]


def parse_any(path: Path):
    text = read_output(path, "mdtest output")
    if mdtest_csv.looks_like(text):
        return mdtest_csv.parse(text, path.name)
    return mdtest_text.parse(text, path.name)


BENCHMARK = Mdtest()
