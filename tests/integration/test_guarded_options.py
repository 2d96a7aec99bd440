"""fio's exec_prerun end to end under a real `reframe -r`: in a shared experiment it never runs
unless the experiment allows it by name, and a case that ran it says so in its record and table."""

from __future__ import annotations

import pytest

from .conftest import have, iolab, make_project, only_run, records, reframe

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not have("fio"), reason="fio is not installed")]

YAML = """\
id: {id}
description: a fio case whose extra_args run a command before the job
benchmark: fio
{allow}fixed: {{size: 64KiB, bs: 4KiB, extra_args: ["--exec_prerun=touch {marker}"]}}
"""


def test_refused_exec_prerun_never_runs_and_allowed_one_is_recorded(rfm_env, tmp_path):
    refused_marker, allowed_marker = tmp_path / "refused-ran", tmp_path / "allowed-ran"
    root = make_project(tmp_path, {
        "prerun-refused": YAML.format(id="prerun-refused", allow="", marker=refused_marker),
        "prerun-allowed": YAML.format(id="prerun-allowed", allow="allow: [exec_prerun]\n",
                                      marker=allowed_marker)})
    config = str(root / "reframe" / "config" / "local.py")
    out = reframe(["-r", "-n", "prerun_refused"], rfm_env, cwd=root, config=config)
    assert out.returncode != 0 and "PASSED" not in out.stdout
    assert "sets fio's exec_prerun, which runs a program before the job" in out.stdout, out.stdout[-3000:]
    assert not refused_marker.exists(), "the refused command ran"
    assert not (tmp_path / "results" / "prerun-refused").exists()

    out = reframe(["-r", "-n", "prerun_allowed"], rfm_env, cwd=root, config=config)
    assert out.returncode == 0, out.stdout[-3000:]
    assert allowed_marker.exists(), "the allowed command did not run"
    (rec,) = records(only_run(tmp_path / "results", "prerun-allowed"))
    assert rec["status"] == "ok"
    assert rec["observed"]["allowed"] == {"exec_prerun": "runs a program before the job"}
    assert "allowed by the experiment: exec_prerun (runs a program before the job)" in rec["flags"]
    table = iolab(["table", "prerun-allowed"], dict(rfm_env, IOLAB_ROOT=str(root)), cwd=root)
    assert table.returncode == 0, table.stderr
    assert "allowed by the experiment: exec_prerun" in table.stdout, table.stdout
