"""Drift inside a run (analysis/drift.py), on real recorded runs with drift injected on purpose:
a copy whose records are scaled by a known factor that grows with their start time (the start
times kept). The damaged copy must be flagged with the size injected; the real runs must not;
`compare` must not declare a difference smaller than the drift."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from iolab import stats
from iolab.analysis import drift
from iolab.analysis.compare import Side, compare_runs
from iolab.cli import main
from iolab.results.record import Record
from iolab.results.run import load_run

RUNS = Path(__file__).parent.parent / "data" / "runs"
QUICKSTART = RUNS / "9d00b02" / "quickstart" / "20261123T182624Z-113f60"
RATE = math.log(0.6)        # per second of start time: each second later, 40% slower


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in (path / "records.jsonl").read_text().splitlines() if line]


def _damaged(recs: list[dict], rate: float = RATE, scale: float = 1.0) -> list[dict]:
    """Every metric of a record times scale * exp(rate * (its start - the first start))."""
    t0 = min(Record.from_json(r).started for r in recs)
    out = []
    for r in recs:
        r = json.loads(json.dumps(r))
        factor = scale * math.exp(rate * (Record.from_json(r).started - t0))
        for m in r["metrics"]:
            if isinstance(m.get("value"), (int, float)):
                m["value"] *= factor
        out.append(r)
    return out


def _copy(tmp_path: Path, name: str, recs: list[dict]) -> Path:
    dest = tmp_path / "results" / "quickstart" / name
    shutil.copytree(QUICKSTART, dest)
    recs = [{**r, "run_id": name} for r in recs]
    (dest / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return dest


def test_the_slope_within_cells_is_the_slope_put_in():
    groups = [[(0, 5.0), (1, 5.5), (2, 6.0)], [(10, 1.0), (11, 1.4), (12, 2.1)]]
    got = stats.within_slope(groups)
    assert got.n == 6 and got.df == 3
    assert got.slope == pytest.approx((0.5 * 2 + 0.55 * 2) / 4)     # Sxy / Sxx, cells centred
    assert got.low < got.slope < got.high
    assert stats.within_slope([[(0, 1.0), (0, 2.0)]]) is None          # no time spread: no slope


@pytest.mark.parametrize("path", sorted(RUNS.glob("*/quickstart/*")), ids=lambda p: p.parts[-3])
def test_real_runs_are_not_flagged(path):
    found = drift.residual_trend([Record.from_json(r) for r in _records(path)])
    if path.parts[-3] == "72c6146":     # its records' times are to the second, a case's two equal
        assert found == []
        return
    assert found, "the fio part of quickstart has 4 cases x 2 repetitions: a slope is tested"
    assert not [d for d in found if d.drifts], [d.text() for d in found]


def test_injected_drift_is_flagged_with_its_size():
    (found,) = drift.residual_trend([Record.from_json(r) for r in _damaged(_records(QUICKSTART))])
    assert found.drifts and found.part == "fio" and found.metric == "write_bw"
    injected = 100 * math.expm1(RATE * found.span_hours * 3600)
    est, low, high = found.over_span
    assert low <= injected <= high
    # what the undamaged run measured plus what was injected: the regression is linear in log
    (real,) = drift.residual_trend([Record.from_json(r) for r in _records(QUICKSTART)])
    assert found.slope.slope == pytest.approx(real.slope.slope + RATE * 3600)
    assert "drift in fio (write_bw)" in found.text() and "not measured" in found.text()


def test_runs_table_and_compare_flag_the_damaged_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IOLAB_RESULTS", str(tmp_path / "results"))
    _copy(tmp_path, "20261123T182624Z-aaaaaa", _records(QUICKSTART))
    _copy(tmp_path, "20261123T182624Z-bbbbbb", _damaged(_records(QUICKSTART)))
    assert main(["runs", "quickstart"]) == 0
    lines = capsys.readouterr().out.splitlines()
    (clean,) = [ln for ln in lines if "aaaaaa" in ln]
    (bad,) = [ln for ln in lines if "bbbbbb" in ln]
    # the real run's ior part is flagged by the block test: its 2 cases' first repetitions were
    # 7.6% faster than their second (p = 0.006 on 1 and 1 df), a real effect of the matrix order
    (ior,) = [d for d in drift.of_run(load_run(tmp_path / "results" / "quickstart" /
                                             "20261123T182624Z-aaaaaa")) if d.part == "ior"
              and d.test == "block test"]
    assert ior.drifts and ior.worst == 0 and ior.percent > 0
    assert "drift in fio" not in clean
    assert "drift in fio (write_bw)" in bad and "95% CI" in bad and "trend test" in bad
    assert main(["table", "quickstart", "--run", "bbbbbb"]) == 0
    assert "drift in fio (write_bw)" in capsys.readouterr().out
    assert main(["table", "quickstart", "--run", "aaaaaa"]) == 0
    assert "drift in fio" not in capsys.readouterr().out


def _verdicts(a: Path, b: Path) -> dict[str, str]:
    c = compare_runs(Side("A", load_run(a)), Side("B", load_run(b)), ["write_bw"])
    (table,) = [t for t in c.tables if t.part == "fio"]
    return {p.case_a: p.verdict(table.better) for p in table.pairs}


def test_compare_does_not_declare_a_difference_smaller_than_the_drift(tmp_path):
    recs = _records(QUICKSTART)
    a = _copy(tmp_path, "20261123T182624Z-a", recs)
    # B: every record 10% slower, and no drift: the difference is declared where it is clear
    steady = _copy(tmp_path, "20261123T182624Z-steady", _damaged(recs, rate=0.0, scale=0.9))
    declared = _verdicts(a, steady)
    assert "slower" in declared.values(), declared
    # the same two runs, both drifting by up to 40% per second: the 10% is not declared
    a_drifting = _copy(tmp_path, "20261123T182624Z-a-drifting", _damaged(recs))
    drifting = _copy(tmp_path, "20261123T182624Z-drifting", _damaged(recs, scale=0.9))
    d = drift.floor(drift.of_run(load_run(drifting)), "fio")
    assert d.drifts and d.size > 0.1
    got = _verdicts(a_drifting, drifting)
    assert not [v for v in got.values() if v in ("faster", "slower")], got
    # the declared 10% of the steady pair, against that drift (up to d.size): within it
    c = compare_runs(Side("A", load_run(a)), Side("B", load_run(steady)), ["write_bw"])
    (table,) = [t for t in c.tables if t.part == "fio"]
    slower = [p for p in table.pairs if p.verdict(table.better) == "slower"]
    for p in slower:
        p.drift = d
        assert p.verdict(table.better) == f"within drift: slower by 10%, the drift is up to {d.size:.0%}"


def test_a_value_set_aside_is_in_no_drift_test():
    """A real run with one fio value written 1e308 (on purpose): the table sets it aside
    (stats.LIMIT), and so do the drift tests, which see the run as they see it without it."""
    recs = _records(QUICKSTART)
    (victim,) = [r for r in recs if r["benchmark"] == "fio"][-1:]
    for m in victim["metrics"]:
        if m["name"] == "write_bw":
            m["value"] = 1e308
    (found,) = drift.residual_trend([Record.from_json(r) for r in recs])
    without = [r for r in recs if r is not victim]
    (same,) = drift.residual_trend([Record.from_json(r) for r in without])
    assert not found.drifts and found.slope.slope == pytest.approx(same.slope.slope)
