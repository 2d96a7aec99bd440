"""Rows follow the experiment's matrix order (the order its YAML lists the values), whatever
order the records were written in: a run in blocks shuffles its repetitions, so the same
experiment's records come in another order in each run. On a real quickstart run (written in
matrix order), copied with its records in the order of a run in blocks whose shuffle reversed
the cases, in every output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from iolab.cli import main
from iolab.experiment.load import load_experiment

RUN = Path(__file__).parent.parent / "data" / "runs" / "9d00b02" / "quickstart" / "20261123T182624Z-113f60"
AS_WRITTEN, REVERSED = RUN.name, "20261123T190000Z-blocks"
# quickstart's YAML as run: zip api [POSIX, MPIIO]; matrix rw [write, randwrite], bs [4KiB, 1MiB]
FIO = [("write", 4096), ("write", 1048576), ("randwrite", 4096), ("randwrite", 1048576)]


@pytest.fixture
def results(tmp_path, monkeypatch):
    root = tmp_path / "results"
    shutil.copytree(RUN, root / "quickstart" / AS_WRITTEN)
    dest = root / "quickstart" / REVERSED
    shutil.copytree(RUN, dest)
    # as a run in blocks writes them: repetition 1 of every case, then 2, the cases of each
    # block in another order (here the reverse of the matrix's)
    recs = [json.loads(line) for line in (RUN / "records.jsonl").read_text().splitlines()]
    place = {cid: -i for i, cid in enumerate(dict.fromkeys(r["case_id"] for r in recs))}
    recs.sort(key=lambda r: (r["repetition"], place[r["case_id"]]))
    (dest / "records.jsonl").write_text("".join(json.dumps({**r, "run_id": REVERSED}) + "\n"
                                                for r in recs))
    monkeypatch.setenv("IOLAB_RESULTS", str(root))
    return root


def _out(capsys, argv) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


def test_table_rows_follow_the_matrix_in_every_format(results, capsys):
    rows = json.loads(_out(capsys, ["table", "quickstart", "--run", REVERSED, "--format", "json"]))
    assert [r["params"]["api"] for r in rows if r["part"] == "ior"] == ["POSIX", "MPIIO"]
    fio = [(r["params"]["rw"], r["params"]["bs"]) for r in rows if r["part"] == "fio"]
    assert fio == FIO, fio
    for fmt in ("md", "csv", "json"):
        same = [_out(capsys, ["table", "quickstart", "--run", run, "--format", fmt])
                .replace(run, "RUN") for run in (AS_WRITTEN, REVERSED)]
        assert same[0] == same[1], fmt


def test_compare_and_publish_rows_follow_the_matrix(results, tmp_path, capsys):
    for a, b in ((AS_WRITTEN, REVERSED), (REVERSED, AS_WRITTEN)):
        text = _out(capsys, ["compare", "quickstart", a, b]).split("### fio · Write Bandwidth")[1]
        fio = [line.split(" | ")[:2] for line in text.split("\n\n")[1].splitlines()[2:]]
        assert fio == [["| 4", "write"], ["| 1024", "write"], ["| 4", "randwrite"],
                       ["| 1024", "randwrite"]], fio
    pages = []
    for run in (AS_WRITTEN, REVERSED):
        assert main(["publish", "quickstart", "--out", str(tmp_path / run), "--runs", run]) == 0
        pages.append((tmp_path / run / "tables.md").read_text().replace(run, "RUN"))
    capsys.readouterr()
    assert pages[0] == pages[1]


def test_values_the_matrix_does_not_list_come_after_in_numeric_order():
    from iolab.experiment.matrix import row_order

    order = (["bs"], {"bs": {repr(1048576): 0, repr(4096): 1}})      # the YAML lists 1MiB first
    by = row_order(order, ["bs"])
    got = sorted([{"bs": v} for v in (4096, 65536, 1048576, 1024, 8192)], key=by)
    assert [p["bs"] for p in got] == [1048576, 4096, 1024, 8192, 65536]
    # no matrix (an experiment that no longer loads): numbers in numeric order, not as text
    got = sorted([{"bs": v} for v in (1024, 4, 64)], key=row_order(None, ["bs"]))
    assert [p["bs"] for p in got] == [4, 64, 1024]


def test_the_matrix_order_is_the_yamls():
    from iolab.experiment.matrix import matrix_order

    exp = load_experiment(Path(__file__).parents[2] / "experiments" / "quickstart.yaml")
    axes, places = matrix_order(exp)["fio"]
    assert axes[:2] == ["rw", "bs"]
    assert places["bs"] == {repr(4096): 0, repr(1048576): 1}
    assert places["rw"] == {repr("write"): 0, repr("randwrite"): 1}
