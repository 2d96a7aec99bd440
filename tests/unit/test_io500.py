"""The io500-like score: IO500's phases, groups and geometric means, from records."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from iolab.analysis import io500
from iolab.parsers import Metric
from iolab.results.record import Record
from iolab.results.run import run_of

BW = {"ior-easy": {"write_bw": 2048.0, "read_bw": 4096.0}, "ior-hard": {"write_bw": 512.0, "read_bw": 1024.0}}
MD = {"mdtest-easy": {"file_create_rate": 10000.0, "file_stat_rate": 100000.0, "file_remove_rate": 20000.0},
      "mdtest-hard": {"file_create_rate": 5000.0, "file_stat_rate": 50000.0, "file_read_rate": 40000.0,
                      "file_remove_rate": 8000.0}}


def _records(reps: int = 1, drop: tuple[str, str] | None = None, fail: str | None = None) -> list[Record]:
    out = []
    for part, metrics in {**BW, **MD}.items():
        unit = "MiB/s" if part.startswith("ior") else "ops/s"
        for rep in range(reps):
            ms = [Metric(n, v * (1 + rep), unit, "test") for n, v in metrics.items() if (part, n) != drop]
            status = "failed" if part == fail else "ok"
            out.append(Record(experiment="io500-like", part=part, case_id=part, benchmark="ior",
                              repetition=rep + 1, status=status, metrics=ms if status == "ok" else [],
                              error="mdtest exited with status 1" if status != "ok" else None))
    return out


def test_score_is_computed_the_io500_way():
    results = io500.phase_results(_records())
    got, why = io500.score(results)
    assert why is None
    bw = (2 * 4 * 0.5 * 1) ** (1 / 4)                       # GiB/s
    md = (10 * 100 * 20 * 5 * 50 * 40 * 8) ** (1 / 7)        # kIOPS
    assert got["BW"] == pytest.approx(bw) and got["MD"] == pytest.approx(md)
    assert got["total"] == pytest.approx(math.sqrt(bw * md))
    assert [r.phase.name for r in results][:4] == ["ior-easy-write", "mdtest-easy-write", "ior-hard-write",
                                                   "mdtest-hard-write"]


def test_repetitions_are_averaged():
    results = {r.phase.name: r for r in io500.phase_results(_records(reps=2))}
    assert results["ior-easy-write"].value == pytest.approx((2 + 4) / 2) and results["ior-easy-write"].n == 2


def test_a_missing_phase_leaves_the_score_uncomputed_with_the_reason():
    results = io500.phase_results(_records(drop=("mdtest-hard", "file_read_rate")))
    got, why = io500.score(results)
    assert got is None and why == "mdtest-hard-read: 1 of 1 repetition(s) without a result: no file_read_rate"
    got, why = io500.score(io500.phase_results(_records(fail="ior-hard")))
    assert got is None and "ior-hard-write: 1 of 1 repetition(s) without a result: mdtest exited" in why
    got, why = io500.score(io500.phase_results([r for r in _records() if r.part != "ior-easy"]))
    assert got is None and "no case of part ior-easy in this run" in why


def test_a_part_with_several_cases_is_not_one_phase():
    recs = _records() + [replace(_records()[0], case_id="other")]
    got, why = io500.score(io500.phase_results(recs))
    assert got is None and "part ior-easy has 2 cases, IO500 one" in why


def test_render_labels_the_score_as_not_official():
    text = io500.render(_records())
    assert "NOT an official IO500 submission" in text
    assert "| ior-easy-write | BW | 2 | GiB/s | 1 | ior-easy write_bw |" in text
    assert "| find | MD | not run (no iolab case) | kIOPS | 0 | - |" in text
    assert "io500-like score:" in text
    failed = io500.render(_records(fail="mdtest-easy"))
    assert "Score not computed: mdtest-easy-write:" in failed and "io500-like score:" not in failed


def test_applies_to_experiments_tagged_io500():
    def run(text):
        return run_of([], {"experiment": "x", "experiment_yaml": text})
    base = "id: x\ndescription: d\nbenchmark: ior\n"
    assert io500.applies(run(base + "tags: [io500, ior]\n"))
    assert not io500.applies(run(base + "tags: [ior]\n"))
    assert not io500.applies(run("id: [\n"))
    assert not io500.applies(run_of([], {}))
