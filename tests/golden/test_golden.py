"""Golden tests: rendered shims and report tables. Regenerate with IOLAB_UPDATE_GOLDEN=1."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from iolab.adapters.ior import parse_any
from iolab.load import load_experiment
from iolab.matrix import expand, varied_keys
from iolab.render import render_shim
from iolab.report import build_tables, render
from iolab.results import RunDir

HERE = Path(__file__).parent
DATA = HERE.parent / "data" / "ior"
EXPECTED = HERE / "expected"
UPDATE = os.environ.get("IOLAB_UPDATE_GOLDEN") == "1"

ARCHER_LIKE = """\
id: golden-study
description: Shared file vs file per process over stripe counts
benchmark: ior
scale: {nodes: 1, tasks_per_node: [2, 4]}
fixed: {transfer_size: 1MiB, block_size: 8MiB}
zip:
  api: [POSIX, MPIIO]
  file_per_process: [true, false]
  collective: [false, true]
matrix:
  lustre.stripe_count: [1, 4]
repetitions: 2
"""


def check_golden(name: str, text: str) -> None:
    path = EXPECTED / name
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"{path} missing: run with IOLAB_UPDATE_GOLDEN=1"
    assert text == path.read_text()


@pytest.fixture
def experiment(tmp_path):
    (tmp_path / "experiments").mkdir()
    yaml_path = tmp_path / "experiments" / "golden-study.yaml"
    yaml_path.write_text(ARCHER_LIKE)
    return load_experiment(yaml_path)


def test_shim(experiment, tmp_path):
    generated = tmp_path / "reframe" / "generated"
    generated.mkdir(parents=True)
    text = render_shim(experiment.path, experiment.id, experiment.sha256, generated)
    check_golden("golden_study_shim.py.txt", text)


def _records(experiment, run_id):
    """Records as the ReFrame session writes them, with metrics from real recorded IOR outputs."""
    summaries = sorted(DATA.glob("*.summary.json"))
    texts = sorted(p for p in DATA.glob("ior_*_4r_*.txt") if not p.name.endswith("_json.txt"))
    outputs = [parse_any(p) for p in summaries + texts]
    cases = expand(experiment)
    varied = varied_keys(cases)
    recs = []
    for i, case in enumerate(cases):
        for rep in (1, 2):
            parsed = outputs[(2 * i + rep) % len(outputs)]
            recs.append({
                "experiment": experiment.id, "run_id": run_id, "case_id": case.case_id,
                "part": case.part, "benchmark": "ior", "repetition": rep, "params": case.params,
                "varied": varied, "status": "ok", "error": None,
                "metrics": [m.as_dict() for m in parsed.metrics],
                "observed": {"lustre": {"fs_type": "ext4", "requested": {"stripe_count": 1},
                                        "applied": False, "reason": "ext4: no striping"}},
            })
    recs[-1] = dict(recs[-1], status="failed", metrics=[], error="ior exited with status 1")
    return recs


def test_tables(experiment, tmp_path):
    run_id = "20261121T000000Z-abcdef"
    run = RunDir.create(tmp_path / "results", experiment.id, run_id, {"experiment": experiment.id})
    for rec in _records(experiment, run_id):
        run.append(rec)
    tables = build_tables(run.records())
    check_golden("golden_study_table.md", render(tables, "md"))
    check_golden("golden_study_table.csv", render(tables, "csv"))
