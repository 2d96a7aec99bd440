"""The jobs' run order, for real: `reframe -r` on the local system with fio runs the jobs in the
order the run's manifest records (blocks by repetition shuffled from its seed, or the matrix's),
as the benchmarks' own start times in the records show; `iolab resume` and `iolab search` keep
the order of the run they continue."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand, producers
from iolab.experiment.order import Order

from .conftest import REPO, have, iolab, make_project, records, reframe

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not have("fio"), reason="fio is not installed")]

GRID = """\
id: {id}
description: fio, three block sizes, three repetitions
benchmark: fio
repetitions: 3
fixed: {{size: 256KiB}}
matrix: {{bs: [4KiB, 16KiB, 64KiB], rw: [write, randwrite]}}
{extra}"""


def _runs(results: Path, experiment: str) -> list[Path]:
    return sorted(p for p in (results / experiment).iterdir() if p.is_dir())


def _ran(run: Path) -> list[tuple[str, int]]:
    """(case id, repetition) of a run's records by the benchmark's own start time."""
    recs = records(run)
    assert all(r["status"] == "ok" for r in recs), [r["error"] for r in recs]
    starts = [r["provenance"]["timing"]["benchmark_start"] for r in recs]
    assert all(isinstance(s, float) for s in starts)
    return [(r["case_id"], r["repetition"]) for r in sorted(recs, key=lambda r: r["provenance"]
                                                            ["timing"]["benchmark_start"])]


def _derived(root: Path, experiment: str, manifest: dict) -> list[tuple[str, int]]:
    """The order re-derived from the manifest's record of it and the experiment as run."""
    exp = load_experiment(root / "experiments" / f"{experiment}.yaml")
    cases = expand(exp)
    return [(cid, rep) for _p, cid, rep in Order.from_dict(manifest["order"]).jobs(cases, producers(cases))]


def test_jobs_run_in_blocks_shuffled_from_the_recorded_seed(rfm_env, tmp_path):
    root = make_project(tmp_path, {"ordered": GRID.format(id="ordered", extra=""),
                                   "in-matrix": GRID.format(id="in-matrix", extra="order: matrix\n")})
    config = str(root / "reframe" / "config" / "local.py")
    out = reframe(["-r", "-n", "ordered", "-n", "in_matrix"], rfm_env, cwd=root, config=config)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]

    (run,) = _runs(tmp_path / "results", "ordered")
    manifest = json.loads((run / "manifest.json").read_text())
    order = manifest["order"]
    assert order["by"] == "blocks" and isinstance(order["seed"], int) and order["repetitions"] == 3
    ran = _ran(run)
    derived = _derived(root, "ordered", manifest)
    assert ran == derived
    assert [(j["case_id"], j["repetition"]) for j in manifest["planned"]] == derived
    # blocks: every case's repetition k before any case's k+1, the cases shuffled in each
    assert [rep for _c, rep in ran] == [1] * 6 + [2] * 6 + [3] * 6
    cases = [c.case_id for c in expand(load_experiment(root / "experiments" / "ordered.yaml"))]
    matrix = [(cid, rep) for cid in cases for rep in (1, 2, 3)]
    assert ran != matrix

    (plain,) = _runs(tmp_path / "results", "in-matrix")
    manifest = json.loads((plain / "manifest.json").read_text())
    assert manifest["order"] == {"by": "matrix", "seed": None, "repetitions": 3}
    cases = [c.case_id for c in expand(load_experiment(root / "experiments" / "in-matrix.yaml"))]
    assert _ran(plain) == [(cid, rep) for cid in cases for rep in (1, 2, 3)]

    # where a user looks: the order and its seed, and the jobs in the order they ran
    cli_env = dict(rfm_env, IOLAB_ROOT=str(root), IOLAB_TEMPLATES=str(REPO / "templates"))
    shown = iolab(["runs", "ordered", run.name], cli_env, cwd=root)
    assert shown.returncode == 0, shown.stderr
    assert f"blocks by repetition, shuffled with seed {order['seed']}" in shown.stdout
    lines = [line.split() for line in shown.stdout.splitlines() if " rep " in line]
    assert [(cols[2], int(cols[4])) for cols in lines] == ran
    listed = iolab(["runs", "in-matrix"], cli_env, cwd=root)
    assert "matrix order" in listed.stdout


RESUMABLE = """\
id: resumable
description: fio on scratch and on the node-local disk
benchmark: fio
repetitions: 3
matrix: {storage: [scratch, node_local], bs: [4KiB, 8KiB]}
fixed: {size: 64KiB}
"""


def test_resume_keeps_the_order_of_the_run_it_continues(rfm_env, tmp_path):
    root = make_project(tmp_path, {"resumable": RESUMABLE})
    config = str(root / "reframe" / "config" / "local.py")
    blocked = tmp_path / "node-local-is-a-file"
    blocked.write_text("")
    out = reframe(["-r", "-n", "resumable"], dict(rfm_env, IOLAB_NODE_LOCAL=str(blocked)), cwd=root,
                  config=config)
    assert out.returncode != 0
    (first,) = _runs(tmp_path / "results", "resumable")
    before = json.loads((first / "manifest.json").read_text())
    failed = {(r["case_id"], r["repetition"]) for r in records(first) if r["status"] == "failed"}
    assert len(failed) == 6

    (tmp_path / "node-local").mkdir()
    cli_env = dict(rfm_env, IOLAB_ROOT=str(root), IOLAB_TEMPLATES=str(REPO / "templates"),
                   IOLAB_NODE_LOCAL=str(tmp_path / "node-local"))
    out = iolab(["resume", "resumable", "--failed-only"], cli_env, cwd=root)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    _first, second = _runs(tmp_path / "results", "resumable")
    after = json.loads((second / "manifest.json").read_text())
    assert after["order"] == before["order"]
    derived = _derived(root, "resumable", before)
    assert _ran(second) == [job for job in derived if job in failed]


SEARCH = """\
id: searched
description: the fastest fio block size and pattern, searched
benchmark: fio
fixed: {size: 256KiB}
matrix: {bs: [4KiB, 16KiB, 64KiB], rw: [write, randwrite]}
search: {objective: write_bw, budget: 4, repetitions: 2, seed: 1, initial: 2, strategy: random}
"""


def test_search_rounds_keep_the_order_of_the_first(rfm_env, tmp_path):
    root = make_project(tmp_path, {"searched": SEARCH})
    env = dict(rfm_env, IOLAB_ROOT=str(root), IOLAB_TEMPLATES=str(REPO / "templates"))
    out = iolab(["search", "searched", "--batch", "2", "--rounds", "2"], env, cwd=root)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    runs = _runs(tmp_path / "results", "searched")
    manifests = [json.loads((run / "manifest.json").read_text()) for run in runs]
    first = next(m for m in manifests if m["search_round"] == 1)
    assert first["order"]["by"] == "blocks" and isinstance(first["order"]["seed"], int)
    assert len(manifests) == 2 and all(m["order"] == first["order"] for m in manifests)
    derived = _derived(root, "searched", first)
    for run in runs:
        ran = _ran(run)
        assert ran == [job for job in derived if job in set(ran)]
