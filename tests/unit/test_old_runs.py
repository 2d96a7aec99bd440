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
from iolab.results import asrun
from iolab.results import state as run_state
from iolab.results.run import load_run

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"
ALL = sorted(p.parent for p in RUNS.glob("*/*/*/manifest.json"))


def test_there_are_old_runs_of_four_versions():
    assert {p.relative_to(RUNS).parts[0] for p in ALL} == {"855c081", "9d00b02", "72c6146", "3940bc6"}


@pytest.mark.parametrize("path", ALL, ids=lambda p: "/".join(p.relative_to(RUNS).parts[:2]))
def test_an_old_run_loads_whole(path):
    lines = [json.loads(line) for line in (path / "records.jsonl").read_text().splitlines() if line]
    run = load_run(path)
    assert len(run.records) == len(lines) and not run.reading.unreadable
    for line, rec in zip(lines, run.records):
        back = rec.to_json()
        if "flags" not in line:            # the first format: flags come from what was observed
            assert back.pop("flags") == Record.from_json(line).observed.flags()
        assert back == line
    exp = asrun.of(run).experiment
    assert exp is not None and exp.id == path.parent.name
    tables = build_tables(run.records, None, asrun.of(run).report)
    assert tables and all(t.rows for t in tables)
    assert render(tables, "md", run).count("###") == len(tables)


def test_old_formats_say_what_they_have():
    first = load_run(next((RUNS / "855c081" / "quickstart").iterdir()))
    stands = run_state.of(first)
    assert first.reading.planned is None and stands.state == "complete"
    assert stands.describe() == "complete as recorded"
    assert all(len(r.case_id) == 8 for r in first.records)
    hints = load_run(next((RUNS / "9d00b02" / "cp2k-aggregators").iterdir()))
    changed = [r for r in hints.records
               if r.observed.effective("mpiio.cb_nodes") != r.params["mpiio.cb_nodes"]]
    assert changed and all(any(f.startswith("hint cb_nodes: requested") for f in r.flags) for r in changed)
    cut = load_run(next((RUNS / "3940bc6" / "interrupted").iterdir()))
    assert run_state.of(cut).state == "incomplete" and cut.reading.counts["aborted"] == 1
    assert "interrupted by SIGTERM" in run_state.of(cut).describe()


def test_iolab_table_reads_an_old_run(monkeypatch, capsys):
    monkeypatch.setenv("IOLAB_RESULTS", str(RUNS / "3940bc6"))
    assert main(["table", "interrupted"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("**Note:** run incomplete: 1 aborted (interrupted by SIGTERM)")
    assert "1 aborted" in out
