"""One writer per run (issue 23), on the corpus's real run: a lock naming a live writer (a
`sleep` this test starts), a dead one, another host's, and an unreadable one, through resume,
reproduce, search and runs. The run as `reframe -r` left it holds no lock."""

from __future__ import annotations

import json
import socket
import subprocess

import pytest

from iolab.results.lock import LOCK

from .conftest import noted, refused
from .test_blocking import sibling

HOST = socket.gethostname()


@pytest.fixture
def writer():
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def lock(run, pid, host=HOST):
    (run / LOCK).write_text(json.dumps({"pid": pid, "host": host, "since": "2026-11-26T00:00:00Z"}) + "\n")


def running(copy):
    """The copy as a run still going looks: no `finished` yet."""
    manifest = copy.manifest()
    del manifest["finished"]
    copy.write_manifest(manifest)


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_run_that_ended_holds_no_lock(recorded_run):
    assert not (recorded_run / LOCK).exists()
    assert "finished" in json.loads((recorded_run / "manifest.json").read_text())


def test_resume_of_a_live_run_is_refused_naming_it(run_copy, writer):
    running(run_copy)
    lock(run_copy.run, writer.pid)
    answer = run_copy.iolab("resume", "corpus-fio", run_copy.run.name, "--dry-run")
    refused(answer, f"run {run_copy.run.name} is still running (pid {writer.pid} on host {HOST})")
    assert "would run" not in answer.stdout and "resuming" not in answer.stdout


def test_resume_is_refused_while_a_continuation_of_the_chain_runs(run_copy, writer):
    cont = sibling(run_copy, "20990101T000000Z-c0ffee", parent=run_copy.run.name)
    lock(cont, writer.pid)
    refused(run_copy.iolab("resume", "corpus-fio", run_copy.run.name, "--dry-run"),
            f"run {cont.name} is still running (pid {writer.pid} on host {HOST})")


def test_reproduce_of_a_live_run_is_refused(run_copy, writer):
    case = run_copy.records()[0]["case_id"]
    running(run_copy)
    lock(run_copy.run, writer.pid)
    refused(run_copy.iolab("reproduce", "corpus-fio", run_copy.run.name, case),
            f"run {run_copy.run.name} is still running (pid {writer.pid}")


def test_search_continuing_a_live_run_is_refused(run_copy, writer):
    yaml = run_copy.root / "experiments" / "corpus-fio.yaml"
    yaml.write_text(yaml.read_text() + "search: {objective: write_bw, budget: 6}\n")
    manifest = run_copy.manifest()
    manifest["search_round"] = 1
    del manifest["finished"]
    run_copy.write_manifest(manifest)
    lock(run_copy.run, writer.pid)
    refused(run_copy.iolab("search", "corpus-fio", "--dry-run"),
            f"run {run_copy.run.name} is still running (pid {writer.pid}")


def test_runs_and_tables_say_a_live_run_is_still_running(run_copy, writer):
    running(run_copy)
    lock(run_copy.run, writer.pid)
    answer = run_copy.iolab("runs", "corpus-fio")
    assert answer.returncode == 0, answer
    assert f"still running (pid {writer.pid} on host {HOST})" in answer.stdout, answer
    noted(run_copy.iolab("table", "corpus-fio"), f"run still running (pid {writer.pid}")


def test_a_dead_writer_s_lock_is_named_and_a_dry_run_would_take_it_over(run_copy):
    running(run_copy)
    run_copy.write_lines(run_copy.lines()[:-1])     # killed before its last job was recorded
    pid = dead_pid()
    lock(run_copy.run, pid)
    answer = run_copy.iolab("runs", "corpus-fio")
    assert f"unfinished (killed: its writer, pid {pid} on host {HOST}, is gone)" in answer.stdout, answer
    answer = run_copy.iolab("resume", "corpus-fio", run_copy.run.name, "--dry-run")
    noted(answer, f"run {run_copy.run.name} was left locked by pid {pid} on host {HOST}, which is "
                  "gone (killed?): it would be taken over", "would run: ")
    assert (run_copy.run / LOCK).exists()


@pytest.mark.parametrize("verb", ["resume", "reproduce"])
def test_another_host_s_lock_is_refused_with_how_to_take_it_over(run_copy, verb):
    args = {"resume": ("resume", "corpus-fio", run_copy.run.name, "--dry-run"),
            "reproduce": ("reproduce", "corpus-fio", run_copy.run.name,
                          run_copy.records()[0]["case_id"])}[verb]
    lock(run_copy.run, 4242, host="nid00017")
    line = refused(run_copy.iolab(*args), f"run {run_copy.run.name} is locked by pid 4242 on host "
                                          "nid00017, which this host", "cannot check")
    assert f"delete {run_copy.run / LOCK}" in line


def test_an_unreadable_lock_is_refused(run_copy):
    (run_copy.run / LOCK).write_bytes(b"\x00\xff garbage")
    refused(run_copy.iolab("resume", "corpus-fio", run_copy.run.name, "--dry-run"),
            f"its lock {run_copy.run / LOCK} cannot be read")


def test_a_lock_that_is_a_fifo_is_refused_not_waited_on(run_copy):
    import os

    os.mkfifo(run_copy.run / LOCK)
    refused(run_copy.iolab("resume", "corpus-fio", run_copy.run.name, "--dry-run"),
            "cannot be read", "a FIFO, not a regular file")


def test_a_second_resume_while_one_continues_the_run_is_refused(run_copy, writer):
    """The lock an `iolab resume` holds on the run it continues while its reframe runs."""
    (run_copy.run / LOCK).write_text(json.dumps({"pid": writer.pid, "host": HOST,
                                                 "role": "resume"}) + "\n")
    refused(run_copy.iolab("resume", "corpus-fio", run_copy.run.name, "--dry-run"),
            f"run {run_copy.run.name} is being continued by iolab resume (pid {writer.pid} on "
            f"host {HOST})")


def test_status_watch_of_a_run_whose_writer_is_gone_does_not_wait_for_ever(run_copy):
    running(run_copy)
    pid = dead_pid()
    lock(run_copy.run, pid)
    refused(run_copy.iolab("status", "corpus-fio", run_copy.run.name, "--watch", "1"),
            f"run {run_copy.run.name} will not finish: unfinished (killed: its writer, pid {pid} "
            f"on host {HOST}, is gone)", "iolab resume corpus-fio")
    answer = run_copy.iolab("status", "corpus-fio", run_copy.run.name)     # once: it says killed
    assert answer.returncode == 0 and (
        f": unfinished (killed: its writer, pid {pid} on host {HOST}, is gone): 8/8 jobs recorded"
        in answer.stdout), answer
    assert "ETA" not in answer.stdout
