"""`iolab resume`: a run whose jobs did not all succeed is continued by a run of only those jobs,
and tables read the two as one result set; a resume after the YAML changed is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import REPO, have, iolab, make_project, records, reframe

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not have("fio"), reason="fio is not installed")]

RESUMABLE = """\
id: resumable
description: fio on scratch and on the node-local disk
benchmark: fio
repetitions: 2
matrix: {storage: [scratch, node_local]}
fixed: {size: 64KiB, bs: 4KiB}
"""


def _runs(results: Path) -> list[Path]:
    return sorted(p for p in (results / "resumable").iterdir() if p.is_dir())


def test_resume_runs_only_what_failed_and_tables_read_the_chain(rfm_env, tmp_path):
    root = make_project(tmp_path, {"resumable": RESUMABLE})
    config = str(root / "reframe" / "config" / "local.py")
    blocked = tmp_path / "node-local-is-a-file"
    blocked.write_text("")
    env = dict(rfm_env, IOLAB_NODE_LOCAL=str(blocked))
    out = reframe(["-r", "-n", "resumable"], env, cwd=root, config=config)
    assert out.returncode != 0, out.stdout[-2000:]
    (first,) = _runs(tmp_path / "results")
    # progress as the run goes: one plain line per recorded job
    assert f"iolab: resumable run {first.name}: 1/4 jobs recorded" in out.stdout
    assert f"iolab: resumable run {first.name}: 4/4 jobs recorded (2 failed)" in out.stdout
    statuses = sorted(r["status"] for r in records(first))
    assert statuses == ["failed", "failed", "ok", "ok"], statuses

    cli_env = dict(rfm_env, IOLAB_ROOT=str(root), IOLAB_TEMPLATES=str(REPO / "templates"),
                   IOLAB_NODE_LOCAL=str(tmp_path / "node-local"))
    (tmp_path / "node-local").mkdir()

    # the YAML changed: refused, and the change is named
    yaml_path = root / "experiments" / "resumable.yaml"
    yaml_path.write_text(RESUMABLE.replace("size: 64KiB", "size: 128KiB"))
    out = iolab(["resume", "resumable"], cli_env, cwd=root)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "refusing to resume" in out.stderr and "fixed: {size: 128KiB, bs: 4KiB}" in out.stderr
    assert len(_runs(tmp_path / "results")) == 1
    yaml_path.write_text(RESUMABLE)

    out = iolab(["resume", "resumable", "--failed-only"], cli_env, cwd=root)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "resuming resumable run" in out.stdout and "2 job(s)" in out.stdout
    first_run, second = _runs(tmp_path / "results")
    manifest = json.loads((second / "manifest.json").read_text())
    assert manifest["parent"] == first.name and manifest["resumed_jobs"] == 2
    again = records(second)
    assert [r["status"] for r in again] == ["ok", "ok"]
    assert {r["params"]["storage"] for r in again} == {"node_local"}

    table = iolab(["table", "resumable", "--format", "json"], cli_env, cwd=root)
    assert table.returncode == 0, table.stderr
    rows = json.loads(table.stdout)
    assert [(r["params"]["storage"], r["n"], r["failed"]) for r in rows] == [
        ("scratch", 2, []), ("node_local", 2, [])]
    assert "as one result set" in " ".join(rows[0]["run"]["notes"])
    assert rows[0]["run"]["state"] == "complete"

    runs = iolab(["runs", "resumable"], cli_env, cwd=root)
    assert f"continues {first.name}" in runs.stdout and "with continuations" in runs.stdout

    out = iolab(["resume", "resumable"], cli_env, cwd=root)
    assert out.returncode == 0 and "nothing to resume" in out.stdout


def test_reproduce_reruns_a_recorded_case_and_compares(rfm_env, tmp_path):
    root = make_project(tmp_path, {"resumable": RESUMABLE})
    out = reframe(["-r", "-n", "resumable"], dict(rfm_env, IOLAB_NODE_LOCAL=str(tmp_path)), cwd=root,
                  config=str(root / "reframe" / "config" / "local.py"))
    assert out.returncode == 0, out.stdout[-2000:]
    (first,) = _runs(tmp_path / "results")
    scratch = next(r for r in records(first) if r["params"]["storage"] == "scratch")
    # the YAML changes afterwards: a reproduction runs the YAML as run, not today's
    (root / "experiments" / "resumable.yaml").write_text(RESUMABLE.replace("64KiB", "128KiB"))
    cli_env = dict(rfm_env, IOLAB_ROOT=str(root), IOLAB_TEMPLATES=str(REPO / "templates"))
    out = iolab(["reproduce", "resumable", first.name, scratch["case_id"][:6]], cli_env, cwd=root)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert f"reproducing resumable run {first.name} case {scratch['case_id']} rep 1, 2" in out.stdout
    assert "original vs reproduced" in out.stdout
    assert any(v in out.stdout for v in ("no clear difference", "faster", "slower"))
    new = [p for p in _runs(tmp_path / "results") if p != first]
    (again,) = new
    recs = records(again)
    assert [(r["case_id"], r["status"], r["params"]["size"]) for r in recs] == [
        (scratch["case_id"], "ok", 65536)] * 2
    manifest = json.loads((again / "manifest.json").read_text())
    assert manifest["reproduces"]["run"] == first.name and "parent" not in manifest
    # a run of its own kind: listed as such, and never what the verbs take as the latest run
    runs = iolab(["runs", "resumable"], cli_env, cwd=root)
    line = next(ln for ln in runs.stdout.splitlines() if ln.startswith(again.name))
    assert f"; reproduces {first.name} (never the default 'latest')" in line, runs.stdout
    table = iolab(["table", "resumable"], cli_env, cwd=root)
    assert table.returncode == 0 and f"run {first.name}" in table.stdout and again.name not in table.stdout
    assert table.stdout.count("| scratch |") + table.stdout.count("| node_local |") == 2, table.stdout
    listed = iolab(["list"], cli_env, cwd=root)
    assert f"last run {first.name}" in listed.stdout, listed.stdout
    verify = iolab(["verify", "resumable"], cli_env, cwd=root)
    assert first.name in verify.stdout + verify.stderr and again.name not in verify.stdout + verify.stderr
