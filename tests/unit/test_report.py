"""Why jobs did not give a result: footnotes in tables (Markdown, CSV, the report page)."""

from __future__ import annotations

from dataclasses import replace
import json

from iolab.present.publish import html_table
from iolab.analysis.report import build_tables, note_mark, render, short_reason
from tests.golden.publish_data import experiment, records

RUN = "20261121T000000Z-aaaaaa"
LONG = ("h5bench_write exited with status 1: H5Fcreate failed for /scratch/iolab/quickstart/"
        "0c909ce9/rep1/data.h5 because the file system refused the request after a long wait")


def failing_records():
    recs = records(experiment("archer-fpp-vs-ssf"), RUN, reps=2)[:8]    # 4 cases, 2 repetitions
    recs[1] = replace(recs[1], status="failed", metrics=[], error="ior exited with status 1\nstderr: ...")
    recs[3] = replace(recs[3], status="failed", metrics=[], error="ior exited with status 1")
    recs[4] = replace(recs[4], status="skipped", metrics=[], error="benchmark binary ior not found")
    recs[5] = replace(recs[5], status="skipped", metrics=[], error="benchmark binary ior not found")
    recs[6] = replace(recs[6], status="aborted", metrics=[], error="SIGTERM")
    recs[7] = replace(recs[7], status="failed", metrics=[], error=LONG)
    return recs


def test_a_reason_is_its_first_line_never_cut():
    assert short_reason("ior exited with status 1\nstderr: ...") == "ior exited with status 1"
    assert short_reason(None) == short_reason("  \n") == "no reason recorded"
    assert short_reason(LONG) == LONG and short_reason(LONG + "\n  more") == LONG


def test_the_skip_reason_of_an_absent_benchmark_is_whole_in_every_format():
    """The three ways to provide a benchmark are all in the footnote, the CSV and the page."""
    why = ("benchmark binary 'ior' not found on PATH; provide it with Spack (spack.yaml), a module, "
           "or a prefix (see docs/benchmarks.md)")
    recs = [replace(r, status="skipped", metrics=[], error=why) if r.case_id == rec0.case_id else r
            for rec0 in [failing_records()[0]] for r in failing_records()]
    tables = build_tables(recs)
    assert f"¹ skipped: {why}" in render(tables, "md").splitlines()
    assert f"skipped: {why}" in render(tables, "csv")
    assert f"¹ skipped: {why}" in html_table(tables[0])["footnotes"]
    assert "…" not in render(tables, "md") + render(tables, "csv")


def test_note_marks_stay_readable():
    assert [note_mark(i) for i in range(6)] == ["†", "††", "†††", "†4", "†5", "†6"]


def test_markdown_footnotes_deduplicated():
    md = render(build_tables(failing_records()), "md")
    rows = [line for line in md.splitlines() if line.startswith("| ") and "Processes" not in line]
    notes = [line.rsplit("|", 2)[1].strip() for line in rows]
    # a case none of whose jobs measured (skipped, failed, aborted) has no setting "not
    # applied" (†): only the rows with a measured repetition keep it
    assert notes == ["†; 1 failed¹", "†; 1 failed¹", "2 skipped²", "1 failed³; 1 aborted⁴"]
    footnotes = md.split("† striping not applied: ext4: no striping\n")[1].splitlines()
    assert footnotes == ["¹ failed: ior exited with status 1",
                         "² skipped: benchmark binary ior not found",
                         f"³ failed: {LONG}",
                         "⁴ aborted: SIGTERM"]


def test_csv_and_json_carry_the_reasons_in_words():
    tables = build_tables(failing_records())
    csv = render(tables, "csv")
    assert csv.count(",†; 1 failed: ior exited with status 1\n") == 2
    assert ",2 skipped: benchmark binary ior not found\n" in csv
    assert f",1 failed: {LONG}; 1 aborted: SIGTERM\n" in csv
    rows = json.loads(render(tables, "json"))
    assert rows[3]["failed"] == [LONG] and rows[3]["aborted"] == ["SIGTERM"] and rows[3]["n"] == 0
    assert "run" not in rows[0]                                # no run given: no run field


def test_report_page_table_has_the_footnotes():
    table = html_table(build_tables(failing_records())[0])
    assert table["footnotes"][1:] == ["¹ failed: ior exited with status 1",
                                      "² skipped: benchmark binary ior not found",
                                      f"³ failed: {LONG}", "⁴ aborted: SIGTERM"]
    assert table["rows"][2][-1]["text"] == "2 skipped²"


def test_csv_of_several_parts_is_one_table_with_one_header():
    """CSV readers take one header per file: the parts' columns are united, rows fill theirs."""
    import csv
    import io

    exp = experiment("kaust-stripe-count")
    tables = build_tables(records(exp, RUN, reps=2))
    assert len(tables) >= 2 and len({tuple(t.keys) for t in tables}) >= 2
    rows = list(csv.reader(io.StringIO(render(tables, "csv"))))
    header, body = rows[0], rows[1:]
    assert header[:2] == ["part", "case_id"] and len(set(header)) == len(header)
    assert body and all(len(r) == len(header) for r in body)
    assert {r[0] for r in body} == {t.part for t in tables}
    assert sum(1 for r in rows if r[:2] == ["part", "case_id"]) == 1
    for table in tables:           # a part's own key columns are filled in its rows
        for key in table.keys:
            from iolab.analysis.report import param_label
            col = header.index(param_label(key, table.benchmark)[0])
            assert all(r[col] != "" for r in body if r[0] == table.part)


def test_a_parameter_unit_that_is_not_a_size_is_shown_as_is():
    from iolab.analysis.report import spec_label

    assert spec_label("stonewall", {"title": "Stonewall", "x-unit": "s"}) == ("Stonewall (s)", None)
    size = {"title": "Block Size", "x-unit": "MiB"}
    assert spec_label("block_size", size) == ("Block Size (MiB)", 1048576.0)


def test_a_lustre_rule_column_is_left_out_where_the_cases_ask_a_cephfs_layout():
    """KAUST's derived `sqrt_rule_osts` (OSTs by sqrt(GB)) shows beside Lustre cases and the
    unstriped ones, never beside the same study's CephFS cases (its `ceph` profile)."""
    from pathlib import Path

    from iolab.experiment.reportspec import Report
    from iolab.results.record import Record

    run = next((Path(__file__).parents[1] / "data" / "runs" / "855c081" / "quickstart").iterdir())
    recs = [Record.from_json(json.loads(line)) for line in (run / "records.jsonl").read_text().splitlines()]
    settings = Report(derived=("file_size", "sqrt_rule_osts"))
    plain = build_tables(recs, None, settings)[0]
    assert plain.keys[-2:] == ["derived.file_size", "derived.sqrt_rule_osts"], plain.keys
    ceph = [replace(r, params={**r.params, "cephfs.stripe_count": 2}) for r in recs]
    striped = build_tables(ceph, None, settings)[0]
    assert striped.keys[-1] == "derived.file_size", striped.keys
    assert "derived.sqrt_rule_osts" not in striped.keys
