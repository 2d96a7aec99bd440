"""h5bench 1.6 kernels: the pattern kernels (VPIC-IO style write, BDCATS-IO style read, and their
variants), metadata (h5bench_hdf5_iotest) and exerciser (h5bench_exerciser).

Each pattern kernel is its own executable, run as `h5bench_<kernel> h5bench.cfg <dir>/h5bench.h5`
with a KEY=VALUE config rendered from templates/h5bench/h5bench.cfg.j2 (the Python `h5bench`
driver is not used: iolab launches, places and checks the run itself). read and overwrite use the
file of a write case, append that of a write_unlimited case (see produces/consumes).

metadata runs `h5bench_hdf5_iotest hdf5_iotest.ini` (templates/h5bench/hdf5_iotest.ini.j2, the
metadata_* parameters); it writes <dir>/hdf5_iotest.h5, reads it back in the same run, and writes
its results to stdout and hdf5_iotest.csv. exerciser runs `h5bench_exerciser --numdims ...` (the
exerciser_* parameters); it writes, reads back and deletes hdf5TestFile-<random> in its WORKING
DIRECTORY (the file name is not configurable), so it runs in the case directory (RunSpec.workdir)
and storage and lustre.* apply to it as to the other kernels. Neither reads another case's data.
Parameters of one kind of kernel are refused with another (a defaulted one only when it differs
from its default).

Not offered: the STRIDED patterns and the PARTIAL/STRIDED/LDC/RDC/PRL/CS read options, which need
keys iolab does not type (STRIDE_SIZE, BLOCK_SIZE, BLOCK_CNT, TO_READ_NUM_PARTICLES); the
exerciser's --keepfile (the case directory is removed anyway).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from ..errors import IolabError, ParseError
from ..parsers import (Parsed, h5bench_csv, h5bench_exerciser, h5bench_metadata, h5bench_metadata_csv,
                       h5bench_text)
from ..shell import JobPath, has_variables
from .base import Benchmark, MetricSpec, RunSpec, read_output
from .btio import layout_key

CONFIG = "h5bench.cfg"
CSV = "h5bench.csv"
DATA = "h5bench.h5"
PARTICLE_BYTES = 32                              # 7 floats + 1 int per particle
ASYNC_CONNECTOR = "async under_vol=0;under_info={}"   # HDF5_VOL_CONNECTOR of the async VOL
KERNELS = {"write": "h5bench_write", "write_unlimited": "h5bench_write_unlimited",
           "read": "h5bench_read", "overwrite": "h5bench_overwrite", "append": "h5bench_append",
           "metadata": "h5bench_hdf5_iotest", "exerciser": "h5bench_exerciser"}
OWN_KERNELS = ("metadata", "exerciser")          # kernels with their own prefixed parameters
# Parameters of the pattern kernels (write ... append)
PATTERN_PARAMS = ("mem_pattern", "file_pattern", "timesteps", "delayed_close_timesteps",
                  "emulated_compute_time", "num_dims", "dim_1", "dim_2", "dim_3", "read_option",
                  "collective_data", "collective_metadata", "compress", "chunk_dim_1", "chunk_dim_2",
                  "chunk_dim_3", "align", "align_threshold", "align_len", "mode")
INI = "hdf5_iotest.ini"
METADATA_CSV = "hdf5_iotest.csv"
METADATA_DATA = "hdf5_iotest.h5"
INI_MAX_LINE = 200                  # metadata_stress/ini.h: longer lines are cut (fgets)
EXERCISER_ITERATIONS = 10           # NUM_ITERATIONS in h5bench_exerciser.c
DERIVED_BYTES = 40                  # sizeof(sim_params_t): 5 ints and 2 doubles, padded
ATTRIBUTES_BYTES = 64 * 1024        # NUM_ATTRIBUTES x ATTRIBUTE_SIZE chars, per iteration
# The flags the exerciser echoes ('useMetaDataCollectives: 0 ...') for each option
EXERCISER_ECHO = {"metacoll": "useMetaDataCollectives", "derivedtype": "addDerivedTypeDataset",
                  "addattr": "addAttributes", "indepio": "useIndependentIO", "usechunked": "useChunked"}
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


def _given(p: dict, name: str) -> bool:
    """Whether a parameter was set: present and, when it has a default, not at it."""
    spec = BENCHMARK.params_schema["properties"].get(name, {})
    return name in p and ("default" not in spec or p[name] != spec["default"])


def metadata_grid(case) -> tuple[int, int]:
    """(process-rows, process-columns): rows default to ranks / columns."""
    p = case.params
    cols = p["metadata_process_columns"]
    return p.get("metadata_process_rows", case.num_tasks // cols), cols


def exerciser_dimranks(case) -> list[int]:
    p = case.params
    return p.get("exerciser_dimranks", [case.num_tasks] + [1] * (p["exerciser_numdims"] - 1))


def exerciser_sizes(p: dict) -> list[list[int]]:
    """Elements per dimension of one rank's buffer, for each buffer size."""
    n = p["exerciser_numdims"]
    mult = p.get("exerciser_bufmult", [2] * n)
    return [[e * m ** k for e, m in zip(p["exerciser_minels"], mult)] for k in range(p["exerciser_nsizes"])]


def exerciser_args(case) -> list[str]:
    """h5bench_exerciser's options; --numdims first (the list options need it before them)."""
    p = case.params
    args = ["--numdims", str(p["exerciser_numdims"]), "--minels", *map(str, p["exerciser_minels"]),
            "--nsizes", str(p["exerciser_nsizes"])]
    if "exerciser_bufmult" in p:
        args += ["--bufmult", *map(str, p["exerciser_bufmult"])]
    args += ["--dimranks", *map(str, exerciser_dimranks(case))]
    args += [f"--{f}" for f in ("addattr", "derivedtype", "usechunked", "indepio", "metacoll")
             if p[f"exerciser_{f}"]]
    for name in ("fileblocks", "filestrides"):
        if f"exerciser_{name}" in p:
            args += [f"--{name}", *map(str, p[f"exerciser_{name}"])]
    for name in ("memblock", "memstride"):
        if f"exerciser_{name}" in p:
            args += [f"--{name}", str(p[f"exerciser_{name}"])]
    if p["exerciser_rshift"]:
        args += ["--rshift", str(p["exerciser_rshift"])]
    if "exerciser_maxcheck" in p:
        args += ["--maxcheck", str(p["exerciser_maxcheck"])]
    return args


def exerciser_options(args: list[str]) -> dict[str, list[str]]:
    """argv -> {option: its values} (flags get []); the inverse of exerciser_args."""
    out: dict[str, list[str]] = {}
    for arg in args:
        if arg.startswith("--"):
            key = arg[2:]
            out[key] = []
        else:
            out[key].append(arg)
    return out


def _ini(text: str) -> dict[str, str]:
    """key = value lines of the rendered hdf5_iotest.ini."""
    pairs = (ln.partition("=") for ln in text.splitlines() if not ln.startswith((";", "#")))
    return {k.strip(): v.strip() for k, eq, v in pairs if eq}


class H5bench(Benchmark):
    name = "h5bench"
    executable = "h5bench_write"      # per kernel: the RunSpec names the one that runs
    binaries = tuple(KERNELS.values())
    spack_package = "h5bench"
    links = ("hdf5",)
    table_metrics = ("observed_write_rate", "observed_read_rate", "observed_modify_rate")
    size_params = ("timesteps", "dim_1")
    metrics = (
        MetricSpec("*_rate_std*", "MiB/s", None, "spread of a rate over the exerciser's ranks"),
        MetricSpec("*_time_std*", "s", None, "spread of a time over the exerciser's ranks"),
        MetricSpec("*_rate*", "MiB/s", "higher", "rate (raw, observed, per rank)"),
        MetricSpec("file_size", "B", None, "size of the file written"),
        MetricSpec("total_size", "MiB", None, "data written"),
        MetricSpec("*_time*", "s", "lower", "seconds"),
        MetricSpec("*_phase_*", "s", "lower", "seconds of the read or write phase"),
    )

    def check(self, case) -> str | None:
        p = case.params
        kernel, n = p["kernel"], p["num_dims"]
        for own in OWN_KERNELS:
            foreign = [k for k in p if k.startswith(f"{own}_") and _given(p, k)]
            if foreign and kernel != own:
                return f"{foreign[0]} applies to kernel {own} only, not to kernel {kernel}"
        if kernel in OWN_KERNELS:
            foreign = [k for k in PATTERN_PARAMS if _given(p, k)]
            if foreign:
                return (f"{foreign[0]} applies to the pattern kernels (write, read, overwrite, append, "
                        f"write_unlimited), not to kernel {kernel}")
            return self._check_metadata(case) if kernel == "metadata" else self._check_exerciser(case)
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
    def _check_metadata(case) -> str | None:
        """What hdf5_iotest asserts (configuration.c sanity_check/validate), before it runs."""
        p, ranks = case.params, case.num_tasks
        cols = p["metadata_process_columns"]
        if "metadata_process_rows" not in p and ranks % cols:
            return (f"metadata_process_columns {cols} does not divide the {ranks} ranks (the process "
                    f"rows default to ranks / columns)")
        rows, cols = metadata_grid(case)
        if rows * cols != ranks:
            return (f"the process grid metadata_process_rows x metadata_process_columns ({rows}x{cols}) "
                    f"must have as many processes as there are ranks ({ranks})")
        if p["metadata_scaling"] == "strong":
            for what, total, procs in (("rows", p["metadata_rows"], rows),
                                       ("columns", p["metadata_columns"], cols)):
                if total % procs:
                    return (f"strong scaling splits metadata_{what} ({total}) over {procs} process "
                            f"{what}: make it a multiple")
        return None

    @staticmethod
    def _check_exerciser(case) -> str | None:
        """What h5bench_exerciser would silently change (dimranks, blocks) or cannot do."""
        p, ranks = case.params, case.num_tasks
        n = p["exerciser_numdims"]
        for name in ("minels", "bufmult", "dimranks", "fileblocks", "filestrides"):
            values = p.get(f"exerciser_{name}")
            if values is not None and len(values) != n:
                return (f"exerciser_{name} has {len(values)} value(s): give one per dimension "
                        f"(exerciser_numdims is {n})")
        dims = exerciser_dimranks(case)
        if math.prod(dims) != ranks:
            return (f"exerciser_dimranks {'x'.join(map(str, dims))} is {math.prod(dims)} ranks, not "
                    f"{ranks} (h5bench_exerciser would drop it and split dimension 1 only)")
        minels = p["exerciser_minels"]
        blocks = p.get("exerciser_fileblocks")
        if blocks:
            bad = [i for i, (e, b) in enumerate(zip(minels, blocks)) if e % b]
            if bad:
                return (f"exerciser_fileblocks {blocks[bad[0]]} does not divide exerciser_minels "
                        f"{minels[bad[0]]} in dimension {bad[0] + 1} (h5bench_exerciser would ignore it)")
        strides = p.get("exerciser_filestrides")
        if strides and not blocks:
            return "exerciser_filestrides needs exerciser_fileblocks"
        if strides and any(s < b for s, b in zip(strides, blocks)):
            return "exerciser_filestrides must be at least exerciser_fileblocks in every dimension"
        elements = math.prod(minels)
        if "exerciser_memblock" in p and elements % p["exerciser_memblock"]:
            return (f"exerciser_memblock {p['exerciser_memblock']} does not divide the {elements} "
                    f"elements of the buffer (h5bench_exerciser would ignore it)")
        if "exerciser_memstride" in p:
            if "exerciser_memblock" not in p:
                return "exerciser_memstride needs exerciser_memblock"
            if p["exerciser_memstride"] < p["exerciser_memblock"]:
                return "exerciser_memstride must be at least exerciser_memblock"
        largest = exerciser_sizes(p)[-1]
        if math.prod(largest) >= _INT_MAX:
            return (f"the largest buffer ({'x'.join(map(str, largest))} elements) is 2^31 elements or "
                    f"more (h5bench_exerciser counts them in an int)")
        if 2 * p["exerciser_rshift"] > ranks:
            return f"exerciser_rshift must be at most half the rank count ({ranks // 2})"
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
        """Data written, from the parameters (the kernels' own arithmetic). metadata also reads it all
        back; exerciser writes (and reads back) each buffer size 10 times, truncating its file each
        time, plus the compound dataset (--derivedtype) and 64 KiB of attributes an iteration
        (--addattr). HDF5's own metadata is not counted."""
        p = case.params
        if p["kernel"] == "read":
            return 0
        if p["kernel"] == "metadata":
            rows, cols = metadata_grid(case)
            strong = p["metadata_scaling"] == "strong"
            my_rows = p["metadata_rows"] // rows if strong else p["metadata_rows"]
            my_cols = p["metadata_columns"] // cols if strong else p["metadata_columns"]
            return case.num_tasks * p["metadata_steps"] * p["metadata_arrays"] * my_rows * my_cols * 8
        if p["kernel"] == "exerciser":
            per_element = 8 + (DERIVED_BYTES if p["exerciser_derivedtype"] else 0)
            data = sum(math.prod(size) for size in exerciser_sizes(p)) * per_element * case.num_tasks
            attrs = ATTRIBUTES_BYTES * p["exerciser_nsizes"] if p["exerciser_addattr"] else 0
            return EXERCISER_ITERATIONS * (data + attrs)
        particles = p["dim_1"] * p["dim_2"] * p["dim_3"]
        return case.num_tasks * particles * PARTICLE_BYTES * p["timesteps"]

    def through_mpi_io(self, case) -> bool:
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
        kernel = case.params["kernel"]
        return None if kernel in WRITES or kernel in OWN_KERNELS else self.data_key(case)

    def run_spec(self, case, case_dir: str, hints: dict | None = None, show_hints: bool = False,
                 keep_files: bool = False, input_dir: str | None = None) -> RunSpec:
        """MPI-IO hints reach HDF5 only through the environment (ROMIO_HINTS...), which the hints
        layer sets. mode ASYNC sets HDF5_VOL_CONNECTOR; the connector's library must be on
        HDF5_PLUGIN_PATH (site environment), and the parser checks which mode h5bench reports."""
        from ..render import render_template

        p = case.params
        kernel = p["kernel"]
        if kernel == "exerciser":
            # its file lands in its working directory: the case directory, like every other kernel
            return RunSpec(KERNELS[kernel], exerciser_args(case), mpi=True, workdir=case_dir)
        if kernel == "metadata":
            return self._metadata_spec(case, case_dir)
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
        return RunSpec(KERNELS[kernel], [CONFIG, JobPath(f"{directory}/{DATA}")], env=env,
                       files={CONFIG: config},
                       outputs=[CONFIG, CSV], mpi=True)

    @staticmethod
    def _metadata_spec(case, case_dir: str) -> RunSpec:
        from ..render import render_template

        data = f"{case_dir}/{METADATA_DATA}"
        line = f"hdf5-file = {data}"
        if len(line) + 1 >= INI_MAX_LINE:
            raise IolabError(f"h5bench_hdf5_iotest reads ini lines of up to {INI_MAX_LINE - 1} characters; "
                             f"'{line}' is longer (the path would be cut): use a shorter scratch path")
        if ";" in data or "#" in data:
            raise IolabError(f"the case directory {case_dir!r} has ';' or '#', which the ini file "
                             f"would read as a comment")
        rows, _cols = metadata_grid(case)
        ini = render_template("h5bench/hdf5_iotest.ini.j2", case=case, params=case.params,
                              process_rows=rows, hdf5_file=data, csv_file=METADATA_CSV)
        # a job-time case directory: the job writes the ini, the path expanded as mkdir's
        job_files = {INI: (case_dir, INI_MAX_LINE - 2)} if has_variables(case_dir) else {}
        return RunSpec(KERNELS["metadata"], [INI], files={INI: ini}, outputs=[INI, METADATA_CSV], mpi=True,
                       job_files=job_files)

    def parse_outputs(self, stage: Path, spec: RunSpec):
        if spec.executable == KERNELS["metadata"]:
            return self._parse_metadata(stage, spec)
        if spec.executable == KERNELS["exerciser"]:
            return self._parse_exerciser(stage, spec)
        return self._parse_patterns(stage, spec)

    @staticmethod
    def _stderr_failures(stage: Path, kernel: str) -> None:
        stderr = read_output(stage / "rfm_job.err", "stderr")
        asserts = [ln.strip() for ln in stderr.splitlines() if "Assertion" in ln]
        if asserts:
            raise ParseError(f"rfm_job.err: {kernel} failed an assertion (a rejected input): {asserts[0]}")
        errors = hdf5_errors(stderr)
        if errors:
            raise ParseError(f"rfm_job.err: HDF5 reported {len(errors)} error(s) under {kernel}, whose "
                             f"results are then not to be trusted: {errors[0]}")

    def _parse_metadata(self, stage: Path, spec: RunSpec):
        """stderr first (assertions leave stdout empty), then stdout and the CSV, which must agree
        with each other and with the ini iolab wrote (an unknown key is ignored by the kernel)."""
        self._stderr_failures(stage, spec.executable)
        text = h5bench_metadata.parse(read_output(stage / "rfm_job.out", "stdout"), "rfm_job.out")
        csv = h5bench_metadata_csv.parse(read_output(stage / METADATA_CSV, "hdf5_iotest CSV"), METADATA_CSV)
        from_text = text.by_name()
        for metric in csv.metrics:
            if from_text[metric.name].value != metric.value:
                raise ParseError(f"{METADATA_CSV} and stdout disagree on {metric.name} ({metric.value} vs "
                                 f"{from_text[metric.name].value}): not the same run?")
        if INI in spec.files:
            wanted = _ini(spec.files[INI])
            for key, value in text.details.items():
                ini_key = key.replace("_", "-")
                if ini_key in wanted and wanted[ini_key] != str(value):
                    raise ParseError(f"rfm_job.out: h5bench_hdf5_iotest ran with {ini_key}={value}, but "
                                     f"{INI} says {wanted[ini_key]}")
        return Parsed(text.metrics, version=None, details=text.details, echo=text.echo)

    def _parse_exerciser(self, stage: Path, spec: RunSpec):
        """stdout, stderr for HDF5 errors; the echoed flags, the decomposition and the buffer sizes
        must be those requested (the kernel drops a bad --dimranks and --metacoll silently)."""
        self._stderr_failures(stage, spec.executable)
        parsed = h5bench_exerciser.parse(read_output(stage / "rfm_job.out", "stdout"), "rfm_job.out")
        d = parsed.details
        opts = exerciser_options(spec.args)
        if "metacoll" in opts and not d["metacoll_available"]:
            raise ParseError("rfm_job.out: exerciser_metacoll was requested, but this h5bench_exerciser "
                             "was built without METACOLOK ('Metadata Collectives are DISABLED')")
        if d["dimranks_dropped"]:
            raise ParseError("rfm_job.out: h5bench_exerciser dropped --dimranks "
                             f"{' '.join(opts.get('dimranks', []))} ('Only dividing dim-0')")
        for option, echo in EXERCISER_ECHO.items():
            if d[echo] != (option in opts):
                raise ParseError(f"rfm_job.out: h5bench_exerciser reports {echo}: {d[echo]}, but --{option} "
                                 f"was {'' if option in opts else 'not '}given")
        numdims = int(opts["numdims"][0])
        shift = int(opts.get("rshift", ["0"])[0])
        if d["numDims"] != numdims or d["rankShift"] != shift:
            raise ParseError(f"rfm_job.out: h5bench_exerciser reports numDims {d['numDims']}, rankShift "
                             f"{d['rankShift']}; --numdims {numdims} --rshift {shift} were given")
        params = {"exerciser_numdims": numdims, "exerciser_minels": list(map(int, opts["minels"])),
                  "exerciser_nsizes": int(opts["nsizes"][0])}
        if "bufmult" in opts:
            params["exerciser_bufmult"] = list(map(int, opts["bufmult"]))
        want = [8 * math.prod(size) for size in exerciser_sizes(params)]
        if d["bufsizes"] != want:
            raise ParseError(f"rfm_job.out: buffer sizes {d['bufsizes']} B, expected {want} B from the "
                             f"options")
        return parsed

    def _parse_patterns(self, stage: Path, spec: RunSpec):
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
        return Parsed(metrics, version=None, details={**csv.details, "mode": text.details["mode"]},
                      echo=text.echo)

    echo_params = {k: k for k in ("timesteps", "num_dims", "dim_1", "dim_2", "dim_3",
                                  "collective_data", "collective_metadata")}
    imported_echo = {"mode": "mode"}     # its configuration block's Mode: (SYNC or ASYNC)

    def requested_echo(self, case, spec) -> dict:
        p = case.params
        if p["kernel"] == "exerciser":
            return {}           # its flags, decomposition and sizes are checked while parsing
        want = {"ranks": case.num_tasks}
        if p["kernel"] != "metadata":
            # reads take their grid from the file; their configuration block repeats the config
            want.update({k: v for k, v in super().requested_echo(case, spec).items()
                         if not k.startswith("dim_") or int(k[4:]) <= p["num_dims"]})
        return want

    def error_lines(self, stdout, stderr, spec):
        parser = {KERNELS["metadata"]: h5bench_metadata, KERNELS["exerciser"]: h5bench_exerciser}.get(
            spec.executable, h5bench_text)
        asserts = [ln.strip() for ln in stderr.splitlines() if "Assertion" in ln]
        return asserts + hdf5_errors(stderr) + parser.failures(stdout)

    def parse_files(self, paths):
        out = []
        for path in map(Path, paths):
            text = read_output(path, "h5bench output")
            lines = {line.strip() for line in text.splitlines()}
            if h5bench_metadata_csv.HEADER in lines:
                out.append(h5bench_metadata_csv.parse(text, path.name))
                continue
            if any(line.startswith("Config loaded from '") for line in lines):
                out.append(h5bench_metadata.parse(text, path.name))
                continue
            if any(line.startswith(("useMetaDataCollectives:", "ERROR - unrecognized parameter"))
                   for line in lines):
                out.append(h5bench_exerciser.parse(text, path.name))
                continue
            csv = h5bench_csv.HEADER in lines or path.suffix == ".csv"
            parser = h5bench_csv if csv else h5bench_text
            out.append(parser.parse(text, path.name))
        return out


BENCHMARK = H5bench()
