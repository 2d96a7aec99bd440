"""`reframe -n` with an experiment's id as its YAML writes it (hyphens), through a real ReFrame:
it selects what the tests' class name (`_` for `-`) does, in the loader and in ReFrame's filter."""

from __future__ import annotations

import pytest

from .conftest import have, make_project, only_run, records, reframe

SMALL = """\
id: {id}
description: a small fio write
benchmark: fio
fixed: {{size: 64KiB, bs: 4KiB}}
"""
IDS = ("tiny-fio", "tiny-fio-two", "other")


@pytest.fixture
def project(tmp_path):
    return make_project(tmp_path, {i: SMALL.format(id=i) for i in IDS})


def _list(project, env, *args):
    out = reframe(["-l", *args], env, cwd=project, config=str(project / "reframe" / "config" / "local.py"))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    return sorted(line.split()[1] for line in out.stdout.splitlines() if line.startswith("- "))


@pytest.mark.parametrize("args, want", [
    (["-n", "tiny-fio"], ["tiny_fio", "tiny_fio_two"]),       # a regular expression's search
    (["-n", "^tiny-fio\\b"], ["tiny_fio"]),                    # as scripts/run anchors it
    (["-n", "^tiny-fio$"], []),                                # a display name goes on: none
    (["-n", "tiny-fio-two"], ["tiny_fio_two"]),                # the longer id is read whole
    (["-n", "tiny-fio@0"], ["tiny_fio"]),                      # one variant
    (["-n", "tiny_fio"], ["tiny_fio", "tiny_fio_two"]),        # the class name, as before
    (["-n", "tiny", "-x", "tiny-fio-two"], ["tiny_fio"]),      # -x reads the id too
])
def test_reframe_n_takes_the_id_as_written(project, rfm_env, args, want):
    assert _list(project, rfm_env, *args) == want


def test_reframe_r_runs_the_experiment_named_with_hyphens(project, rfm_env, tmp_path):
    if not have("fio"):
        pytest.skip("fio is not installed")
    out = reframe(["-r", "-n", "^tiny-fio\\b"], rfm_env, cwd=project,
                  config=str(project / "reframe" / "config" / "local.py"))
    assert out.returncode == 0 and "Ran 1/1" in out.stdout, out.stdout[-3000:]
    assert [r["status"] for r in records(only_run(tmp_path / "results", "tiny-fio"))] == ["ok"]
    assert not (tmp_path / "results" / "tiny-fio-two").exists()
