"""Record integrity (issue 23): the real run's records.jsonl damaged one way per case, read by
the real `iolab` command line.

Two layers are checked. The digest chain (src/iolab/results/integrity.py) names a line that was edited,
inserted, duplicated, reordered or removed: `iolab verify` lists it, and table, compare,
publish, search-report and resume refuse the run in one line, or with --set-aside show the other
records with a note naming the lines left out. Independently of the chain, every reader sets
aside records that cannot be this run's measurements (another experiment or run, a second
record of a job, a job not in the plan, wrong types, values that are not finite and >= 0); those
cases are made on the run as a run written before the chain would be (no digests: "unverified"),
and on a chain rewritten whole (which verifies: a digest is not a signature).
"""

from __future__ import annotations

import json
import shutil

import pytest

from iolab.results import integrity

from .conftest import noted, refused

EXP = "corpus-fio"
N = 8                 # records of the real run: 4 cases x 2 repetitions


# ------------------------------------------------------------------------------------ helpers

def body(line: str) -> dict:
    """A line's record without its chain field."""
    rec = json.loads(line)
    rec.pop("chain", None)
    return rec


def edit_byte(line: str, at: str, offset: int = 0) -> str:
    """The line with one byte changed: the first digit after `at` (a different digit)."""
    i = line.index(at) + len(at) + offset
    assert line[i].isdigit() or line[i] in "abcdef", line[i]
    return line[:i] + ("1" if line[i] != "1" else "2") + line[i + 1:]


def unchained(copy) -> None:
    """The run as iolab wrote it before records carried a chain: no digests, no marker."""
    copy.write_records([body(line) for line in copy.lines()])
    manifest = copy.manifest()
    manifest.pop("records_chain")
    for key in ("records", "last_digest"):
        manifest["finished"].pop(key)
    copy.write_manifest(manifest)


def rechained(copy, recs: list[dict]) -> None:
    """Records written with a whole new chain, as iolab writes one (and the manifest's end with
    it): what someone who rewrites the chain makes."""
    manifest = copy.manifest()
    prev, lines = integrity.seed(manifest, copy.run.name), []
    for n, rec in enumerate(recs, 1):
        line, prev = integrity.seal(json.dumps(rec, sort_keys=True), n, prev)
        lines.append(line + "\n")
    copy.write_lines(lines)
    manifest["finished"].update(records=len(recs), last_digest=prev)
    copy.write_manifest(manifest)


def rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| ") and "write |" in line]


# ---------------------------------------------------------------------- the Done-when test

def test_one_byte_edited_is_named_by_verify_and_never_averaged_in(run_copy):
    lines = run_copy.lines()
    value = body(lines[4])["metrics"][0]["value"]
    lines[4] = edit_byte(lines[4], '"value": ')
    assert body(lines[4])["metrics"][0]["value"] != value
    run_copy.write_lines(lines)

    line = refused(run_copy.iolab("verify", EXP), "records.jsonl:5: edited since it was written")
    assert line.startswith("iolab: error: ") and str(run_copy.records_path) in line
    refused(run_copy.iolab("table", EXP), "records.jsonl:5: edited", "--set-aside")

    answer = run_copy.iolab("table", EXP, "--set-aside")
    text = noted(answer, "1 record line(s) set aside, not in the tables: records.jsonl:5 (edited",
                 "7 records: 7 ok")
    edited_case = body(lines[4])["case_id"]
    counts = [row.split("|")[-3].strip() for row in rows(text)]
    assert sorted(counts) == ["1", "2", "2", "2"], text          # 7 of 8 repetitions shown
    assert edited_case and "(n too small)" in text


def test_the_intact_run_verifies_with_its_count_and_final_digest(run_copy):
    last = run_copy.manifest()["finished"]["last_digest"]
    answer = run_copy.iolab("verify", EXP)
    assert answer.returncode == 0, answer
    assert f"{N} record(s); verified: {N} line(s) in the chain, final digest {last}" in answer.stdout
    assert json.loads(run_copy.lines()[-1])["chain"][2] == last


# ------------------------------------------------------------------------- the digest chain

def _swap(lines, a, b):
    lines[a], lines[b] = lines[b], lines[a]
    return lines


CHAIN_CASES = {
    # id: (damage of the lines, the phrases of the first error line)
    "byte-breaking-json": (lambda ls: ls[:2] + [ls[2].replace('"case_id": "', '"case_id": ', 1)] + ls[3:],
                           ("records.jsonl:3: edited since it was written",)),
    "byte-in-digest": (lambda ls: ls[:5] + [ls[5][:-5] + ("0" if ls[5][-5] != "0" else "1") + ls[5][-4:]]
                       + ls[6:], ("records.jsonl:6: edited",)),
    "closing-brace-removed": (lambda ls: ls[:5] + [ls[5][:-2] + "\n"] + ls[6:],
                              ("records.jsonl:6: unreadable (corrupt record", "where chain position 6 "
                               "belongs: damaged")),
    "chain-position-edited": (lambda ls: ls[:1] + [ls[1].replace('"chain": [2,', '"chain": [3,')] + ls[2:],
                              ("records.jsonl:2: edited",)),
    "written-without-digest": (lambda ls: ls[:2] + [json.dumps(body(ls[2]), sort_keys=True) + "\n"] + ls[3:],
                               ("records.jsonl:3: has no chain digest", "inserted")),
    "inserted-not-planned": (lambda ls: ls[:2] + [json.dumps({**body(ls[1]), "repetition": 3},
                                                             sort_keys=True) + "\n"] + ls[2:],
                             ("records.jsonl:3: repetition 3 of case", "not in the run's plan")),
    "duplicated-at-end": (lambda ls: ls + [ls[2]],
                          ("records.jsonl:9: a copy of line 3 (chain position 3): duplicated",)),
    "duplicated-in-place": (lambda ls: ls[:2] + [ls[1]] + ls[2:],
                            ("records.jsonl:3: a copy of line 2", "duplicated")),
    "two-lines-swapped": (lambda ls: _swap(ls, 2, 3),
                          ("records.jsonl:4: out of order: chain position 3 comes after position 4 "
                           "(line 3)", "reordered")),
    "line-moved-to-end": (lambda ls: ls[:1] + ls[2:] + ls[1:2],
                          ("records.jsonl:8: out of order: chain position 2 comes after position 8",)),
    "middle-line-removed": (lambda ls: ls[:3] + ls[4:],
                            ("records.jsonl:4: chain position 4 before this line is missing", "removed")),
    "first-line-removed": (lambda ls: ls[1:],
                           ("records.jsonl:1: chain position 1 before this line is missing",)),
    "last-line-removed": (lambda ls: ls[:-1],
                          ("records.jsonl: ends at chain position 7 (line 7)", "finished with 8",
                           "the last 1 were removed")),
    "two-last-lines-removed": (lambda ls: ls[:-2], ("ends at chain position 6", "finished with 8")),
    "space-after-a-line": (lambda ls: ls[:3] + [ls[3][:-1] + " \n"] + ls[4:],
                           ("records.jsonl:4: edited since it was written: its chain field",)),
    "empty-line-inserted": (lambda ls: ls[:4] + ["\n"] + ls[4:], ("records.jsonl:5: an empty line",)),
    "every-digest-stripped": (lambda ls: [json.dumps(body(line), sort_keys=True) + "\n" for line in ls],
                              ("no line carries a chain digest", "rewritten")),
}


@pytest.mark.parametrize("case", list(CHAIN_CASES))
def test_chain_damage_is_named_by_verify_and_refused_by_table(run_copy, case):
    damage, says = CHAIN_CASES[case]
    run_copy.write_lines(damage(run_copy.lines()))
    refused(run_copy.iolab("verify", EXP), *says)
    refused(run_copy.iolab("table", EXP), *says)


def test_a_records_file_copied_into_another_run_starts_from_the_wrong_seed(run_copy):
    other = run_copy.run.with_name("20261126T000000Z-0ther0")
    shutil.copytree(run_copy.run, other)
    refused(run_copy.iolab("verify", EXP, other.name),
            f"records.jsonl:1: a record of another run ('{run_copy.run.name}'), not of '{other.name}'")
    answer = run_copy.iolab("table", EXP, "--run", other.name, "--set-aside")
    assert answer.returncode != 0 and "no readable records" in answer.stderr, answer
    noted(run_copy.iolab("verify", EXP, run_copy.run.name), "verified: 8 line(s)")


def test_an_edited_manifest_no_longer_seeds_the_chain(run_copy):
    manifest = run_copy.manifest()
    manifest["experiment_sha256"] = "0" * 64
    run_copy.write_manifest(manifest)
    refused(run_copy.iolab("verify", EXP), "records.jsonl:1: its chain starts from another run's seed")


def test_a_line_appended_after_the_run_finished(run_copy):
    """The manifest's end says 7 lines (the 7th's digest): the 8th came later."""
    manifest = run_copy.manifest()
    manifest["finished"].update(records=7, last_digest=json.loads(run_copy.lines()[6])["chain"][2])
    run_copy.write_manifest(manifest)
    refused(run_copy.iolab("verify", EXP), "records.jsonl:8: chain position 8 was appended after the "
                                           "run finished with 7")
    noted(run_copy.iolab("table", EXP, "--set-aside"), "records.jsonl:8 (chain position 8 was appended")


def test_lines_in_a_fallback_file_verify_once_merged_back(run_copy):
    """A full disk: the last two records went to the fallback file; `cat FILE >> records.jsonl`
    as the error said puts them back, and the chain is whole again."""
    lines = run_copy.lines()
    fallback = run_copy.run / "records.unsaved-4242.jsonl"
    run_copy.write_lines(lines[:-2])
    fallback.write_text("".join(lines[-2:]))
    refused(run_copy.iolab("verify", EXP), "ends at chain position 6", "fallback file not merged back")
    noted(run_copy.iolab("runs", EXP), "unmerged: records.unsaved-4242.jsonl")
    # the end is where the fallback file says: a table of the records there is, and why
    noted(run_copy.iolab("table", EXP), "records not merged yet: records.unsaved-4242.jsonl",
          "ends at chain position 6 (line 6)")
    with open(run_copy.records_path, "a") as f:
        f.write(fallback.read_text())
    fallback.unlink()
    answer = run_copy.iolab("verify", EXP)
    assert answer.returncode == 0 and "verified: 8 line(s)" in answer.stdout, answer


def test_a_torn_last_line_is_skipped_and_named_not_refused(run_copy):
    lines = run_copy.lines()
    run_copy.write_lines(lines + [lines[0][:200]])
    noted(run_copy.iolab("verify", EXP), "records.jsonl:9: unreadable, skipped: torn last line")
    noted(run_copy.iolab("table", EXP), "1 unreadable line(s) in records.jsonl skipped: line 9 (torn")


def test_a_chain_rewritten_whole_verifies_it_is_not_a_signature(run_copy):
    """The limit the README states: whoever rewrites every digest (and the manifest's end) makes
    a file that verifies; the other checks still hold (here: a negative bandwidth)."""
    recs = [body(line) for line in run_copy.lines()]
    recs[0]["metrics"][0]["value"] *= 10
    rechained(run_copy, recs)
    answer = run_copy.iolab("verify", EXP)
    assert answer.returncode == 0 and "verified: 8 line(s)" in answer.stdout, answer
    recs[1]["metrics"][0]["value"] = -987654
    rechained(run_copy, recs)
    refused(run_copy.iolab("verify", EXP), "records.jsonl:2: metric 'write_bw' value -987654 is negative")


# ------------------------------------------------------------ records that are not this run's

def _set(index, key, value):
    def change(recs):
        recs[index][key] = value
        return recs
    return change


def _metric(index, name, value):
    def change(recs):
        for m in recs[index]["metrics"]:
            if m["name"] == name:
                m["value"] = value
        return recs
    return change


def _append(**changes):
    return lambda recs: recs + [{**recs[0], **changes}]


FIELD_CASES = {
    "another-experiment": (_append(experiment="other-exp", case_id="00000000deadbeef"),
                           "records.jsonl:9: a record of another experiment ('other-exp'"),
    "another-run": (_append(run_id="20260101T000000Z-abcdef", repetition=3),
                    "records.jsonl:9: a record of another run ('20260101T000000Z-abcdef')"),
    "duplicate-job": (_append(), "records.jsonl:9: a second record of case"),
    "case-not-planned": (_append(case_id="0123456789abcdef"),
                         "records.jsonl:9: case 0123456789abcdef is not in the run's plan"),
    "repetition-not-planned": (_append(repetition=3), "records.jsonl:9: repetition 3 of case"),
    "negative-bandwidth": (_metric(1, "write_bw", -987654),
                           "records.jsonl:2: metric 'write_bw' value -987654 is negative"),
    "negative-time": (_metric(2, "write_clat_mean", -2.5), "records.jsonl:3: metric 'write_clat_mean'"),
    "nan-rate": (_metric(3, "write_iops", float("nan")), "records.jsonl:4: metric 'write_iops' value nan "
                                                         "is not finite"),
    "infinite-bandwidth": (_metric(0, "write_bw", float("inf")), "records.jsonl:1: metric 'write_bw' value "
                                                                 "inf is not finite"),
    "value-a-string": (_metric(0, "write_bw", "fast"), "records.jsonl:1: metric 'write_bw' value 'fast' is "
                                                       "not a number"),
    "value-a-bool": (_metric(0, "write_bw", True),
                     "records.jsonl:1: metric 'write_bw' value True is not a number"),
    "metrics-a-string": (_set(4, "metrics", "write_bw=62.5"), "records.jsonl:5: metrics is str"),
    "repetition-one": (_set(5, "repetition", "one"),
                       "records.jsonl:6: repetition 'one' is not a whole number"),
    "repetition-zero": (_set(5, "repetition", 0), "records.jsonl:6: repetition 0"),
    "params-a-list": (_set(6, "params", ["bs", 4096]), "records.jsonl:7: params is list"),
    "status-unknown": (_set(7, "status", "great"), "records.jsonl:8: status 'great' is not one of ok"),
}


@pytest.mark.parametrize("case", list(FIELD_CASES))
def test_records_that_cannot_be_this_runs_are_refused_or_set_aside(run_copy, case):
    change, says = FIELD_CASES[case]
    unchained(run_copy)
    recs = change(run_copy.records())
    run_copy.write_lines([json.dumps(r, sort_keys=True) + "\n" for r in recs])     # NaN as written
    refused(run_copy.iolab("table", EXP), says)
    text = noted(run_copy.iolab("table", EXP, "--set-aside"), "set aside, not in the tables: " + says
                 .split(": ", 1)[0], "run unverified: written before records carried a digest chain")
    table = "\n".join(rows(text))
    assert len(rows(text)) == 4 and "-987654" not in table and "-492867" not in table
    assert text.count("unverified") == 1                   # said once


def test_a_duplicate_counts_the_same_in_runs_status_and_table(run_copy):
    """The issue's case: a record appended twice made n=3 while `runs` said 16 ok."""
    lines = run_copy.lines()
    run_copy.write_lines(lines + [lines[0]])
    says = "records.jsonl:9: a copy of line 1 (chain position 1): duplicated"
    noted(run_copy.iolab("runs", EXP), "8 records: 8 ok  complete", "1 record line(s) set aside", says)
    noted(run_copy.iolab("status", EXP), "8/8 jobs recorded", says)
    text = noted(run_copy.iolab("table", EXP, "--set-aside"), "records.jsonl:9 (a copy of line 1")
    assert [row.split("|")[-3].strip() for row in rows(text)] == ["2"] * 4


def test_a_foreign_experiment_no_longer_doubles_the_rows(run_copy):
    """The issue's case: another experiment's records appended made a table of 8 rows show 16."""
    recs = [body(line) for line in run_copy.lines()]
    foreign = [{**r, "experiment": "other-fio", "run_id": "20260101T000000Z-f00000"} for r in recs]
    run_copy.write_lines(run_copy.lines() + [json.dumps(r, sort_keys=True) + "\n" for r in foreign])
    refused(run_copy.iolab("table", EXP), "records.jsonl:9: a record of another experiment ('other-fio'")
    text = noted(run_copy.iolab("table", EXP, "--set-aside"), "8 record line(s) set aside")
    assert len(rows(text)) == 4


# ----------------------------------------------------------------- every verb: refuse or set aside

@pytest.fixture
def edited(run_copy):
    lines = run_copy.lines()
    lines[2] = edit_byte(lines[2], '"value": ')
    run_copy.write_lines(lines)
    return run_copy


def test_compare_refuses_or_sets_aside(edited):
    refused(edited.iolab("compare", EXP, "--by", "rw", "--baseline", "write"), "records.jsonl:3: edited")
    noted(edited.iolab("compare", EXP, "--by", "rw", "--baseline", "write", "--set-aside"),
          "records.jsonl:3 (edited", "## corpus-fio: rw against rw = write")


def test_publish_refuses_or_sets_aside_and_shows_the_digest(edited, tmp_path):
    refused(edited.iolab("publish", EXP, "--out", tmp_path / "page"), "records.jsonl:3: edited")
    assert not (tmp_path / "page" / "index.html").exists()
    noted(edited.iolab("publish", EXP, "--out", tmp_path / "page", "--set-aside"), "records.jsonl:3 (edited")
    page = (tmp_path / "page" / "report.md").read_text()
    last = edited.manifest()["finished"]["last_digest"]
    assert "failed: 1 problem(s), 1 record line(s) set aside" in page and last in page


def test_publish_of_the_intact_run_shows_its_final_digest(run_copy, tmp_path):
    noted(run_copy.iolab("publish", EXP, "--out", tmp_path / "page"), "published corpus-fio")
    last = run_copy.manifest()["finished"]["last_digest"]
    for name in ("index.html", "report.md"):
        page = (tmp_path / "page" / name).read_text()
        assert f"verified: 8 line(s) in the chain, final digest {last}" in page


def test_search_report_refuses_or_sets_aside(edited):
    refused(edited.iolab("search-report", EXP, "--objective", "write_bw"), "records.jsonl:3: edited")
    noted(edited.iolab("search-report", EXP, "--objective", "write_bw", "--set-aside"),
          "records.jsonl:3 (edited", "best found:")


def test_resume_refuses_or_reruns_the_set_aside_job(edited):
    refused(edited.iolab("resume", EXP, "--dry-run"), "records.jsonl:3: edited")
    job = body(edited.lines()[2])
    noted(edited.iolab("resume", EXP, "--dry-run", "--set-aside"),
          f"1 job(s) ({job['case_id']} rep {job['repetition']})")


def test_runs_and_status_count_what_the_table_counts(edited):
    noted(edited.iolab("runs", EXP), "7 records: 7 ok", "1 record line(s) set aside",
          "records.jsonl:3: edited")
    noted(edited.iolab("status", EXP), "7/8 jobs recorded", "records.jsonl:3: edited")


# ------------------------------------------------------------------------------ old runs

def test_a_run_made_before_the_chain_is_unverified_not_failed(run_copy):
    from tests.integration.conftest import REPO

    old = REPO / "tests" / "data" / "runs" / "3940bc6" / "quickstart"
    (src,) = old.iterdir()
    shutil.copytree(src, run_copy.results / "quickstart" / src.name)
    answer = run_copy.iolab("verify", "quickstart")
    assert answer.returncode == 0, answer
    assert "12 record(s); unverified: written before records carried a digest chain" in answer.stdout
    text = noted(run_copy.iolab("table", "quickstart"), "run unverified")
    assert text.count("unverified") == 1


def test_an_imported_runs_last_line_removed_is_found(run_copy, tmp_path):
    """`iolab import` ends its run as a run ends (count and last digest in `finished`), so a
    record removed from the end of an imported run is named too."""
    rec = run_copy.records()[0]
    out = run_copy.run / rec["raw"]["dir"] / "fio.json"
    answer = run_copy.iolab("import", "fio", out, out, "--into", "imported-fio", "--trust-params")
    assert answer.returncode == 0, answer
    (imported,) = (run_copy.results / "imported-fio").iterdir()
    assert json.loads((imported / "manifest.json").read_text())["finished"]["records"] == 2
    verified = run_copy.iolab("verify", "imported-fio", imported.name)
    assert verified.returncode == 0, verified
    lines = (imported / "records.jsonl").read_text().splitlines(keepends=True)
    (imported / "records.jsonl").write_text(lines[0])
    refused(run_copy.iolab("verify", "imported-fio", imported.name),
            "the run finished with 2 record line(s): the last 1 were removed")
