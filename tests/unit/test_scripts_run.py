"""scripts/run's arguments: help, no arguments and an unknown system answer with what there is,
and never start a run (issue: it used to run quickstart, or take '--help' as an experiment)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run(*args: str):
    return subprocess.run([str(REPO / "scripts" / "run"), *args], cwd=REPO, capture_output=True,
                          text=True, timeout=60)


def test_help_prints_the_usage_and_starts_nothing():
    out = run("--help")
    assert out.returncode == 0 and out.stdout.startswith("Run one experiment on a system")
    usage = "Usage: scripts/run [--strict] [--in-allocation] EXPERIMENT [SYSTEM]"
    assert usage in out.stdout and not out.stderr


@pytest.mark.parametrize("args", [(), ("--strict",), ("--bogus",)])
def test_no_experiment_is_a_usage_error(args):
    out = run(*args)
    assert out.returncode == 2 and "usage: scripts/run" in out.stderr, out.stderr
    assert "reframe" not in out.stdout.lower()


def test_no_arguments_lists_the_experiments():
    out = run()
    listed = out.stderr.split("experiments: ", 1)[1].split()
    assert listed == sorted(p.stem for p in (REPO / "experiments").glob("*.yaml"))


def test_an_unknown_system_lists_the_systems():
    out = run("quickstart", "nosuch")
    assert out.returncode == 2
    line = out.stderr.strip()
    assert line.startswith("scripts/run: no system 'nosuch' (no reframe/config/nosuch.py); the systems: ")
    assert set(line.split("the systems: ")[1].split()) == {
        p.stem for p in (REPO / "reframe" / "config").glob("*.py")}
