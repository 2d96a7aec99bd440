"""h5bench 1.6 kernels: rendered configs against the recorded ones, plan-time checks, data keys,
and the stdout and CSV parsers against real outputs (tests/data/h5bench, see its README),
including failed, truncated and silently wrong ones.

Every expected number was read by hand from the file named in its table entry.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iolab.benchmarks import RunSpec, get as get_benchmark
from iolab.benchmarks.h5bench import ASYNC_CONNECTOR, CONFIG, CSV, compute_time
from iolab.errors import IolabError, ParseError
from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand
from iolab.parsers import h5bench_csv, h5bench_text
from tests.unit.realrun import needs as _needs
from tests.unit.realrun import run_spec as _run

REPO = Path(__file__).resolve().parents[2]
KB = 1 / 1024          # h5bench's KB and KB/s, in MiB and MiB/s
SHARED = ("raw_{op}_rate", "observed_{op}_rate", "total_size", "raw_time", "metadata_time",
          "observed_time", "compute_time")
FILE_TIMES = ("h5fcreate_time", "h5fflush_time", "h5fclose_time")

# output -> (op, (raw rate, observed rate, total size, raw time, metadata, observed time, compute),
#            (H5Fcreate, H5Fflush, H5Fclose) or None). Sizes in MiB, rates in MiB/s, times in s.
OUTPUTS = {
    "h5bench_write_1d_contig_4r.txt": ("write", (405.889, 317.911, 96.0, 0.237, 0.002, 2.302, 2.0),
                                       (0.010, 0.050, 0.001)),
    "h5bench_write_1d_contig.csv": ("write", (405.889, 317.911, 96.0, 0.237, 0.002, 2.302, 2.0), None),
    "h5bench_read_1d_full_4r.txt": ("read", (879.902, 820.905, 96.0, 0.109, 0.006, 2.117, 2.0), None),
    "h5bench_read_1d_full.csv": ("read", (879.902, 820.905, 96.0, 0.109, 0.006, 2.117, 2.0), None),
    "h5bench_driver_storage/2ef74709/stdout": ("write", (305.547, 255.606, 96.0, 0.314, 0.002, 2.376, 2.0),
                                               (0.006, 0.049, 0.001)),
    "h5bench_driver_storage/2ef74709/output.csv": ("write", (305.547, 255.606, 96.0, 0.314, 0.002, 2.376,
                                                             2.0), None),
    "h5bench_driver_storage/eb038943/stdout": ("read", (828.986, 782.440, 96.0, 0.116, 0.004, 2.123, 2.0),
                                               None),
    "h5bench_driver_storage/eb038943/output.csv": ("read", (828.986, 782.440, 96.0, 0.116, 0.004, 2.123,
                                                            2.0), None),
    "h5bench_write_small_4r.txt": ("write", (189.321, 73.109, 1.5, 0.008, 0.0, 0.021, 0.0),
                                   (0.007, 0.002, 0.001)),
    "h5bench_write_small.csv": ("write", (189.321, 73.109, 1.5, 0.008, 0.0, 0.021, 0.0), None),
    "h5bench_write_tiny_4r.txt": ("write", (958.312 * KB, 162.535 * KB, 2.0 * KB, 0.002, 0.0, 0.012, 0.0),
                                  (0.007, 0.001, 0.001)),
    "h5bench_write_tiny.csv": ("write", (958.312 * KB, 162.535 * KB, 2.0 * KB, 0.002, 0.0, 0.012, 0.0),
                               None),
    # parses on its own: only stderr shows that 2 of the 5 steps were never in the file
    "h5bench_read_too_many_steps_4r.txt": ("read", (487.139, 223.434, 2.5, 0.005, 0.002, 0.011, 0.0),
                                           None),
    "h5bench_read_too_many_steps.csv": ("read", (487.139, 223.434, 2.5, 0.005, 0.002, 0.011, 0.0), None),
}
# Failed runs: file -> the message's fragment
FAILED = {
    "h5bench_write_unknown_key_4r.txt": "could not read its configuration (an unknown key, a blank line "
                                        "or a rejected value; it exits 0): Unknown Parameter: MODE | "
                                        "Configuration file read failed. Please, check "
                                        "h5bench_write_unknown_key.cfg",
    "h5bench_write_blank_line_4r.txt": "could not read its configuration",
    "h5bench_read_nofile_4r.txt": "h5bench reported a failure: Failed to read dimensions",
    "h5bench_read_nofile.csv": "the h5bench CSV is empty",
}
# Config keys -> parameters, to build cases from the recorded configs
KEYS = {"MEM_PATTERN": "mem_pattern", "FILE_PATTERN": "file_pattern", "READ_OPTION": "read_option",
        "TIMESTEPS": "timesteps", "DELAYED_CLOSE_TIMESTEPS": "delayed_close_timesteps",
        "COLLECTIVE_DATA": "collective_data", "COLLECTIVE_METADATA": "collective_metadata",
        "EMULATED_COMPUTE_TIME_PER_TIMESTEP": "emulated_compute_time", "NUM_DIMS": "num_dims",
        "DIM_1": "dim_1", "DIM_2": "dim_2", "DIM_3": "dim_3", "MODE": "mode"}
WRITER = {"read": "write", "overwrite": "write", "append": "write_unlimited"}


@pytest.fixture(scope="module")
def h5_dir(data_dir) -> Path:
    return data_dir / "h5bench"


def _cases(write_experiment, name, body):
    return expand(load_experiment(write_experiment(name, f"id: {name}\ndescription: h5bench test\n"
                                                         f"benchmark: h5bench\n{body}")))


def _case(write_experiment, fixed: dict | None = None, kernel="write", tasks=4, name="one"):
    """One case; a reading kernel comes with its write, as an experiment must have it."""
    kernels = [WRITER.get(kernel, kernel), kernel]
    cases = _cases(write_experiment, name, f"scale: {{nodes: 1, tasks_per_node: {tasks}}}\n"
                                           f"fixed: {json.dumps(fixed or {})}\n"
                                           f"matrix: {{kernel: {json.dumps(kernels)}}}\n")
    assert cases[-1].params["kernel"] == kernel
    return cases[-1]


def _settings(lines) -> dict:
    """KEY=VALUE lines (h5bench cfg, or the driver's JSON 'configuration') -> case parameters."""
    out = {}
    for key, value in lines:
        if key == "CSV_FILE":
            continue
        value = {"YES": True, "NO": False}.get(value, value)
        out[KEYS[key]] = int(value) if isinstance(value, str) and value.isdigit() else value
    return out


def _cfg_lines(text: str) -> list[tuple[str, str]]:
    return [tuple(line.split("=", 1)) for line in text.splitlines() if not line.startswith("#")]


def test_every_recorded_h5bench_file_is_covered(h5_dir):
    names = {str(p.relative_to(h5_dir)) for p in h5_dir.rglob("*") if p.is_file()
             and not p.name.startswith(("h5bench_metadata", "h5bench_exerciser"))}  # test_h5bench_kernels
    cfgs = {"h5bench_write_1d_contig.cfg", "h5bench_read_1d_full.cfg", "h5bench_driver_2d.json",
            "h5bench_driver_storage/2ef74709/h5bench.cfg", "h5bench_driver_storage/eb038943/h5bench.cfg"}
    captured = {"h5bench_write_unknown_key", "h5bench_write_blank_line", "h5bench_read_nofile",
                "h5bench_write_small", "h5bench_read_too_many_steps", "h5bench_write_tiny"}
    stderrs = {f"{n}_4r.stderr.txt" for n in ("h5bench_write_unknown_key", "h5bench_write_blank_line",
                                              "h5bench_read_nofile", "h5bench_read_too_many_steps")}
    assert names == (set(OUTPUTS) | set(FAILED) | cfgs | {f"{n}.cfg" for n in captured} | stderrs
                     | {"README.md"})


# ---------------------------------------------------------------- parsers


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_h5bench_output(h5_dir, name):
    op, shared, file_times = OUTPUTS[name]
    parser = h5bench_csv if name.endswith(".csv") else h5bench_text
    parsed = parser.parse((h5_dir / name).read_text(), name)
    got = parsed.by_name()
    names = [n.format(op=op) for n in SHARED] + (list(FILE_TIMES) if file_times else [])
    assert [m.name for m in parsed.metrics] == names
    for metric, value in zip(names, shared + (file_times or ())):
        assert got[metric].value == pytest.approx(value, rel=1e-12, abs=0), metric
    for metric in names:
        want = "MiB/s" if metric.endswith("_rate") else "MiB" if metric == "total_size" else "s"
        assert got[metric].unit == want
    assert {m.source for m in parsed.metrics} == {parser.SOURCE}
    assert parsed.version is None
    assert parsed.details["ranks"] == 4
    if parser is h5bench_text:
        assert parsed.details == {"operation": op, "mode": "SYNC", "ranks": 4}
    else:
        assert parsed.details == {"operation": op, "ranks": 4, "collective data": "YES",
                                  "collective meta": "YES", "subfiling": "NO"}


def test_named_values_and_units(h5_dir):
    m = h5bench_text.parse((h5_dir / "h5bench_write_1d_contig_4r.txt").read_text()).by_name()
    assert m["raw_write_rate"].as_dict() == {"name": "raw_write_rate", "value": 405.889, "unit": "MiB/s",
                                             "source": "h5bench-text"}
    assert m["h5fflush_time"].value == 0.05
    c = h5bench_csv.parse((h5_dir / "h5bench_read_1d_full.csv").read_text()).by_name()
    assert c["observed_read_rate"].value == 820.905
    # 'MB' is 2^20 bytes: 4 ranks x 262144 particles x 32 B x 3 steps = 96 MiB
    assert c["total_size"].value * 2**20 == 4 * 262144 * 32 * 3
    # KB and KB/s (base 1024) from the tiny run
    t = h5bench_csv.parse((h5_dir / "h5bench_write_tiny.csv").read_text()).by_name()
    assert t["total_size"].value * 2**20 == 2048 == 4 * 16 * 32
    assert t["raw_write_rate"].value == 958.312 / 1024


@pytest.mark.parametrize("unit, factor", [("  B", 2**-20), (" KB", 2**-10), (" MB", 1), (" GB", 1024),
                                          (" TB", 1024**2)])
def test_every_unit_h5bench_prints(h5_dir, unit, factor):
    text = (h5_dir / "h5bench_write_1d_contig_4r.txt").read_text()
    text = text.replace("SYNC Raw write rate: 405.889 MB/s", f"SYNC Raw write rate: 1.999{unit}/s")
    text = text.replace("Total write size: 96.000 MB", f"Total write size: 3.500{unit}")
    m = h5bench_text.parse(text).by_name()
    assert m["raw_write_rate"].value == 1.999 * factor
    assert m["total_size"].value == 3.5 * factor
    csv = (h5_dir / "h5bench_write_1d_contig.csv").read_text()
    csv = csv.replace("raw rate, 405.889, MB/s", f"raw rate, 1.999,{unit}/s")
    assert h5bench_csv.parse(csv).by_name()["raw_write_rate"].value == 1.999 * factor


@pytest.mark.parametrize("name", sorted(FAILED))
def test_recorded_failures(h5_dir, name):
    parser = h5bench_csv if name.endswith(".csv") else h5bench_text
    with pytest.raises(ParseError) as info:
        parser.parse((h5_dir / name).read_text(), name)
    assert str(info.value).startswith(f"{name}: ")
    assert FAILED[name] in str(info.value)
    with pytest.raises(ParseError):
        get_benchmark("h5bench").parse_files([h5_dir / name])


def test_unknown_key_in_a_path_is_not_a_failure(h5_dir):
    """Lines that echo a path (which may say 'error' or 'unknown') are not failure lines."""
    text = (h5_dir / "h5bench_write_1d_contig_4r.txt").read_text()
    text = text.replace("/tmp/runs/data/shared/h5bench/", "/scratch/unknown-errors/failed/")
    assert "unknown-errors" in text
    assert h5bench_text.parse(text).by_name()["raw_write_rate"].value == 405.889


@pytest.mark.parametrize("name", ["h5bench_write_1d_contig_4r.txt", "h5bench_read_1d_full_4r.txt"])
@pytest.mark.parametrize("cut", ["before-results", "after-header", "before-rates", "inside-last-rate",
                                 "before-closing", "half"])
def test_stdout_truncated(h5_dir, name, cut):
    text = (h5_dir / name).read_text()
    results = text.index("=================== Performance Results")
    at = {
        "before-results": results,
        "after-header": text.index("\n", results) + 1,
        "before-rates": text.index("SYNC Raw"),
        "inside-last-rate": text.index("SYNC Observed") + 30,
        "before-closing": text.rindex("=" * 59),
        "half": len(text) // 2,
    }[cut]
    with pytest.raises(ParseError, match="did not finish|truncated") as info:
        h5bench_text.parse(text[:at], name)
    assert name in str(info.value)


@pytest.mark.parametrize("cut", ["header", "operation", "inside-a-row", "before-observed-time",
                                 "inside-observed-time"])
def test_csv_truncated(h5_dir, cut):
    text = (h5_dir / "h5bench_write_1d_contig.csv").read_text()
    at = {"header": 10, "operation": text.index("operation"), "inside-a-row": text.index("raw rate") + 9,
          "before-observed-time": text.index("observed time"),
          "inside-observed-time": text.index("observed time") + 10}[cut]
    with pytest.raises(ParseError, match="truncated|not an h5bench CSV") as info:
        h5bench_csv.parse(text[:at], "h5bench.csv")
    assert str(info.value).startswith("h5bench.csv: ")


STDOUT, CSV_OUT = "h5bench_write_1d_contig_4r.txt", "h5bench_write_1d_contig.csv"


@pytest.mark.parametrize("name, old, new, fragment", [
    (STDOUT, "405.889 MB/s", "inf MB/s", "raw rate is not finite"),
    (STDOUT, "405.889 MB/s", "0.000  B/s", "raw rate is 0.0 MiB/s"),
    (STDOUT, "405.889 MB/s", "405.889 PB/s", "unknown unit 'PB'"),
    (STDOUT, "H5Fflush() time: 0.050 s\n", "", r"no 'H5Fflush\(\) time' line"),
    (STDOUT, "SYNC Observed", "ASYNC Observed", "mixes SYNC and ASYNC"),
    (STDOUT, "Raw write time", "Raw read time", "mixes operations"),
    (CSV_OUT, "observed rate, 317.911", "observed rate, -nan", "observed rate is not finite"),
    (CSV_OUT, "raw time, 0.237, seconds", "raw time, 237, ms", "raw time is in 'ms', not seconds"),
    (CSV_OUT, "operation, write", "operation, amrex", "unknown h5bench operation 'amrex'"),
    (CSV_OUT, "ranks, 4", "ranks, four", "ranks is 'four', not a number"),
])
def test_bad_values(h5_dir, name, old, new, fragment):
    text = (h5_dir / name).read_text()
    assert old in text
    parser = h5bench_csv if name.endswith(".csv") else h5bench_text
    with pytest.raises(ParseError, match=fragment):
        parser.parse(text.replace(old, new), name)


def test_not_an_output(h5_dir):
    with pytest.raises(ParseError, match="not an h5bench CSV"):
        h5bench_csv.parse((h5_dir / STDOUT).read_text())
    with pytest.raises(ParseError, match="empty"):
        h5bench_text.parse("")


def test_csv_with_env_metadata_block(h5_dir):
    csv = (h5_dir / "h5bench_read_1d_full.csv").read_text()
    block = ("======================= Metadata =====================\nPATH = /usr/bin\n"
             "======================= Metadata end ====================\n")
    assert h5bench_csv.parse(block + csv).by_name()["raw_read_rate"].value == 879.902


def test_parse_files_detects_the_format(h5_dir):
    got = get_benchmark("h5bench").parse_files([h5_dir / "h5bench_write_1d_contig_4r.txt",
                                              h5_dir / "h5bench_write_1d_contig.csv"])
    assert [{m.source for m in p.metrics} for p in got] == [{"h5bench-text"}, {"h5bench-csv"}]
    assert [p.by_name()["raw_write_rate"].value for p in got] == [405.889, 405.889]


def test_cli_parse_h5bench(h5_dir):
    path = h5_dir / "h5bench_driver_storage" / "eb038943" / "output.csv"
    out = subprocess.run([sys.executable, "-m", "iolab.cli", "parse", "h5bench", str(path)],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines[0] == {"file": str(path), "name": "raw_read_rate", "value": 828.986, "unit": "MiB/s",
                        "source": "h5bench-csv", "version": None}
    bad = h5_dir / "h5bench_write_unknown_key_4r.txt"
    out = subprocess.run([sys.executable, "-m", "iolab.cli", "parse", "h5bench", str(bad)],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 1
    assert "Configuration file read failed" in out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""


# ---------------------------------------------------------------- rendered configs


@pytest.mark.parametrize("recorded, kernel", [
    ("h5bench_write_1d_contig.cfg", "write"),
    ("h5bench_read_1d_full.cfg", "read"),
    ("h5bench_driver_storage/2ef74709/h5bench.cfg", "write"),
    ("h5bench_driver_storage/eb038943/h5bench.cfg", "read"),
])
def test_config_matches_the_recorded_config(h5_dir, write_experiment, src_layout_templates, recorded,
                                            kernel):
    """A case with the recorded settings renders the recorded lines (CSV_FILE aside: iolab keeps
    the CSV in the stage); the only extra line is iolab's comment."""
    text = (h5_dir / recorded).read_text()
    case = _case(write_experiment, _settings(_cfg_lines(text)), kernel, name=kernel + "-cfg")
    spec = get_benchmark("h5bench").run_spec(case, "/scratch/case", input_dir="/scratch/writer")
    rendered = spec.files[CONFIG]
    lines = rendered.splitlines()
    assert lines[0] == (f"# iolab case {case.case_id} of {kernel}-cfg: rendered from "
                        f"templates/h5bench/h5bench.cfg.j2")
    want = text.splitlines()
    assert lines[1:-1] == want[:-1]
    assert want[-1].startswith("CSV_FILE=") and lines[-1] == f"CSV_FILE={CSV}"
    assert "" not in lines and " =" not in rendered and "= " not in rendered
    assert spec.executable == f"h5bench_{kernel}"
    data = "/scratch/case" if kernel == "write" else "/scratch/writer"
    assert spec.args == [CONFIG, f"{data}/h5bench.h5"]
    assert spec.outputs == [CONFIG, CSV] and spec.env == {} and spec.mpi is True


def test_driver_json_gives_the_same_configs(h5_dir, write_experiment, src_layout_templates):
    """The driver's JSON (MODE included) types into the same cases as the configs it wrote."""
    doc = json.loads((h5_dir / "h5bench_driver_2d.json").read_text())
    for bench, stored in zip(doc["benchmarks"], ("2ef74709", "eb038943")):
        settings = _settings(bench["configuration"].items())
        assert settings.pop("mode") == "SYNC"
        case = _case(write_experiment, settings, bench["benchmark"], name=f"json-{stored}")
        rendered = get_benchmark("h5bench").run_spec(case, "/c", input_dir="/w").files[CONFIG]
        cfg = (h5_dir / "h5bench_driver_storage" / stored / "h5bench.cfg").read_text().splitlines()
        assert rendered.splitlines()[1:-1] == cfg[:-1]
        assert bench["file"] == "test_2d.h5"


def test_config_of_every_option(write_experiment, src_layout_templates):
    case = _case(write_experiment, {"num_dims": 2, "dim_1": 512, "dim_2": 256, "compress": True,
                                    "chunk_dim_1": 64, "chunk_dim_2": 32, "collective_data": True,
                                    "align": True, "align_threshold": "16KiB", "align_len": "1MiB",
                                    "emulated_compute_time": "500ms", "delayed_close_timesteps": 2,
                                    "timesteps": 4})
    lines = get_benchmark("h5bench").run_spec(case, "/c").files[CONFIG].splitlines()
    assert lines[1:] == [
        "MEM_PATTERN=CONTIG", "FILE_PATTERN=CONTIG", "TIMESTEPS=4", "DELAYED_CLOSE_TIMESTEPS=2",
        "COLLECTIVE_DATA=YES", "COLLECTIVE_METADATA=NO", "EMULATED_COMPUTE_TIME_PER_TIMESTEP=500 ms",
        "NUM_DIMS=2", "DIM_1=512", "DIM_2=256", "DIM_3=1", "COMPRESS=YES", "CHUNK_DIM_1=64",
        "CHUNK_DIM_2=32", "ALIGN=YES", "ALIGN_THRESHOLD=16384", "ALIGN_LEN=1048576",
        f"CSV_FILE={CSV}"]


@pytest.mark.parametrize("kernel, first", [("overwrite", "IO_OPERATION=OVERWRITE"),
                                           ("append", "IO_OPERATION=APPEND")])
def test_config_of_modifying_kernels(write_experiment, src_layout_templates, kernel, first):
    fixed = {"compress": True, "chunk_dim_1": 1024, "collective_data": True}
    case = _case(write_experiment, fixed, kernel, name=kernel)
    spec = get_benchmark("h5bench").run_spec(case, "/c", input_dir="/w")
    lines = spec.files[CONFIG].splitlines()
    assert lines[1] == first and "READ_OPTION=FULL" in lines
    assert not [ln for ln in lines if ln.startswith(("COMPRESS", "CHUNK", "ALIGN"))]  # the file's, not theirs
    assert spec.executable == f"h5bench_{kernel}" and spec.args == [CONFIG, "/w/h5bench.h5"]
    unlimited = _case(write_experiment, fixed, "write_unlimited", name="unlimited")
    spec = get_benchmark("h5bench").run_spec(unlimited, "/c")
    assert spec.executable == "h5bench_write_unlimited"
    assert "COMPRESS=YES" in spec.files[CONFIG].splitlines()


@pytest.mark.parametrize("given, written", [("1 s", "1 s"), ("1s", "1 s"), ("500ms", "500 ms"),
                                           ("250 us", "250 us"), ("2min", "2 min"), ("0 s", "0 s")])
def test_compute_time_written_with_a_space(given, written):
    assert compute_time(given) == written


def test_async_mode_sets_the_connector(write_experiment, src_layout_templates):
    case = _case(write_experiment, {"mode": "ASYNC", "delayed_close_timesteps": 1})
    spec = get_benchmark("h5bench").run_spec(case, "/c")
    assert spec.env == {"HDF5_VOL_CONNECTOR": ASYNC_CONNECTOR}
    assert "MODE" not in spec.files[CONFIG]      # an unknown key to h5bench_write


def test_reading_kernel_needs_its_input(write_experiment, src_layout_templates):
    case = _case(write_experiment, kernel="read")
    with pytest.raises(IolabError, match="needs the directory of its write case"):
        get_benchmark("h5bench").run_spec(case, "/c")


# ---------------------------------------------------------------- plan-time checks


@pytest.mark.parametrize("fixed, kernel, fragment", [
    ({"dim_2": 4}, "write", "h5bench ignores dim_2 when num_dims is 1: leave it at 1"),
    ({"num_dims": 2, "dim_3": 4}, "write", "ignores dim_3 when num_dims is 2"),
    ({"num_dims": 3, "mem_pattern": "INTERLEAVED"}, "write",
     r"no 3D write pattern for mem_pattern INTERLEAVED with file_pattern CONTIG \(3D supports: "
     r"CONTIG/CONTIG\)"),
    ({"file_pattern": "INTERLEAVED"}, "read", "supports only mem_pattern CONTIG with file_pattern CONTIG"),
    ({"compress": True}, "write", "compress needs chunk_dim_1"),
    ({"compress": True, "num_dims": 2, "dim_2": 8, "chunk_dim_1": 4, "collective_data": True}, "write",
     "compress needs chunk_dim_2"),
    ({"compress": True, "chunk_dim_1": 4, "chunk_dim_2": 4, "collective_data": True}, "write",
     "ignores chunk_dim_2 when num_dims is 1"),
    ({"compress": True, "chunk_dim_1": 4}, "write", "set collective_data: true"),
    ({"compress": True, "chunk_dim_1": 5, "dim_1": 1, "collective_data": True}, "write",
     "chunk_dim_1 \\(5\\) is larger than the dataset's dimension 1 \\(4\\)"),
    ({"chunk_dim_1": 4}, "write", "chunk_dim_1 needs compress: true"),
    ({}, "write_unlimited", "refuses to run without COMPRESS=YES"),
    ({"align": True}, "write", "align needs align_len"),
    ({"align": True, "align_len": "2GiB"}, "write", "align_len must be below 2GiB"),
    ({"align_len": "1MiB"}, "write", "need align: true"),
    ({"align_threshold": 4096}, "write", "need align: true"),
    ({"read_option": "PARTIAL"}, "read", "'PARTIAL' is not allowed"),
    ({"mem_pattern": "STRIDED"}, "write", "'STRIDED' is not allowed"),
    ({"emulated_compute_time": "1.5 s"}, "write", "does not match"),
    ({"emulated_compute_time": "1 h"}, "write", "does not match"),
    ({"num_dims": 4}, "write", "not allowed"),
    ({"kernel": "amrex"}, None, "'amrex' is not allowed"),
])
def test_impossible_cases(write_experiment, fixed, kernel, fragment):
    with pytest.raises(IolabError, match=fragment):
        if kernel is None:
            _cases(write_experiment, "bad", f"fixed: {json.dumps(fixed)}\n")
        else:
            _case(write_experiment, fixed, kernel, name="bad")


def test_append_names_a_compressed_file(write_experiment):
    with pytest.raises(IolabError, match="append extends the file of a write_unlimited case"):
        _cases(write_experiment, "append", "matrix: {kernel: [append]}\n")


def test_defaults(write_experiment):
    case = _case(write_experiment, tasks=1)
    assert {k: v for k, v in case.params.items()
            if not k.startswith(("scale.", "storage", "metadata_", "exerciser_"))} == {
        "kernel": "write", "mem_pattern": "CONTIG", "file_pattern": "CONTIG", "timesteps": 5,
        "delayed_close_timesteps": 0, "emulated_compute_time": "0 s", "num_dims": 1, "dim_1": 1048576,
        "dim_2": 1, "dim_3": 1, "read_option": "FULL", "collective_data": False,
        "collective_metadata": False, "compress": False, "align": False, "align_threshold": 0,
        "mode": "SYNC"}
    assert get_benchmark("h5bench").through_mpi_io(case) is True


def test_bytes_written(h5_dir, write_experiment):
    """32 bytes a particle: the recorded write's 96.000 MB."""
    settings = _settings(_cfg_lines((h5_dir / "h5bench_write_1d_contig.cfg").read_text()))
    adapter = get_benchmark("h5bench")
    write = _case(write_experiment, settings, name="w")
    csv = h5bench_csv.parse((h5_dir / "h5bench_write_1d_contig.csv").read_text()).by_name()
    assert adapter.bytes_written(write) == csv["total_size"].value * 2**20 == 100663296
    assert adapter.bytes_written(_case(write_experiment, settings, "read", name="r")) == 0


# ---------------------------------------------------------------- data keys


def test_keys_pair_writes_and_reads(write_experiment):
    adapter = get_benchmark("h5bench")
    cases = _cases(write_experiment, "pairs", """
scale: {nodes: 1, tasks_per_node: 4}
fixed: {timesteps: 3, dim_1: 262144, compress: true, chunk_dim_1: 65536, collective_data: true}
matrix:
  kernel: [write, read, overwrite, write_unlimited, append]
""")
    got = {c.params["kernel"]: (adapter.produces(c), adapter.consumes(c)) for c in cases}
    fixed = "h5bench:fixed:1048576:timesteps=3:chunk=65536:storage=scratch"
    unlimited = "h5bench:unlimited:1048576:timesteps=3:chunk=65536:storage=scratch"
    assert got == {"write": (fixed, None), "read": (None, fixed), "overwrite": (None, fixed),
                   "write_unlimited": (unlimited, None), "append": (None, unlimited)}


def test_keys_use_the_global_shape(write_experiment):
    """DIM_1 is per rank: 4 ranks x 262144 is the file 8 ranks x 131072 read in full."""
    adapter = get_benchmark("h5bench")
    write = _case(write_experiment, {"num_dims": 2, "dim_1": 512, "dim_2": 512}, tasks=4, name="w4")
    read = _case(write_experiment, {"num_dims": 2, "dim_1": 256, "dim_2": 512}, "read", tasks=8, name="r8")
    assert adapter.produces(write) == adapter.consumes(read) == "h5bench:fixed:2048x512:timesteps=5:" \
                                                                 "storage=scratch"
    other = _case(write_experiment, {"num_dims": 2, "dim_1": 512, "dim_2": 512}, "read", tasks=8, name="r")
    assert adapter.consumes(other) != adapter.produces(write)
    steps = _case(write_experiment, {"num_dims": 2, "dim_1": 512, "dim_2": 512, "timesteps": 3}, "read",
                  name="steps")
    assert adapter.consumes(steps) != adapter.produces(write)
    striped = _case(write_experiment, {"lustre.stripe_count": 8, "align": True, "align_len": "1MiB"},
                    name="striped")
    assert adapter.produces(striped) == ("h5bench:fixed:4194304:timesteps=5:align=1048576/0:"
                                         "storage=scratch:lustre.stripe_count=8")


@pytest.mark.parametrize("mem, file", [("CONTIG", "INTERLEAVED"), ("INTERLEAVED", "CONTIG"),
                                       ("INTERLEAVED", "INTERLEAVED")])
def test_unreadable_layouts_leave_nothing_to_read(write_experiment, mem, file):
    case = _case(write_experiment, {"mem_pattern": mem, "file_pattern": file})
    assert get_benchmark("h5bench").produces(case) is None


# ---------------------------------------------------------------- stage outputs


def _stage(tmp_path, h5_dir, stdout, csv, stderr=None) -> Path:
    shutil.copy(h5_dir / stdout, tmp_path / "rfm_job.out")
    if csv:
        shutil.copy(h5_dir / csv, tmp_path / CSV)
    if stderr:
        shutil.copy(h5_dir / stderr, tmp_path / "rfm_job.err")
    else:
        (tmp_path / "rfm_job.err").write_text("")
    return tmp_path


def test_stage_merges_csv_and_stdout(h5_dir, tmp_path):
    stage = _stage(tmp_path, h5_dir, "h5bench_write_1d_contig_4r.txt", "h5bench_write_1d_contig.csv")
    parsed = get_benchmark("h5bench").parse_outputs(stage, RunSpec("h5bench_write", []))
    assert [(m.name, m.value, m.source) for m in parsed.metrics] == [
        ("raw_write_rate", 405.889, "h5bench-csv"), ("observed_write_rate", 317.911, "h5bench-csv"),
        ("total_size", 96.0, "h5bench-csv"), ("raw_time", 0.237, "h5bench-csv"),
        ("metadata_time", 0.002, "h5bench-csv"), ("observed_time", 2.302, "h5bench-csv"),
        ("compute_time", 2.0, "h5bench-csv"), ("h5fcreate_time", 0.010, "h5bench-text"),
        ("h5fflush_time", 0.050, "h5bench-text"), ("h5fclose_time", 0.001, "h5bench-text")]
    assert parsed.details["mode"] == "SYNC" and parsed.details["operation"] == "write"


def test_stage_failures(h5_dir, tmp_path):
    adapter = get_benchmark("h5bench")
    write = RunSpec("h5bench_write", [])
    stage = _stage(tmp_path, h5_dir, "h5bench_write_unknown_key_4r.txt", None,
                   "h5bench_write_unknown_key_4r.stderr.txt")
    with pytest.raises(ParseError, match="Unknown Parameter: MODE"):
        adapter.parse_outputs(stage, write)
    stage = _stage(tmp_path, h5_dir, "h5bench_write_1d_contig_4r.txt", None)
    with pytest.raises(ParseError, match=f"h5bench CSV {CSV} is missing"):
        adapter.parse_outputs(stage, write)
    # results on stdout and in the CSV, 5 steps read from a 3-step file: HDF5 says so on stderr
    stage = _stage(tmp_path, h5_dir, "h5bench_read_too_many_steps_4r.txt",
                   "h5bench_read_too_many_steps.csv", "h5bench_read_too_many_steps_4r.stderr.txt")
    with pytest.raises(ParseError, match=r"HDF5 reported 208 error\(s\) under h5bench.*H5Gopen2\(\): "
                                         r"unable to open group"):
        adapter.parse_outputs(stage, RunSpec("h5bench_read", []))
    stage = _stage(tmp_path, h5_dir, "h5bench_read_nofile_4r.txt", "h5bench_read_nofile.csv",
                   "h5bench_read_nofile_4r.stderr.txt")
    with pytest.raises(ParseError, match="Failed to read dimensions"):
        adapter.parse_outputs(stage, RunSpec("h5bench_read", []))


def test_stage_mismatches(h5_dir, tmp_path):
    adapter = get_benchmark("h5bench")
    stage = _stage(tmp_path, h5_dir, "h5bench_write_1d_contig_4r.txt", "h5bench_driver_storage/2ef74709/"
                                                                       "output.csv")
    with pytest.raises(ParseError, match="disagree on raw_write_rate .405.889 vs 305.547.|"
                                         "disagree on raw_write_rate \\(305.547 vs 405.889\\)"):
        adapter.parse_outputs(stage, RunSpec("h5bench_write", []))
    stage = _stage(tmp_path, h5_dir, "h5bench_read_1d_full_4r.txt", "h5bench_read_1d_full.csv")
    with pytest.raises(ParseError, match="operation 'read', but h5bench_write ran"):
        adapter.parse_outputs(stage, RunSpec("h5bench_write", []))
    with pytest.raises(ParseError, match="ASYNC mode was requested but h5bench ran SYNC .the async VOL "
                                         "needs HDF5 1.13"):
        adapter.parse_outputs(stage, RunSpec("h5bench_read", [],
                                             env={"HDF5_VOL_CONNECTOR": ASYNC_CONNECTOR}))
    (stage / "rfm_job.out").write_text((h5_dir / "h5bench_read_1d_full_4r.txt").read_text()
                                       .replace("SYNC Raw", "ASYNC Raw").replace("SYNC Obs", "ASYNC Obs"))
    with pytest.raises(ParseError, match="SYNC mode was requested but h5bench ran ASYNC "
                                         ".HDF5_VOL_CONNECTOR names the async VOL"):
        adapter.parse_outputs(stage, RunSpec("h5bench_read", []))
    shutil.copy(h5_dir / "h5bench_read_1d_full_4r.txt", stage / "rfm_job.out")
    assert adapter.parse_outputs(stage, RunSpec("h5bench_read", [])).by_name()["raw_read_rate"].value \
        == 879.902


# ---------------------------------------------------------------- real runs




SMALL = {"timesteps": 2, "dim_1": 4096, "collective_data": True, "collective_metadata": True}


@pytest.mark.integration
def test_real_write_then_read(tmp_path, write_experiment, src_layout_templates):
    _needs("mpirun", "h5bench_write", "h5bench_read")
    adapter = get_benchmark("h5bench")
    write = _case(write_experiment, SMALL, name="real-w")
    read = _case(write_experiment, SMALL, "read", name="real-r")
    assert adapter.produces(write) == adapter.consumes(read)
    data = tmp_path / "write-case"
    data.mkdir()
    spec = adapter.run_spec(write, str(data))
    done = _run(spec, tmp_path / "stage-w")
    assert done.returncode == 0, done.stdout + done.stderr
    m = adapter.parse_outputs(tmp_path / "stage-w", spec).by_name()
    assert m["total_size"].value * 2**20 == adapter.bytes_written(write) == 4 * 4096 * 32 * 2
    assert m["raw_write_rate"].value > 0 and m["h5fcreate_time"].unit == "s"
    spec = adapter.run_spec(read, str(tmp_path / "read-case"), input_dir=str(data))
    done = _run(spec, tmp_path / "stage-r")
    assert done.returncode == 0, done.stdout + done.stderr
    m = adapter.parse_outputs(tmp_path / "stage-r", spec).by_name()
    assert m["total_size"].value * 2**20 == 4 * 4096 * 32 * 2 and m["raw_read_rate"].value > 0


@pytest.mark.integration
def test_real_failures_are_caught(tmp_path, write_experiment, src_layout_templates):
    _needs("mpirun", "h5bench_write", "h5bench_read")
    adapter = get_benchmark("h5bench")
    write = _case(write_experiment, SMALL, name="real-w")
    spec = adapter.run_spec(write, str(tmp_path))
    # an unknown key, as the h5bench driver's MODE would be
    spec.files[CONFIG] = spec.files[CONFIG].replace("CSV_FILE=", "MODE=SYNC\nCSV_FILE=")
    _run(spec, tmp_path / "stage-key")
    with pytest.raises(ParseError, match="Unknown Parameter: MODE"):
        adapter.parse_outputs(tmp_path / "stage-key", spec)
    # a read of more steps than the file has: results printed, HDF5 errors on stderr
    spec = adapter.run_spec(write, str(tmp_path))
    assert _run(spec, tmp_path / "stage-w").returncode == 0
    more = _case(write_experiment, {**SMALL, "timesteps": 3}, "read", name="real-r3")
    spec = adapter.run_spec(more, str(tmp_path / "r"), input_dir=str(tmp_path))
    _run(spec, tmp_path / "stage-r")
    with pytest.raises(ParseError, match="HDF5 reported .* error"):
        adapter.parse_outputs(tmp_path / "stage-r", spec)


@pytest.mark.integration
@pytest.mark.parametrize("writer, kernel", [("write", "overwrite"), ("write_unlimited", "append")])
def test_real_modifying_kernels(tmp_path, write_experiment, src_layout_templates, writer, kernel):
    _needs("mpirun", f"h5bench_{writer}", f"h5bench_{kernel}")
    adapter = get_benchmark("h5bench")
    fixed = {**SMALL, "compress": True, "chunk_dim_1": 1024}
    first = _case(write_experiment, fixed, writer, name="real-first")
    then = _case(write_experiment, fixed, kernel, name="real-then")
    assert adapter.produces(first) == adapter.consumes(then)
    spec = adapter.run_spec(first, str(tmp_path))
    assert _run(spec, tmp_path / "stage-1").returncode == 0
    adapter.parse_outputs(tmp_path / "stage-1", spec)
    spec = adapter.run_spec(then, str(tmp_path / "c"), input_dir=str(tmp_path))
    _run(spec, tmp_path / "stage-2")
    assert adapter.parse_outputs(tmp_path / "stage-2", spec).by_name()["raw_modify_rate"].value > 0
