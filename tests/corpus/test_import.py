"""The damaged-input corpus: `iolab import` (issue 23, item 7), as a process through the real CLI.

Each case imports real recorded outputs (tests/data/ior, tests/data/mdtest, tests/data/fio-recorded
and tests/data/btio; their READMEs give each command) into a results root of its own: an output
iolab wrongly refused before is now imported with the parameters it states; a --param the output
contradicts is refused naming both values; files of another format, empty, truncated or junk are
refused with the reason."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.corpus.conftest import iolab, refused

DATA = Path(__file__).resolve().parents[1] / "data"
IOR = DATA / "ior"
MDTEST = DATA / "mdtest"
FIO = DATA / "fio-recorded" / "fio_randwrite_4k_16m.json"


@pytest.fixture
def imp(tmp_path):
    """`iolab import ...` with results under tmp_path; .record(into) is the one record written."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOLAB_")}
    env.update(IOLAB_RESULTS=str(tmp_path / "results"), IOLAB_CACHE=str(tmp_path / "cache"))

    class Import:
        results = tmp_path / "results"

        def __call__(self, bench, *args):
            return iolab("import", bench, *args, env=env)

        def records(self, into: str) -> list[dict]:
            (run,) = [p for p in (self.results / into).iterdir() if p.is_dir()]
            return [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]

        def nothing_written(self, into: str) -> bool:
            where = self.results / into
            return not where.exists() or not any(where.iterdir())

    return Import()


def _metric(record: dict, name: str) -> float:
    return next(m["value"] for m in record["metrics"] if m["name"] == name)


# --------------------------------------------------------------- wrongly refused before

# name -> (params the output states, write_bw: its summary's Mean(MiB))
NOISY = {
    "ior_posix_v_2r_t64k_b1m": ({"api": "POSIX", "iterations": 2, "collective": False}, 3755.84),
    "ior_posix_vvv_2r_t64k_b256k": ({"api": "POSIX", "iterations": 2, "block_size": 262144}, 1937.35),
    "ior_mpiio_showhints_2r_t64k_b1m": ({"api": "MPIIO", "iterations": 2, "collective": True}, 769.33),
    "ior_hdf5_showhints_2r_t64k_b1m": ({"api": "HDF5", "iterations": 1, "collective": False}, 561.15),
    "ior_ncmpi_showhints_2r_t64k_b1m": ({"api": "NCMPI", "iterations": 1, "collective": False}, 490.79),
}


@pytest.mark.parametrize("name", sorted(NOISY))
def test_ior_text_with_verbose_or_hint_blocks_is_imported(imp, name):
    stated, write_bw = NOISY[name]
    answer = imp("ior", IOR / f"{name}.txt", "--into", "noisy")
    assert answer.returncode == 0, str(answer)
    (rec,) = imp.records("noisy")
    assert {k: rec["params"][k] for k in stated} == stated
    assert rec["params"]["block_size"] == stated.get("block_size", 1048576)
    assert rec["params"]["transfer_size"] == 65536
    assert (rec["params"]["scale.nodes"], rec["params"]["scale.tasks_per_node"]) == (1, 2)
    assert _metric(rec, "write_bw") == write_bw
    # IOR's text does not state its stonewall when it has none: unknown, never a default
    assert rec["provenance"]["params_unknown"] == ["extra_args", "stonewall", "stonewall_wearout", "storage"]


def test_ior_csv_summary_is_imported_with_unknowns(imp):
    """The CSV states sizes, tasks and iterations; the API and flags stay unknown (null)."""
    answer = imp("ior", IOR / "ior_posix_csv_2r_t64k_b1m.txt", "--into", "csv", "--param",
                 "scale.nodes=1")
    assert answer.returncode == 0, str(answer)
    (rec,) = imp.records("csv")
    p = rec["params"]
    assert (p["block_size"], p["iterations"], p["scale.tasks_per_node"]) == (1048576, 2, 2)
    assert p["api"] is None and p["fsync"] is None and p["segments"] is None
    assert "api" in rec["provenance"]["params_unknown"]
    # the mean of the rows' 3425.3197 and 4015.6094 MiB/s
    assert _metric(rec, "write_bw") == pytest.approx(3720.46455, rel=1e-12)


def test_ior_csv_summary_without_nodes_is_refused(imp):
    refused(imp("ior", IOR / "ior_posix_csv_2r_t64k_b1m.txt", "--into", "csv"),
            "the output says 2 processes but not on how many nodes", "--param scale.nodes")
    assert imp.nothing_written("csv")


def test_readonly_run_is_imported_as_read_only(imp):
    assert imp("ior", IOR / "ior_posix_readonly_2r_t64k_b1m.txt", "--into", "ro").returncode == 0
    (rec,) = imp.records("ro")
    assert (rec["params"]["write"], rec["params"]["read"], rec["params"]["keep_file"]) == (False, True, True)
    assert "write_bw" not in {m["name"] for m in rec["metrics"]}


# ------------------------------------------------------------ silently accepted before

@pytest.mark.parametrize("file, param, says", [
    ("ior_posix_fsync_2r_t64k_b1m.txt", "fsync=false", "fsync true, requested false"),
    ("ior_posix_fsync_2r_t64k_b1m.summary.json", "fsync=false", "fsync true, requested false"),
    ("ior_posix_readonly_2r_t64k_b1m.txt", "write=true",
     "writeFile false, requested true (--param write=true)"),
    ("ior_posix_v_2r_t64k_b1m.txt", "keep_file=true",
     "keepFile false, requested true (--param keep_file=true)"),
])
def test_ior_param_the_output_contradicts_is_refused(imp, file, param, says):
    refused(imp("ior", IOR / file, "--into", "bad", "--param", param), file, says, "--trust-params")
    assert imp.nothing_written("bad")


def test_trusted_param_is_imported_as_given(imp):
    answer = imp("ior", IOR / "ior_posix_fsync_2r_t64k_b1m.txt", "--into", "t", "--param",
                 "fsync=false", "--trust-params")
    assert answer.returncode == 0, str(answer)
    (rec,) = imp.records("t")
    assert rec["params"]["fsync"] is False and rec["provenance"]["params_trusted"] is True
    assert rec["observed"]["benchmark"]["fsync"] is True      # what IOR said stays recorded


@pytest.mark.parametrize("params, says", [
    (["items=1000"], "items 60, requested 1000"),
    (["depth=1"], "depth 0, requested 1"),
    (["write_bytes=4096"], "write_bytes 0, requested 4096"),
    (["unique_dir=false", "branching=1"],
     "branch_factor 2, requested 1 (--param branching=1); unique_dir_per_task true, requested false"),
])
def test_mdtest_param_its_command_line_contradicts_is_refused(imp, params, says):
    args = [a for p in params for a in ("--param", p)]
    refused(imp("mdtest", MDTEST / "mdtest_2r_n60_b2_u.txt", "--into", "md", *args),
            "mdtest_2r_n60_b2_u.txt", says)
    assert imp.nothing_written("md")


def test_mdtest_without_params_takes_its_command_line(imp):
    """-n 60 -b 2 -u ran: not items 1000, branching 1 and a shared directory (the defaults)."""
    assert imp("mdtest", MDTEST / "mdtest_2r_n60_b2_u.txt", "--into", "md").returncode == 0
    (rec,) = imp.records("md")
    p = rec["params"]
    assert (p["items"], p["branching"], p["unique_dir"], p["depth"]) == (60, 2, True, 0)
    assert (p["entries"], p["write_bytes"], p["extra_args"]) == ("both", 0, [])
    assert rec["provenance"]["params_unknown"] == ["storage"]


def test_mdtest_tree_and_sizes_from_its_command_line_and_csv(imp):
    files = [MDTEST / "mdtest_files_2r_n60_z1_b2_u_w4k.txt", MDTEST / "mdtest_files_2r_n60_z1_b2_u_w4k.csv"]
    assert imp("mdtest", *files, "--into", "tree", "--param", "depth=1").returncode == 0
    recs = imp.records("tree")
    p = recs[0]["params"]
    assert (p["depth"], p["write_bytes"], p["read_bytes"], p["entries"], p["iterations"]) == (
        1, 4096, 4096, "files", 2)
    refused(imp("mdtest", files[0], "--into", "tree2", "--param", "depth=2", "--param",
                "write_bytes=8192"), "depth 1, requested 2; write_bytes 4096, requested 8192")


def test_fio_param_its_output_contradicts_is_refused(imp):
    refused(imp("fio", FIO, "--into", "f", "--param", "rw=write"), "rw randwrite, requested write")


def test_btio_param_its_output_contradicts_is_refused(imp):
    refused(imp("btio", DATA / "btio" / "btio_m1_write_4r_64cube.txt", "--into", "b", "--param",
                "scale.nodes=1", "--param", "time_steps=10"),
            "iterations 5, requested 10 (--param time_steps=10)")


def test_files_that_ran_different_flags_are_not_one_case(imp):
    refused(imp("ior", IOR / "ior_posix_fsync_2r_t64k_b1m.txt", IOR / "ior_posix_v_2r_t64k_b1m.txt",
                "--into", "two"), "ran different", "import them as separate cases")


# ------------------------------------------------------------ foreign, empty, cut, junk

def test_fio_json_imported_as_ior(imp):
    refused(imp("ior", FIO, "--into", "x"), "not an IOR JSON summary (a fio JSON output: import it as fio)")


def test_mdtest_output_imported_as_ior(imp):
    refused(imp("ior", MDTEST / "mdtest_2r_n60_b2_u.txt", "--into", "x"),
            "not an IOR output (no 'IOR-<version>:' line")


def test_ior_output_imported_as_mdtest(imp):
    refused(imp("mdtest", IOR / "ior_posix_v_2r_t64k_b1m.txt", "--into", "x"),
            "not an mdtest output (no 'mdtest-<version> was launched' line)")


@pytest.mark.parametrize("bench, says", [
    ("ior", "the IOR output is empty"), ("mdtest", "the mdtest output is empty"),
    ("fio", "no fio JSON output"), ("btio", "the BTIO output is empty"),
])
def test_empty_file(imp, tmp_path, bench, says):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    refused(imp(bench, empty, "--into", "x"), "empty.txt", says)
    assert imp.nothing_written("x")


@pytest.mark.parametrize("name, cut_before, says", [
    ("ior_posix_v_2r_t64k_b1m.txt", "Finished", "no 'Finished' line: the output is truncated"),
    ("ior_mpiio_showhints_2r_t64k_b1m.txt", "Summary of all tests", "IOR did not finish"),
    ("ior_posix_csv_2r_t64k_b1m.txt", "33288.1270", "the last CSV line has no end"),
    ("ior_posix_fsync_2r_t64k_b1m.summary.json", '"Finished"', "not valid JSON, truncated or corrupt"),
])
def test_truncated_ior_output(imp, tmp_path, name, cut_before, says):
    text = (IOR / name).read_text()
    cut = tmp_path / name
    cut.write_text(text[:text.index(cut_before)])
    refused(imp("ior", cut, "--into", "x", "--param", "scale.nodes=1"), name, says)


def test_truncated_mdtest_output(imp, tmp_path):
    text = (MDTEST / "mdtest_2r_n60_b2_u.txt").read_text()
    cut = tmp_path / "cut.txt"
    cut.write_text(text[:text.index("   File creation")])
    refused(imp("mdtest", cut, "--into", "x"), "cut.txt",
            "no '-- finished at' line: the output is truncated")


@pytest.mark.parametrize("bench, says", [
    ("ior", "not an IOR output"), ("mdtest", "not an mdtest output"),
    ("btio", "no BT-IO report here"),
])
def test_binary_junk(imp, tmp_path, bench, says):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 16)
    refused(imp(bench, junk, "--into", "x"), "junk.bin", says)


def test_failed_ior_run_is_refused_with_its_error(imp):
    refused(imp("ior", IOR / "ior_posix_read_unkept_2r_t64k_b1m.txt", "--into", "x"),
            "IOR reported an error: ERROR: open64(")


@pytest.mark.parametrize("file, param, says", [
    ("h5bench_write_1d_contig_4r.txt", "mode=ASYNC", "mode SYNC, requested ASYNC"),
    ("h5bench_read_1d_full_4r.txt", "timesteps=5", "timesteps 3, requested 5"),
])
def test_h5bench_param_its_configuration_contradicts_is_refused(imp, file, param, says):
    refused(imp("h5bench", DATA / "h5bench" / file, "--into", "h", "--param", "scale.nodes=1",
                "--param", param), file, says)


def test_h5bench_ranks_without_nodes_is_refused(imp):
    refused(imp("h5bench", DATA / "h5bench" / "h5bench_write_1d_contig_4r.txt", "--into", "h"),
            "the output says 4 processes but not on how many nodes")


def test_fio_without_end_fsync_is_not_recorded_as_iolabs_default(imp, tmp_path):
    doc = json.loads(FIO.read_text())
    del doc["global options"]["end_fsync"]
    path = tmp_path / "fio_no_end_fsync.json"
    path.write_text(json.dumps(doc))
    refused(imp("fio", path, "--into", "f", "--param", "end_fsync=true"),
            "end_fsync false, requested true")
    assert imp("fio", path, "--into", "f2").returncode == 0
    (rec,) = imp.records("f2")
    assert rec["params"]["end_fsync"] is False


@pytest.mark.parametrize("bench, path, says", [
    ("ior", IOR / "ior_posix_script_two_tests_2r.txt", "2 IOR tests in one output (a script, -f)"),
    ("mdtest", MDTEST / "mdtest_files_tasks_1_to_2_n10.txt",
     "2 'SUMMARY rate' tables, one per task count (-f/-l/-s)"),
])
def test_output_of_several_runs_is_not_one_case(imp, bench, path, says):
    refused(imp(bench, path, "--into", "x"), path.name, says)
