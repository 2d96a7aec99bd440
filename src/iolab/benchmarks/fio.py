"""fio, for node-local and burst-buffer style tests. The job file is rendered from a template."""

from __future__ import annotations

import re
from pathlib import Path

from ..layers import registry as layers
from ..layers.base import EvidenceSpec, NotRecorded
from ..parsers import fio_json
from ..shell import braced
from .base import Benchmark, MetricSpec, RunSpec, read_output

OUTPUT = "fio.json"
JOBFILE = "fio-job.fio"
_OWNED = ("output", "output-format", "directory", "filename", "name", "rw", "bs", "size", "numjobs",
          "direct", "ioengine", "iodepth", "runtime", "time_based")

# fio 3.33's options that run a program, load code, talk to other hosts or change the node, and
# those that name a path (fio --cmdhelp=all, fio --help): `allow:` name -> what it does. fio
# takes a command-line option with one dash or two and by any unambiguous abbreviation
# (--exec_pre=... runs exec_prerun), so every spelling is matched.
_RUNS = "runs a program"
GUARDED = {
    "exec_prerun": f"{_RUNS} before the job",
    "exec_postrun": f"{_RUNS} after the job",
    "ioengine=exec": f"{_RUNS} (its `program` option) as the job's I/O",
    "ioengine=external": "loads code from a shared library as the I/O engine",
    "trigger": f"{_RUNS} when a trigger fires",
    "trigger-remote": f"{_RUNS} on remote fio servers when a trigger fires",
    "trigger-file": f"{_RUNS} (the trigger) when a file appears",
    "trigger-timeout": f"{_RUNS} (the trigger) after a time",
    "server": "starts an fio server that takes jobs from the network",
    "daemonize": "starts an fio server in the background",
    "client": "runs the jobs on other hosts' fio servers",
    "remote-config": "has fio servers run a job file of their own",
    "ioscheduler": "changes the I/O scheduler of the device under the case directory",
    "cgroup": "puts the job in a cgroup it creates",
    "filename_format": "names the files fio writes, anywhere",
    "opendir": "adds every file under a directory to the job",
    "write_iolog": "names a file fio writes its I/O log to",
    "read_iolog": "replays I/O from a file",
    "replay_redirect": "replays I/O onto a device",
    "merge_blktrace_file": "names a file fio writes merged block traces to",
    "write_bw_log": "names a file fio writes its bandwidth log to",
    "write_lat_log": "names a file fio writes its latency log to",
    "write_iops_log": "names a file fio writes its IOPS log to",
    "write_hist_log": "names a file fio writes its latency histograms to",
    "aux-path": "names a directory fio writes its state files to",
    "inflate-log": "reads a log file and prints it instead of running the job",
}
# fio options whose names begin a guarded one's (an exact name wins over an abbreviation); an
# abbreviation shorter than this is taken as a short option or is ambiguous to fio
_EXACT = ("filename",)
_MIN_ABBREVIATION = 4


def _spelled(arg: str, names) -> str | None:
    """The one of `names` an option argument sets, as fio's getopt_long_only reads it: -name,
    --name, with =value or not, or an abbreviation of it (None: another option, or a value)."""
    if not arg.startswith("-"):
        return None
    given = arg.lstrip("-").split("=", 1)[0]
    if given in names:
        return given
    if not given or given in _EXACT or len(given) < _MIN_ABBREVIATION:
        return None
    return next((n for n in names if n.startswith(given)), None)


def _request_size(m):
    if "bs" not in m.echo:
        raise NotRecorded("fio's output did not echo its block size")
    return m.echo["bs"]


def _requests(m):
    moved = [m.metrics[k] for k in ("write_bytes", "read_bytes") if k in m.metrics]
    if not moved:
        raise NotRecorded("the record has no bytes moved")
    return sum(moved) / _request_size(m)


def _clat_mean(op: str):
    def read(m):
        if f"{op}_bytes" not in m.metrics:
            raise NotRecorded(f"fio {'read' if op == 'read' else 'wrote'} nothing in this case")
        return m.metric(f"{op}_clat_mean")
    return read


def _no_percentiles(m):
    raise NotRecorded("iolab's fio parser keeps the mean completion latency, not fio's percentiles")


EVIDENCE = tuple(EvidenceSpec(name, unit, "fio", text, kind, read) for name, unit, text, kind, read in (
    ("request_size", "B", "bytes per request (fio's bs, as it echoed it)", "bytes", _request_size),
    ("requests", "count", "requests of all jobs: bytes moved over bs", "count", _requests),
    ("write_clat_mean", "us", "mean completion latency of writes", "time", _clat_mean("write")),
    ("read_clat_mean", "us", "mean completion latency of reads", "time", _clat_mean("read")),
    ("write_clat_p99", "us", "99th percentile of write completion latency", "time", _no_percentiles),
))


class Fio(Benchmark):
    name = "fio"
    executable = "fio"
    binaries = ("fio",)
    spack_package = "fio"
    table_metrics = ("write_bw", "read_bw", "write_iops", "read_iops")
    size_params = ("size",)
    guarded_options = GUARDED
    evidence_specs = EVIDENCE
    metrics = (
        MetricSpec("*_bw", "MiB/s", "higher", "bandwidth of the direction's jobs"),
        MetricSpec("*_iops", "ops/s", "higher", "I/O operations per second"),
        MetricSpec("*_bytes", "B", None, "bytes moved"),
        MetricSpec("*_clat_mean", "us", "lower", "mean completion latency"),
    )
    # the directions an rw pattern moves data in (parsers/fio_json names a metric by direction)
    DIRECTIONS = {"read": ("read",), "randread": ("read",), "write": ("write",),
                  "randwrite": ("write",), "rw": ("write", "read"), "readwrite": ("write", "read"),
                  "randrw": ("write", "read")}

    def reported(self, params: dict) -> tuple[str, ...] | None:
        return tuple(f"{d}_{m}" for d in self.DIRECTIONS[params["rw"]]
                     for m in ("bw", "iops", "bytes", "clat_mean"))

    def check(self, case) -> str | None:
        if case.nodes != 1 or case.tasks_per_node != 1:
            return "fio runs as one process on one node: set scale to 1 node, 1 task, and use numjobs"
        if layers.mpi_io_keys(case.params):
            return "MPI-IO hints have no effect on fio"
        if case.params["size"] < case.params["bs"]:
            return "size must be at least bs"
        runtime = case.params["runtime"]
        if case.params["time_based"] and not runtime:
            return "time_based runs for runtime seconds: set runtime (e.g. 60s)"
        if runtime and runtime >= case.job.time_limit_seconds:
            return (f"runtime {runtime} s is not shorter than the job's time limit "
                    f"({case.job.time_limit}): raise job.time_limit")
        for arg in case.params["extra_args"]:
            if not arg.startswith("-"):
                return (f"extra_args {arg!r}: fio reads it as a job file, with jobs of its own; give "
                        "options as --name=value")
            if _spelled(arg, _OWNED):
                return f"extra_args {arg!r}: iolab sets this from the typed parameters"
        return None

    def guarded_arg(self, arg: str, previous: str | None) -> str | None:
        return _spelled(arg, [n for n in GUARDED if "=" not in n])

    def guarded(self, key: str, value) -> list[tuple[int | None, str]]:
        if key == "ioengine" and isinstance(value, str):
            engine = value.split(":", 1)[0]
            return [(None, f"ioengine={engine}")] if f"ioengine={engine}" in GUARDED else []
        return super().guarded(key, value)

    def file_size(self, params: dict) -> int | None:
        return params.get("size")

    def bytes_written(self, case) -> int:
        # fio lays out its files before a read test, so every pattern writes them once.
        return case.params["size"] * case.params["numjobs"]

    def run_spec(self, case, case_dir: str, hints: dict | None = None, show_hints: bool = False,
                 keep_files: bool = False, input_dir: str | None = None) -> RunSpec:
        from ..render import render_template

        # fio expands ${NAME} in a job file from its environment, where the job exported it
        jobfile = render_template("fio/job.fio.j2", case=case, params=case.params,
                                  directory=braced(case_dir))
        args = ["--output-format=json", f"--output={OUTPUT}", *case.params["extra_args"], JOBFILE]
        return RunSpec(self.executable, args, files={JOBFILE: jobfile}, outputs=[OUTPUT, JOBFILE],
                       mpi=False)

    def parse_outputs(self, stage: Path, spec: RunSpec):
        return fio_json.parse(read_output(stage / OUTPUT, "fio JSON output"), OUTPUT)

    echo_params = {k: k for k in ("rw", "bs", "size", "numjobs", "ioengine", "iodepth", "direct",
                                  "end_fsync", "runtime", "time_based")}

    def requested_echo(self, case, spec) -> dict:
        p = case.params
        want = super().requested_echo(case, spec)
        # every byte of every job moves once, unless the run is bounded by time or count instead
        bounded = ("--io_size", "--io_limit", "--number_ios", "--loops")
        if not p["runtime"] and not any(a.split("=", 1)[0] in bounded for a in p["extra_args"]):
            want["io_bytes"] = p["size"] * p["numjobs"]
        if p["time_based"]:     # every job ran for the whole runtime (fio's job_runtime)
            want["ran_runtime"] = True
        return want

    def error_lines(self, stdout, stderr, spec):
        # fio prefixes its own complaints with "fio: " (and "err=" in per-job lines)
        return [line.strip() for line in f"{stderr}\n{stdout}".splitlines()
                if line.startswith("fio: ") or re.search(r"\berr=\s*\d+", line)]

    def parse_files(self, paths):
        return [fio_json.parse(read_output(Path(p), "fio output"), Path(p).name) for p in paths]


BENCHMARK = Fio()
