"""A drift reference's records (provenance role drift-reference, experiment/order.py) in the
digest and the reference test of analysis/drift.py, on the real xfer-local grid (one case's
three repetitions marked as a reference's jobs); the run through ReFrame is
tests/integration/test_drift_reference.py."""

from __future__ import annotations

import json
import math
import random

from iolab import stats
from iolab.analysis import drift
from iolab.experiment.order import ROLE
from iolab.results import digest
from iolab.results.digest import fold
from iolab.results.record import Record
from tests.unit.test_drift_blocks import _interleaved, _records


def _marked(recs: list[dict]) -> tuple[list[Record], str]:
    """The records, those of the first case marked as a drift reference's jobs."""
    ref = recs[0]["case_id"]
    out = []
    for r in recs:
        r = json.loads(json.dumps(r))
        if r["case_id"] == ref:
            r["provenance"]["role"] = ROLE
        out.append(Record.from_json(r))
    return out, ref


def test_reference_jobs_are_kept_out_of_their_case_and_read_back_equal():
    recs, ref = _marked(_interleaved(_records()))
    facts = fold(recs)
    part = facts.parts["main"]
    assert ref not in part.cases and part.reference.case_id == ref and part.reference.ok == 3
    assert len(part.reference.series("write_bw")) == 3
    assert facts.records == len(recs) and facts.recorded(recs[0].job)
    facts.summarize()
    again = digest.from_json(json.loads(json.dumps(digest.to_json(facts))))
    assert again == facts


def test_the_reference_test_replaces_the_residual_tests():
    recs, ref = _marked(_interleaved(_records()))
    (found,) = drift.of_digest(fold(recs), every={"main": 48})
    assert found.test == "reference test" and found.case_id == ref and found.jobs == 3
    assert not found.drifts             # three real values, no drift put in
    (note,) = drift.notes([found])      # said although it does not drift: how many jobs ran
    assert f"reference case {ref}: 3 reference job(s) (at the start, every 48 jobs" in note


def test_the_departure_test_holds_its_rate_and_sees_a_step_and_a_dip():
    rng = random.Random(2026)
    for n in (5, 9, 15):
        false = sum(stats.departure_test([rng.gauss(0, 0.05) for _ in range(n)]).p < stats.ALPHA
                    for _ in range(400))
        assert false / 400 < 0.09, (n, false)       # 5% up to the noise of 400 draws
    noise = [rng.gauss(0, 0.05) for _ in range(9)]
    step = [y + (math.log(0.5) if i >= 6 else 0) for i, y in enumerate(noise)]
    dip = [y + (math.log(0.6) if 3 <= i < 6 else 0) for i, y in enumerate(noise)]
    for series in (step, dip):
        found = stats.departure_test(series)
        assert found.p < stats.ALPHA and found.gap < 0
    assert stats.departure_test([1.0, 2.0]) is None


def test_a_reference_series_with_a_step_is_flagged(scale=0.5):
    """Real values of one case (its 3 repetitions, as the reference's first three jobs) and
    after them the same values again scaled: a step at the run's middle."""
    recs, ref = _marked(_interleaved(_records()))
    mine = [r for r in recs if r.case_id == ref]
    later = []
    for k, r in enumerate(mine):
        data = r.to_json()
        data["repetition"] = 4 + k
        data["provenance"]["timing"] = {key: v + 3600 for key, v in
                                        data["provenance"]["timing"].items()}
        for m in data["metrics"]:
            m["value"] *= scale
        later.append(Record.from_json(data))
    (found,) = drift.of_digest(fold(recs + later))
    assert found.drifts and found.jobs == 6, found.text()
    assert "reference test" in found.short()
