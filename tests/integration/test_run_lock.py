"""One writer per run, end to end (issue 23): while a real `reframe -r` of a slow fio experiment
runs, `iolab resume` of its run is refused naming the run and its writer; once that reframe is
killed with SIGKILL (its lock left behind, stale), resume takes the run over and continues it,
holding the run while its own reframe runs (a second resume meanwhile is refused); the
continuation's reframe gives up its lock when it ends."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import REFRAME, REPO, have, iolab, make_project, records, sigkill

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not have("fio"), reason="fio is not installed")]

# About 8 s of writing (fio's --rate): time to look at the run while it goes, and short enough
# for the resume that finishes it.
SLOW = """\
id: slow-writer
description: one fio job slowed to 1 MiB/s, so its run is still going when looked at
benchmark: fio
repetitions: 1
fixed: {size: 8MiB, bs: 1MiB, extra_args: ["--rate=1m"]}
"""


def _text(path: Path) -> str:
    try:
        return path.read_bytes().split(b"\n", 1)[0].decode()
    except (OSError, UnicodeDecodeError):
        return ""


def _kill_what_ran_in(where: Path) -> None:
    """The processes this test started that outlive a SIGKILLed reframe (its local job runs on
    in its own process group): those whose working directory is under `where`."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if cwd == where or where in cwd.parents:
            try:
                os.kill(int(entry.name), signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_live_run_is_refused_and_a_killed_one_taken_over(rfm_env, tmp_path):
    root = make_project(tmp_path, {"slow-writer": SLOW})
    config = str(root / "reframe" / "config" / "local.py")
    env = dict(rfm_env, IOLAB_ROOT=str(root), IOLAB_TEMPLATES=str(REPO / "templates"))
    base = tmp_path / "results" / "slow-writer"
    cmd = [REFRAME, "-C", config, "-c", "reframe/", "-R", "-r", "-n", "slow_writer"]
    log = open(tmp_path / "reframe.out", "w")
    writer = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not list(base.glob("*/run.lock")):
            assert writer.poll() is None, (tmp_path / "reframe.out").read_text()[-3000:]
            assert time.monotonic() < deadline, "no run directory with a lock after 120 s"
            time.sleep(0.2)
        (run,) = [p for p in base.iterdir() if p.is_dir()]
        who = f"pid {writer.pid} on host {socket.gethostname()}"

        out = iolab(["resume", "slow-writer", run.name, "--dry-run"], env, cwd=root)
        assert out.returncode == 2, out.stdout + out.stderr
        assert out.stderr.splitlines()[0] == (
            f"iolab: error: run {run.name} is still running ({who}) (wait for it to end: "
            "`iolab status` shows how far it is)"), out.stderr
        assert "would run" not in out.stdout and "resuming" not in out.stdout
        out = iolab(["runs", "slow-writer"], env, cwd=root)
        assert f"still running ({who})" in out.stdout, out.stdout + out.stderr
        assert writer.poll() is None, "the run ended before it was looked at: make it slower"

    finally:
        sigkill(writer)
        log.close()
        _kill_what_ran_in(tmp_path)
    assert (run / "run.lock").exists()          # SIGKILL: nothing could release it
    out = iolab(["runs", "slow-writer"], env, cwd=root)
    assert f"unfinished (killed: its writer, {who}, is gone)" in out.stdout, out.stdout
    # status says so too, with no ETA for a run that will never go on
    out = iolab(["status", "slow-writer"], env, cwd=root)
    assert f": unfinished (killed: its writer, {who}, is gone)" in out.stdout, out.stdout
    assert "ETA" not in out.stdout, out.stdout

    out = iolab(["resume", "slow-writer", run.name, "--dry-run"], env, cwd=root)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "would run: " in out.stdout
    assert f"run {run.name} was left locked by {who}, which is gone (killed?): it would be " \
           "taken over" in out.stderr
    assert (run / "run.lock").exists()          # a dry run changes nothing

    # the real resume, in the background: while its reframe runs, it holds the run it continues
    resume = subprocess.Popen([sys.executable, "-m", "iolab.cli", "resume", "slow-writer", run.name],
                              cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        deadline = time.monotonic() + 60
        while '"role": "resume"' not in _text(run / "run.lock"):
            assert resume.poll() is None, resume.communicate()
            assert time.monotonic() < deadline, "iolab resume never took the run's lock"
            time.sleep(0.1)
        out = iolab(["resume", "slow-writer", run.name, "--dry-run"], env, cwd=root)
        assert out.returncode == 2 and (
            f"iolab: error: run {run.name} is being continued by iolab resume (pid {resume.pid} "
            f"on host {socket.gethostname()})") in out.stderr, out.stdout + out.stderr
        stdout, stderr = resume.communicate(timeout=300)
    finally:
        if resume.poll() is None:
            resume.kill()
            resume.wait()
    assert f"run {run.name} was left locked by {who}, which is gone (killed?): taken over" \
        in stderr, stdout[-3000:] + stderr[-2000:]
    assert resume.returncode == 0, stdout[-3000:] + stderr[-2000:]
    assert not (run / "run.lock").exists()
    (cont,) = [p for p in base.iterdir() if p.is_dir() and p != run]
    assert not (cont / "run.lock").exists()     # its reframe ended: the lock went with it
    assert [r["status"] for r in records(cont)] == ["ok"]
