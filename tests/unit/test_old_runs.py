"""Runs written by earlier versions of iolab (tests/data/runs, real runs; see its README) load
through the one result model: every record, the plan and end where the version wrote them,
the experiment as run, and the tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iolab.cli import main
from iolab.results.record import Record
from iolab.analysis.report import build_tables, render
from iolab.results.run import Run

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"
ALL = sorted(p.parent for p in RUNS.glob("*/*/*/manifest.json"))


def test_there_are_old_runs_of_four_versions():
    assert {p.relative_to(RUNS).parts[0] for p in ALL} == {"855c081", "9d00b02", "72c6146", "3940bc6"}


@pytest.mark.parametrize("path", ALL, ids=lambda p: "/".join(p.relative_to(RUNS).parts[:2]))
def test_an_old_run_loads_whole(path):
    lines = [json.loads(line) for line in (path / "records.jsonl").read_text().splitlines() if line]
    run = Run.load(path)
    assert len(run.records) == len(lines) and not run.unreadable
    for line, rec in zip(lines, run.records):
        back = rec.to_json()
        if "flags" not in line:            # the first format: flags come from what was observed
            assert back.pop("flags") == Record.from_json(line).observed.flags()
        assert back == line
    assert run.experiment is not None and run.experiment.id == path.parent.name
    tables = build_tables(run.records, None, run.report)
    assert tables and all(t.rows for t in tables)
    assert render(tables, "md", run).count("###") == len(tables)


def test_old_formats_say_what_they_have():
    first = Run.load(next((RUNS / "855c081" / "quickstart").iterdir()))
    assert first.planned is None and first.state == "complete" and first.describe() == "complete as recorded"
    assert all(len(r.case_id) == 8 for r in first.records)
    hints = Run.load(next((RUNS / "9d00b02" / "cp2k-aggregators").iterdir()))
    changed = [r for r in hints.records
               if r.observed.effective("mpiio.cb_nodes") != r.params["mpiio.cb_nodes"]]
    assert changed and all(any(f.startswith("hint cb_nodes: requested") for f in r.flags) for r in changed)
    cut = Run.load(next((RUNS / "3940bc6" / "interrupted").iterdir()))
    assert cut.state == "incomplete" and cut.counts["aborted"] == 1
    assert "interrupted by SIGTERM" in cut.describe()


def test_iolab_table_reads_an_old_run(monkeypatch, capsys):
    monkeypatch.setenv("IOLAB_RESULTS", str(RUNS / "3940bc6"))
    assert main(["table", "interrupted"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("**Note:** run incomplete: 1 aborted (interrupted by SIGTERM)")
    assert "1 aborted" in out
