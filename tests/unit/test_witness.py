"""Other jobs on a case's nodes (rfm/witness.py): where sacct cannot be asked, the record says
the check was not made and the row is flagged so, never read as "no overlap". The overlap
itself is tested on the real Slurm (tests/integration/test_slurm_local.py)."""

from __future__ import annotations

from iolab.results.record import Observed
from iolab.rfm import witness


def test_an_overlap_that_could_not_be_checked_is_flagged_not_taken_for_none(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))       # no sacct
    seen = witness.of_job("slurm", "7", ["n1"], {"benchmark_start": 1.0, "benchmark_end": 2.0})
    assert seen == {"checked": False, "reason": "sacct is not on PATH"}
    assert Observed.from_json({"overlapping_jobs": seen}).flags() == [
        "not checked for other jobs on its nodes: sacct is not on PATH"]
    assert witness.of_job("slurm", "7", ["n1"], {"benchmark_start": None})["reason"] == \
        "the benchmark's start and end are not known"
    assert witness.of_job("slurm", "7", [], {})["reason"] == "the job's nodes are not known"


def test_local_jobs_have_no_witness():
    assert witness.of_job("local", "7", ["n1"], {"benchmark_start": 1.0, "benchmark_end": 2.0}) is None


def test_witnesses_read_as_one_flag_and_an_empty_check_as_none():
    jobs = [{"job": "18", "user": "alice", "name": "sleep", "nodes": "n1", "start": 0, "end": None}]
    assert Observed.from_json({"overlapping_jobs": {"checked": True, "jobs": jobs}}).flags() == [
        "other jobs shared its nodes while it measured: job 18 (alice, sleep, on n1, "
        "from 00:00:00 UTC, still running)"]
    jobs[0]["end"] = 3723
    assert Observed.from_json({"overlapping_jobs": {"checked": True, "jobs": jobs}}).flags()[0].endswith(
        "(alice, sleep, on n1, 00:00:00-01:02:03 UTC)")
    assert Observed.from_json({"overlapping_jobs": {"checked": True, "jobs": []}}).flags() == []
