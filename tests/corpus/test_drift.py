"""Drift inside a run (analysis/drift.py) on the corpus's real run (fio on this machine, made by
`reframe -r`): a copy whose records are scaled by a factor growing with their start time (start
times kept, the digest chain written whole again) is flagged by `iolab runs` and `iolab table`
with the drift's size. That the real run is not flagged is tested on the recorded runs of
tests/data/runs (tests/unit/test_drift.py): this run is measured anew each session, and any real
run is flagged at the test's 5% rate, or more when its first repetitions warm up."""

from __future__ import annotations

import json
import math

import pytest

from iolab.analysis import drift
from iolab.results.record import Record

from .conftest import noted

EXP = "corpus-fio"
# per second of start time. The run's jobs are tiny (256 KiB) and a case's two repetitions
# follow within a second: their noise allows a slope of a few per second in log, so the drift
# put in is far above it (10,000 times slower each second)
RATE = math.log(1e-4)


def test_a_drifting_copy_is_flagged_with_its_size(run_copy):
    recs = run_copy.records()
    (real,) = drift.residual_trend([Record.from_json(r) for r in recs])
    t0 = min(Record.from_json(r).started for r in recs)
    for r in recs:
        factor = math.exp(RATE * (Record.from_json(r).started - t0))
        for m in r["metrics"]:
            if isinstance(m.get("value"), (int, float)):
                m["value"] *= factor
    run_copy.rechain(recs)
    (found,) = drift.residual_trend([Record.from_json(r) for r in run_copy.records()])
    assert found.drifts and found.slope.high < 0
    # the slope measured is the run's own plus the one put in (the regression is linear in log)
    assert found.slope.slope == pytest.approx(real.slope.slope + RATE * 3600)
    est, low, high = found.over_span
    line = noted(run_copy.iolab("runs", EXP))
    assert f"drift in {found.part} ({found.metric}) {est:+.1f}%" in line
    table = noted(run_copy.iolab("table", EXP))
    assert f"drift in {found.part} ({found.metric}): {est:+.1f}%" in table
    data = json.loads(run_copy.iolab("table", EXP, "--format", "json").stdout)
    assert any(n.startswith("drift in") for n in data[0]["run"]["notes"])
