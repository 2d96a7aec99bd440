"""A system config's extras['iolab'] is checked when ReFrame loads the tests: a real `reframe -r`
on a copy of reframe/config/local.py with a misspelt key fails, naming the file and the key."""

from __future__ import annotations

import json
import subprocess

import pytest

from .conftest import REFRAME, have, make_project, only_run, records, reframe

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not have("mpirun"), reason="mpirun (Open MPI) is not installed"),
              pytest.mark.skipif(not have("fio"), reason="fio is not installed")]

GOOD = """\
id: good
description: a small fio write
benchmark: fio
fixed: {size: 64KiB, bs: 4KiB}
"""


def _config(root, name: str, key: str) -> str:
    """reframe/config/local.py with one more key in its partition's extras['iolab']."""
    text = (root / "reframe" / "config" / "local.py").read_text()
    path = root / "reframe" / "config" / f"{name}.py"
    path.write_text(text + "site_configuration['systems'][0]['partitions'][0]['extras']['iolab']"
                           f"[{key!r}] = 1\n")
    return str(path)


def test_a_misspelt_key_fails_the_run_with_its_file_and_a_suggestion(rfm_env, tmp_path):
    root = make_project(tmp_path, {"good": GOOD})
    config = _config(root, "typo", "cores_per_nodes")
    line = len((root / "reframe" / "config" / "typo.py").read_text().splitlines())
    message = (f"{line}: extras['iolab'].cores_per_nodes: unknown key "
               "(did you mean 'cores_per_node'?)")
    out = reframe(["-r", "-n", "good"], rfm_env, cwd=root, config=config)
    assert out.returncode == 1, out.stdout[-3000:]
    assert f"iolab: experiment good cannot run: {config}:{message}" in out.stdout
    assert "Traceback" not in out.stdout + out.stderr and "PASSED" not in out.stdout
    assert not (tmp_path / "results" / "good").exists(), "no case ran on a mistyped system"
    # the file as the user wrote it on the command line (ReFrame imports it from its directory)
    listed = subprocess.run([REFRAME, "-C", "reframe/config/typo.py", "-c", "reframe/", "-R", "-l",
                             "-n", "good"], cwd=root, env=rfm_env, capture_output=True, text=True,
                            timeout=300)
    assert f"cannot run: reframe/config/typo.py:{message}" in listed.stdout, listed.stdout[-3000:]

    # the same file with the key spelt right runs, and its manifest records the key as written
    fixed = _config(root, "right", "cores_per_node")
    out = reframe(["-r", "-n", "good"], rfm_env, cwd=root, config=fixed)
    assert out.returncode == 0, out.stdout[-3000:]
    run = only_run(tmp_path / "results", "good")
    assert json.loads((run / "manifest.json").read_text())["system_extras"]["cores_per_node"] == 1
    assert [r["status"] for r in records(run)] == ["ok"]
