"""mdtest: the descriptor's command line and checks, and its parsers on real recorded outputs of
mdtest 4.0.0 (tests/data/mdtest/README.md), failures included."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from iolab.benchmarks import get as get_benchmark
from iolab.benchmarks.mdtest import RANKS_CSV, required_metrics
from iolab.errors import IolabError, ParseError
from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand
from iolab.parsers import mdtest_csv, mdtest_text

DATA = Path(__file__).resolve().parents[1] / "data" / "mdtest"
CASE_DIR = "/scratch/iolab/exp/abcd1234"
BENCH = get_benchmark("mdtest")
OK = ["mdtest_files_4r_n100_w64k_i3", "mdtest_dirs_files_2r_n40_z2_b2", "mdtest_dirs_2r_n50",
      "mdtest_files_create_stat_2r_n50"]


def _text(name: str) -> str:
    return (DATA / f"{name}.txt").read_text()


def _case(write_experiment, fixed: str, tasks: int = 2):
    path = write_experiment("md", f"""
        id: md
        description: mdtest descriptor test
        benchmark: mdtest
        scale: {{nodes: 1, tasks_per_node: {tasks}}}
        fixed: {fixed}
        """)
    [case] = expand(load_experiment(path))
    return case


@pytest.mark.parametrize("name", OK)
def test_every_successful_recording_parses(name):
    parsed = mdtest_text.parse(_text(name), name)
    assert parsed.version == "4.0.0"
    assert parsed.metrics and all(m.unit == "ops/s" and m.source == "mdtest-text" for m in parsed.metrics)
    assert all(m.value > 0 for m in parsed.metrics if not m.name.endswith("_stddev"))


def test_text_values_as_printed():
    got = {m.name: m.value for m in mdtest_text.parse(_text(OK[0])).metrics}
    assert got["file_create_rate"] == 83942.012
    assert (got["file_create_rate_max"], got["file_create_rate_min"]) == (100806.441, 54913.642)
    assert got["file_create_rate_stddev"] == 25248.927
    assert got["file_stat_rate"] == 1780259.478 and got["file_read_rate"] == 206638.596
    assert got["file_remove_rate"] == 261035.991
    assert (got["tree_create_rate"], got["tree_remove_rate"]) == (15112.277, 1175.820)
    assert not [n for n in got if n.startswith("dir_")]
    assert len(got) == 6 * 4


def test_directories_only_and_rename():
    got = {m.name: m.value for m in mdtest_text.parse(_text("mdtest_dirs_2r_n50")).metrics}
    assert got["dir_create_rate"] == 36286.046 and got["dir_rename_rate"] == 193821.811
    assert got["dir_remove_rate"] == 1864.243 and got["dir_stat_rate_stddev"] == 0.0
    assert not [n for n in got if n.startswith("file_")]


def test_phases_that_did_not_run_give_no_metric():
    """-C -T: mdtest prints 0.000 for read and removal; those are not results."""
    got = {m.name for m in mdtest_text.parse(_text("mdtest_files_create_stat_2r_n50")).metrics}
    assert {n.rsplit("_rate", 1)[0] for n in got} == {"file_create", "file_stat", "tree_create"}


def test_echo_is_what_mdtest_says_it_ran():
    echo = mdtest_text.parse(_text(OK[0])).echo
    assert echo["tasks"] == 4 and echo["iterations"] == 3
    assert (echo["nodes"], echo["tasks_per_node"]) == (1, 4)
    assert echo["args"] == ["-n", "100", "-F", "-u", "-w", "65536", "-e", "65536", "-i", "3", "-d", "<dir>",
                            "--saveRankPerformanceDetails=mdtest_files_4r_n100_w64k_i3.csv"]


@pytest.mark.parametrize("name, words", [
    ("mdtest_bad_option", "Error invalid argument: --no-such-option"),
    ("mdtest_read_eof_exit0", "returned EOF prematurely"),
    ("mdtest_read_gt_write", "FAILED in md_validate_tests"),
    ("mdtest_dir_is_file_abort", "Unable to create test directory path"),
])
def test_recorded_failures_fail_with_mdtests_words(name, words):
    with pytest.raises(ParseError, match="mdtest reported an error") as err:
        mdtest_text.parse(_text(name), name)
    assert words in str(err.value)
    assert any(words in line for line in mdtest_text.errors(_text(name)))


def test_exit_zero_after_a_verification_error_is_not_a_result():
    """mdtest exited 0 here, and printed a read rate: the ERROR line fails the case all the same."""
    text = _text("mdtest_read_eof_exit0")
    assert "File read " in text and "ERROR: verifying the data on read" in text
    without_warnings = "\n".join(x for x in text.splitlines() if not x.startswith("WARNING"))
    with pytest.raises(ParseError, match="ERROR: verifying the data on read"):
        mdtest_text.parse(without_warnings)


def test_truncated_and_broken_text():
    text = _text(OK[0])
    with pytest.raises(ParseError, match="truncated"):
        mdtest_text.parse(text.split("-- finished")[0])
    with pytest.raises(ParseError, match="did not finish"):
        mdtest_text.parse(text.split("SUMMARY rate")[0])
    with pytest.raises(ParseError, match="not finite"):
        mdtest_text.parse(text.replace("83942.012", "inf"))
    with pytest.raises(ParseError, match="not finite"):
        mdtest_text.parse(text.replace("25248.927", "-nan"))
    with pytest.raises(ParseError, match="not a number"):
        mdtest_text.parse(text.replace("25248.927", "****"))
    with pytest.raises(ParseError, match="empty"):
        mdtest_text.parse("")
    with pytest.raises(ParseError, match="-Z"):
        mdtest_text.parse(text.replace("SUMMARY rate", "SUMMARY time"))
    only_zero = "\n".join(x if not x.startswith(("   File", "   Tree")) else
                          "   " + " ".join(x.split()[:2]) + "  0.000 0.000 0.000 0.000"
                          for x in text.splitlines())
    with pytest.raises(ParseError, match="no operation that ran"):
        mdtest_text.parse(only_zero)


def test_rank_csv_spread_over_ranks_and_iterations():
    text = (DATA / "mdtest_files_4r_n100_w64k_i3.csv").read_text()
    parsed = mdtest_csv.parse(text)
    got = {m.name: m.value for m in parsed.metrics}
    rows = [r.split(",") for r in text.splitlines()[2:]]
    header = text.splitlines()[0].split(",")
    col = header.index("rate-File creation")
    assert len(rows) == 4 * 3
    assert got["file_create_rank_rate_min"] == min(float(r[col]) for r in rows)
    assert got["file_create_rank_rate_max"] == max(float(r[col]) for r in rows)
    assert set(got) == {f"file_{op}_rank_rate_{s}" for op in ("create", "stat", "read", "remove")
                        for s in ("min", "max")}
    assert parsed.echo == {"items_per_rank": 100}


def test_rank_csv_skips_directory_read_and_fails_on_other_inf():
    text = (DATA / "mdtest_dirs_files_2r_n40_z2_b2.csv").read_text()
    assert ",inf," in text
    got = {m.name for m in mdtest_csv.parse(text).metrics}
    assert "dir_create_rank_rate_min" in got and not any(n.startswith("dir_read") for n in got)
    assert mdtest_csv.parse(text).echo == {"items_per_rank": 35}   # -n 40 over a tree of 7 dirs
    first_rank = text.splitlines()[2].split(",")
    broken = text.replace(",".join(first_rank), ",".join([*first_rank[:12], "inf", *first_rank[13:]]))
    with pytest.raises(ParseError, match="not finite|not a number"):
        mdtest_csv.parse(broken)
    with pytest.raises(ParseError, match="per-rank rows"):
        mdtest_csv.parse("\n".join(text.splitlines()[:2]))
    with pytest.raises(ParseError, match="'all' row"):
        mdtest_csv.parse(text.splitlines()[0])


def test_parse_files_detects_the_format():
    (text,) = BENCH.parse_files([DATA / f"{OK[0]}.txt"])
    (csv,) = BENCH.parse_files([DATA / f"{OK[0]}.csv"])
    assert {m.source for m in text.metrics} == {"mdtest-text"}
    assert {m.source for m in csv.metrics} == {"mdtest-csv"}


def test_argv_every_parameter(write_experiment):
    case = _case(write_experiment, "{items: 100, entries: files, unique_dir: true, write_bytes: 64KiB, "
                                   "read_bytes: 64KiB, iterations: 3, depth: 2, branching: 3, "
                                   "stonewall: 30, sync_file: true}", tasks=4)
    spec = BENCH.run_spec(case, CASE_DIR)
    assert spec.args == ["-n", "100", "-F", "-z", "2", "-b", "3", "-u", "-w", "65536", "-e", "65536",
                         "-C", "-T", "-E", "-r", "-i", "3", "-W", "30", "-y", "-d", CASE_DIR,
                         f"--saveRankPerformanceDetails={RANKS_CSV}"]
    assert spec.mpi and spec.outputs == [RANKS_CSV] and spec.executable == "mdtest"
    assert BENCH.bytes_written(case) == 100 * 65536 * 4 * 3
    assert BENCH.file_size(case.params) == 65536
    assert BENCH.requested_echo(case, spec)["args"][-2] == "<dir>"


def test_argv_defaults_and_phases(write_experiment):
    case = _case(write_experiment, "{items: 10, entries: directories, read: false, remove: false}")
    assert BENCH.run_spec(case, CASE_DIR).args == [
        "-n", "10", "-D", "-C", "-T", "-i", "1", "-d", CASE_DIR, f"--saveRankPerformanceDetails={RANKS_CSV}"]
    assert BENCH.bytes_written(case) == 0
    shared = _case(write_experiment, "{items: 10, entries: files, shared_file: true}")
    assert "-S" in BENCH.run_spec(shared, CASE_DIR).args


@pytest.mark.parametrize("fixed, reason", [
    ("{create: false, stat: false, read: false, remove: false}", "no phase"),
    ("{entries: both, shared_file: true}", "files only"),
    ("{entries: files, write_bytes: 4KiB, read_bytes: 8KiB}", "exceeds write_bytes"),
    ("{entries: directories, write_bytes: 4KiB}", "entries is directories"),
    ("{create: false}", "fresh directory"),
    ("{extra_args: ['-Z']}", "rate table"),
    ("{extra_args: ['-n', '5']}", "'items'"),
    ("{extra_args: ['--saveRankPerformanceDetails=x.csv']}", "per-rank CSV"),
    ("{extra_args: ['--run-cmd-before-phase=rm -rf /']}",
     "mdtest's run-cmd-before-phase, which runs a shell command before each phase (outside the timing)"),
])
def test_check_refuses_what_cannot_run_as_asked(write_experiment, fixed, reason):
    """Refused when the experiment is expanded, before anything is submitted, with the reason."""
    with pytest.raises(IolabError) as err:
        _case(write_experiment, fixed)
    assert reason in str(err.value)


def test_check_accepts_a_plain_case(write_experiment):
    assert BENCH.check(_case(write_experiment, "{items: 10, extra_args: ['-L']}")) is None


def _stage(tmp_path: Path, name: str, csv: str | None) -> Path:
    shutil.copy(DATA / f"{name}.txt", tmp_path / "rfm_job.out")
    (tmp_path / "rfm_job.err").write_text("")
    if csv:
        shutil.copy(DATA / csv, tmp_path / RANKS_CSV)
    return tmp_path


def test_parse_outputs_from_a_stage(write_experiment, tmp_path):
    case = _case(write_experiment, "{items: 100, entries: files, unique_dir: true, write_bytes: 64KiB, "
                                   "read_bytes: 64KiB, iterations: 3}", tasks=4)
    spec = BENCH.run_spec(case, CASE_DIR)
    stage = _stage(tmp_path, OK[0], "mdtest_files_4r_n100_w64k_i3.csv")
    parsed = BENCH.parse_outputs(stage, spec)
    names = {m.name for m in parsed.metrics}
    assert {"file_create_rate", "file_create_rank_rate_min"} <= names
    # the recording named its own CSV and directory: the echo check sees the CSV's name differ
    problem = BENCH.check_echo(parsed, case, spec)
    assert problem and "args" in problem and "tasks" not in problem
    (stage / RANKS_CSV).unlink()
    with pytest.raises(ParseError, match="per-rank CSV mdtest-ranks.csv is missing"):
        BENCH.parse_outputs(stage, spec)


def test_a_requested_phase_without_a_result_fails_the_case(write_experiment, tmp_path):
    """Asked for all four phases, mdtest printed create and stat only: never a 0 for the rest."""
    case = _case(write_experiment, "{items: 50, entries: files}")
    stage = _stage(tmp_path, "mdtest_files_create_stat_2r_n50", "mdtest_files_4r_n100_w64k_i3.csv")
    with pytest.raises(ParseError, match="no result for file_read_rate, file_remove_rate, tree_remove_rate"):
        BENCH.parse_outputs(stage, BENCH.run_spec(case, CASE_DIR))


def test_an_error_on_stderr_fails_the_case(write_experiment, tmp_path):
    case = _case(write_experiment, "{items: 100, entries: files}")
    stage = _stage(tmp_path, OK[0], "mdtest_files_4r_n100_w64k_i3.csv")
    (stage / "rfm_job.err").write_text("ERROR: open64(\"x\", 66, 0664) failed. Error: Not a directory\n")
    with pytest.raises(IolabError, match="Not a directory"):
        BENCH.parse_outputs(stage, BENCH.run_spec(case, CASE_DIR))


def test_required_metrics_follow_the_arguments():
    assert required_metrics(["-F", "-C", "-T"]) == ["file_create_rate", "tree_create_rate", "file_stat_rate"]
    assert required_metrics(["-D", "-r"]) == ["dir_remove_rate", "tree_remove_rate"]
    assert len(required_metrics([])) == 9


def test_import_takes_what_mdtest_says_it_ran():
    """`iolab import`: iterations, nodes and tasks per node from mdtest's own account; a --param
    it contradicts is refused."""
    from iolab.results.importer import reconcile

    path = DATA / f"{OK[0]}.txt"
    parsed = BENCH.parse_files([path])
    full = reconcile("mdtest", {"items": 100, "entries": "files"}, [path], parsed)
    assert (full["iterations"], full["scale.nodes"], full["scale.tasks_per_node"]) == (3, 1, 4)
    with pytest.raises(IolabError, match="iterations 3, requested 2"):
        reconcile("mdtest", {"iterations": 2}, [path], parsed)
