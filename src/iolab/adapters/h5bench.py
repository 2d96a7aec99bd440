"""h5bench 1.6 pattern kernels (VPIC-IO style write, BDCATS-IO style read, and their variants).

Each kernel is its own executable, run as `h5bench_<kernel> h5bench.cfg <dir>/h5bench.h5` with a
KEY=VALUE config rendered from templates/h5bench/h5bench.cfg.j2 (the Python `h5bench` driver is
not used: iolab launches, places and checks the run itself). read and overwrite use the file of
a write case, append that of a write_unlimited case (see produces/consumes).

Not offered: metadata (h5bench_hdf5_iotest) and exerciser, which take other inputs and print other
outputs with no recorded example; the STRIDED patterns and the PARTIAL/STRIDED/LDC/RDC/PRL/CS
read options, which need keys iolab does not type (STRIDE_SIZE, BLOCK_SIZE, BLOCK_CNT,
TO_READ_NUM_PARTICLES).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import IolabError, ParseError
from ..parsers import Parsed, h5bench_csv, h5bench_text
from . import Adapter, RunSpec, read_output
from .btio import layout_key

CONFIG = "h5bench.cfg"
CSV = "h5bench.csv"
DATA = "h5bench.h5"
PARTICLE_BYTES = 32                              # 7 floats + 1 int per particle
ASYNC_CONNECTOR = "async under_vol=0;under_info={}"   # HDF5_VOL_CONNECTOR of the async VOL
KERNELS = {"write": "h5bench_write", "write_unlimited": "h5bench_write_unlimited",
           "read": "h5bench_read", "overwrite": "h5bench_overwrite", "append": "h5bench_append"}
WRITES = ("write", "write_unlimited")
# The CSV 'operation' each executable writes
OPERATION = {"h5bench_write": "write", "h5bench_write_unlimited": "write unlimited",
             "h5bench_read": "read", "h5bench_overwrite": "overwrite", "h5bench_append": "append"}
# The file family a kernel leaves or needs: append extends datasets, which needs the chunked,
# unlimited ones of write_unlimited
FAMILY = {"write": "fixed", "read": "fixed", "overwrite": "fixed",
          "write_unlimited": "unlimited", "append": "unlimited"}
_C, _I = "CONTIG", "INTERLEAVED"
# commons/h5bench_util.c _set_io_pattern: (MEM_PATTERN, FILE_PATTERN) by NUM_DIMS for writes
_WRITE_PATTERNS = {1: {(_C, _C), (_C, _I), (_I, _C), (_I, _I)},
                   2: {(_C, _C), (_C, _I), (_I, _C), (_I, _I)}, 3: {(_C, _C)}}
_INT_MAX = 2**31 - 1                             # ALIGN_* are read with atoi()
_DURATION = re.compile(r"^(\d+) ?(s|ms|us|min)$")


def compute_time(text: str) -> str:
    """'500ms' -> '500 ms': h5bench splits number and unit on a space and reads '500ms' as 500 s."""
    m = _DURATION.match(text)
    if not m:
        raise IolabError(f"emulated_compute_time {text!r}: give a whole number and s, ms, us or min")
    return f"{m.group(1)} {m.group(2)}"


def hdf5_errors(stderr: str) -> list[str]:
    """HDF5's error stack lines: 'Error detected in HDF5' and the first frame of each stack."""
    lines = stderr.splitlines()
    return [f"{line.strip()} {lines[i + 1].strip()}" if i + 1 < len(lines) else line.strip()
            for i, line in enumerate(lines) if "Error detected in HDF5" in line]


class H5benchAdapter(Adapter):
    name = "h5bench"
    executable = "h5bench_write"      # per kernel: the RunSpec names the one that runs
    formats = ("h5bench-text", "h5bench-csv")

    def check(self, case) -> str | None:
        p = case.params
        kernel, n = p["kernel"], p["num_dims"]
        for i in (2, 3):
            if i > n and p[f"dim_{i}"] != 1:
                return f"h5bench ignores dim_{i} when num_dims is {n}: leave it at 1"
        pattern = (p["mem_pattern"], p["file_pattern"])
        if kernel in WRITES and pattern not in _WRITE_PATTERNS[n]:
            return (f"h5bench has no {n}D write pattern for mem_pattern {pattern[0]} with file_pattern "
                    f"{pattern[1]} ({n}D supports: "
                    f"{', '.join('/'.join(x) for x in sorted(_WRITE_PATTERNS[n]))})")
        if kernel not in WRITES and pattern != (_C, _C):
            return f"h5bench_{kernel} supports only mem_pattern CONTIG with file_pattern CONTIG"
        problem = self._check_compress(p, kernel, n, case.num_tasks)
        if problem:
            return problem
        if p["align"]:
            if "align_len" not in p or p["align_len"] < 1:
                return "align needs align_len (the alignment in bytes, e.g. 1MiB)"
            for key in ("align_threshold", "align_len"):
                if p[key] > _INT_MAX:
                    return f"{key} must be below 2GiB (h5bench reads it with atoi)"
        elif "align_len" in p or p["align_threshold"] != 0:
            return "align_len and align_threshold need align: true"
        return None

    @staticmethod
    def _check_compress(p, kernel: str, n: int, ranks: int) -> str | None:
        chunks = [f"chunk_dim_{i}" for i in (1, 2, 3) if f"chunk_dim_{i}" in p]
        if not p["compress"]:
            if chunks:
                return f"{chunks[0]} needs compress: true"
            if kernel == "write_unlimited":
                return "h5bench_write_unlimited refuses to run without COMPRESS=YES: set compress: true"
            if kernel == "append":
                return ("append extends the file of a write_unlimited case, which is always compressed: "
                        "set compress: true and that case's chunk_dim_*")
            return None
        missing = [f"chunk_dim_{i}" for i in range(1, n + 1) if f"chunk_dim_{i}" not in p]
        if missing:
            return f"compress needs {', '.join(missing)} (the chunk shape of the {n}D datasets)"
        extra = [c for c in chunks if int(c[-1]) > n]
        if extra:
            return f"h5bench ignores {extra[0]} when num_dims is {n}: leave it out"
        shape = [p["dim_1"] * ranks, p["dim_2"], p["dim_3"]]
        for i in range(1, n + 1):
            if p[f"chunk_dim_{i}"] > shape[i - 1]:
                return (f"chunk_dim_{i} ({p[f'chunk_dim_{i}']}) is larger than the dataset's dimension "
                        f"{i} ({shape[i - 1]})")
        if kernel in WRITES and not p["collective_data"]:
            return ("h5bench writes compressed data collectively whatever COLLECTIVE_DATA says: set "
                    "collective_data: true")
        return None

    def bytes_written(self, case) -> int:
        p = case.params
        if p["kernel"] == "read":
            return 0
        particles = p["dim_1"] * p["dim_2"] * p["dim_3"]
        return case.num_tasks * particles * PARTICLE_BYTES * p["timesteps"]

    def uses_mpiio(self, case) -> bool:
        return True     # HDF5's MPI-IO driver (H5Pset_fapl_mpio with MPI_INFO_NULL)

    def data_key(self, case) -> str:
        """The file a write leaves and a read needs: family, global dataset shape (dim_1 is per
        rank, so the rank count counts), time steps, chunks, alignment and placement."""
        p = case.params
        n = p["num_dims"]
        shape = [p["dim_1"] * case.num_tasks, p["dim_2"], p["dim_3"]][:n]
        key = f"h5bench:{FAMILY[p['kernel']]}:{'x'.join(map(str, shape))}:timesteps={p['timesteps']}"
        if p["compress"]:
            key += ":chunk=" + "x".join(str(p[f"chunk_dim_{i}"]) for i in range(1, n + 1))
        if p["align"]:
            key += f":align={p['align_len']}/{p['align_threshold']}"
        return key + layout_key(case)

    def produces(self, case) -> str | None:
        p = case.params
        # h5bench_read opens the datasets x, y, z... as native numbers: only CONTIG/CONTIG writes
        # leave a file the read kernels can use
        if p["kernel"] in WRITES and (p["mem_pattern"], p["file_pattern"]) == (_C, _C):
            return self.data_key(case)
        return None

    def consumes(self, case) -> str | None:
        return None if case.params["kernel"] in WRITES else self.data_key(case)

    def run_spec(self, case, case_dir: str, hints: dict | None = None, show_hints: bool = False,
                 keep_files: bool = False, input_dir: str | None = None) -> RunSpec:
        """MPI-IO hints reach HDF5 only through the environment (ROMIO_HINTS...), which the hints
        layer sets. mode ASYNC sets HDF5_VOL_CONNECTOR; the connector's library must be on
        HDF5_PLUGIN_PATH (site environment), and the parser checks which mode h5bench reports."""
        from ..render import render_template

        p = case.params
        kernel = p["kernel"]
        if kernel in WRITES:
            directory = case_dir
        elif input_dir:
            directory = input_dir
        else:
            raise IolabError(f"h5bench {kernel} case {case.case_id} needs the directory of its write case "
                             f"(input_dir)")
        config = render_template("h5bench/h5bench.cfg.j2", case=case, params=p,
                                 reads=kernel not in WRITES,
                                 io_operation={"overwrite": "OVERWRITE", "append": "APPEND"}.get(kernel),
                                 compute_time=compute_time(p["emulated_compute_time"]), csv_file=CSV)
        env = {"HDF5_VOL_CONNECTOR": ASYNC_CONNECTOR} if p["mode"] == "ASYNC" else {}
        return RunSpec(KERNELS[kernel], [CONFIG, f"{directory}/{DATA}"], env=env, files={CONFIG: config},
                       outputs=[CONFIG, CSV], mpi=True)

    def parse_outputs(self, stage: Path, spec: RunSpec):
        """stdout for failures and the H5F* times, stderr for HDF5 errors (h5bench prints results
        even when HDF5 failed under it), the CSV for the rest; stdout and CSV must agree."""
        text = h5bench_text.parse(read_output(stage / "rfm_job.out", "stdout"), "rfm_job.out")
        errors = hdf5_errors(read_output(stage / "rfm_job.err", "stderr"))
        if errors:
            raise ParseError(f"rfm_job.err: HDF5 reported {len(errors)} error(s) under h5bench, whose "
                             f"results are then not to be trusted: {errors[0]}")
        csv = h5bench_csv.parse(read_output(stage / CSV, "h5bench CSV"), CSV)
        want = OPERATION.get(spec.executable)
        if want and csv.details["operation"] != want:
            raise ParseError(f"{CSV}: operation {csv.details['operation']!r}, but {spec.executable} ran")
        from_text = text.by_name()
        for metric in csv.metrics:
            other = from_text.get(metric.name)
            if other is None or other.value != metric.value:
                raise ParseError(f"{CSV} and stdout disagree on {metric.name} ({metric.value} vs "
                                 f"{other.value if other else 'missing'}): not the same run?")
        mode = "ASYNC" if "HDF5_VOL_CONNECTOR" in spec.env else "SYNC"
        if text.details["mode"] != mode:
            why = ("the async VOL needs HDF5 1.13 or later and its connector on HDF5_PLUGIN_PATH"
                   if mode == "ASYNC" else "HDF5_VOL_CONNECTOR names the async VOL in the job's "
                   "environment")
            raise ParseError(f"rfm_job.out: {mode} mode was requested but h5bench ran "
                             f"{text.details['mode']} ({why})")
        metrics = csv.metrics + [m for m in text.metrics if m.name.startswith("h5f")]
        return Parsed(metrics, version=None, details={**csv.details, "mode": text.details["mode"]})

    def parse_files(self, paths):
        out = []
        for path in map(Path, paths):
            text = read_output(path, "h5bench output")
            lines = {line.strip() for line in text.splitlines()}
            csv = h5bench_csv.HEADER in lines or path.suffix == ".csv"
            parser = h5bench_csv if csv else h5bench_text
            out.append(parser.parse(text, path.name))
        return out
