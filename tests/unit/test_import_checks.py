"""`iolab import` reads everything an output says of its run, against real IOR 4.0.0 and mdtest
4.0.0 outputs (tests/data/ior and tests/data/mdtest, their READMEs give each command): IOR text
with -v, with the showHints blocks, the CSV summary; the flags only IOR's command line states;
mdtest's command line. Every expected number was read by hand from the file named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iolab.benchmarks import get as get_benchmark
from iolab.errors import IolabError, ParseError
from iolab.results.importer import reconcile
from iolab.parsers import argv, ior_json, ior_text, mdtest_text

DATA = Path(__file__).resolve().parents[1] / "data"
IOR = DATA / "ior"
MDTEST = DATA / "mdtest"


def _text(name: str):
    return ior_text.parse((IOR / f"{name}.txt").read_text(), f"{name}.txt")


# name -> (reps, write Mean(MiB), write Max(MiB), read Mean(MiB), read Min(MiB), API, collective)
# from each file's "Summary of all tests"
NOISY_TEXT = {
    "ior_posix_v_2r_t64k_b1m": (2, 3755.84, 3766.78, 36657.89, 25653.24, "POSIX", False),
    "ior_posix_vvv_2r_t64k_b256k": (2, 1937.35, 2618.17, 21681.08, 18396.07, "POSIX", False),
    "ior_mpiio_showhints_2r_t64k_b1m": (2, 769.33, 851.81, 21238.53, 19239.93, "MPIIO", True),
    "ior_hdf5_showhints_2r_t64k_b1m": (1, 561.15, 561.15, 1715.11, 1715.11, "HDF5", False),
    "ior_ncmpi_showhints_2r_t64k_b1m": (1, 490.79, 490.79, 964.32, 964.32, "NCMPI", False),
}


@pytest.mark.parametrize("name", sorted(NOISY_TEXT))
def test_ior_text_with_verbose_lines_and_hint_blocks(name):
    """-v's "Commencing" lines, blank lines and remove rows, and the showHints blocks between the
    result rows are no results; every iteration's row is still counted."""
    reps, write, write_max, read, read_min, api, collective = NOISY_TEXT[name]
    parsed = _text(name)
    m = parsed.by_name()
    assert (m["write_bw"].value, m["write_bw_max"].value) == (write, write_max)
    assert (m["read_bw"].value, m["read_bw_min"].value) == (read, read_min)
    assert parsed.echo["repetitions"] == reps and parsed.echo["numTasks"] == 2
    assert (parsed.echo["API"], parsed.echo["collective"]) == (api, collective)
    assert (parsed.echo["blockSize"], parsed.echo["transferSize"]) == (
        262144 if "b256k" in name else 1048576, 65536)


def test_ior_text_verbose_iteration_times():
    m = _text("ior_posix_v_2r_t64k_b1m").by_name()
    # the write rows' open(s) 0.000102 and 0.000070, the read rows' total(s) 0.000042, 0.000078
    assert m["write_open_time"].value == pytest.approx((0.000102 + 0.000070) / 2, rel=1e-12)
    assert m["read_total_time"].value == pytest.approx((0.000042 + 0.000078) / 2, rel=1e-12)


def test_ior_text_hint_blocks_cut_before_the_last_row():
    text = (IOR / "ior_mpiio_showhints_2r_t64k_b1m.txt").read_text()
    cut = text.index("write     851.81")
    broken = text[:cut] + text[text.index("\nhints passed", cut):]
    with pytest.raises(ParseError, match="1 of 2 write iterations reported"):
        ior_text.parse(broken)


def test_ior_csv_summary():
    """-O summaryFormat=CSV: per-iteration rows only; the summary as IOR computes it."""
    parsed = _text("ior_posix_csv_2r_t64k_b1m")
    m = parsed.by_name()
    # write rows: 3425.3197 and 4015.6094 MiB/s; read rows: 33961.9757 and 33288.1270
    assert m["write_bw"].value == pytest.approx((3425.3197 + 4015.6094) / 2, rel=1e-12)
    assert (m["write_bw_max"].value, m["write_bw_min"].value) == (4015.6094, 3425.3197)
    assert m["write_bw_stddev"].value == pytest.approx((4015.6094 - 3425.3197) / 2, rel=1e-12)
    assert m["read_ops"].value == pytest.approx((33961.9757 + 33288.1270) / 2 * 16, rel=1e-12)
    assert m["read_io_time"].value == pytest.approx(0.0001, rel=1e-12)
    assert {x.source for x in parsed.metrics} == {"ior-csv"}
    assert parsed.echo == {"blockSize": 1048576, "transferSize": 65536, "numTasks": 2,
                           "repetitions": 2, "writeFile": True, "readFile": True}


@pytest.mark.parametrize("damage, says", [
    (lambda t: t[:-20], "has no end: the output is truncated"),
    (lambda t: t[:t.rindex("read,")], "different numbers of iterations (write 2, read 1)"),
    (lambda t: t.replace(",2,1\n", ",2,0\n"), "write iterations are not numbered 0 to 1"),
    (lambda t: t.replace("4015.6094", "-nan"), "write bw(MiB/s) is not finite (nan)"),
    (lambda t: t.replace("64.0000,0.0001,0.0004,0.0000,0.0005", "32.0000,0.0001,0.0004,0.0000,0.0005"),
     "xfer(KiB) is not one whole positive value"),
    (lambda t: t.splitlines(keepends=True)[0], "no write or read row"),
])
def test_ior_csv_damaged(damage, says):
    text = (IOR / "ior_posix_csv_2r_t64k_b1m.txt").read_text()
    with pytest.raises(ParseError) as info:
        ior_text.parse(damage(text), "x.csv")
    assert says in str(info.value)


def test_ior_flags_from_the_command_line():
    assert _text("ior_posix_fsync_2r_t64k_b1m").echo["fsync"] is True
    assert _text("ior_posix_v_2r_t64k_b1m").echo["fsync"] is False
    readonly = _text("ior_posix_readonly_2r_t64k_b1m").echo
    assert (readonly["writeFile"], readonly["readFile"], readonly["keepFile"]) == (False, True, True)
    summary = (IOR / "ior_posix_fsync_2r_t64k_b1m.summary.json").read_text()
    assert ior_json.parse(summary).echo["fsync"] is True
    assert ior_json.parse(summary).echo["keepFile"] is False


@pytest.mark.parametrize("line, want", [
    ("ior -wrk -t64k -e=0 -O fsync=1,keepFile=0 -z", {"fsync": True, "keepFile": False,
                                                     "randomOffset": True}),
    ("ior -a POSIX -e -o /x/-k", {"fsync": True, "keepFile": False}),   # -o's value is no flag
    ("ior -O FSYNC=1 -C", {"fsync": True, "reorderTasks": True}),
])
def test_ior_command_line_echo(line, want):
    echo = ior_text.command_line_echo(line)
    assert {k: echo[k] for k in want} == want


def test_ior_command_line_with_a_script_states_nothing():
    assert ior_text.command_line_echo("ior -f script.txt -e") == {}


def test_argv_options_as_ior_reads_them():
    assert argv.options(["-wrk", "-t64k", "-b", "1m", "--posix.odirect", "--x=1", "p"],
                        set("tb")) == [("w", None), ("r", None), ("k", None), ("t", "64k"),
                                       ("b", "1m"), ("--posix.odirect", None), ("--x", "1"),
                                       ("", "p")]
    assert [argv.size(t) for t in ("4096", "4k", "2M", "x", None)] == [4096, 4096, 2 << 20, None, None]


def test_mdtest_command_line_echo():
    echo = mdtest_text.parse((MDTEST / "mdtest_2r_n60_b2_u.txt").read_text()).echo
    assert {k: echo[k] for k in ("items", "branch_factor", "unique_dir_per_task", "depth",
                                 "write_bytes", "entries", "extra_args", "iterations")} == {
        "items": 60, "branch_factor": 2, "unique_dir_per_task": True, "depth": 0,
        "write_bytes": 0, "entries": "both", "extra_args": [], "iterations": 1}
    assert all(echo[k] for k in ("create_only", "stat_only", "read_only", "remove_only"))
    echo = mdtest_text.parse((MDTEST / "mdtest_files_2r_n60_z1_b2_u_w4k.txt").read_text()).echo
    assert (echo["depth"], echo["write_bytes"], echo["read_bytes"], echo["entries"]) == \
        (1, 4096, 4096, "files")
    assert echo["iterations"] == 2


@pytest.mark.parametrize("args, want", [
    (["-n", "10", "-F", "-C", "-T"], {"create_only": True, "stat_only": True, "read_only": False,
                                      "entries": "files"}),
    (["-n10", "-CTEr", "-w", "4k", "-a", "POSIX", "--posix.odirect"],
     {"items": 10, "write_bytes": 4096, "remove_only": True,
      "extra_args": ["-a", "POSIX", "--posix.odirect"]}),
    (["-n", "10", "-d", "out", "--saveRankPerformanceDetails=r.csv"], {"extra_args": []}),
])
def test_mdtest_command_line_forms(args, want):
    echo = mdtest_text.command_line_echo(args)
    assert {k: echo[k] for k in want} == want


@pytest.mark.parametrize("args", [["-I", "10", "-z", "1"], ["-n", "10", "-f", "1", "-l", "4"],
                                  ["-n", "ten"]])
def test_mdtest_command_line_that_states_no_items(args):
    assert mdtest_text.command_line_echo(args) == {}


# ------------------------------------------------------------------ reconcile (no CLI)

def _reconcile(bench: str, path: Path, given: dict, trust: bool = False) -> dict:
    return reconcile(bench, given, [path], get_benchmark(bench).parse_files([path]), trust)


def test_mdtest_params_from_its_command_line_not_defaults():
    full = _reconcile("mdtest", MDTEST / "mdtest_2r_n60_b2_u.txt", {})
    assert (full["items"], full["branching"], full["unique_dir"], full["depth"]) == (60, 2, True, 0)
    assert (full["scale.nodes"], full["scale.tasks_per_node"]) == (1, 2)
    assert full["storage"] is None                      # no output says where it ran


@pytest.mark.parametrize("given, says", [
    ({"items": 1000}, "items 60, requested 1000"),
    ({"depth": 1, "unique_dir": False}, "depth 0, requested 1; unique_dir_per_task true, requested false"),
    ({"write_bytes": 4096}, "write_bytes 0, requested 4096"),
    ({"branching": 3}, "branch_factor 2, requested 3 (--param branching=3)"),
])
def test_mdtest_param_against_its_command_line(given, says):
    with pytest.raises(IolabError) as info:
        _reconcile("mdtest", MDTEST / "mdtest_2r_n60_b2_u.txt", given)
    assert says in str(info.value)
    assert _reconcile("mdtest", MDTEST / "mdtest_2r_n60_b2_u.txt", given, trust=True)[
        next(iter(given))] == next(iter(given.values()))


@pytest.mark.parametrize("name, given, says", [
    ("ior_posix_fsync_2r_t64k_b1m.txt", {"fsync": False}, "fsync true, requested false"),
    ("ior_posix_fsync_2r_t64k_b1m.summary.json", {"fsync": False}, "fsync true, requested false"),
    ("ior_posix_readonly_2r_t64k_b1m.txt", {"write": True},
     "writeFile false, requested true (--param write=true)"),
    ("ior_posix_readonly_2r_t64k_b1m.txt", {"keep_file": False},
     "keepFile true, requested false (--param keep_file=false)"),
    ("ior_posix_csv_2r_t64k_b1m.txt", {"scale.nodes": 1, "iterations": 3},
     "repetitions 2, requested 3 (--param iterations=3)"),
])
def test_ior_param_against_the_output(name, given, says):
    with pytest.raises(IolabError) as info:
        _reconcile("ior", IOR / name, given)
    assert says in str(info.value)


def test_ior_csv_leaves_unstated_params_unknown():
    full = _reconcile("ior", IOR / "ior_posix_csv_2r_t64k_b1m.txt", {"scale.nodes": 1})
    assert (full["block_size"], full["transfer_size"], full["iterations"]) == (1048576, 65536, 2)
    assert (full["scale.tasks_per_node"], full["write"], full["read"]) == (2, True, True)
    assert full["api"] is None and full["fsync"] is None and full["segments"] is None
    with pytest.raises(IolabError, match="2 processes but not on how many nodes"):
        _reconcile("ior", IOR / "ior_posix_csv_2r_t64k_b1m.txt", {})


def test_h5bench_mode_from_its_configuration_block():
    path = DATA / "h5bench" / "h5bench_write_1d_contig_4r.txt"     # "Mode: SYNC"
    assert get_benchmark("h5bench").parse_files([path])[0].echo["mode"] == "SYNC"
    assert _reconcile("h5bench", path, {"scale.nodes": 1})["mode"] == "SYNC"
    with pytest.raises(IolabError, match="mode SYNC, requested ASYNC"):
        _reconcile("h5bench", path, {"scale.nodes": 1, "mode": "ASYNC"})


def test_fio_option_its_job_file_leaves_out_ran_at_fios_default(tmp_path):
    """fio's JSON lists only the options given: without end_fsync fio did not fsync (fio's
    default 0), whatever iolab's own default (1) is."""
    doc = json.loads((DATA / "fio-recorded" / "fio_randwrite_4k_16m.json").read_text())
    del doc["global options"]["end_fsync"], doc["global options"]["numjobs"]
    path = tmp_path / "fio_no_end_fsync.json"
    path.write_text(json.dumps(doc))
    full = _reconcile("fio", path, {})
    assert (full["end_fsync"], full["numjobs"]) == (False, 1)
    with pytest.raises(IolabError, match="end_fsync false, requested true"):
        _reconcile("fio", path, {"end_fsync": True})


def test_ior_script_of_two_tests_is_not_one_case():
    with pytest.raises(ParseError, match="2 IOR tests in one output"):
        _text("ior_posix_script_two_tests_2r")


def test_mdtest_run_of_several_task_counts_is_not_one_case():
    """-f 1 -l 2 -s 1 prints a table for 1 task, then for 2: the first is not the run's."""
    text = (MDTEST / "mdtest_files_tasks_1_to_2_n10.txt").read_text()
    with pytest.raises(ParseError, match="2 'SUMMARY rate' tables, one per task count"):
        mdtest_text.parse(text)
