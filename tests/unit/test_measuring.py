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
