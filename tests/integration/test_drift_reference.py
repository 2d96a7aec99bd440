"""A drift reference case for real: `reframe -r` on the local system with fio runs the case that
`drift: {case, every}` names once more at the start, after every N jobs and at the end, in the
order the manifest records; its records carry the role drift-reference and stay out of the
case's table statistics; `iolab resume` runs a missing reference job again in its place; and a
copy of the run whose reference series has a step (values and chain rewritten) is flagged by the
reference test."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand, producers
from iolab.experiment.order import ROLE, Order
from tests.corpus.conftest import rechain

from .conftest import REPO, have, iolab, make_project, records, reframe

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not have("fio"), reason="fio is not installed")]

EVERY = 3
REFERENCED = f"""\
id: referenced
description: fio, two block sizes and two patterns, with a drift reference
benchmark: fio
repetitions: 3
fixed: {{size: 256KiB}}
matrix: {{bs: [4KiB, 64KiB], rw: [write, randwrite]}}
drift: {{case: {{bs: 64KiB, rw: write}}, every: {EVERY}}}
"""


def _ran(recs: list[dict]) -> list[tuple[str, int]]:
    """(case id, repetition) of records by the benchmark's own start time."""
    return [(r["case_id"], r["repetition"]) for r in
            sorted(recs, key=lambda r: r["provenance"]["timing"]["benchmark_start"])]


def test_the_reference_runs_at_the_start_every_n_jobs_and_the_end(rfm_env, tmp_path):
    root = make_project(tmp_path, {"referenced": REFERENCED})
    out = reframe(["-r", "-n", "referenced"], rfm_env, cwd=root,
                  config=str(root / "reframe" / "config" / "local.py"))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    (run,) = [p for p in (tmp_path / "results" / "referenced").iterdir() if p.is_dir()]
    manifest = json.loads((run / "manifest.json").read_text())
    exp = load_experiment(root / "experiments" / "referenced.yaml")
    cases = expand(exp)
    (ref,) = [c.case_id for c in cases if c.params["bs"] == 65536 and c.params["rw"] == "write"]
    assert manifest["order"]["reference"] == [["main", ref, EVERY]]
    derived = [(cid, rep) for _p, cid, rep in
               Order.from_dict(manifest["order"]).jobs(cases, producers(cases))]
    # 12 jobs of the cases, a reference before the first, after every 3rd and after the last
    assert len(derived) == 12 + 5
    at = [i for i, (cid, rep) in enumerate(derived) if cid == ref and rep > 3]
    assert at == [0, 4, 8, 12, 16]
    assert [derived[i][1] for i in at] == [4, 5, 6, 7, 8]
    assert [(j["case_id"], j["repetition"]) for j in manifest["planned"]] == derived
    recs = records(run)
    assert all(r["status"] == "ok" for r in recs), [r["error"] for r in recs]
    assert _ran(recs) == derived
    roles = {(r["case_id"], r["repetition"]): r["provenance"].get("role") for r in recs}
    assert {job for job, role in roles.items() if role == ROLE} == {derived[i] for i in at}
    assert all(role in (None, ROLE) for role in roles.values())

    env = dict(rfm_env, IOLAB_ROOT=str(root), IOLAB_TEMPLATES=str(REPO / "templates"))
    table = iolab(["table", "referenced", "--format", "json"], env, cwd=root)
    assert table.returncode == 0, table.stderr
    rows = json.loads(table.stdout)
    (row,) = [r for r in rows if r["case_id"] == ref]
    assert row["n"] == 3 and row["metrics"]["write_bw"]["n"] == 3     # not the 5 references
    notes = rows[0]["run"]["notes"]
    assert any(f"reference case {ref}: 5 reference job(s) (at the start, every {EVERY} jobs"
               in n for n in notes), notes
    listed = iolab(["runs", "referenced"], env, cwd=root)
    assert f"drift reference {ref} (main) at the start, every {EVERY} jobs and the end" in listed.stdout

    # a step in the reference series (its last three jobs 20 times slower): flagged. The
    # series is set to its first value within 1% before the step, so the machine's own noise
    # (a loaded CI machine's fio) cannot hide it
    t0 = min(r["provenance"]["timing"]["benchmark_start"] for r in recs)
    series = sorted((r for r in recs if r["provenance"].get("role") == ROLE),
                    key=lambda r: r["provenance"]["timing"]["benchmark_start"])
    first = {m["name"]: m["value"] for m in series[0]["metrics"]}
    for k, r in enumerate(series):
        for m in r["metrics"]:
            m["value"] = first[m["name"]] * (1 + 0.01 * (k % 2)) * (0.05 if k >= 2 else 1)
    rechain(run, recs)
    (run / "records.digest").unlink()
    listed = iolab(["runs", "referenced"], env, cwd=root)
    (line,) = [ln for ln in listed.stdout.splitlines() if run.name in ln]
    assert f"drift in main (write_bw) by reference case {ref}" in line and "reference test" in line
    assert math.isfinite(t0)

    # a reference job without a record: iolab resume runs it again, with its role, in its place
    kept = [r for r in recs if (r["case_id"], r["repetition"]) != derived[8]]
    rechain(run, kept)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["finished"].update(complete=False, reason="test: a job removed")
    (run / "manifest.json").write_text(json.dumps(manifest))
    out = iolab(["resume", "referenced"], env, cwd=root)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    (second,) = [p for p in (tmp_path / "results" / "referenced").iterdir() if p != run and p.is_dir()]
    again = json.loads((second / "manifest.json").read_text())
    assert again["order"] == manifest["order"]
    (redone,) = records(second)
    assert (redone["case_id"], redone["repetition"]) == derived[8]
    assert redone["provenance"]["role"] == ROLE


def test_validate_refuses_a_reference_that_names_no_case_or_several(tmp_path):
    root = make_project(tmp_path, {
        "several": REFERENCED.replace("id: referenced", "id: several").replace(
            "{bs: 64KiB, rw: write}", "{bs: 64KiB}"),
        "none": REFERENCED.replace("id: referenced", "id: none").replace(
            "{bs: 64KiB, rw: write}", "{bs: 8KiB}")})
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(REPO) / "src")}
    out = iolab(["validate", str(root / "experiments" / "several.yaml")], env, cwd=root)
    assert out.returncode == 2
    assert "several.yaml:7: drift.case: bs=64KiB names 2 cases, not one:" in out.stderr
    assert "rw=write" in out.stderr and "rw=randwrite" in out.stderr
    out = iolab(["validate", str(root / "experiments" / "none.yaml")], env, cwd=root)
    assert out.returncode == 2 and "none.yaml:7: drift.case: bs=8KiB names no case" in out.stderr
