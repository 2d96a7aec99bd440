"""h5bench 1.6 metadata (h5bench_hdf5_iotest) and exerciser (h5bench_exerciser) kernels: the parsers
against the recorded outputs (tests/data/h5bench, see its README), the rendered ini and the argv
against the recorded ones, plan-time checks, the stage checks, and real runs when the binaries
are on PATH.

Every expected number was read by hand from the file named in its table entry.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from iolab.benchmarks import get as get_benchmark
from iolab.benchmarks.h5bench import INI, METADATA_CSV, exerciser_args
from iolab.errors import IolabError, ParseError
from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand
from iolab.parsers import h5bench_exerciser, h5bench_metadata, h5bench_metadata_csv
from tests.unit.realrun import needs as _needs
from tests.unit.realrun import run_spec as _run

STEMS = ("wall_time", "file_size", "write_phase", "create_time", "write_time", "write_rate_per_rank",
         "read_phase", "read_time", "read_rate_per_rank")
# metadata output -> (wall, file size, then (min, max) of write phase, create, write time, write
# rate per rank, read phase, read time, read rate per rank). Times in s, size in B, rates MiB/s.
METADATA = {
    "h5bench_metadata": (0.05, 8390656, (0.03, 0.03), (0.01, 0.01), (0.02, 0.02), (113.37, 120.91),
                         (0.02, 0.02), (0.01, 0.01), (134.19, 135.93)),
    "h5bench_metadata_strong": (0.01, 1984248, (0.01, 0.01), (0.01, 0.01), (0.00, 0.00),
                                (1777.12, 2079.58), (0.00, 0.00), (0.00, 0.00), (1902.82, 3358.10)),
}
METADATA_CONFIG = {
    "h5bench_metadata": {"steps": 4, "arrays": 8, "rows": 64, "columns": 128, "scaling": "weak",
                         "process_rows": 2, "process_columns": 2, "slowest_dimension": "step",
                         "dataset_rank": 4, "layout": "contiguous", "mpi_io": "collective", "ranks": 4},
    "h5bench_metadata_strong": {"steps": 3, "arrays": 5, "rows": 256, "columns": 64, "scaling": "strong",
                                "process_rows": 4, "process_columns": 1, "slowest_dimension": "array",
                                "dataset_rank": 3, "layout": "chunked", "mpi_io": "independent",
                                "ranks": 4},
}
COLUMNS = ("h5dwrite_time", "raw_write_rate", "h5dread_time", "raw_read_rate", "dataset_time", "group_time",
           "attribute_time", "h5fopen_time", "h5fclose_time", "h5fflush_time", "other_close_time")
# exerciser output -> {(bufsize, stat): the 11 columns as printed}
EXERCISER = {
    "h5bench_exerciser_4r.txt": {
        (65536, "min"): (0.000472, 203.902531, 0.000437, 411.157161, 0.000082, 0.000037, 0.0, 0.002958,
                         0.000404, 0.001096, 0.000039),
        (65536, "max"): (0.001226, 529.537608, 0.000608, 572.189747, 0.000178, 0.000139, 0.0, 0.006170,
                         0.000863, 0.001815, 0.000078),
        (65536, "avg"): (0.000680, 391.653396, 0.000533, 473.262810, 0.000112, 0.000056, 0.0, 0.003843,
                         0.000578, 0.001314, 0.000050),
        (65536, "std"): (0.000202, 83.955453, 0.000049, 46.011079, 0.000036, 0.000029, 0.0, 0.000929,
                         0.000171, 0.000224, 0.000010)},
    "h5bench_exerciser_no_dimranks_4r.txt": {
        (65536, "avg"): (0.000609, 442.675490, 0.000511, 502.900169, 0.000097, 0.000051, 0.0, 0.002964,
                         0.000526, 0.001160, 0.000051)},
    "h5bench_exerciser_2d_4r.txt": {
        (2048, "min"): (0.000200, 28.560200, 0.000095, 43.111060, 0.000149, 0.000121, 0.000547, 0.002588,
                        0.000467, 0.001208, 0.000043),
        (2048, "avg"): (0.000252, 42.117182, 0.000117, 70.283617, 0.000195, 0.000155, 0.000831, 0.003239,
                        0.000643, 0.001453, 0.000063),
        (8192, "max"): (0.001186, 73.842678, 0.000435, 102.273583, 0.000361, 0.000184, 0.001759, 0.005287,
                        0.000866, 0.002206, 0.000075),
        (8192, "std"): (0.000152, 12.481562, 0.000039, 8.997334, 0.000024, 0.000010, 0.000374, 0.000549,
                        0.000068, 0.000172, 0.000007)},
}
# Recorded failures: file -> (parser, fragment)
FAILED = {
    "h5bench_metadata_unwritable_4r.txt": (h5bench_metadata, "reported a failure: Failed to create file: "
                                                             "/tmp/h5rec/missing-dir/hdf5_iotest.h5"),
    "h5bench_metadata_bad_grid_4r.txt": (h5bench_metadata, "output is empty"),
    "h5bench_metadata_unknown_key_4r.txt": (h5bench_metadata, "output is empty"),
    "h5bench_exerciser_bad_option_4r.txt": (h5bench_exerciser, "reported a failure: ERROR - unrecognized "
                                                               "parameter: --filestride."),
    "h5bench_exerciser_unwritable_4r.txt": (h5bench_exerciser, "reported a failure: H5Fclose failed with "
                                                               "rc -1"),
}
# The recorded 2D exerciser command, as parameters
EXERCISER_2D = {"exerciser_numdims": 2, "exerciser_minels": [16, 16], "exerciser_nsizes": 2,
                "exerciser_bufmult": [2, 2], "exerciser_dimranks": [2, 2], "exerciser_addattr": True,
                "exerciser_derivedtype": True, "exerciser_usechunked": True, "exerciser_indepio": True,
                "exerciser_fileblocks": [8, 8], "exerciser_filestrides": [16, 16],
                "exerciser_memblock": 32, "exerciser_memstride": 64, "exerciser_rshift": 1,
                "exerciser_maxcheck": 1048576}
INI_KEYS = {"steps": "metadata_steps", "arrays": "metadata_arrays", "rows": "metadata_rows",
            "columns": "metadata_columns", "process-rows": "metadata_process_rows",
            "process-columns": "metadata_process_columns", "scaling": "metadata_scaling",
            "dataset-rank": "metadata_dataset_rank", "slowest-dimension": "metadata_slowest_dimension",
            "layout": "metadata_layout", "mpi-io": "metadata_mpi_io"}


@pytest.fixture(scope="module")
def h5_dir(data_dir) -> Path:
    return data_dir / "h5bench"


def _case(write_experiment, fixed: dict, kernel: str, tasks: int = 4, name: str = "k"):
    path = write_experiment(name, f"id: {name}\ndescription: h5bench kernels test\nbenchmark: h5bench\n"
                                  f"scale: {{nodes: 1, tasks_per_node: {tasks}}}\n"
                                  f"fixed: {json.dumps({'kernel': kernel, **fixed})}\n")
    (case,) = expand(load_experiment(path))
    return case


def _ini_params(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        key, eq, value = (x.strip() for x in line.partition("="))
        if eq and key in INI_KEYS:
            out[INI_KEYS[key]] = int(value) if value.isdigit() else value
    return out


def test_every_recorded_kernel_file_is_covered(h5_dir):
    names = {p.name for p in h5_dir.iterdir()
             if p.name.startswith(("h5bench_metadata", "h5bench_exerciser"))}
    outputs = {f"{n}_4r.txt" for n in METADATA} | {f"{n}.csv" for n in METADATA} | set(EXERCISER)
    inis = {f"{n}.ini" for n in ("h5bench_metadata", "h5bench_metadata_strong",
                                 "h5bench_metadata_unknown_key", "h5bench_metadata_bad_grid",
                                 "h5bench_metadata_unwritable")}
    stderrs = {f"{n}_4r.stderr.txt" for n in ("h5bench_metadata_unknown_key", "h5bench_metadata_bad_grid",
                                              "h5bench_metadata_unwritable", "h5bench_exerciser_bad_option",
                                              "h5bench_exerciser_unwritable")}
    assert names == outputs | set(FAILED) | inis | stderrs
    readme = (h5_dir / "README.md").read_text()
    for name in names:
        stem = name.split("_4r")[0].removesuffix(".ini").removesuffix(".csv")
        assert f"`{stem}`" in readme, name


# ---------------------------------------------------------------- metadata parsers


@pytest.mark.parametrize("name", sorted(METADATA))
@pytest.mark.parametrize("kind", ["text", "csv"])
def test_metadata_output(h5_dir, name, kind):
    parser = h5bench_metadata if kind == "text" else h5bench_metadata_csv
    file = f"{name}_4r.txt" if kind == "text" else f"{name}.csv"
    parsed = parser.parse((h5_dir / file).read_text(), file)
    wall, size, *pairs = METADATA[name]
    want = {"wall_time": (wall, "s"), "file_size": (size, "B")}
    for stem, (lo, hi) in zip(STEMS[2:], pairs):
        unit = "MiB/s" if "rate" in stem else "s"
        want[f"{stem}_min"] = (lo, unit)
        want[f"{stem}_max"] = (hi, unit)
    # all the bytes over the slowest rank's time: ranks x the per-rank minimum
    want["write_rate"] = (4 * pairs[3][0], "MiB/s")
    want["read_rate"] = (4 * pairs[6][0], "MiB/s")
    assert [m.name for m in parsed.metrics] == list(want)
    for metric in parsed.metrics:
        assert (metric.value, metric.unit) == (pytest.approx(want[metric.name][0], rel=1e-12, abs=0),
                                               want[metric.name][1]), metric.name
        assert metric.source == parser.SOURCE
    assert parsed.details == METADATA_CONFIG[name]


def test_metadata_write_rate_is_all_bytes_over_the_slowest_rank(h5_dir):
    """4 ranks x 4 steps x 8 arrays x 64 x 128 doubles = 8 MiB; the file adds 2 KiB of metadata."""
    m = h5bench_metadata.parse((h5_dir / "h5bench_metadata_4r.txt").read_text()).by_name()
    assert m["write_rate"].value == pytest.approx(453.48)
    total = 4 * 4 * 8 * 64 * 128 * 8
    assert m["file_size"].value == total + 2048
    # the slowest rank's write time, printed 0.02, is 2 MiB / 113.37 MiB/s
    assert round(total / 4 / 2**20 / m["write_rate_per_rank_min"].value, 2) == m["write_time_max"].value


@pytest.mark.parametrize("old, new, fragment", [
    ("Read rate [MiB/s]:\t_134.19", "Read rate [MiB/s]:\t_inf",
     r"Read rate \[MiB/s\] min is not finite \(inf\)"),
    ("Write rate [MiB/s]:\t_113.37", "Write rate [MiB/s]:\t_0.00", "write_rate_per_rank_min is 0.0"),
    ("Create time [s]:\t_0.01\n\t\t\t^0.01\n", "", r"no 'Create time \[s\]' line"),
    ("File size [B]:\t\t8390656\n", "", r"no 'File size \[B\]' line"),
    ("\tlayout=contiguous, mpi-io=collective\n", "", "no complete 'Config loaded from' echo"),
    ("\t\t\t^135.93\n", "", "is not '_min' then '.max'"),
])
def test_metadata_bad_text(h5_dir, old, new, fragment):
    text = (h5_dir / "h5bench_metadata_4r.txt").read_text()
    assert old in text
    with pytest.raises(ParseError, match=fragment):
        h5bench_metadata.parse(text.replace(old, new), "out")


@pytest.mark.parametrize("cut", [0.1, 0.3, 0.5, 0.7, 0.9, 0.97])
def test_metadata_truncated(h5_dir, cut):
    text = (h5_dir / "h5bench_metadata_4r.txt").read_text()
    with pytest.raises(ParseError):
        h5bench_metadata.parse(text[:int(len(text) * cut)], "out")
    csv = (h5_dir / "h5bench_metadata.csv").read_text()
    with pytest.raises(ParseError):
        h5bench_metadata_csv.parse(csv[:int(len(csv) * cut)], "csv")


@pytest.mark.parametrize("old, new, fragment", [
    ("135.93\n", "-nan\n", r"read-rate-max is not finite \(nan\)"),
    ("steps,arrays", "step,arrays", "not an h5bench_hdf5_iotest CSV"),
    (",collective,", ",collective,,", "28 cells for 27 columns"),
])
def test_metadata_bad_csv(h5_dir, old, new, fragment):
    text = (h5_dir / "h5bench_metadata.csv").read_text()
    assert old in text
    with pytest.raises(ParseError, match=fragment):
        h5bench_metadata_csv.parse(text.replace(old, new), "csv")
    with pytest.raises(ParseError, match="2 data rows"):
        h5bench_metadata_csv.parse(text + text.splitlines()[1] + "\n", "csv")
    with pytest.raises(ParseError, match="CSV is empty"):
        h5bench_metadata_csv.parse("", "csv")


# ---------------------------------------------------------------- exerciser parser


@pytest.mark.parametrize("name", sorted(EXERCISER))
def test_exerciser_output(h5_dir, name):
    parsed = h5bench_exerciser.parse((h5_dir / name).read_text(), name)
    got = parsed.by_name()
    sizes = sorted({size for size, _stat in EXERCISER[name]})
    several = name == "h5bench_exerciser_2d_4r.txt"
    assert parsed.details["bufsizes"] == ([2048, 8192] if several else [65536])
    assert len(parsed.metrics) == len(parsed.details["bufsizes"]) * 4 * 11
    for (size, stat), values in EXERCISER[name].items():
        assert size in sizes
        for column, value in zip(COLUMNS, values):
            metric = got[f"{column}_{stat}" + (f"_{size}B" if several else "")]
            assert metric.value == pytest.approx(value, rel=1e-12, abs=0), metric.name
            assert metric.unit == ("MiB/s" if column.endswith("rate") else "s")
            assert metric.source == "h5bench-exerciser-text"
    assert not [m for m in parsed.metrics if "_med" in m.name]     # getmoments' 'median' is not one
    assert parsed.details["metacoll_available"] is False
    assert parsed.details["dimranks_dropped"] is (name == "h5bench_exerciser_no_dimranks_4r.txt")


def test_exerciser_echoed_flags(h5_dir):
    d = h5bench_exerciser.parse((h5_dir / "h5bench_exerciser_2d_4r.txt").read_text()).details
    assert {k: d[k] for k in h5bench_exerciser.FLAGS} == {
        "useMetaDataCollectives": 0, "addDerivedTypeDataset": 1, "addAttributes": 1, "useIndependentIO": 1,
        "numDims": 2, "useChunked": 1, "rankShift": 1}


@pytest.mark.parametrize("old, new, fragment", [
    ("All done -- Finishing normally.\n", "", "did not finish"),
    ("Std           65536   0.000202", "Sdt           65536   0.000202", "no 'Std' row for Bufsize 65536"),
    ("Min           65536   0.000472    203.902531", "Min           65536   0.000472    0.000000",
     "RawWrBDWTH Min is 0.0"),
    ("   411.157161", "   inf", "RawRdBDWTH .Bufsize 65536. is not finite"),
    ("All done", "Rank 2 - ERROR on read: index 7 doesn't match - expected 3 got 0\nAll done",
     "ERROR on read"),
    ("useMetaDataCollectives: 0", "useMetaDataCollectives: x", "no 'useMetaDataCollectives: ...' line"),
])
def test_exerciser_bad_output(h5_dir, old, new, fragment):
    text = (h5_dir / "h5bench_exerciser_4r.txt").read_text()
    assert old in text
    with pytest.raises(ParseError, match=fragment):
        h5bench_exerciser.parse(text.replace(old, new), "out")


@pytest.mark.parametrize("cut", [0.2, 0.5, 0.7, 0.8, 0.9, 0.98])
def test_exerciser_truncated(h5_dir, cut):
    text = (h5_dir / "h5bench_exerciser_2d_4r.txt").read_text()
    with pytest.raises(ParseError):
        h5bench_exerciser.parse(text[:int(len(text) * cut)], "out")


@pytest.mark.parametrize("name", sorted(FAILED))
def test_recorded_failures(h5_dir, name):
    parser, fragment = FAILED[name]
    with pytest.raises(ParseError) as info:
        parser.parse((h5_dir / name).read_text(), name)
    assert str(info.value).startswith(f"{name}: ") and fragment in str(info.value)


def test_parse_files_detects_the_kernel(h5_dir):
    names = ["h5bench_metadata_4r.txt", "h5bench_metadata.csv", "h5bench_exerciser_4r.txt",
             "h5bench_write_1d_contig_4r.txt"]
    got = get_benchmark("h5bench").parse_files([h5_dir / n for n in names])
    assert [p.metrics[0].source for p in got] == ["h5bench-metadata-text", "h5bench-metadata-csv",
                                                  "h5bench-exerciser-text", "h5bench-text"]
    for name in ("h5bench_exerciser_bad_option_4r.txt", "h5bench_metadata_unwritable_4r.txt"):
        with pytest.raises(ParseError, match="reported a failure"):
            get_benchmark("h5bench").parse_files([h5_dir / name])


# ---------------------------------------------------------------- inputs: ini and argv


def test_metadata_ini_matches_the_recorded_one(h5_dir, write_experiment, src_layout_templates):
    recorded = (h5_dir / "h5bench_metadata.ini").read_text().splitlines()
    case = _case(write_experiment, _ini_params("\n".join(recorded)), "metadata", name="meta")
    spec = get_benchmark("h5bench").run_spec(case, "/tmp/h5rec/data")
    lines = spec.files[INI].splitlines()
    assert lines[0] == (f"; iolab case {case.case_id} of meta: rendered from "
                        f"templates/h5bench/hdf5_iotest.ini.j2")
    assert recorded[0] == "; iolab case CASEID of EXP: rendered from templates/h5bench/hdf5_iotest.ini.j2"
    assert lines[1:-1] == recorded[1:-1]         # hdf5-file = /tmp/h5rec/data/hdf5_iotest.h5 included
    assert recorded[-1] == "csv-file = h5bench_metadata.csv" and lines[-1] == f"csv-file = {METADATA_CSV}"
    assert spec.executable == "h5bench_hdf5_iotest" and spec.args == [INI]
    assert spec.outputs == [INI, METADATA_CSV] and spec.env == {} and spec.mpi is True


def test_metadata_ini_of_the_strong_run(h5_dir, write_experiment, src_layout_templates):
    recorded = (h5_dir / "h5bench_metadata_strong.ini").read_text().splitlines()
    case = _case(write_experiment, _ini_params("\n".join(recorded)), "metadata", name="strong")
    lines = get_benchmark("h5bench").run_spec(case, "/tmp/h5rec/data").files[INI].splitlines()
    assert lines[1:-2] == recorded[1:-2]
    assert recorded[-2] == "hdf5-file = /tmp/h5rec/data/hdf5_iotest_strong.h5"


def test_metadata_defaults_and_process_rows(write_experiment, src_layout_templates):
    case = _case(write_experiment, {}, "metadata", tasks=6, name="defaults")
    ini = get_benchmark("h5bench").run_spec(case, "/s/c").files[INI]
    assert ini.splitlines()[1:] == [
        "[DEFAULT]", "version = 0", "steps = 20", "arrays = 500", "rows = 100", "columns = 200",
        "process-rows = 6", "process-columns = 1", "scaling = weak", "dataset-rank = 4",
        "slowest-dimension = step", "layout = contiguous", "mpi-io = independent",
        "hdf5-file = /s/c/hdf5_iotest.h5", f"csv-file = {METADATA_CSV}"]
    case = _case(write_experiment, {"metadata_process_columns": 3}, "metadata", tasks=6, name="cols")
    assert "process-rows = 2" in get_benchmark("h5bench").run_spec(case, "/s").files[INI].splitlines()


def test_metadata_path_too_long_for_the_ini(write_experiment, src_layout_templates):
    case = _case(write_experiment, {}, "metadata", name="long")
    adapter = get_benchmark("h5bench")
    ok = "/s/" + "d" * (199 - len("hdf5-file = /s//hdf5_iotest.h5") - 1)
    assert len(f"hdf5-file = {ok}/hdf5_iotest.h5") == 198
    adapter.run_spec(case, ok)
    with pytest.raises(IolabError, match="lines of up to 199 characters"):
        adapter.run_spec(case, ok + "d")
    with pytest.raises(IolabError, match="';' or '#'"):
        adapter.run_spec(case, "/s/a;b")


def test_exerciser_argv_matches_the_recorded_commands(write_experiment):
    case = _case(write_experiment, EXERCISER_2D, "exerciser", name="ex2d")
    spec = get_benchmark("h5bench").run_spec(case, "/s/c")
    assert spec.command == ("h5bench_exerciser --numdims 2 --minels 16 16 --nsizes 2 --bufmult 2 2 "
                            "--dimranks 2 2 --addattr --derivedtype --usechunked --indepio --fileblocks 8 8 "
                            "--filestrides 16 16 --memblock 32 --memstride 64 --rshift 1 --maxcheck 1048576")
    assert spec.files == {} and spec.outputs == [] and spec.env == {} and spec.mpi is True
    plain = _case(write_experiment, {"exerciser_minels": [8192]}, "exerciser", name="ex1")
    assert exerciser_args(plain) == "--numdims 1 --minels 8192 --nsizes 1 --dimranks 4".split()
    # the size parameter is typed to bytes
    sized = _case(write_experiment, {"exerciser_maxcheck": "1MiB", "exerciser_metacoll": True}, "exerciser",
                  tasks=2, name="ex3")
    assert exerciser_args(sized) == ("--numdims 1 --minels 131072 --nsizes 1 --dimranks 2 --metacoll "
                                     "--maxcheck 1048576").split()


# ---------------------------------------------------------------- plan-time checks and sizes


@pytest.mark.parametrize("fixed, kernel, tasks, fragment", [
    ({"exerciser_minels": [64]}, "write", 4, "exerciser_minels applies to kernel exerciser only, not to "
                                             "kernel write"),
    ({"exerciser_indepio": True}, "metadata", 4, "exerciser_indepio applies to kernel exerciser only"),
    ({"metadata_steps": 2}, "exerciser", 4, "metadata_steps applies to kernel metadata only, not to kernel "
                                            "exerciser"),
    ({"metadata_layout": "chunked"}, "read", 4, "metadata_layout applies to kernel metadata only"),
    ({"dim_1": 64}, "metadata", 4, "dim_1 applies to the pattern kernels"),
    ({"collective_data": True}, "exerciser", 4, "collective_data applies to the pattern kernels"),
    ({"compress": True, "chunk_dim_1": 4}, "metadata", 4, "compress applies to the pattern kernels"),
    ({"mode": "ASYNC"}, "exerciser", 4, "mode applies to the pattern kernels"),
    ({"metadata_process_columns": 3}, "metadata", 4,
     "metadata_process_columns 3 does not divide the 4 ranks"),
    ({"metadata_process_rows": 3, "metadata_process_columns": 2}, "metadata", 4,
     r"process grid .* \(3x2\) must have as many processes as there are ranks \(4\)"),
    ({"metadata_scaling": "strong", "metadata_rows": 10}, "metadata", 4,
     r"strong scaling splits metadata_rows \(10\) over 4 process rows"),
    ({"metadata_scaling": "strong", "metadata_process_columns": 2, "metadata_columns": 201}, "metadata", 4,
     r"metadata_columns \(201\) over 2 process columns"),
    ({"metadata_rows": 1}, "metadata", 4, r"metadata_rows: 1 is out of range \(minimum 2\)"),
    ({"metadata_dataset_rank": 5}, "metadata", 4, r"5 is not allowed \(allowed: 2, 3, 4\)"),
    ({"exerciser_numdims": 2}, "exerciser", 4, "exerciser_minels has 1 value.s.: give one per dimension"),
    ({"exerciser_bufmult": [2, 2]}, "exerciser", 4, "exerciser_bufmult has 2 value"),
    ({"exerciser_numdims": 2, "exerciser_minels": [8, 8], "exerciser_dimranks": [2, 1]}, "exerciser", 4,
     "exerciser_dimranks 2x1 is 2 ranks, not 4"),
    ({"exerciser_minels": [10], "exerciser_fileblocks": [4]}, "exerciser", 4,
     "exerciser_fileblocks 4 does not divide exerciser_minels 10 in dimension 1"),
    ({"exerciser_filestrides": [4]}, "exerciser", 4, "exerciser_filestrides needs exerciser_fileblocks"),
    ({"exerciser_minels": [16], "exerciser_fileblocks": [8], "exerciser_filestrides": [4]}, "exerciser", 4,
     "exerciser_filestrides must be at least exerciser_fileblocks"),
    ({"exerciser_minels": [10], "exerciser_memblock": 4}, "exerciser", 4,
     "exerciser_memblock 4 does not divide the 10 elements"),
    ({"exerciser_memstride": 4}, "exerciser", 4, "exerciser_memstride needs exerciser_memblock"),
    ({"exerciser_memblock": 8, "exerciser_memstride": 4}, "exerciser", 4,
     "exerciser_memstride must be at least exerciser_memblock"),
    ({"exerciser_minels": [2**20], "exerciser_nsizes": 12}, "exerciser", 4, "2.31 elements or more"),
    ({"exerciser_rshift": 3}, "exerciser", 4, r"at most half the rank count \(2\)"),
    ({"exerciser_numdims": 5}, "exerciser", 4, r"5 is not allowed \(allowed: 1, 2, 3, 4\)"),
    ({"exerciser_minels": [0]}, "exerciser", 4, r"exerciser_minels\[0\]: 0 is out of range"),
])
def test_impossible_kernel_cases(write_experiment, fixed, kernel, tasks, fragment):
    with pytest.raises(IolabError, match=fragment):
        _case(write_experiment, fixed, kernel, tasks=tasks, name="bad")


def test_possible_kernel_cases(write_experiment):
    """The recorded runs' settings pass, and a parameter at its default is no foreign parameter."""
    _case(write_experiment, EXERCISER_2D, "exerciser", name="ok1")
    _case(write_experiment, {"metadata_scaling": "strong", "metadata_rows": 256, "metadata_columns": 64,
                             "metadata_process_rows": 4}, "metadata", name="ok2")
    _case(write_experiment, {"exerciser_nsizes": 1, "metadata_steps": 20}, "write", name="ok3")
    _case(write_experiment, {"timesteps": 5}, "metadata", name="ok4")


def test_exerciser_runs_in_the_case_directory(write_experiment):
    """Its file goes to its working directory: iolab runs it in the case directory, so storage
    targets and striping apply to it as to the other kernels."""
    case = _case(write_experiment, {"storage": "node_local", "lustre.stripe_count": 2},
                 "exerciser", name="placed")
    spec = get_benchmark("h5bench").run_spec(case, "/scratch/x/case-r1")
    assert spec.workdir == "/scratch/x/case-r1"
    assert get_benchmark("h5bench").run_spec(
        _case(write_experiment, {}, "write", name="plain"), "/scratch/y").workdir is None


def test_no_data_shared(write_experiment):
    adapter = get_benchmark("h5bench")
    for kernel in ("metadata", "exerciser"):
        case = _case(write_experiment, {}, kernel, name=kernel)
        assert adapter.produces(case) is None and adapter.consumes(case) is None
        assert adapter.through_mpi_io(case) is True


def test_bytes_written(h5_dir, write_experiment):
    adapter = get_benchmark("h5bench")
    ini = (h5_dir / "h5bench_metadata.ini").read_text()
    meta = _case(write_experiment, _ini_params(ini), "metadata", name="m")
    out = h5bench_metadata.parse((h5_dir / "h5bench_metadata_4r.txt").read_text()).by_name()
    assert adapter.bytes_written(meta) == 4 * 4 * 8 * 64 * 128 * 8 == out["file_size"].value - 2048
    strong = _case(write_experiment, _ini_params((h5_dir / "h5bench_metadata_strong.ini").read_text()),
                   "metadata", name="s")
    out = h5bench_metadata.parse((h5_dir / "h5bench_metadata_strong_4r.txt").read_text()).by_name()
    assert adapter.bytes_written(strong) == 3 * 5 * 256 * 64 * 8 == 1966080 < out["file_size"].value
    # exerciser: Bufsize x ranks x 10 iterations (+ 40 B an element of the compound dataset and
    # 64 KiB of attributes an iteration)
    plain = _case(write_experiment, {"exerciser_minels": [8192]}, "exerciser", name="e1")
    sizes = h5bench_exerciser.parse((h5_dir / "h5bench_exerciser_4r.txt").read_text()).details["bufsizes"]
    assert adapter.bytes_written(plain) == sum(sizes) * 4 * 10 == 2621440
    two = _case(write_experiment, EXERCISER_2D, "exerciser", name="e2")
    sizes = h5bench_exerciser.parse((h5_dir / "h5bench_exerciser_2d_4r.txt").read_text()).details["bufsizes"]
    assert sizes == [2048, 8192]
    derived = sum(s // 8 * 40 for s in sizes)
    assert adapter.bytes_written(two) == 10 * (4 * (sum(sizes) + derived) + 2 * 65536)


def test_defaults_of_the_new_parameters(write_experiment):
    case = _case(write_experiment, {}, "exerciser", name="d")
    assert {k: v for k, v in case.params.items() if k.startswith(("metadata_", "exerciser_"))} == {
        "metadata_steps": 20, "metadata_arrays": 500, "metadata_rows": 100, "metadata_columns": 200,
        "metadata_process_columns": 1, "metadata_scaling": "weak", "metadata_dataset_rank": 4,
        "metadata_slowest_dimension": "step", "metadata_layout": "contiguous",
        "metadata_mpi_io": "independent", "exerciser_numdims": 1, "exerciser_minels": [131072],
        "exerciser_nsizes": 1, "exerciser_metacoll": False, "exerciser_derivedtype": False,
        "exerciser_addattr": False, "exerciser_indepio": False, "exerciser_usechunked": False,
        "exerciser_rshift": 0}


# ---------------------------------------------------------------- stage outputs


def _stage(tmp_path: Path, h5_dir: Path, stdout: str, csv: str | None = None, stderr: str | None = None):
    stage = tmp_path / "stage"
    stage.mkdir(exist_ok=True)
    shutil.copy(h5_dir / stdout, stage / "rfm_job.out")
    (stage / METADATA_CSV).unlink(missing_ok=True)
    if csv:
        shutil.copy(h5_dir / csv, stage / METADATA_CSV)
    (stage / "rfm_job.err").write_text((h5_dir / stderr).read_text() if stderr else "")
    return stage


def _meta_spec(h5_dir, write_experiment, ini="h5bench_metadata.ini", **change):
    case = _case(write_experiment, {**_ini_params((h5_dir / ini).read_text()), **change}, "metadata",
                 name="st")
    return get_benchmark("h5bench").run_spec(case, "/tmp/h5rec/data")


def test_metadata_stage(h5_dir, tmp_path, write_experiment, src_layout_templates):
    adapter = get_benchmark("h5bench")
    spec = _meta_spec(h5_dir, write_experiment)
    stage = _stage(tmp_path, h5_dir, "h5bench_metadata_4r.txt", "h5bench_metadata.csv")
    parsed = adapter.parse_outputs(stage, spec)
    m = parsed.by_name()
    assert m["write_rate"].value == pytest.approx(453.48)
    assert m["write_rate"].source == "h5bench-metadata-text"
    assert m["read_time_max"].as_dict() == {"name": "read_time_max", "value": 0.01, "unit": "s",
                                            "source": "h5bench-metadata-text"}
    assert parsed.details["mpi_io"] == "collective"
    # the CSV of another run
    stage = _stage(tmp_path, h5_dir, "h5bench_metadata_4r.txt", "h5bench_metadata_strong.csv")
    with pytest.raises(ParseError, match="disagree on wall_time"):
        adapter.parse_outputs(stage, spec)
    stage = _stage(tmp_path, h5_dir, "h5bench_metadata_4r.txt")
    with pytest.raises(ParseError, match=f"hdf5_iotest CSV {METADATA_CSV} is missing"):
        adapter.parse_outputs(stage, spec)
    # not the configuration iolab wrote (an unknown key is ignored by the kernel)
    stage = _stage(tmp_path, h5_dir, "h5bench_metadata_4r.txt", "h5bench_metadata.csv")
    with pytest.raises(ParseError, match="ran with steps=4, but hdf5_iotest.ini says 5"):
        adapter.parse_outputs(stage, _meta_spec(h5_dir, write_experiment, metadata_steps=5))


@pytest.mark.parametrize("name, fragment", [
    ("h5bench_metadata_unknown_key", r"failed an assertion .a rejected input.: h5bench_hdf5_iotest: "
                                     r".*sanity_check: Assertion `pconfig->steps > 0' failed."),
    ("h5bench_metadata_bad_grid", r"validate: Assertion `pconfig->proc_rows \* pconfig->proc_cols"),
    ("h5bench_metadata_unwritable", "Failed to create file"),
])
def test_metadata_stage_failures(h5_dir, tmp_path, write_experiment, src_layout_templates, name, fragment):
    stage = _stage(tmp_path, h5_dir, f"{name}_4r.txt", None, f"{name}_4r.stderr.txt")
    with pytest.raises(ParseError, match=fragment):
        get_benchmark("h5bench").parse_outputs(stage, _meta_spec(h5_dir, write_experiment))


def _ex_spec(write_experiment, fixed):
    return get_benchmark("h5bench").run_spec(_case(write_experiment, fixed, "exerciser", name="ex"), "/s")


def test_exerciser_stage(h5_dir, tmp_path, write_experiment):
    adapter = get_benchmark("h5bench")
    spec = _ex_spec(write_experiment, {"exerciser_minels": [8192]})
    stage = _stage(tmp_path, h5_dir, "h5bench_exerciser_4r.txt")
    assert adapter.parse_outputs(stage, spec).by_name()["raw_write_rate_avg"].value == 391.653396
    stage = _stage(tmp_path, h5_dir, "h5bench_exerciser_2d_4r.txt")
    parsed = adapter.parse_outputs(stage, _ex_spec(write_experiment, EXERCISER_2D))
    assert parsed.by_name()["raw_read_rate_min_8192B"].value == 71.773906


@pytest.mark.parametrize("stdout, stderr, fixed, fragment", [
    ("h5bench_exerciser_no_dimranks_4r.txt", None, {"exerciser_minels": [8192]},
     "dropped --dimranks 4 .'Only dividing dim-0'."),
    ("h5bench_exerciser_4r.txt", None, {"exerciser_minels": [8192], "exerciser_metacoll": True},
     "built without METACOLOK"),
    ("h5bench_exerciser_4r.txt", None, {"exerciser_minels": [8192], "exerciser_indepio": True},
     "reports useIndependentIO: 0, but --indepio was given"),
    ("h5bench_exerciser_2d_4r.txt", None, {**EXERCISER_2D, "exerciser_addattr": False},
     "reports addAttributes: 1, but --addattr was not given"),
    ("h5bench_exerciser_4r.txt", None, {"exerciser_minels": [4096]},
     r"buffer sizes \[65536\] B, expected \[32768\] B"),
    ("h5bench_exerciser_2d_4r.txt", None, {**EXERCISER_2D, "exerciser_rshift": 2},
     "rankShift 1; --numdims 2 --rshift 2 were given"),
    ("h5bench_exerciser_bad_option_4r.txt", "h5bench_exerciser_bad_option_4r.stderr.txt",
     {"exerciser_minels": [8192]}, "unrecognized parameter: --filestride"),
    ("h5bench_exerciser_unwritable_4r.txt", "h5bench_exerciser_unwritable_4r.stderr.txt",
     {"exerciser_minels": [8192]}, r"HDF5 reported 39 error\(s\) under h5bench_exerciser.*H5Fcreate\(\): "
                                   r"unable to create file"),
])
def test_exerciser_stage_failures(h5_dir, tmp_path, write_experiment, stdout, stderr, fixed, fragment):
    stage = _stage(tmp_path, h5_dir, stdout, None, stderr)
    with pytest.raises(ParseError, match=fragment):
        get_benchmark("h5bench").parse_outputs(stage, _ex_spec(write_experiment, fixed))


# ---------------------------------------------------------------- real runs




@pytest.mark.integration
def test_real_metadata_run(tmp_path, write_experiment, src_layout_templates):
    _needs("mpirun", "h5bench_hdf5_iotest")
    adapter = get_benchmark("h5bench")
    case = _case(write_experiment, {"metadata_steps": 2, "metadata_arrays": 4, "metadata_rows": 32,
                                    "metadata_columns": 32, "metadata_process_columns": 2,
                                    "metadata_dataset_rank": 2, "metadata_mpi_io": "collective"},
                 "metadata", name="real-m")
    data = tmp_path / "case"
    data.mkdir()
    spec = adapter.run_spec(case, str(data))
    done = _run(spec, tmp_path / "stage")
    assert done.returncode == 0, done.stdout + done.stderr
    parsed = adapter.parse_outputs(tmp_path / "stage", spec)
    m = parsed.by_name()
    assert (data / "hdf5_iotest.h5").is_file()
    assert adapter.bytes_written(case) == 4 * 2 * 4 * 32 * 32 * 8 < m["file_size"].value
    assert m["write_rate"].value > 0 and m["read_rate"].unit == "MiB/s"
    assert parsed.details["process_rows"] == 2 and parsed.details["dataset_rank"] == 2
    # a grid that does not match the ranks: the kernel asserts
    spec.files[INI] = spec.files[INI].replace("process-rows = 2", "process-rows = 3")
    _run(spec, tmp_path / "stage-bad")
    with pytest.raises(ParseError, match="failed an assertion"):
        adapter.parse_outputs(tmp_path / "stage-bad", spec)


@pytest.mark.integration
def test_real_exerciser_run(tmp_path, write_experiment):
    _needs("mpirun", "h5bench_exerciser")
    adapter = get_benchmark("h5bench")
    case = _case(write_experiment, {"exerciser_numdims": 2, "exerciser_minels": [32, 32],
                                    "exerciser_nsizes": 2, "exerciser_dimranks": [2, 2],
                                    "exerciser_derivedtype": True},
                 "exerciser", name="real-e")
    spec = adapter.run_spec(case, str(tmp_path / "case"))
    done = _run(spec, tmp_path / "stage")
    assert done.returncode == 0, done.stdout + done.stderr
    parsed = adapter.parse_outputs(tmp_path / "stage", spec)
    assert parsed.details["bufsizes"] == [8192, 32768]
    assert parsed.by_name()["raw_write_rate_avg_32768B"].value > 0
    assert not list((tmp_path / "stage").glob("hdf5TestFile-*"))       # deleted without --keepfile
    # --metacoll is accepted but not compiled in (no -DMETACOLOK): the case fails
    meta = _case(write_experiment, {"exerciser_minels": [1024], "exerciser_metacoll": True}, "exerciser",
                 name="real-meta")
    spec = adapter.run_spec(meta, str(tmp_path / "case"))
    _run(spec, tmp_path / "stage-meta")
    with pytest.raises(ParseError, match="METACOLOK"):
        adapter.parse_outputs(tmp_path / "stage-meta", spec)
