"""A run that ends on a full results disk (issue 23): its records are safe in a fallback file
outside the run ($TMPDIR), its manifest still gains `finished` (the lock's reserve is given back
for it), `iolab runs` lists the fallback file where it is, and once the README's merge is done
the run reads complete. A real full disk: a 256 KiB tmpfs (root only)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from iolab.errors import IolabError
from iolab.results.lock import LOCK
from iolab.results.rundir import RunDir
from iolab.results.runfiles import MANIFEST, RECORDS
from iolab.results import state as run_state
from iolab.results.run import load_run
from tests.unit.test_results import RUN, big_records, fill, iolab, no_wait, small_disk  # noqa: F401

EXP = "archer-fpp-vs-ssf"


def full_run(disk, tmp_path, monkeypatch, hold: bool):
    """A run whose last records went to a fallback file in $TMPDIR: (run, records, fallback)."""
    spill = tmp_path / "spill"
    spill.mkdir()
    monkeypatch.setenv("TMPDIR", str(spill))
    recs = big_records(4)
    planned = [{"part": r["part"], "case_id": r["case_id"], "repetition": r["repetition"]}
               for r in recs]
    run = RunDir.create(disk / "results", EXP, RUN, {"experiment": EXP, "origin": "reframe",
                                                     "planned": planned}, hold=hold)
    filler = fill(disk, leave=8192)
    for rec in recs:
        try:
            run.append(rec)
        except IolabError:
            pass
    (fallback,) = spill.iterdir()
    return run, recs, fallback, filler


def test_a_run_ending_on_a_full_disk_is_finished_and_its_fallback_listed(
        small_disk, tmp_path, monkeypatch, no_wait):  # noqa: F811
    run, recs, fallback, filler = full_run(small_disk, tmp_path, monkeypatch, hold=True)
    manifest = json.loads((run.path / MANIFEST).read_text())
    assert str(fallback) in manifest["fallback_files"]          # known from the run's creation
    with pytest.raises(OSError):            # the disk is really full
        (small_disk / "probe").write_bytes(b"x" * 8192)

    run.finish({"complete": False, "reason": "records not in records.jsonl", "planned": 4,
                "complete_once_merged": True})
    run.release()
    manifest = json.loads((run.path / MANIFEST).read_text())
    assert manifest["finished"]["unsaved"] == [str(fallback)]
    assert not (run.path / LOCK).exists()

    state = load_run(run.path)
    assert run_state.of(state).state == "incomplete" and state.reading.unsaved == [str(fallback)]
    out = iolab("runs", EXP, results_root=small_disk / "results")
    (line,) = [line for line in out.stdout.splitlines() if line.startswith(RUN)]
    assert "incomplete" in line and f"unmerged: {fallback}" in line, out.stdout + out.stderr
    out = iolab("table", EXP, "--run", RUN, results_root=small_disk / "results")
    assert f"records not merged yet: {fallback}" in out.stdout + out.stderr, out.stdout

    # the README's merge, once there is space: the run is whole, and says so
    filler.unlink()
    subprocess.run(f"cat {fallback} >> {run.path / RECORDS} && rm {fallback}", shell=True, check=True)
    state = load_run(run.path)
    assert run_state.of(state).state == "complete" and state.reading.unsaved == []
    assert state.reading.total == len(recs)
    out = iolab("runs", EXP, results_root=small_disk / "results")
    assert f"{run_state.of(state).counts_text()}  complete" in out.stdout, out.stdout
    assert "unmerged" not in out.stdout, out.stdout


def test_without_the_reserve_the_end_could_not_be_recorded(small_disk, tmp_path, monkeypatch,  # noqa: F811
                                                           no_wait):  # noqa: F811
    """What the reserve is for: the same run, made without a lock, cannot write its end."""
    run, _recs, fallback, _filler = full_run(small_disk, tmp_path, monkeypatch, hold=False)
    with pytest.raises(IolabError, match="could not record the end of the run: No space left"):
        run.finish({"complete": False, "reason": "records not in records.jsonl"})
    state = load_run(run.path)
    assert run_state.of(state).state == "unfinished"
    assert state.reading.unsaved == [str(fallback)]   # still listed


def test_an_interrupted_run_is_not_complete_once_merged(tmp_path):
    """complete_once_merged is False when more than the fallback kept the run from completing."""
    run = RunDir.create(tmp_path / "results", EXP, RUN, {"experiment": EXP, "planned": []})
    run.finish({"complete": False, "reason": "interrupted by SIGINT", "complete_once_merged": False})
    assert run_state.of(load_run(run.path)).state == "incomplete"
    assert not os.path.lexists(run.path / LOCK)
