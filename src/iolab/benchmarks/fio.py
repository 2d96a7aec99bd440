"""fio, for node-local and burst-buffer style tests. The job file is rendered from a template."""

from __future__ import annotations

import re
from pathlib import Path

from ..parsers import fio_json
from ..shell import braced
from .base import Benchmark, MetricSpec, RunSpec, read_output

OUTPUT = "fio.json"
JOBFILE = "fio-job.fio"
_OWNED = ("--output", "--output-format", "--directory", "--filename", "--name", "--rw",
          "--bs", "--size", "--numjobs", "--direct", "--ioengine", "--iodepth")


class Fio(Benchmark):
    name = "fio"
    executable = "fio"
    binaries = ("fio",)
    spack_package = "fio"
    table_metrics = ("write_bw", "read_bw", "write_iops", "read_iops")
    size_params = ("size",)
    metrics = (
        MetricSpec("*_bw", "MiB/s", "higher", "bandwidth of the direction's jobs"),
        MetricSpec("*_iops", "ops/s", "higher", "I/O operations per second"),
        MetricSpec("*_bytes", "B", None, "bytes moved"),
        MetricSpec("*_clat_mean", "us", "lower", "mean completion latency"),
    )

    def check(self, case) -> str | None:
        if case.nodes != 1 or case.tasks_per_node != 1:
            return "fio runs as one process on one node: set scale to 1 node, 1 task, and use numjobs"
        if any(k.startswith("mpiio.") for k in case.params):
            return "MPI-IO hints have no effect on fio"
        if case.params["size"] < case.params["bs"]:
            return "size must be at least bs"
        for arg in case.params["extra_args"]:
            if arg.split("=", 1)[0] in _OWNED:
                return f"extra_args {arg!r}: iolab sets this from the typed parameters"
        return None

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
                                  "end_fsync")}

    def requested_echo(self, case, spec) -> dict:
        p = case.params
        want = super().requested_echo(case, spec)
        # every byte of every job moves once, unless the run is bounded by time or count instead
        bounded = ("--time_based", "--runtime", "--io_size", "--io_limit", "--number_ios", "--loops")
        if not any(a.split("=", 1)[0] in bounded for a in p["extra_args"]):
            want["io_bytes"] = p["size"] * p["numjobs"]
        return want

    def error_lines(self, stdout, stderr, spec):
        # fio prefixes its own complaints with "fio: " (and "err=" in per-job lines)
        return [line.strip() for line in f"{stderr}\n{stdout}".splitlines()
                if line.startswith("fio: ") or re.search(r"\berr=\s*\d+", line)]

    def parse_files(self, paths):
        return [fio_json.parse(read_output(Path(p), "fio output"), Path(p).name) for p in paths]


BENCHMARK = Fio()
