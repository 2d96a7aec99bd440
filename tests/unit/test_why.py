"""`iolab why` on real recorded runs (tests/data/why, made with the Spack-built IOR, Debian's fio
and Darshan with DXT): it names the mechanism where it is known, and nothing on a control."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iolab.analysis import why
from iolab.analysis.association import ALPHA
from iolab.results.run import load_run

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "why"


def _run(exp: str):
    (path,) = [p for p in (DATA / exp).iterdir() if p.is_dir()]
    return load_run(path)


def _one(exp: str, **kw) -> why.Explanation:
    (e,) = why.explain(_run(exp), **kw)
    return e


def _changed(e: why.Explanation, param: str) -> dict[str, tuple[float, float]]:
    (along,) = [a for a in e.along if a.param == param]
    return {name: (first, last) for name, _unit, first, last in along.changed}


def cli(*args, results: Path = DATA):
    import os

    return subprocess.run([sys.executable, "-m", "iolab.cli", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=120,
                          env={**os.environ, "IOLAB_RESULTS": str(results)})


def test_a_control_whose_cases_differ_only_by_a_label_has_nothing_to_explain():
    e = _one("why-control")
    assert e.verdict == why.NOTHING and not e.moved
    # what fio and Darshan counted is the same in both cases: it is said so
    constant = {name for name, _u, _v in e.constant}
    assert {"write_ops", "bytes_written", "mean_write_size", "requests"} <= constant
    out = cli("why", "why-control")
    assert out.returncode == 0, out.stderr
    assert "Nothing to explain" in out.stdout and "Moved with" not in out.stdout


def test_a_block_size_sweep_is_explained_by_access_size_and_operation_count():
    e = _one("why-fio-block-size")
    assert e.verdict == why.EXPLAINED and e.labels[e.cases[-1]] == "bs=4KiB"
    changed = _changed(e, "bs")
    # Darshan's counts follow fio's 16 MiB in bs-sized writes exactly: 4096 at 4 KiB, 16 at 1 MiB
    assert changed["write_ops"] == (4096, 16) and changed["requests"] == (4096, 16)
    assert changed["mean_write_size"] == (4096, 1048576)
    # whatever moved with the metric moved with the block size: no noise is named; the 4 KiB
    # writes' share is the one that passes Holm over the 5 repetitions recorded
    assert "tiny_write_share" in {m.name for m in e.moved}
    assert {m.name for m in e.moved} <= set(changed)
    assert all(m.p_holm < ALPHA for m in e.moved)
    assert "write_time" in e.restated and "write_time" not in changed
    assert "meta_time_share" in e.restated      # a share of the job's time: by construction


def test_a_stripe_count_sweep_changes_the_osds_reached_and_says_whether_bandwidth_followed():
    e = _one("why-cephfs-stripe-count")
    changed = _changed(e, "cephfs.stripe_count")
    assert changed["objects_written"] == (1, 4)
    first, last = changed["osds_with_data"]
    assert first == 1 and last > first
    # recorded here, 4 beat 1 beyond noise: the objects the stripe count made moved with it
    assert e.verdict == why.EXPLAINED and e.labels[e.cases[0]] == "cephfs.stripe_count=4"
    assert "objects_written" in {m.name for m in e.moved}
    out = cli("why", "why-cephfs-stripe-count").stdout
    assert "Along cephfs.stripe_count (1 -> 2 -> 4)" in out


def test_aggregators_explain_cb_nodes_on_the_four_node_cluster():
    e = _one("cephfs-collective")
    changed = _changed(e, "mpiio.cb_nodes")
    assert changed["aggregators_in_effect"] == (1, 4)
    assert changed["aggregators_that_wrote"] == (1, 4)
    # the hosts whose ranks wrote (DXT): node1 alone, then all four nodes' clients
    assert changed["hosts_that_wrote"] == (1, 4)
    assert not {"collective_writes", "small_write_share"} & set(changed)
    assert e.verdict == why.EXPLAINED and e.labels[e.cases[0]] == "mpiio.cb_nodes=4"
    moved = {m.name: m for m in e.moved}
    assert {"aggregators_in_effect", "aggregators_that_wrote", "hosts_that_wrote"} <= set(moved)
    for name in ("aggregators_that_wrote", "hosts_that_wrote"):
        assert (moved[name].at_worst, moved[name].at_best) == (1, 4), name
        assert moved[name].p_holm < ALPHA
    # the same ranks over the repetitions as the aggregators in effect: the same strength
    assert (moved["hosts_that_wrote"].association.strength
            == moved["aggregators_in_effect"].association.strength)
    # the slowest rank's time moved most (rho -0.99) but is the job's time, which the
    # bandwidth is computed over: set apart, so the page plots one of the counts tied at the top
    from iolab.present import why as text

    assert "slowest_rank_time" in e.restated and "slowest_rank_time" not in moved
    assert moved["aggregators_in_effect"].association.strength == e.moved[0].association.strength
    assert text.strongest(e)[0] == e.moved[0].name


def test_evidence_not_recorded_is_named_with_how_to_record_it_never_read_as_zero():
    (e,) = why.explain(load_run(next((REPO / "tests/data/tutorial/first-fio").iterdir())))
    darshan = [m for m in e.missing if m.source == "darshan"]
    assert darshan and all(m.reasons == ("Darshan was not enabled",) for m in darshan)
    assert "darshan" not in e.sources
    assert not any(m.source == "darshan" for m in e.moved + e.still)
    out = cli("why", "first-fio", results=REPO / "tests/data/tutorial").stdout
    assert "Darshan was not enabled" in out and "darshan: {enabled: true}" in out


def test_another_site_s_run_is_named_with_its_site(tmp_path):
    site = tmp_path / "why-control" / "@north"
    site.mkdir(parents=True)
    (run,) = (DATA / "why-control").iterdir()
    shutil.copytree(run, site / run.name)
    out = cli("why", "why-control", f"{run.name}@north", results=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"why-control run {run.name}@north, main: write_bw")


def test_holm_counts_pieces_with_one_rank_pattern_as_one_test():
    # three tests, two of them the same pattern: m = 2, so 0.01 -> 0.02 and 0.04 -> 0.04
    got = why._holm([0.01, 0.01, 0.04, None], [("a",), ("a",), ("b",), ("c",)])
    assert got == [pytest.approx(0.02), pytest.approx(0.02), pytest.approx(0.04), None]
    # step-down: never below an earlier adjusted value, never above 1
    assert why._holm([0.03, 0.02, 0.5], [(1,), (2,), (3,)]) == [
        pytest.approx(0.06), pytest.approx(0.06), pytest.approx(0.5)]
    assert why._holm([0.9, 0.8], [(1,), (2,)]) == [1.0, 1.0]


def test_json_says_what_the_text_says():
    out = cli("why", "why-fio-block-size", "--json")
    assert out.returncode == 0, out.stderr
    (got,) = json.loads(out.stdout)
    e = _one("why-fio-block-size")
    assert got["verdict"] == e.verdict and [c["case"] for c in got["cases"]] == e.cases
    assert [m["name"] for m in got["moved"]] == [m.name for m in e.moved]
    assert got["along"][0]["param"] == "bs"


@pytest.mark.parametrize("args, says", [
    (("--by", "stripe_size"), "--by stripe_size: not a parameter this run varies"),
    (("--metric", "read_bw"), "--metric read_bw: no record of this run has it"),
])
def test_bad_options_give_one_line_and_exit_2(args, says):
    out = cli("why", "why-fio-block-size", *args)
    errors = [line for line in out.stderr.splitlines() if not line.startswith("iolab: note:")]
    assert out.returncode == 2 and len(errors) == 1 and errors[0].startswith(f"iolab: error: {says}")


def test_a_damaged_record_is_refused_not_explained(tmp_path):
    shutil.copytree(DATA / "why-control", tmp_path / "why-control")
    (run,) = (tmp_path / "why-control").iterdir()
    lines = (run / "records.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    metric = next(m for m in rec["metrics"] if m["name"] == "write_bw")
    metric["value"] *= 10            # a faster repetition than was measured
    lines[0] = json.dumps(rec)
    (run / "records.jsonl").write_text("\n".join(lines) + "\n")
    out = cli("why", "why-control", results=tmp_path)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "records.jsonl:1" in out.stderr or "chain" in out.stderr


def test_the_page_shows_the_explanation_with_a_plot_of_the_strongest_evidence(tmp_path):
    pytest.importorskip("matplotlib")
    out = cli("publish", "why-fio-block-size", "--out", str(tmp_path / "page"))
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "page" / "report.md").read_text()
    e = _one("why-fio-block-size")
    from iolab.present import why as text

    assert "### Why the best case won: write_bw" in page and text.render(e) in page
    name, _unit = text.strongest(e)
    png = tmp_path / "page" / "plots" / "why-main-write_bw.png"
    assert png.stat().st_size > 0 and f"against {name}, each repetition" in page
    html = (tmp_path / "page" / "index.html").read_text()
    assert 'id="plot-why-main"' in html and "plots/why-main-write_bw.png" in html


def test_a_part_past_the_page_s_limit_is_named_not_explained(tmp_path, monkeypatch):
    from iolab.present import why as text

    monkeypatch.setattr(text, "PAGE_MAX_CASES", 2)
    (entry,) = text.section(_run("why-fio-block-size"), tmp_path)
    assert entry["plot"] is None and "3 cases, past the page's 2" in entry["text"]
    assert "iolab why why-fio-block-size" in entry["text"]


def test_the_rules_of_thumb_name_the_cases_they_fire_on_and_whether_they_separate_the_best():
    from iolab.analysis.rules import ALL_BUT_BEST

    fio = {r.rule.name: r for r in _one("why-fio-block-size").rules}
    small = fio["small_writes"]
    e = _one("why-fio-block-size")
    assert [e.labels[c] for c in small.applies] == ["bs=4KiB"]
    assert small.separation.separates is False      # 64 KiB wins, 1 MiB is clear too
    coll = _one("cephfs-collective")
    agg = {r.rule.name: r for r in coll.rules}["aggregators_below_nodes"]
    assert [coll.labels[c] for c in agg.applies] == ["mpiio.cb_nodes=1"]
    assert agg.separation.separates and agg.separation.direction == ALL_BUT_BEST
    out = cli("why", "cephfs-collective").stdout
    assert "aggregators_below_nodes (fewer aggregators than nodes):" in out
    assert "mpiio.cb_nodes=1: applies (" in out and "aggregators_in_effect 1 ranks" in out
