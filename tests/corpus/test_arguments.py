"""Arguments checked at the edge (issue 23): each bad argument, given to the real command line
against a copy of the corpus's real run, is refused in one line that says why, before anything
is read, run or written."""

from __future__ import annotations

import json
import os
import re

import pytest

from .conftest import noted, rechain, refused


def _ids(run_copy):
    rec = run_copy.records()[0]
    return rec["experiment"], rec["run_id"], rec["case_id"]


# ------------------------------------------------------------------------- status --watch
@pytest.mark.parametrize("seconds", ["-1", "nan", "inf", "0", "1e400", "abc", "1e-400", "100000"])
def test_watch_takes_a_positive_finite_number_of_seconds(run_copy, seconds):
    exp, run, _case = _ids(run_copy)
    answer = run_copy.iolab("status", exp, run, "--watch", seconds)
    line = refused(answer, f"--watch {seconds}: give a positive number of seconds, at most 86400")
    assert line.startswith("iolab: error: ") and answer.returncode == 2


def test_watch_of_a_finished_run_answers_once(run_copy):
    exp, run, _case = _ids(run_copy)
    answer = run_copy.iolab("status", exp, run, "--watch", "0.5")
    assert answer.returncode == 0 and f"run {run}: complete" in answer.stdout, str(answer)


# ------------------------------------------------------------------------- reproduce --rep
@pytest.mark.parametrize("rep", ["999", "0", "-1", "3"])
def test_reproduce_rep_is_one_of_the_runs_repetitions(run_copy, rep):
    exp, run, case = _ids(run_copy)
    answer = run_copy.iolab("reproduce", exp, run, case, "--rep", rep)
    refused(answer, f"--rep: repetition {rep} is not one of run {run}'s for case {case} "
                    "(it has 1, 2)")
    assert len(list((run_copy.results / "corpus-fio").iterdir())) == 1     # no run was made


def test_reproduce_record_of_a_repetition_the_run_never_had(run_copy, tmp_path):
    exp, run, case = _ids(run_copy)
    rec = dict(run_copy.records()[0], repetition=7)
    path = tmp_path / "rec.json"
    path.write_text(json.dumps(rec) + "\n")
    refused(run_copy.iolab("reproduce", "--record", path),
            f"the record: repetition 7 is not one of run {run}'s for case {case} (it has 1, 2)")


# ------------------------------------------------------------------------- reproduce --record
def _record_file(tmp_path, run_copy, kind):
    path = tmp_path / f"record-{kind}"
    first = run_copy.lines()[0]
    if kind == "binary":
        path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe" + os.urandom(64))
    elif kind == "latin-1":
        path.write_bytes(first.replace('"ok"', '"\xe9t\xe9"').encode("latin-1"))
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "blank-first-line":
        path.write_text("\n" + first)
    elif kind == "list":
        path.write_text(json.dumps([json.loads(first)]) + "\n")
    elif kind == "not-json":
        path.write_text(first[: len(first) // 2] + "\n")
    elif kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind.startswith("without-"):
        rec = json.loads(first)
        del rec[kind.removeprefix("without-")]
        path.write_text(json.dumps(rec) + "\n")
    elif kind == "case-id-number":
        path.write_text(json.dumps(dict(json.loads(first), case_id=12345678)) + "\n")
    elif kind == "repetition-string":
        path.write_text(json.dumps(dict(json.loads(first), repetition="1")) + "\n")
    return path


RECORD_FILES = {
    "binary": "not UTF-8 text (byte 1 of its first line): not a record line",
    "latin-1": "not UTF-8 text (byte",
    "empty": "the first line is empty: give a records.jsonl line",
    "blank-first-line": "the first line is empty: give a records.jsonl line",
    "list": "the first line is a JSON list, not a record (a JSON object)",
    "not-json": "the first line is not JSON (",
    "directory": "not a regular file; give a records.jsonl (or one of its lines) or - for stdin",
    "fifo": "not a regular file; give a records.jsonl (or one of its lines) or - for stdin",
    "without-case_id": "the record has no case_id",
    "without-run_id": "the record has no run_id",
    "case-id-number": "the record's case_id is 12345678, not a non-empty string",
    "repetition-string": 'the record\'s repetition is "1", not a whole number',
}


@pytest.mark.parametrize("kind", RECORD_FILES)
def test_reproduce_record_is_a_utf8_json_record(run_copy, tmp_path, kind):
    path = _record_file(tmp_path, run_copy, kind)
    line = refused(run_copy.iolab("reproduce", "--record", path),
                   f"--record {path}: {RECORD_FILES[kind]}")
    assert line.startswith("iolab: error: ")


def test_reproduce_record_that_is_missing(run_copy, tmp_path):
    path = tmp_path / "no-such.jsonl"
    refused(run_copy.iolab("reproduce", "--record", path),
            f"--record {path}: No such file or directory")


def test_reproduce_record_from_stdin_that_is_binary(run_copy, tmp_path):
    path = _record_file(tmp_path, run_copy, "binary")
    with open(path, "rb") as stdin:
        refused(run_copy.iolab("reproduce", "--record", "-", stdin=stdin),
                "--record -: not UTF-8 text")


# ------------------------------------------------------------------------- IOLAB_CACHE
@pytest.mark.parametrize("where", ["root", "run", "cases", "symlink-to-run"])
def test_a_cache_inside_the_results_is_refused(run_copy, where):
    target = {"root": run_copy.results / "cache", "run": run_copy.run,
              "cases": run_copy.run / "cases" / "iolab-cache",
              "symlink-to-run": run_copy.root / "cache-link"}[where]
    if where == "symlink-to-run":
        target.symlink_to(run_copy.run)
    before = sorted(p.name for p in run_copy.run.rglob("*"))
    run_copy.env["IOLAB_CACHE"] = str(target)
    for verb in (["table", "corpus-fio"], ["runs", "corpus-fio"], ["status", "corpus-fio"]):
        line = refused(run_copy.iolab(*verb), f"IOLAB_CACHE={target}: the cache would be inside the")
        inside = run_copy.results.resolve() if where == "root" else run_copy.run.resolve()
        assert f"inside the {'results root' if where == 'root' else 'run directory'} {inside}; " \
               "point it elsewhere (default ~/.cache/iolab) or set IOLAB_CACHE=off" in line
    assert sorted(p.name for p in run_copy.run.rglob("*")) == before      # nothing written there


def test_a_cache_beside_the_results_is_used(run_copy):
    run_copy.env["IOLAB_CACHE"] = str(run_copy.results.parent / "results-cache")
    assert run_copy.iolab("table", "corpus-fio").returncode == 0


# ------------------------------------------------------------------------- huge values
def _with_value(run_copy, value: float, metric: str = "write_bw", **params) -> tuple[str, int]:
    """The first record's (with `params`, if given) `metric` set to `value`; its case id and
    repetition. (Runs interleave their cases: the first record is of no case in particular.)"""
    recs = run_copy.records()
    rec = next(r for r in recs if all(r["params"].get(k) == v for k, v in params.items()))
    for m in rec["metrics"]:
        if m["name"] == metric:
            m["value"] = value
    run_copy.rechain(recs)      # a record as written, chain and all: its value is the damage
    return rec["case_id"], rec["repetition"]


# (a negative bandwidth is no huge value: the record readers set it aside, test_integrity.py)
HUGE = {"1e308": 1e308, "max-float": 1.7976931348623157e308, "1e300": 1e300, "1e151": 1e151}


@pytest.mark.parametrize("huge", HUGE)
def test_a_huge_value_is_set_aside_by_table(run_copy, huge):
    _with_value(run_copy, HUGE[huge])
    answer = run_copy.iolab("table", "corpus-fio")
    text = noted(answer, f"write_bw: 1 value set aside ({HUGE[huge]:g}: above 1e+150)")
    assert f"{HUGE[huge]:g}" not in text.replace(f"set aside ({HUGE[huge]:g}", "")   # in no figure
    rows = json.loads(run_copy.iolab("table", "corpus-fio", "--format", "json").stdout)
    (row,) = [r for r in rows if r["metrics"]["write_bw"].get("set_aside")]
    assert row["metrics"]["write_bw"]["n"] == 1 and row["metrics"]["write_bw"]["set_aside"] == [HUGE[huge]]


def test_a_huge_value_is_set_aside_by_compare(run_copy):
    case, _rep = _with_value(run_copy, 1e308, bs=4096)       # a value of the baseline's
    answer = run_copy.iolab("compare", "corpus-fio", "--by", "bs", "--baseline", "4KiB")
    noted(answer, "† baseline: 1 value set aside (1e+308: above 1e+150)")
    assert "1e+308 |" not in answer.stdout


def test_a_huge_value_is_set_aside_by_search_report(run_copy):
    case, rep = _with_value(run_copy, 1e308)
    answer = run_copy.iolab("search-report", "corpus-fio", "--objective", "write_bw")
    noted(answer, "write_bw: 1 value set aside (1e+308: above 1e+150), in no figure above: "
                  f"{case} rep {rep}", "best found: ")


def test_a_huge_value_is_set_aside_by_publish(run_copy, tmp_path):
    _with_value(run_copy, 1e308)
    answer = run_copy.iolab("publish", "corpus-fio", "--out", tmp_path / "page")
    noted(answer, "published corpus-fio")
    for name in ("tables.md", "tables.csv", "index.html"):
        assert "write_bw: 1 value set aside (1e+308: above 1e+150)" in (tmp_path / "page" / name).read_text()


# ------------------------------------------------------------------------- search objective
SEARCHED = """\
id: corpus-search
description: the corpus's grid with a search section
benchmark: fio
fixed: {{size: 256KiB, ioengine: psync}}
matrix:
  rw: [{rw}]
  bs: [4KiB, 64KiB]
search:
  objective: {objective}
  budget: 2
"""
WRITES = "write_bw, write_iops, write_bytes, write_clat_mean"
OBJECTIVES = {
    "read_bw-on-writes": ("write, randwrite", "read_bw", "not reported by any case searched: 4 of 4 "
                          f"fio cases (bs=4KiB, rw=write, …) report only {WRITES}"),
    "read_bw-on-a-mix": ("write, randrw", "read_bw", "not reported by every case searched: 2 of 4 "
                         f"fio cases (bs=4KiB, rw=write, …) report only {WRITES}"),
    "frobnicate_bw": ("write, randwrite", "frobnicate_bw", "not reported by any case searched"),
    "write_bw-on-reads": ("read", "write_bw", "not reported by any case searched: 2 of 2 fio cases "
                          "(bs=4KiB, …) report only read_bw, read_iops, read_bytes, read_clat_mean"),
    "not-a-metric": ("write", "file_create_rate", "fio reports no metric 'file_create_rate'"),
}


@pytest.mark.parametrize("kind", OBJECTIVES)
@pytest.mark.parametrize("verb", [("validate",), ("plan",), ("search", "--dry-run")])
def test_search_objective_is_a_metric_every_case_reports(run_copy, kind, verb):
    rw, objective, says = OBJECTIVES[kind]
    path = run_copy.root / "experiments" / "corpus-search.yaml"
    path.write_text(SEARCHED.format(rw=rw, objective=objective))
    ref = str(path) if verb[0] == "validate" else "corpus-search"
    answer = run_copy.iolab(verb[0], ref, *verb[1:])
    line = refused(answer, "corpus-search.yaml:9: search.objective: ", says)
    if kind != "not-a-metric":
        assert line.endswith(")") and "(metrics every case reports: " in line


def test_search_objective_reported_by_every_case_passes(run_copy):
    path = run_copy.root / "experiments" / "corpus-search.yaml"
    path.write_text(SEARCHED.format(rw="write, randrw", objective="write_bw"))
    answer = run_copy.iolab("validate", path)
    assert answer.returncode == 0 and "ok: " in answer.stdout, str(answer)


def test_fio_reports_what_its_descriptor_says_a_case_reports(run_copy):
    """The check above rests on Fio.reported: the real run's records name exactly those metrics."""
    from iolab.benchmarks import get as get_benchmark
    from iolab.experiment.matrix import defaults

    for rec in run_copy.records():
        params = {**defaults("fio"), **rec["params"]}
        assert sorted(get_benchmark("fio").reported(params)) == sorted(m["name"] for m in rec["metrics"])


# ------------------------------------------------------------------------- plan's numbers
@pytest.mark.parametrize("option, value, says", [
    ("--target-ci", "nan", "--target-ci nan: give a percentage above 0, at most 100"),
    ("--target-ci", "inf", "--target-ci inf: give a percentage above 0, at most 100"),
    ("--target-ci", "0", "--target-ci 0: give a percentage above 0, at most 100"),
    ("--target-ci", "250", "--target-ci 250: give a percentage above 0, at most 100"),
    ("--budget", "inf", "--budget inf: give a positive number of node-hours"),
    ("--budget", "nan", "--budget nan: give a positive number of node-hours"),
])
def test_plan_numbers_are_checked_before_anything_is_printed(run_copy, option, value, says):
    answer = run_copy.iolab("plan", "corpus-fio", "--suggest-reps", option, value)
    refused(answer, says)
    assert answer.stdout == ""


# ------------------------------------------------------------------------- --metrics
METRICS = {
    "nosuch": "--metrics: no record reports 'nosuch' (the records report write_bw, write_bytes, "
              "write_clat_mean, write_iops)",
    "write_bw,read_bw": "--metrics: no record reports 'read_bw'",
    "": "--metrics '': an empty name; give names separated by commas",
    "write_bw,,": "--metrics 'write_bw,,': an empty name",
}


@pytest.mark.parametrize("value", METRICS)
@pytest.mark.parametrize("verb", [("table", "corpus-fio"),
                                  ("compare", "corpus-fio", "--by", "bs", "--baseline", "4KiB")])
def test_metrics_are_ones_the_records_report(run_copy, verb, value):
    refused(run_copy.iolab(*verb, "--metrics", value), METRICS[value])


def test_metrics_with_spaces_after_commas_are_read(run_copy):
    answer = run_copy.iolab("table", "corpus-fio", "--metrics", "write_bw, write_iops")
    noted(answer, "Mean Write Bandwidth", "Mean Write IOPS")


def test_a_huge_value_is_set_aside_by_suggest_reps(run_copy):
    case, _rep = _with_value(run_copy, 1e308)
    answer = run_copy.iolab("plan", "corpus-fio", "--suggest-reps")
    noted(answer, f"{case} write_bw: 1 value set aside (1e+308: above 1e+150), not in n")


@pytest.mark.parametrize("extra", [["--rep", "1"], ["corpus-fio"]])
def test_reproduce_record_and_a_case_are_not_both_given(run_copy, tmp_path, extra):
    path = tmp_path / "rec.json"
    path.write_text(run_copy.lines()[0])
    refused(run_copy.iolab("reproduce", "--record", path, *extra),
            "give --record FILE|- (the record names its run, case and repetition) or ID RUN CASE "
            "[--rep N], not both")


def test_reproduce_of_a_run_whose_records_fail_their_check_is_refused(run_copy):
    exp, run, case = _ids(run_copy)
    lines = run_copy.lines()
    run_copy.write_lines(lines[:3] + lines[4:])        # a line removed: the chain names where
    refused(run_copy.iolab("reproduce", exp, run, case), "records.jsonl:4:")


def test_reproduce_rep_counts_a_planned_repetition_without_a_record(run_copy):
    exp, run, case = _ids(run_copy)
    recs = run_copy.records()
    run_copy.rechain([r for r in recs if not (r["case_id"] == case and r["repetition"] == 2)])
    refused(run_copy.iolab("reproduce", exp, run, case, "--rep", "3"),
            f"--rep: repetition 3 is not one of run {run}'s for case {case} (it has 1, 2)")


def test_a_huge_value_is_set_aside_by_a_comparison_of_two_runs(run_copy):
    import shutil

    case, _rep = _with_value(run_copy, 1e308)
    first = run_copy.run.name
    second = first[:-6] + "b0b0b0"          # a second run: the same jobs under another run id
    shutil.copytree(run_copy.run, run_copy.run.parent / second)
    manifest = json.loads((run_copy.run.parent / second / "manifest.json").read_text())
    manifest["run_id"] = second
    (run_copy.run.parent / second / "manifest.json").write_text(json.dumps(manifest))
    recs = [dict(r, run_id=second) for r in run_copy.records()]
    rechain(run_copy.run.parent / second, recs)     # its own records, chained from its own seed
    answer = run_copy.iolab("compare", "corpus-fio", first, second)
    text = noted(answer, "† A: 1 value set aside (1e+308: above 1e+150)",
                 "†† B: 1 value set aside (1e+308: above 1e+150)")
    assert not re.search(r"\b(inf|nan)\b", text), text
