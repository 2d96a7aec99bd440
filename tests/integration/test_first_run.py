"""The first run a newcomer makes: `scripts/run quickstart local` on a machine without IOR ends
green, with the table and one line saying what ran, what was skipped and how to provide it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand

from .conftest import REPO, have, make_project, only_run, records, without

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not have("mpirun"), reason="mpirun (Open MPI) is not installed"),
              pytest.mark.skipif(not have("fio"), reason="fio is not installed")]


def _without_ior(env: dict, tmp_path: Path) -> dict:
    """IOR absent (neither installed nor stood in for); the venv's iolab and reframe on PATH."""
    standin = tmp_path / "standin-bin" / "ior"
    if standin.is_symlink():
        standin.unlink()
    env = without(env, "ior")
    return dict(env, PATH=os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]]))


def _project(tmp_path: Path) -> Path:
    root = make_project(tmp_path, {"quickstart": (REPO / "experiments" / "quickstart.yaml").read_text()})
    (root / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "run", root / "scripts" / "run")
    return root


def _run(root: Path, env: dict, *args: str):
    return subprocess.run([str(root / "scripts" / "run"), *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=900)


def test_first_run_ends_green_with_the_table_and_one_summary_line(rfm_env, tmp_path):
    env = _without_ior(rfm_env, tmp_path)
    assert shutil.which("ior", path=env["PATH"]) is None
    root = _project(tmp_path)
    out = _run(root, env, "quickstart", "local")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "\x1b[" not in out.stdout, "colour codes in output that is not a terminal"
    assert "[     SKIP ]" in out.stdout and "FAIL" not in out.stdout

    cases = expand(load_experiment(REPO / "experiments" / "quickstart.yaml", "local"))
    reps = load_experiment(REPO / "experiments" / "quickstart.yaml", "local").repetitions
    ior = sum(c.benchmark == "ior" for c in cases) * reps
    total = len(cases) * reps
    run = only_run(tmp_path / "results", "quickstart")
    recs = records(run)
    assert sorted(r["status"] for r in recs) == ["ok"] * (total - ior) + ["skipped"] * ior
    assert all("'ior' not found" in r["error"] for r in recs if r["status"] == "skipped")

    lines = out.stdout.rstrip("\n").splitlines()
    assert "### quickstart · fio (fio)" in out.stdout and "| 1024 | randwrite |" in out.stdout
    assert lines[-1] == (f"quickstart run {run.name}: {total - ior} of {total} jobs ran, {ior} skipped: "
                         "ior not installed here (to provide it: docs/benchmarks.md)")
    assert (REPO / "docs" / "benchmarks.md").is_file()


def test_strict_makes_a_skip_fail_the_run(rfm_env, tmp_path):
    env = _without_ior(rfm_env, tmp_path)
    out = _run(_project(tmp_path), env, "--strict", "quickstart", "local")
    assert out.returncode == 1, out.stdout[-3000:]
    assert "iolab: not run (strict): benchmark binary 'ior' not found" in out.stdout
    assert "[  FAILED  ]" in out.stdout and "PASSED" not in out.stdout
    # the records, the table and the closing line say what ReFrame's report says: failed, not run
    last = out.stdout.rstrip().splitlines()[-1]
    recs = records(only_run(tmp_path / "results", "quickstart"))
    assert {r["status"] for r in recs} == {"ok", "failed"}
    refused = [r for r in recs if r["status"] == "failed"]
    assert all(r["error"].startswith("not run (strict): benchmark binary 'ior' not found") for r in refused)
    assert last.endswith(f"{len(recs) - len(refused)} of {len(recs)} jobs ran, {len(refused)} failed without "
                         "running (strict): ior not installed here (to provide it: docs/benchmarks.md)"), last
    assert "skipped" not in out.stdout.split("### quickstart", 1)[1], out.stdout[-3000:]


def test_a_misspelt_experiment_gets_the_closest_name(rfm_env, tmp_path):
    out = _run(_project(tmp_path), rfm_env, "quikstart", "local")
    assert out.returncode == 2 and "did you mean 'quickstart'?" in out.stderr, out.stderr
    assert not (tmp_path / "results").exists()


WRITE_READ = """\
id: write-read
description: fio runs here; h5bench (absent) writes, and its reads depend on those writes
parts:
  fio:
    benchmark: fio
    fixed: {size: 1MiB, bs: 64KiB}
  h5:
    benchmark: h5bench
    scale: {nodes: 1, tasks_per_node: 2}
    fixed: {timesteps: 1, dim_1: 1024, num_dims: 1}
    matrix:
      kernel: [write, read]
"""


def test_a_read_whose_write_was_skipped_is_skipped_too(rfm_env, tmp_path):
    from .conftest import reframe

    env = without(rfm_env, "h5bench_write")
    root = make_project(tmp_path, {"write-read": WRITE_READ})
    out = reframe(["-r", "-n", "write_read"], env, cwd=root, config=str(root / "reframe/config/local.py"))
    assert out.returncode == 0, out.stdout[-3000:]
    recs = records(only_run(tmp_path / "results", "write-read"))
    by_part = {p: [r for r in recs if r["part"] == p] for p in ("fio", "h5")}
    assert [r["status"] for r in by_part["fio"]] == ["ok"]
    kinds = {r["params"]["kernel"]: r for r in by_part["h5"]}
    assert kinds["write"]["status"] == kinds["read"]["status"] == "skipped"
    assert "'h5bench_write' not found" in kinds["write"]["error"]
    assert kinds["read"]["error"] == f"the write case {kinds['write']['case_id']} it reads did not succeed"


def test_scripts_run_shows_its_own_run_not_the_latest_of_another(rfm_env, tmp_path):
    """Two runs started in the same second: the second scripts/run printed the first one's table
    (it asked for the latest). It now shows the run its ReFrame session created."""
    env = _without_ior(rfm_env, tmp_path)
    root = _project(tmp_path)
    other = tmp_path / "results" / "quickstart" / "20991231T235959Z-ffffff"
    shutil.copytree(REPO / "tests" / "data" / "runs" / "3940bc6" / "quickstart" / "20261123T182827Z-8d23bf",
                    other)
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["created_unix"] = 4102444799          # 'latest' by its clock: another run's
    (other / "manifest.json").write_text(json.dumps(manifest))
    out = _run(root, env, "quickstart", "local")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    (mine,) = [p for p in (tmp_path / "results" / "quickstart").iterdir() if p != other]
    last = out.stdout.rstrip().splitlines()[-1]
    assert last.startswith(f"quickstart run {mine.name}: "), last
    assert other.name not in out.stdout
