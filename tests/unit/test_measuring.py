"""The measurement lock (rfm/measuring.py): a second session waits for, or with
IOLAB_MEASURE_WAIT=0 refuses to measure beside, the one that holds a system."""

from __future__ import annotations

import pytest

from iolab.errors import IolabError
from iolab.rfm import measuring


@pytest.fixture
def locks(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_LOCK_DIR", str(tmp_path / "locks"))
    return tmp_path / "locks"


def test_a_held_system_is_refused_with_who_holds_it(locks, monkeypatch):
    said = []
    with measuring.measuring(["system-localslurm"], {"quickstart"}, said.append):
        monkeypatch.setenv("IOLAB_MEASURE_WAIT", "0")
        with pytest.raises(IolabError) as err:
            with measuring.measuring(["system-localslurm"], {"other"}, said.append):
                pass
    text = str(err.value)
    assert text.startswith("iolab (pid ") and "quickstart, since " in text
    assert "measures on localslurm: not started, so that no measurement overlaps another" in text
    # released with its session: the next one takes it at once
    with measuring.measuring(["system-localslurm"], {"other"}, said.append):
        pass
    assert said == []


def test_a_short_wait_says_what_it_waits_for(locks, monkeypatch):
    said = []
    monkeypatch.setattr(measuring, "POLL", 0.05)
    with measuring.measuring(["host-x"], {"a"}, said.append):
        monkeypatch.setenv("IOLAB_MEASURE_WAIT", "0.2")
        with pytest.raises(IolabError):
            with measuring.measuring(["host-x"], {"b"}, said.append):
                pass
    assert len(said) == 1 and "measures on x: waiting for it to end" in said[0]


def test_other_systems_do_not_wait(locks, monkeypatch):
    monkeypatch.setenv("IOLAB_MEASURE_WAIT", "0")
    with measuring.measuring(["system-a"], {"x"}, print):
        with measuring.measuring(["system-b"], {"y"}, print):
            pass


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "inf"])
def test_a_wait_that_means_nothing_is_refused(locks, monkeypatch, value):
    monkeypatch.setenv("IOLAB_MEASURE_WAIT", value)
    with pytest.raises(IolabError, match="IOLAB_MEASURE_WAIT"):
        with measuring.measuring(["system-a"], {"x"}, print):
            pass


def test_the_keys_are_this_machine_for_local_jobs_else_the_system():
    assert measuring.key_of("local", "local:default") == measuring.key_of("local", "local-romio:default")
    assert measuring.key_of("slurm", "localslurm:debug") == "system-localslurm"


def _note_local_job(locks, stage, **extra):
    import json
    import os

    locks.mkdir(parents=True, exist_ok=True)
    note = {"stage": str(stage), "scheduler": "local", "system": "local:default", "experiment": "e",
            "run": "R1", "case": "c1", "rep": 1, "pid": 4242, **extra}
    with open(locks / "host-x.jobs", "a") as f:
        f.write(json.dumps(note) + "\n" + json.dumps({"stage": str(stage), "jobid": str(os.getpid())})
                + "\n")


def test_a_killed_sessions_running_job_is_waited_for_or_cancelled(locks, tmp_path, monkeypatch):
    """A job a session noted and never saw end, its process still running in its stage
    directory (a real one), keeps the next session from measuring until it is gone."""
    import subprocess

    stage = tmp_path / "stage"
    stage.mkdir()
    job = subprocess.Popen(["sleep", "60"], cwd=stage)
    try:
        _note_local_job(locks, stage)
        monkeypatch.setenv("IOLAB_MEASURE_WAIT", "0")
        with pytest.raises(IolabError) as err:
            with measuring.measuring(["host-x"], {"e"}, print):
                pass
        text = str(err.value)
        assert f"left on x still run: local job, processes {job.pid} (running; e run R1 case c1 " \
               "rep 1)" in text and "pid 4242" in text, text
        assert "not started, so that no measurement overlaps them" in text
        assert job.poll() is None       # refused: nothing was stopped
        said = []
        monkeypatch.setenv("IOLAB_CANCEL_STALE", "1")
        monkeypatch.setenv("IOLAB_MEASURE_WAIT", "30")
        with measuring.measuring(["host-x"], {"e"}, said.append):
            assert job.wait(timeout=5) == -9
        assert "cancelling them (IOLAB_CANCEL_STALE=1)" in said[0], said
        assert (locks / "host-x.jobs").read_text() == ""    # cleared for the session's own
    finally:
        job.kill()
        job.wait()


def test_jobs_seen_to_end_are_not_looked_for(locks, tmp_path, monkeypatch):
    import json

    monkeypatch.setenv("IOLAB_MEASURE_WAIT", "0")
    _note_local_job(locks, tmp_path, scheduler="pbs")
    with open(locks / "host-x.jobs", "a") as f:
        f.write(json.dumps({"stage": str(tmp_path), "ended": True}) + "\n")
    with measuring.measuring(["host-x"], {"e"}, print):
        pass


def test_jobs_no_scheduler_iolab_knows_can_look_up_are_refused(locks, tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_MEASURE_WAIT", "0")
    _note_local_job(locks, tmp_path, scheduler="pbs")
    with pytest.raises(IolabError, match="jobs of scheduler pbs that a session left unfinished cannot "
                                         "be looked up"):
        with measuring.measuring(["host-x"], {"e"}, print):
            pass


def test_a_session_notes_its_jobs_only_while_it_holds_the_system(locks, tmp_path):
    measuring.note_job("host-x", {"stage": "s"})
    assert not (locks / "host-x.jobs").exists()
    with measuring.measuring(["host-x"], {"e"}, print):
        with measuring.measuring(["host-y"], {"e"}, print):
            pass
        measuring.note_job("host-x", {"stage": "s"})    # still held after the inner one ended
    assert (locks / "host-x.jobs").read_text() == '{"stage": "s"}\n'

