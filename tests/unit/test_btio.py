"""BTIO: the input deck against the recorded decks, plan-time checks, data keys, and the parser
against real BTIO outputs (tests/data/btio, see its README), including failed and truncated ones.

Every expected number was read by hand from the file named in its table entry.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iolab.benchmarks import RunSpec, get as get_benchmark
from iolab.benchmarks.btio import DECK, read_deck
from iolab.errors import IolabError, ParseError
from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand
from iolab.parsers import btio_text
from tests.unit.realrun import needs as _needs
from tests.unit.realrun import run_spec as _run

REPO = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024
METHODS = ("mpi_collective", "mpi_independent", "pnetcdf_blocking", "pnetcdf_nonblocking")
TIMES = ("total_time", "open_time", "post_time", "wait_time")

# <name>.txt: I/O bandwidth, then Total I/O time, Max file create|open, Max post, Max wait (s).
# All runs: 4 ranks, 64x64x64 grid, 5 iterations, 50.00 MiB, striping 0 / 0 bytes.
RUNS = {
    "btio_m0_write_4r_64cube": ("write", 0, 435.74, (0.11, 0.00, 0.00, 0.00)),
    "btio_m0_read_4r_64cube": ("read", 0, 397.28, (0.13, 0.00, 0.00, 0.00)),
    "btio_m1_write_4r_64cube": ("write", 1, 372.87, (0.13, 0.00, 0.00, 0.00)),
    "btio_m1_read_4r_64cube": ("read", 1, 929.61, (0.05, 0.00, 0.00, 0.00)),
    "btio_m2_write_4r_64cube": ("write", 2, 238.28, (0.21, 0.01, 0.20, 0.00)),
    "btio_m2_read_4r_64cube": ("read", 2, 513.91, (0.10, 0.01, 0.09, 0.00)),
    "btio_m3_write_4r_64cube": ("write", 3, 213.45, (0.23, 0.01, 0.01, 0.22)),
    "btio_m3_read_4r_64cube": ("read", 3, 459.86, (0.11, 0.01, 0.00, 0.10)),
}
# Failures captured on the same stack (README): stdout -> the line the error must quote
FAILURES = {
    "btio_nonsquare_3r": "BTIO failed: Number of processes must be a square number. exit ...",
    "btio_m0_read_nofile_4r": "BTIO failed: Error opening file: MPI_ERR_NO_SUCH_FILE: no such file or "
                              "directory",
    "btio_m3_read_nofile_4r": "BTIO failed: Error: file does not exit",
    "btio_small_grid_9r": "BTIO failed: Error: Cell size too small. Min size is 3",
}


@pytest.fixture(scope="module")
def btio_dir(data_dir) -> Path:
    return data_dir / "btio"


def _deck_name(name: str) -> str:
    m = re.match(r"btio_m(\d)_(write|read)_4r_64cube$", name)
    return f"btio_m{m.group(1)}_{m.group(2)[0]}_64x64x64_5steps.inputbt.data"


def _cases(write_experiment, name, body):
    return expand(load_experiment(write_experiment(name, f"id: {name}\ndescription: btio test\n"
                                                         f"benchmark: btio\n{body}")))


def _case(write_experiment, fixed="{}", tasks=4, name="one", mode="write"):
    """One case; a read comes with its write, as an experiment must have it."""
    cases = _cases(write_experiment, name, f"scale: {{nodes: 1, tasks_per_node: {tasks}}}\n"
                                           f"fixed: {fixed}\nmatrix: {{mode: [write, {mode}]}}\n")
    return cases[-1]


def test_every_recorded_btio_file_is_covered(btio_dir):
    names = {p.name for p in btio_dir.iterdir()}
    expected = ({f"{n}.txt" for n in RUNS} | {_deck_name(n) for n in RUNS}
                | {f"{n}.txt" for n in FAILURES} | {f"{n}.inputbt.data" for n in FAILURES}
                | {"btio_small_grid_9r.stderr.txt", "btio_m3_ncmpidump_header.txt", "README.md"})
    assert names == expected


# ---------------------------------------------------------------- parser


@pytest.mark.parametrize("name", sorted(RUNS))
def test_btio_report(btio_dir, name):
    mode, method, bw, times = RUNS[name]
    parsed = btio_text.parse((btio_dir / f"{name}.txt").read_text(), f"{name}.txt")
    got = parsed.by_name()
    assert set(got) == {f"{mode}_{n}" for n in ("bw", "amount", *TIMES)}
    assert len(parsed.metrics) == 6
    assert got[f"{mode}_bw"].value == bw and got[f"{mode}_bw"].unit == "MiB/s"
    assert got[f"{mode}_amount"].value == 50.00 and got[f"{mode}_amount"].unit == "MiB"
    for metric, value in zip(TIMES, times):
        assert got[f"{mode}_{metric}"].value == value, metric
        assert got[f"{mode}_{metric}"].unit == "s"
    assert {m.source for m in parsed.metrics} == {"btio-text"}
    assert parsed.version is None
    assert parsed.details == {
        "mode": mode, "io_method": METHODS[method], "ranks": 4, "grid": [64, 64, 64], "iterations": 5,
        "path": f"/tmp/runs/data/shared/btio_m{method}", "striping_count": 0, "striping_size": 0}


def test_btio_named_values_and_dispatcher(btio_dir):
    text = (btio_dir / "btio_m3_write_4r_64cube.txt").read_text()
    m = btio_text.parse(text).by_name()
    assert m["write_bw"].as_dict() == {"name": "write_bw", "value": 213.45, "unit": "MiB/s",
                                       "source": "btio-text"}
    assert m["write_wait_time"].value == 0.22     # nfmpi_wait_all: the non-blocking method waits
    assert m["write_open_time"].value == 0.01     # 'Max file create time' of a write
    r = btio_text.parse((btio_dir / "btio_m2_read_4r_64cube.txt").read_text()).by_name()
    assert r["read_open_time"].value == 0.01      # 'Max file open   time' of a read
    assert r["read_post_time"].value == 0.09


def test_btio_amount_is_bytes_written(btio_dir, write_experiment):
    """ncmpidump of the method 3 file: 5 x 64 x 64 x 64 x 5 doubles = the amount BTIO printed."""
    header = (btio_dir / "btio_m3_ncmpidump_header.txt").read_text()
    dims = {k: int(v) for k, v in re.findall(r"^\t(\w+) = (\d+) ;", header, re.MULTILINE)}
    dumps = int(re.search(r"NUM_DUMPS = UNLIMITED ; // \((\d+) currently\)", header).group(1))
    assert "double var(NUM_DUMPS, Z, Y, X, FIVE_DBL)" in header
    file_bytes = dumps * dims["Z"] * dims["Y"] * dims["X"] * dims["FIVE_DBL"] * 8
    case = _case(write_experiment, "{io_method: pnetcdf_nonblocking, time_steps: 5, grid: [64, 64, 64]}")
    assert get_benchmark("btio").bytes_written(case) == file_bytes == 52428800
    amount = btio_text.parse((btio_dir / "btio_m3_write_4r_64cube.txt").read_text()).by_name()
    assert amount["write_amount"].value * MIB == file_bytes
    read = _case(write_experiment, name="read-bytes", mode="read")
    assert get_benchmark("btio").bytes_written(read) == 0


@pytest.mark.parametrize("name", sorted(FAILURES))
def test_btio_recorded_failures(btio_dir, name):
    """BTIO exits 0 after all of these but the last: the report is what tells."""
    path = btio_dir / f"{name}.txt"
    with pytest.raises(ParseError) as info:
        btio_text.parse(path.read_text(), path.name)
    assert str(info.value) == f"{path.name}: {FAILURES[name]}"
    with pytest.raises(ParseError, match="BTIO failed"):
        get_benchmark("btio").parse_files([path])


def test_btio_stderr_and_dump_are_not_reports(btio_dir):
    for name in ("btio_small_grid_9r.stderr.txt", "btio_m3_ncmpidump_header.txt"):
        with pytest.raises(ParseError, match="no BT-IO report here"):
            btio_text.parse((btio_dir / name).read_text(), name)


@pytest.mark.parametrize("name", sorted(RUNS))
@pytest.mark.parametrize("cut", ["header", "before-bandwidth", "inside-bandwidth", "after-bandwidth",
                                 "quarter", "half", "three-quarters"])
def test_btio_truncated(btio_dir, name, cut):
    text = (btio_dir / f"{name}.txt").read_text()
    bw = text.index("I/O bandwidth")
    at = {
        "header": text.index("Number of MPI"),
        "before-bandwidth": bw,
        "inside-bandwidth": text.index(".", bw) + 1,          # '...:       435.' (no unit yet)
        "after-bandwidth": text.index("\n", bw) + 1,          # the report stops before 'Using ...'
        "quarter": len(text) // 4, "half": len(text) // 2, "three-quarters": 3 * len(text) // 4,
    }[cut]
    with pytest.raises(ParseError, match="truncated|not in MiB/s") as info:
        btio_text.parse(text[:at], "out.txt")
    assert str(info.value).startswith("out.txt: ")


def test_btio_empty_and_missing(tmp_path):
    with pytest.raises(ParseError, match="empty"):
        btio_text.parse(" \n")
    with pytest.raises(ParseError, match="absent.txt is missing"):
        get_benchmark("btio").parse_files([tmp_path / "absent.txt"])


def test_btio_bad_numbers(btio_dir):
    text = (btio_dir / "btio_m0_write_4r_64cube.txt").read_text()
    line = "I/O bandwidth            :       435.74 MiB/s"
    assert line in text
    with pytest.raises(ParseError, match="write bandwidth is 0.0"):
        btio_text.parse(text.replace(line, "I/O bandwidth            :         0.00 MiB/s"))
    # Fortran fills an overflowing F12.2 field with asterisks
    with pytest.raises(ParseError, match=r"'\*{12}', not a number"):
        btio_text.parse(text.replace(line, "I/O bandwidth            : ************ MiB/s"))
    with pytest.raises(ParseError, match="not finite"):
        btio_text.parse(text.replace(line, "I/O bandwidth            :     Infinity MiB/s"))
    # 64x64x64 x 40 B x 5 = 50.00 MiB: another amount means the report was misread
    with pytest.raises(ParseError, match="does not match the 64x64x64 grid and 5 iterations"):
        btio_text.parse(text.replace("50.00 MiB\n", "40.00 MiB\n"))
    no_wait = "".join(ln for ln in text.splitlines(keepends=True) if not ln.startswith("Max write wait"))
    with pytest.raises(ParseError, match="no 'Max write wait time in sec' line"):
        btio_text.parse(no_wait)


def test_cli_parse_btio(btio_dir):
    path = btio_dir / "btio_m1_read_4r_64cube.txt"
    out = subprocess.run([sys.executable, "-m", "iolab.cli", "parse", "btio", str(path)],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [m["name"] for m in lines] == ["read_bw", "read_amount", "read_total_time", "read_open_time",
                                          "read_post_time", "read_wait_time"]
    assert lines[0] == {"file": str(path), "name": "read_bw", "value": 929.61, "unit": "MiB/s",
                        "source": "btio-text", "version": None}
    bad = btio_dir / "btio_nonsquare_3r.txt"
    out = subprocess.run([sys.executable, "-m", "iolab.cli", "parse", "btio", str(bad)],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 1
    assert "Number of processes must be a square number" in out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""


# ---------------------------------------------------------------- input deck


@pytest.mark.parametrize("name", sorted(RUNS))
def test_deck_matches_the_recorded_deck(btio_dir, write_experiment, src_layout_templates, name):
    """The case with the recorded run's settings renders the recorded deck; line 5 is the case's
    directory for a write and the write's directory for a read."""
    mode, method, _bw, _times = RUNS[name]
    recorded = (btio_dir / _deck_name(name)).read_text()
    case = _case(write_experiment, f"{{io_method: {METHODS[method]}, time_steps: 5, grid: [64, 64, 64]}}",
                 name=name.replace("_", "-"), mode=mode)
    assert case.params["mode"] == mode
    adapter = get_benchmark("btio")
    own, writer = "/scratch/iolab/exp/run/c0ffee00-r1", "/scratch/iolab/exp/run/deadbeef-r1"
    spec = adapter.run_spec(case, own, input_dir=writer if mode == "read" else None)
    lines, want = spec.files[DECK].splitlines(), recorded.splitlines()
    assert len(lines) == len(want) == 5
    assert lines[:4] == want[:4]
    assert want[4] == f"/tmp/runs/data/shared/btio_m{method}"
    assert lines[4] == (writer if mode == "read" else own)
    # with the recorded directory, byte for byte
    at = want[4]
    spec = adapter.run_spec(case, at, input_dir=at if mode == "read" else None)
    assert spec.files[DECK] == recorded
    assert read_deck(spec.files[DECK]) == {"mode": mode, "io_method": METHODS[method], "iterations": 5,
                                           "grid": [64, 64, 64], "path": at}
    assert (spec.executable, spec.args, spec.outputs, spec.mpi) == ("btio", [DECK], [DECK], True)
    assert spec.env == {}


def test_deck_long_values_keep_a_space_before_the_comment(write_experiment, src_layout_templates):
    case = _case(write_experiment, "{time_steps: 123456789012345678, grid: [1000000, 1000000, 1000000]}",
                 tasks=1)
    deck = get_benchmark("btio").run_spec(case, "/d").files[DECK].splitlines()
    assert deck[2] == "123456789012345678 # number of time steps"
    assert deck[3] == "1000000 1000000 1000000 # grid_points(1), grid_points(2), grid_points(3)"
    assert deck[4] == "/d"


def test_run_spec_refusals(write_experiment, src_layout_templates):
    adapter = get_benchmark("btio")
    read = _case(write_experiment, name="read", mode="read")
    with pytest.raises(IolabError, match="needs the directory of its write case"):
        adapter.run_spec(read, "/scratch/r")
    write = _case(write_experiment, "{}", name="write")
    # a job-time directory: the job writes the deck, the path expanded as mkdir's (test_shell)
    spec = adapter.run_spec(write, "$DW_JOB_STRIPED/exp/run/c1")
    assert spec.job_files == {DECK: ("$DW_JOB_STRIPED/exp/run/c1", 503)}
    assert spec.files[DECK].splitlines()[4] == "$DW_JOB_STRIPED/exp/run/c1"
    with pytest.raises(IolabError, match="at most 503 characters"):
        adapter.run_spec(write, "/" + "d" * 503)
    assert adapter.run_spec(write, "/" + "d" * 502).files[DECK].splitlines()[4] == "/" + "d" * 502


def test_pnetcdf_hints(write_experiment, src_layout_templates):
    adapter = get_benchmark("btio")
    hints = {"cb_nodes": "2", "romio_cb_write": "enable"}
    for method in METHODS:
        case = _case(write_experiment, f"{{io_method: {method}}}", name=method.replace("_", "-"))
        env = adapter.run_spec(case, "/d", hints=hints).env
        if method.startswith("pnetcdf"):
            assert env == {"PNETCDF_HINTS": "cb_nodes=2;romio_cb_write=enable"}
        else:
            assert env == {}    # MPI-IO methods: ROMIO_HINTS from the hints layer only
        assert adapter.run_spec(case, "/d").env == {}
        assert adapter.through_mpi_io(case) is True
    with pytest.raises(IolabError, match="PNETCDF_HINTS"):
        adapter.run_spec(case, "/d", hints={"cb_config_list": "a;b"})


# ---------------------------------------------------------------- plan-time checks


@pytest.mark.parametrize("tasks, message", [
    (6, "BTIO needs a square number of ranks; 6 is not (try 4 or 9)"),
    (2, "BTIO needs a square number of ranks; 2 is not (try 1 or 4)"),
    (15, "BTIO needs a square number of ranks; 15 is not (try 9 or 16)"),
])
def test_non_square_ranks_rejected(write_experiment, tasks, message):
    with pytest.raises(IolabError) as info:
        _case(write_experiment, tasks=tasks)
    assert message in str(info.value)


@pytest.mark.parametrize("tasks", [1, 4, 9, 16, 64])
def test_square_ranks_accepted(write_experiment, tasks):
    case = _case(write_experiment, tasks=tasks)
    assert get_benchmark("btio").check(case) is None


def test_grid_too_small_for_the_ranks(write_experiment):
    with pytest.raises(IolabError, match="grid 8x8x8 is too small for 9 ranks: BTIO cuts each axis into "
                                         "3 cells of at least 3 points, so every grid size must be at "
                                         "least 9"):
        _case(write_experiment, "{grid: [8, 8, 8]}", tasks=9)
    with pytest.raises(IolabError, match="grid 64x64x11 is too small for 16 ranks"):
        _case(write_experiment, "{grid: [64, 64, 11]}", tasks=16)
    assert _case(write_experiment, "{grid: [9, 9, 9]}", tasks=9, name="nine").params["grid"] == [9, 9, 9]


@pytest.mark.parametrize("fixed, fragment", [
    ("{grid: [64, 64]}", "grid"),
    ("{grid: [64, 64, 64, 64]}", "grid"),
    ("{grid: [2, 64, 64]}", "out of range"),
    ("{time_steps: 0}", "out of range"),
    ("{io_method: collective}", "not allowed"),
    ("{mode: w}", "not allowed"),
    ("{api: MPIIO}", "unknown parameter 'api' for btio"),
])
def test_schema_rejects(write_experiment, fixed, fragment):
    with pytest.raises(IolabError, match=fragment):
        _case(write_experiment, fixed)


def test_defaults(write_experiment):
    case = _case(write_experiment, tasks=1)
    assert {k: case.params[k] for k in ("mode", "io_method", "time_steps", "grid")} == {
        "mode": "write", "io_method": "mpi_collective", "time_steps": 5, "grid": [64, 64, 64]}


# ---------------------------------------------------------------- data keys


def _pairs(cases):
    """read case -> write case with the same key (as the ReFrame wiring pairs them)."""
    adapter = get_benchmark("btio")
    made = {}
    for c in cases:
        key = adapter.produces(c)
        if key:
            assert key not in made, f"two writes leave {key}"
            made[key] = c
    return {c.case_id: made.get(adapter.consumes(c)) for c in cases if adapter.consumes(c)}


def test_keys(write_experiment):
    adapter = get_benchmark("btio")
    cases = _cases(write_experiment, "keys", """
scale: {nodes: 1, tasks_per_node: 4}
fixed: {time_steps: 5, grid: [64, 64, 64]}
matrix:
  mode: [write, read]
  io_method: [mpi_collective, pnetcdf_blocking]
""")
    keys = [(c.params["mode"], c.params["io_method"], adapter.produces(c), adapter.consumes(c))
            for c in cases]
    assert keys == [
        ("write", "mpi_collective", "btio:mpiio:64x64x64:steps=5:storage=scratch", None),
        ("write", "pnetcdf_blocking", "btio:pnetcdf:64x64x64:steps=5:storage=scratch", None),
        ("read", "mpi_collective", None, "btio:mpiio:64x64x64:steps=5:storage=scratch"),
        ("read", "pnetcdf_blocking", None, "btio:pnetcdf:64x64x64:steps=5:storage=scratch"),
    ]
    pairs = _pairs(cases)
    for c in cases:
        if c.params["mode"] == "read":
            assert pairs[c.case_id].params["io_method"] == c.params["io_method"]


def test_keys_pair_family_grid_steps_and_layout(write_experiment):
    """A read names the file it reads: same family, grid, steps and stripes as its write. Ranks and
    the exact method within a family may differ."""
    adapter = get_benchmark("btio")
    writes = _cases(write_experiment, "writes", """
scale: {nodes: 1, tasks_per_node: 4}
fixed: {io_method: mpi_collective}
matrix:
  grid: [[64, 64, 64], [96, 96, 96]]
  time_steps: [2, 5]
  lustre.stripe_count: [1, 4]
""")
    keys = {adapter.produces(c) for c in writes}
    assert len(keys) == 8
    assert "btio:mpiio:96x96x96:steps=2:storage=scratch:lustre.stripe_count=4" in keys
    read = _case(write_experiment, "{io_method: mpi_independent, grid: [96, 96, 96], time_steps: 2, "
                                   "lustre.stripe_count: 4}", tasks=9, name="read9", mode="read")
    assert adapter.consumes(read) in keys and adapter.produces(read) is None
    pnetcdf = _case(write_experiment, "{io_method: pnetcdf_nonblocking, grid: [96, 96, 96], time_steps: 2, "
                                      "lustre.stripe_count: 4}", tasks=9, name="pnc", mode="read")
    assert adapter.consumes(pnetcdf) not in keys           # btio.nc is not btio.mpi
    hinted = _case(write_experiment, "{mpiio.striping_factor: 4, mpiio.cb_nodes: 2}", name="hinted",
                   mode="read")
    # a hint that sets the layout at creation names the file; an access hint does not
    assert adapter.consumes(hinted) == "btio:mpiio:64x64x64:steps=5:storage=scratch:mpiio.striping_factor=4"


# ---------------------------------------------------------------- stage outputs


def test_parse_outputs_from_a_stage(btio_dir, tmp_path, write_experiment, src_layout_templates):
    case = _case(write_experiment, "{io_method: pnetcdf_blocking}")
    spec = get_benchmark("btio").run_spec(case, "/tmp/runs/data/shared/btio_m2")
    shutil.copy(btio_dir / "btio_m2_write_4r_64cube.txt", tmp_path / "rfm_job.out")
    (tmp_path / "rfm_job.err").write_text("")
    assert get_benchmark("btio").parse_outputs(tmp_path, spec).by_name()["write_bw"].value == 238.28
    # the report is of another run than the deck: another method, mode, or directory
    for name, fragment in (("btio_m3_write_4r_64cube.txt", "io_method 'pnetcdf_nonblocking'"),
                           ("btio_m2_read_4r_64cube.txt", "mode 'read'")):
        shutil.copy(btio_dir / name, tmp_path / "rfm_job.out")
        with pytest.raises(ParseError, match=f"BTIO ran {fragment}"):
            get_benchmark("btio").parse_outputs(tmp_path, spec)
    shutil.copy(btio_dir / "btio_m2_write_4r_64cube.txt", tmp_path / "rfm_job.out")
    elsewhere = get_benchmark("btio").run_spec(case, "/scratch/other")
    with pytest.raises(ParseError, match="BTIO ran path '/tmp/runs/data/shared/btio_m2', but "
                                         "inputbt.data asked for '/scratch/other'"):
        get_benchmark("btio").parse_outputs(tmp_path, elsewhere)
    # a test stand-in's replay echoes the directory of its recording, and nothing else may differ
    (tmp_path / "rfm_job.err").write_text("IOLAB-STANDIN: replaying tests/data/replay/btio/x\n")
    assert get_benchmark("btio").parse_outputs(tmp_path, elsewhere).by_name()["write_bw"].value == 238.28
    shutil.copy(btio_dir / "btio_m3_write_4r_64cube.txt", tmp_path / "rfm_job.out")
    with pytest.raises(ParseError, match="BTIO ran io_method 'pnetcdf_nonblocking'"):
        get_benchmark("btio").parse_outputs(tmp_path, elsewhere)
    (tmp_path / "rfm_job.out").unlink()
    with pytest.raises(ParseError, match="stdout rfm_job.out is missing"):
        get_benchmark("btio").parse_outputs(tmp_path, RunSpec("btio", [DECK]))


# ---------------------------------------------------------------- real runs





@pytest.mark.integration
@pytest.mark.parametrize("method, filename", [("mpi_collective", "btio.mpi"),
                                              ("pnetcdf_nonblocking", "btio.nc")])
def test_real_write_then_read(tmp_path, write_experiment, src_layout_templates, method, filename):
    _needs("mpirun", "btio")
    adapter = get_benchmark("btio")
    write = _case(write_experiment, f"{{io_method: {method}, time_steps: 2, grid: [16, 16, 16]}}",
                  name="real-w")
    read = _case(write_experiment, f"{{io_method: {method}, time_steps: 2, grid: [16, 16, 16]}}",
                 name="real-r", mode="read")
    assert adapter.produces(write) == adapter.consumes(read)
    data = tmp_path / "write-case"
    data.mkdir()
    spec = adapter.run_spec(write, str(data), hints={"romio_cb_write": "enable"})
    done = _run(spec, tmp_path / "stage-w")
    assert done.returncode == 0, done.stderr
    parsed = adapter.parse_outputs(tmp_path / "stage-w", spec).by_name()
    assert parsed["write_bw"].value > 0
    assert parsed["write_amount"].value == 0.31        # 16^3 x 40 B x 2 = 0.3125 MiB, printed %.2f
    file_size = (data / filename).stat().st_size
    assert file_size >= adapter.bytes_written(write) == 16**3 * 40 * 2
    spec = adapter.run_spec(read, str(tmp_path / "read-case"), input_dir=str(data))
    done = _run(spec, tmp_path / "stage-r")
    assert done.returncode == 0, done.stderr
    assert adapter.parse_outputs(tmp_path / "stage-r", spec).by_name()["read_bw"].value > 0


@pytest.mark.integration
def test_real_failures_exit_0_and_fail_the_case(tmp_path, write_experiment, src_layout_templates):
    _needs("mpirun", "btio")
    adapter = get_benchmark("btio")
    # 3 ranks: BTIO refuses, exits 0
    case = _case(write_experiment, "{grid: [16, 16, 16], time_steps: 1}", tasks=1)
    spec = adapter.run_spec(case, str(tmp_path))
    done = _run(spec, tmp_path / "stage-3", np=3)
    assert done.returncode == 0
    with pytest.raises(ParseError, match="Number of processes must be a square number"):
        adapter.parse_outputs(tmp_path / "stage-3", spec)
    # a read of a directory where no write ran: exits 0 too
    read = _case(write_experiment, "{grid: [16, 16, 16], time_steps: 1}", name="orphan", mode="read")
    spec = adapter.run_spec(read, str(tmp_path / "r"), input_dir=str(tmp_path / "nothing-here"))
    done = _run(spec, tmp_path / "stage-r")
    assert done.returncode == 0
    with pytest.raises(ParseError, match="Error opening file"):
        adapter.parse_outputs(tmp_path / "stage-r", spec)
