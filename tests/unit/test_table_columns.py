"""The columns a table adds on request beside the parameters (`iolab table --job nodes --mpiio
cb_nodes,aggregator_ranks`), on real records: the 4-node collective write on CephFS
(tests/data/cephfs-collective: nodes node1-node4, ROMIO's aggregators 0 2 4 6 for cb_nodes 4),
the ROMIO runs of tests/data/runs whose cb_nodes 2 and 4 came out as 1, and fio's quickstart,
which gives the MPI library no hints. Repetitions copied from them with a node list that differs,
or a field taken out, show what differs and what is missing, never a guess."""

from __future__ import annotations

import copy
import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from iolab.cli import build_parser, main
from iolab.analysis.columns import column_sources
from iolab.results.placement import compact
from tests.golden.publish_data import experiment, make_run

DATA = Path(__file__).resolve().parents[1] / "data"
COLLECTIVE = DATA / "cephfs-collective"
RUNS = DATA / "runs"
RUN = "20261126T190433Z-4e8367"         # cb4's run; cb1's lines are filed under it too


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_RESULTS", str(tmp_path / "results"))
    return tmp_path / "results"


def _record(name: str, rep: int) -> dict:
    rec = json.loads((COLLECTIVE / f"record-{name}.json").read_text())
    rec["repetition"], rec["run_id"] = rep, RUN      # the two cases ran as runs of their own
    return rec


@pytest.fixture
def collective(results) -> dict:
    """Both recorded cases, three repetitions each: cb4's third ran on other nodes; cb1's second
    has no node list and its third no aggregator list (ROMIO's line taken out)."""
    recs = {}
    for name in ("cb1", "cb4"):
        recs[name] = [_record(name, rep) for rep in (1, 2, 3)]
    recs["cb4"][2]["provenance"]["nodelist"] = ["node5", "node6", "node7", "node8"]
    del recs["cb1"][1]["provenance"]["nodelist"]
    del recs["cb1"][2]["observed"]["mpiio_hints"]["effective"]["romio_aggregator_list"]
    make_run(results, experiment("cephfs-collective", "cluster"), RUN,
             [copy.deepcopy(r) for name in ("cb1", "cb4") for r in recs[name]])
    return {name: rs[0]["case_id"] for name, rs in recs.items()}


def _json_rows(capsys, *args) -> dict:
    assert main(["table", "cephfs-collective", "--format", "json", *args]) == 0
    return {row["case_id"]: row for row in json.loads(capsys.readouterr().out)}


def test_nodes_compacted_as_slurm_writes_them():
    assert compact(["node1", "node2", "node3", "node4"]) == "node[1-4]"
    assert compact(["node3", "node1", "node2", "node7", "node2"]) == "node[1-3,7]"
    assert compact(["n01", "n02", "n10"]) == "n[01-02,10]"
    assert compact(["node9", "node10"]) == "node[9-10]"
    assert compact(["vm"]) == "vm" and compact(["b3", "a1", "a2"]) == "a[1-2],b3"


def test_nodes_and_aggregators_of_the_recorded_collective_write(collective, capsys):
    rows = _json_rows(capsys, "--job", "nodes", "--mpiio", "cb_nodes,aggregator_ranks")
    cb1, cb4 = rows[collective["cb1"]], rows[collective["cb4"]]
    # as the records say: ROMIO aggregated on ranks 0 2 4 6 (one per node) for cb_nodes 4
    assert cb4["columns"] == {"job.nodes": "node[1-4] (2 of 3 reps), node[5-8] (1 of 3 reps)",
                              "mpiio.cb_nodes": "4", "mpiio.aggregator_ranks": "0 2 4 6"}
    assert cb4["notes"] == [] and cb4["n"] == 3
    # a field a record lacks is missing, with why; the other repetitions still say theirs
    assert cb1["columns"] == {"job.nodes": "node[1-4] (2 of 3 reps), missing (1 of 3 reps)",
                              "mpiio.cb_nodes": "1",
                              "mpiio.aggregator_ranks": "0 (2 of 3 reps), missing (1 of 3 reps)"}
    assert cb1["notes"] == ["Aggregator Ranks (ROMIO) missing: openmpi-romio printed no "
                            "romio_aggregator_list", "Nodes missing: no node list in its provenance"]


def test_the_markdown_and_csv_tables_carry_them(collective, capsys):
    assert main(["table", "cephfs-collective", "--job", "nodes", "--mpiio", "aggregator_ranks"]) == 0
    md = capsys.readouterr().out
    header = next(line for line in md.splitlines() if line.startswith("| cb_nodes"))
    assert header.startswith("| cb_nodes | cb_nodes (effective) | Aggregator Ranks (ROMIO) | Nodes |")
    assert "| 4 | 4 | 0 2 4 6 | node[1-4] (2 of 3 reps), node[5-8] (1 of 3 reps) |" in md
    assert "| 1 | 1 | 0 (2 of 3 reps), missing (1 of 3 reps) | node[1-4] (2 of 3 reps), missing " \
           "(1 of 3 reps) |" in md
    assert "† Aggregator Ranks (ROMIO) missing: openmpi-romio printed no romio_aggregator_list" in md
    assert "†† Nodes missing: no node list in its provenance" in md
    assert main(["table", "cephfs-collective", "--format", "csv", "--job", "nodes"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {r["case_id"]: r["Nodes"] for r in rows} == {
        collective["cb1"]: "node[1-4] (2 of 3 reps), missing (1 of 3 reps)",
        collective["cb4"]: "node[1-4] (2 of 3 reps), node[5-8] (1 of 3 reps)"}


def test_cb_nodes_the_library_lowered_is_shown_applied_and_flagged(results, capsys):
    """ROMIO on one node kept cb_nodes 1 where 2 and 4 were asked (tests/data/runs)."""
    run = RUNS / "3940bc6" / "cp2k-aggregators" / "20261123T182837Z-79c09e"
    shutil.copytree(run, results / "cp2k-aggregators" / run.name)
    assert main(["table", "cp2k-aggregators", "--format", "json", "--job", "nodes",
                 "--mpiio", "cb_nodes,aggregator_ranks"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["params"]["mpiio.cb_nodes"], r["columns"]) for r in rows] == [
        (1, {"mpiio.cb_nodes": "1", "mpiio.aggregator_ranks": "0", "job.nodes": "vm"}),
        (2, {"mpiio.cb_nodes": "1 (asked 2: not applied)", "mpiio.aggregator_ranks": "0",
             "job.nodes": "vm"}),
        (4, {"mpiio.cb_nodes": "1 (asked 4: not applied)", "mpiio.aggregator_ranks": "0",
             "job.nodes": "vm"})]


def test_a_case_without_hints_shows_none_and_no_note(results, capsys):
    """fio gives the MPI library no hints: '-', not 'missing'."""
    run = RUNS / "855c081" / "quickstart" / "20261123T182533Z-baeba3"
    shutil.copytree(run, results / "quickstart" / run.name)
    assert main(["table", "quickstart", "--format", "json", "--mpiio", "cb_nodes", "--job", "nodes"]) == 0
    rows = [r for r in json.loads(capsys.readouterr().out) if r["benchmark"] == "fio"]
    assert rows and all(r["columns"] == {"mpiio.cb_nodes": "-", "job.nodes": "vm"} for r in rows)
    assert not any("missing" in n for r in rows for n in r["notes"])


def test_an_unknown_column_names_the_nearest(collective, capsys):
    assert main(["table", "cephfs-collective", "--job", "node"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("iolab: error: ") and "unknown job column 'node'" in err and "nodes" in err


def test_publish_tables_carry_the_columns(collective, tmp_path, capsys):
    out = tmp_path / "page"
    assert main(["publish", "cephfs-collective", "--out", str(out), "--job", "nodes",
                 "--mpiio", "aggregator_ranks"]) == 0
    for name in ("tables.md", "report.md", "index.html"):
        text = (out / name).read_text()
        assert "Aggregator Ranks (ROMIO)" in text and "node[5-8] (1 of 3 reps)" in text, name
    assert "0 2 4 6" in (out / "tables.csv").read_text()


@pytest.mark.parametrize("verb", ["table", "publish"])
def test_help_names_every_column_of_every_source(verb):
    """The options and their help are made from the sources' own lists: a column added to one
    is in --help (and the CLI reference, which reads the same parser) with no edit elsewhere."""
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    text = " ".join(sub.choices[verb].format_help().split())
    for src in column_sources():
        assert f"--{src.name} COLUMNS" in text, src.name
        for name in src.column_help():
            assert f"{name}: " in text, (src.name, name)
