"""One writer per run (issue 23): the lock a run's writer holds (results.Lock), told apart as
live, gone (killed, a zombie, a reused pid) or unknown (another host, unreadable), and what
resume, search and reproduce make of it (results.check_not_running). Real processes, no mocks:
a live writer is a `sleep` this test starts, a dead one a process it started and reaped."""

from __future__ import annotations

import json
import socket
import subprocess

import pytest

from iolab.errors import IolabError
from iolab.results.lock import LOCK, check_not_running, read_lock
from iolab.results.rundir import RunDir
from iolab.results import state as run_state
from iolab.results.run import load_run

EXP, RUN = "lock-study", "20261121T000000Z-bbbbbb"
MANIFEST = {"experiment": EXP, "origin": "reframe", "schema": 1,
            "planned": [{"part": "main", "case_id": "c1", "repetition": 1}]}


@pytest.fixture
def run_dir(tmp_path):
    return RunDir.create(tmp_path / "results", EXP, RUN, MANIFEST)


@pytest.fixture
def sleeper():
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def gone_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def write_lock(run: RunDir, **held) -> None:
    (run.path / LOCK).write_text(json.dumps({"host": socket.gethostname(), **held}) + "\n")


def test_a_held_run_names_its_writer_until_it_releases(tmp_path):
    run = RunDir.create(tmp_path / "results", EXP, RUN, MANIFEST, hold=True)
    lock = read_lock(run.path)
    assert lock.alive is True and lock.host == socket.gethostname()
    with pytest.raises(IolabError, match=rf"run {RUN} is still running \(pid {lock.pid} on host "):
        check_not_running([run.path], take_over=True)
    run.release()
    assert read_lock(run.path) is None and not (run.path / LOCK).exists()
    run.release()           # twice: nothing to do
    check_not_running([run.path], take_over=True)


def test_a_run_made_without_hold_has_no_lock(run_dir):
    assert read_lock(run_dir.path) is None


def test_release_leaves_another_process_s_lock_alone(run_dir, sleeper):
    write_lock(run_dir, pid=sleeper.pid)
    run_dir._held = True        # as if it had held it, and someone took it over since
    run_dir.release()
    assert read_lock(run_dir.path).pid == sleeper.pid


def test_a_live_writer_is_refused_by_name(run_dir, sleeper):
    write_lock(run_dir, pid=sleeper.pid)
    with pytest.raises(IolabError) as info:
        check_not_running([run_dir.path], take_over=True)
    assert str(info.value).startswith(
        f"run {RUN} is still running (pid {sleeper.pid} on host {socket.gethostname()})")
    assert (run_dir.path / LOCK).exists()
    assert _describe(run_dir).startswith(f"still running (pid {sleeper.pid} on host ")


@pytest.mark.parametrize("how", ["gone", "zombie", "pid-reused"])
def test_a_dead_writer_s_lock_is_taken_over(run_dir, how):
    said = []
    if how == "gone":
        write_lock(run_dir, pid=gone_pid())
    elif how == "zombie":       # exited, not reaped yet: no longer a writer
        zombie = subprocess.Popen(["true"])
        for _ in range(200):
            with open(f"/proc/{zombie.pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            subprocess.run(["sleep", "0.01"])
        write_lock(run_dir, pid=zombie.pid)
    else:                       # a live pid, but not the process that took the lock
        proc = subprocess.Popen(["sleep", "60"])
        write_lock(run_dir, pid=proc.pid, pid_start="1")
    try:
        assert read_lock(run_dir.path).alive is False
        assert _describe(run_dir).startswith("unfinished (killed: its writer, pid ")
        check_not_running([run_dir.path], take_over=False, say=said.append)   # a dry run
        assert (run_dir.path / LOCK).exists() and "it would be taken over" in said[-1]
        check_not_running([run_dir.path], take_over=True, say=said.append)
        assert not (run_dir.path / LOCK).exists()
        assert said[-1].startswith(f"run {RUN} was left locked by pid ") and "taken over" in said[-1]
    finally:
        if how == "zombie":
            zombie.wait()
        elif how == "pid-reused":
            proc.kill()
            proc.wait()


def test_a_lock_of_another_host_is_refused_with_how_to_take_it_over(run_dir):
    (run_dir.path / LOCK).write_text(json.dumps({"pid": 4242, "host": "login07"}) + "\n")
    with pytest.raises(IolabError) as info:
        check_not_running([run_dir.path], take_over=True)
    text = str(info.value)
    assert text.startswith(f"run {RUN} is locked by pid 4242 on host login07, which this host")
    assert f"delete {run_dir.path / LOCK}" in text
    assert (run_dir.path / LOCK).exists()
    assert "this host cannot tell whether it still runs" in _describe(run_dir)


@pytest.mark.parametrize("text", ["", "{not json", '{"pid": "12", "host": "h"}', '{"pid": 0, "host": "h"}'])
def test_an_unreadable_lock_is_refused_not_ignored(run_dir, text):
    (run_dir.path / LOCK).write_text(text)
    with pytest.raises(IolabError, match="its lock .* cannot be read"):
        check_not_running([run_dir.path], take_over=True)
    assert (run_dir.path / LOCK).exists()


def test_a_continuation_holds_the_run_it_continues(run_dir):
    """iolab resume (or a search's next round) holds the chain's last run while its reframe
    runs: a second continuation meanwhile is refused by name, and the lock goes with it."""
    from iolab.results.lock import holding

    with holding(run_dir.path, "resume"):
        lock = read_lock(run_dir.path)
        assert lock.role == "resume" and lock.alive is True
        with pytest.raises(IolabError) as info:
            check_not_running([run_dir.path], take_over=True)
        assert str(info.value).startswith(f"run {RUN} is being continued by iolab resume "
                                          f"(pid {lock.pid} on host {socket.gethostname()})")
        assert "unfinished, being continued by iolab resume (pid" in _describe(run_dir)
        with pytest.raises(IolabError, match="is being continued by iolab resume"):
            with holding(run_dir.path, "search"):
                pass
        assert read_lock(run_dir.path).role == "resume"      # the refused one took nothing
    assert read_lock(run_dir.path) is None


def _describe(run_dir) -> str:
    return run_state.of(load_run(run_dir.path)).describe()
