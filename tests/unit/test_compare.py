"""Comparisons of two runs and of parameter values, on records that carry real parsed IOR metrics."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from scipy import stats as sp

from iolab.benchmarks.ior import parse_any
from iolab.analysis.compare import (Side, compare_by_param, compare_runs, direction,
                                    render_comparison, verdict)
from iolab.errors import IolabError
from iolab.results.rundir import RunDir
from iolab.stats import Welch

IOR = Path(__file__).resolve().parents[1] / "data" / "ior"
MiB = 1024 * 1024
# write_bw of real IOR 4.0.0 outputs: two tight groups, ~1407 and ~1574 MiB/s
LOW = ["ior_mpiio_coll_4r_t256k_b8m.summary.json",     # 1404.0598
       "ior_mpiio_indep_4r_t64k_b4m.txt",              # 1434.52
       "ior_hdf5_coll_4r_t512k_b8m.txt"]               # 1382.13
HIGH = ["ior_hdf5_coll_4r_t512k_b8m.summary.json",     # 1567.5033
        "ior_mpiio_indep_4r_t64k_b4m.summary.json",    # 1577.048
        "ior_mpiio_coll_4r_t256k_b8m.txt"]             # 1577.50
BASE = {"api": "MPIIO", "collective": True, "file_per_process": False, "scale.nodes": 1,
        "scale.tasks_per_node": 4, "block_size": 4 * MiB, "transfer_size": MiB}


def metrics_of(name: str) -> list[dict]:
    return [m.as_dict() for m in parse_any(IOR / name).metrics]


def write_bw(name: str) -> float:
    return next(m["value"] for m in metrics_of(name) if m["name"] == "write_bw")


def record(case_id: str, rep: int, params: dict, fixture: str, *, flags=(), version="4.0.0",
           varied=("lustre.stripe_count", "lustre.stripe_size"), experiment="cmp") -> dict:
    return {"experiment": experiment, "case_id": case_id, "part": "main", "benchmark": "ior",
            "repetition": rep, "params": {**BASE, **params}, "varied": list(varied), "status": "ok",
            "error": None, "metrics": metrics_of(fixture), "flags": list(flags),
            "provenance": {"binary": {"name": "ior", "version": version}}}


def make_run(root: Path, run_id: str, records: list[dict], **manifest) -> Path:
    run = RunDir.create(root, "cmp", run_id, {"experiment": "cmp", **manifest})
    for rec in records:
        run.append({**rec, "run_id": run_id})
    return run.path


def case_records(case_id, params, fixtures, **kw):
    return [record(case_id, rep, params, f, **kw) for rep, f in enumerate(fixtures, 1)]


# ------------------------------------------------------------------------------ direction, verdict

@pytest.mark.parametrize("metric, unit, better", [
    ("write_bw", "MiB/s", "higher"), ("write_ops", "ops/s", "higher"), ("read_iops", "ops/s", "higher"),
    ("write_total_time", "s", "lower"), ("write_clat_mean", "us", "lower"),
    ("write_bw_stddev", "MiB/s", None), ("write_bytes", "B", None), ("x", "", None),
])
def test_direction_from_unit(metric, unit, better):
    assert direction(metric, unit) == better


def test_verdict_branches():
    sig, ns = Welch(5.0, 4.0, 0.001), Welch(0.5, 4.0, 0.6)
    assert verdict(None, 1.0, "higher") == "n too small"
    assert verdict(ns, 1.0, "higher") == "no clear difference"
    assert verdict(sig, 1.0, "higher") == "faster"      # more bandwidth
    assert verdict(sig, -1.0, "higher") == "slower"
    assert verdict(sig, -1.0, "lower") == "faster"      # less time
    assert verdict(sig, 1.0, "lower") == "slower"
    assert verdict(sig, 1.0, None) == "higher"
    assert verdict(Welch(2.0, 4.0, 0.05), 1.0, "higher") == "no clear difference"  # p < 0.05 needed


# ------------------------------------------------------------------------------------ two runs

@pytest.fixture
def two_runs(tmp_path):
    c1 = {"lustre.stripe_count": 1, "lustre.stripe_size": MiB}
    c4 = {"lustre.stripe_count": 4, "lustre.stripe_size": MiB}
    a = make_run(tmp_path, "run-a", case_records("c1", c1, LOW) + case_records("c4", c4, LOW),
                 system="alpha:compute", spack_lock_sha256="a" * 64)
    b = make_run(tmp_path, "run-b",
                 case_records("c1", c1, HIGH)
                 + case_records("c4", c4, HIGH[:1], flags=["striping not applied: ext4: no striping"],
                                version="3.3.0"),
                 system="beta:compute", spack_lock_sha256="b" * 64)
    return Side.load(a, "A"), Side.load(b, "B")


def test_two_runs_means_ratio_test_and_verdict(two_runs):
    a, b = two_runs
    cmp = compare_runs(a, b, ["write_bw", "write_total_time"])
    bw = next(t for t in cmp.tables if t.metric == "write_bw")
    pair = next(p for p in bw.pairs if p.case_a == "c1")
    low, high = [write_bw(f) for f in LOW], [write_bw(f) for f in HIGH]
    # A mean = (1404.0598 + 1434.52 + 1382.13) / 3 = 1406.9033; B = (1567.5033 + 1577.048 + 1577.5) / 3
    assert pair.a.mean == pytest.approx(1406.9033, rel=1e-6)
    assert pair.b.mean == pytest.approx(1574.0171, rel=1e-6)
    assert pair.ratio == pytest.approx(1574.0171 / 1406.9033, rel=1e-6)
    lo, hi = pair.ratio_ci
    assert lo < pair.ratio < hi
    ref = sp.ttest_ind(high, low, equal_var=False)
    assert pair.welch.p == pytest.approx(ref.pvalue)
    assert pair.welch.p < 0.05 and pair.verdict(bw.better) == "faster"

    times = next(t for t in cmp.tables if t.metric == "write_total_time")
    tpair = next(p for p in times.pairs if p.case_a == "c1")
    assert times.better == "lower"
    ta = [next(m["value"] for m in metrics_of(f) if m["name"] == "write_total_time") for f in LOW]
    tb = [next(m["value"] for m in metrics_of(f) if m["name"] == "write_total_time") for f in HIGH]
    assert tpair.a.mean == pytest.approx(statistics.fmean(ta))
    assert sp.ttest_ind(tb, ta, equal_var=False).pvalue > 0.05
    assert tpair.verdict(times.better) == "no clear difference"


def test_two_runs_flag_provenance_and_small_n(two_runs):
    a, b = two_runs
    cmp = compare_runs(a, b, ["write_bw"])
    (bw,) = cmp.tables
    c1 = next(p for p in bw.pairs if p.case_a == "c1")
    c4 = next(p for p in bw.pairs if p.case_a == "c4")
    assert c4.b.n == 1 and c4.verdict(bw.better) == "n too small"
    assert c4.ratio == pytest.approx(write_bw(HIGH[0]) / c4.a.mean)
    assert c4.ratio_ci is None
    lock = f"spack.lock differs (A {'a' * 12}, B {'b' * 12})"
    assert lock in c1.notes and lock in c4.notes
    assert "B: striping not applied: ext4: no striping" in c4.notes
    assert "binary version differs (A 4.0.0, B 3.3.0)" in c4.notes
    assert not any("binary" in n or "striping" in n for n in c1.notes)
    assert "systems differ: A on alpha:compute, B on beta:compute" in cmp.context

    text = render_comparison(cmp)
    assert "| B/A | 95% CI of B/A | Welch p | B vs A | Notes |" in text
    row = next(line for line in text.splitlines() if line.startswith("| 4 |"))
    assert "| n too small |" in row and row.endswith("| † †† ††† |")
    assert "†† B: striping not applied: ext4: no striping" in text
    assert "††† binary version differs (A 4.0.0, B 3.3.0)" in text
    assert "delta method on log(B/A)" in text and "Welch's two-sided t-test" in text


def test_spack_lock_on_one_side_only_is_flagged(tmp_path):
    c1 = {"lustre.stripe_count": 1}
    a = Side.load(make_run(tmp_path, "a", case_records("c1", c1, LOW), spack_lock_sha256="f" * 64), "A")
    b = Side.load(make_run(tmp_path, "b", case_records("c1", c1, HIGH)), "B")
    (table,) = compare_runs(a, b, ["write_bw"]).tables
    assert table.pairs[0].notes == ["spack.lock recorded for A only"]
    same = Side.load(make_run(tmp_path, "c", case_records("c1", c1, HIGH)), "B")
    (table,) = compare_runs(b, same, ["write_bw"]).tables
    assert table.pairs[0].notes == []


def test_case_missing_from_b(tmp_path):
    recs = case_records("c1", {}, LOW) + case_records("c2", {"segments": 2}, LOW)
    a = Side.load(make_run(tmp_path, "a", recs), "A")
    b = Side.load(make_run(tmp_path, "b", case_records("c1", {}, HIGH)), "B")
    (table,) = compare_runs(a, b, ["write_bw"]).tables
    c2 = next(p for p in table.pairs if p.case_a == "c2")
    assert c2.case_b is None and c2.b.n == 0 and "case not in B" in c2.notes
    assert c2.verdict(table.better) == "n too small"


# --------------------------------------------------------------------------------- by parameter

@pytest.fixture
def stripe_run(tmp_path):
    recs = []
    for count, fixtures in ((1, LOW), (4, HIGH), (-1, LOW)):
        for size in (MiB, 8 * MiB):
            cid = f"s{count}x{size // MiB}"
            recs += case_records(cid, {"lustre.stripe_count": count, "lustre.stripe_size": size}, fixtures)
    return Side.load(make_run(tmp_path, "r", recs, system="alpha:compute"), "run")


def test_by_param_pairs_each_case_with_its_baseline(stripe_run):
    cmp = compare_by_param(stripe_run, "lustre.stripe_count", "1", ["write_bw"])
    (table,) = cmp.tables
    pairs = {p.case_b: p.case_a for p in table.pairs}
    # every non-baseline case against the stripe-count-1 case of the same stripe size
    assert pairs == {"s4x1": "s1x1", "s4x8": "s1x8", "s-1x1": "s1x1", "s-1x8": "s1x8"}
    faster = next(p for p in table.pairs if p.case_b == "s4x1")
    same = next(p for p in table.pairs if p.case_b == "s-1x1")
    assert faster.verdict(table.better) == "faster"
    assert same.ratio == pytest.approx(1.0) and same.verdict(table.better) == "no clear difference"


def test_by_param_sizes_and_errors(stripe_run):
    cmp = compare_by_param(stripe_run, "lustre.stripe_size", "1MiB", ["write_bw"])
    assert {p.case_b: p.case_a for p in cmp.tables[0].pairs} == {
        "s1x8": "s1x1", "s4x8": "s4x1", "s-1x8": "s-1x1"}
    with pytest.raises(IolabError, match="no case of run r has parameter 'lustre.stripe_cont'"):
        compare_by_param(stripe_run, "lustre.stripe_cont", "1")
    with pytest.raises(IolabError, match=r"values of lustre.stripe_count in this run: -1, 1, 4"):
        compare_by_param(stripe_run, "lustre.stripe_count", "16")
    with pytest.raises(IolabError, match="--baseline 'four'"):
        compare_by_param(stripe_run, "lustre.stripe_count", "four")


def test_by_param_flags_either_side(tmp_path):
    recs = (case_records("one", {"lustre.stripe_count": 1}, LOW,
                         flags=["striping not applied: ext4: no striping"])
            + case_records("four", {"lustre.stripe_count": 4}, HIGH, version="3.3.0"))
    side = Side.load(make_run(tmp_path, "r", recs), "run")
    (pair,) = compare_by_param(side, "lustre.stripe_count", "1", ["write_bw"]).tables[0].pairs
    assert "baseline: striping not applied: ext4: no striping" in pair.notes
    assert "binary version differs (baseline 4.0.0, this case 3.3.0)" in pair.notes


def test_a_run_with_old_eight_digit_ids_pairs_with_the_same_cases_now(tmp_path):
    """Case ids grew from 8 to 16 hex digits of the same hash: an older run still compares."""
    new_id, other = "99a3ce015baa8c12", "12345678aaaaaaaa"
    old = make_run(tmp_path, "20260101T000000Z-000001",
                   case_records(new_id[:8], {"lustre.stripe_count": 1}, LOW)
                   + case_records(other[:8], {"lustre.stripe_count": 4}, LOW))
    now = make_run(tmp_path, "20260102T000000Z-000002",
                   case_records(new_id, {"lustre.stripe_count": 1}, HIGH)
                   + case_records(other, {"lustre.stripe_count": 4}, HIGH))
    cmp = compare_runs(Side.load(old, "A"), Side.load(now, "B"), ["write_bw"])
    (bw,) = cmp.tables
    assert {(p.case_a, p.case_b) for p in bw.pairs} == {(new_id[:8], new_id), (other[:8], other)}
    assert all(p.b.n == 3 for p in bw.pairs)


def test_interval_and_test_decide_together_and_a_disagreement_is_said():
    from iolab.analysis.compare import METHOD, VERDICT_RULE

    ns, sig = Welch(1.7, 4.0, 0.13), Welch(5.0, 4.0, 0.001)
    # the row: a CI of 0.01-0.10 excludes 1 while Welch's p is 0.13
    assert verdict(ns, -1.0, "higher", (0.01, 0.10)) == "unclear: the CI says slower, Welch p ≥ 0.05"
    assert verdict(sig, 1.0, "higher", (0.9, 1.3)) == "unclear: Welch says faster, the CI includes 1"
    assert verdict(sig, 1.0, "higher", (1.1, 1.3)) == "faster"
    assert verdict(ns, 1.0, "higher", (0.9, 1.3)) == "no clear difference"
    assert verdict(sig, -1.0, "lower", None) == "faster"        # no interval: the test alone
    assert VERDICT_RULE in METHOD and "unclear" in VERDICT_RULE


def _skipped(case_id, params, reps=2):
    why = ("benchmark binary 'ior' not found on PATH; provide it with Spack (spack.yaml), a module, "
           "or a prefix")
    return [{**record(case_id, rep, params, LOW[0]), "status": "skipped", "metrics": [], "error": why}
            for rep in range(1, reps + 1)]


def test_a_comparison_names_what_it_left_out_and_fails_when_nothing_is_left(tmp_path):
    c1 = {"lustre.stripe_count": 1, "lustre.stripe_size": MiB}
    ok = make_run(tmp_path, "run-ok", case_records("c1", c1, LOW))
    skipped = make_run(tmp_path, "run-skipped", _skipped("c1", c1))
    with pytest.raises(IolabError) as info:
        compare_runs(Side.load(ok, "A"), Side.load(skipped, "B"))
    text = str(info.value)
    assert "cmp: A vs B: nothing could be compared" in text
    assert "main: left out, no metric to compare (A: 3 ok; B: 2 skipped (benchmark binary 'ior' not " \
           "found on PATH; provide it with Spack (spack.yaml), a module, or a prefix))" in text
    c4 = {"lustre.stripe_count": 4, "lustre.stripe_size": MiB}
    both = make_run(tmp_path, "run-both", _skipped("c1", c1) + _skipped("c4", c4))
    with pytest.raises(IolabError, match="nothing could be compared"):
        compare_by_param(Side.load(both, "run"), "lustre.stripe_count", "1")
    # a part left out is named, and the rest is compared
    fine = compare_runs(Side.load(ok, "A"), Side.load(ok, "B"))
    assert fine.tables and not any("left out" in line for line in fine.context)
