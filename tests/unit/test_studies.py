"""Each shipped experiment against its study: every row of a compared table has exactly one case at
the study's scale, and a local run lines up without ambiguous rows (iolab.analysis.published.studies).

The runs are built as the ReFrame session writes them (tests/golden/publish_data.py), with
metrics from real recorded IOR outputs; the end-to-end local runs are in
tests/integration/test_studies_local.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from iolab.analysis.compare import Side
from iolab.errors import IolabError
from iolab.analysis.published.study import load_study
from iolab.results.run import load_run
from iolab.analysis.published.studies import compare_study, render_study

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "golden"))
from publish_data import experiment, make_run, published_links, records  # noqa: E402

PUBLISHED_STUDIES = published_links()
EXPERIMENTS = sorted(PUBLISHED_STUDIES)


def side_of(tmp_path: Path, exp_id: str, profile: str, run_id: str = "20261121T000000Z-aaaaaa") -> Side:
    exp = experiment(exp_id, profile)
    recs = records(exp, run_id, reps=2)
    return Side("run", load_run(make_run(tmp_path / "results", exp, run_id, recs)))


def result_of(tmp_path, exp_id, profile, **kw):
    link = PUBLISHED_STUDIES[exp_id]
    return compare_study(side_of(tmp_path, exp_id, profile), load_study(link.study, REPO), **kw)


@pytest.mark.parametrize("exp_id", EXPERIMENTS)
def test_full_profile_has_one_case_per_published_row(tmp_path, exp_id):
    """At the study's scale every column is matched as written (--exact), and every row of every
    compared table finds exactly one case."""
    result = result_of(tmp_path, exp_id, "full", exact=True)
    link = PUBLISHED_STUDIES[exp_id]
    assert [g.link for g in result.groups] == list(link.tables)
    for group in result.groups:
        if group.link.not_compared:
            assert group.comparison is None and group.error == group.link.not_compared
            continue
        pc = group.comparison
        assert pc is not None, group.error
        assert pc.pairs and all(p.status == "matched" for p in pc.pairs), [
            (p.row.label(), p.status, p.notes) for p in pc.pairs if p.status != "matched"]
        assert len({p.case_id for p in pc.pairs}) == len(pc.pairs) and not pc.picks


def test_every_compared_row_of_the_shipped_studies_is_linked():
    """A row of a shipped study is either compared by an experiment or its table says why not."""
    covered: dict[str, set] = {}
    for link in PUBLISHED_STUDIES.values():
        covered.setdefault(link.study, set()).update(t.table for t in link.tables)
    for name, tables in covered.items():
        study = load_study(name, REPO)
        assert {t for t, _ in study.groups()} <= tables, name


@pytest.mark.parametrize("exp_id", EXPERIMENTS)
def test_local_profile_lines_up_without_ambiguous_rows(tmp_path, exp_id):
    result = result_of(tmp_path, exp_id, "local")
    assert result.ambiguous() == 0
    text = render_study(result)
    assert " ambiguous" not in text.replace("0 ambiguous", "")
    for group in result.compared:
        assert group.comparison.matched, group.label
        assert f"verdict: {group.comparison.shape_verdict()}" in text


def test_archer_local_picks_the_larger_process_count_and_says_how_to_choose(tmp_path):
    result = result_of(tmp_path, "archer-fpp-vs-ssf", "local")
    (group,) = result.groups
    pc = group.comparison
    assert len(pc.matched) == 5 and {p.row.params["scale.num_tasks"] for p in pc.matched} == {24}
    assert any("the study's rows at 24 processes (closest to the run's 4): 5 of 47" in a
               for a in group.adjustments)
    (pick,) = pc.picks
    assert (pick.key, pick.chosen, pick.others, pick.rows) == ("scale.tasks_per_node", 4, [2], 5)
    text = render_study(result)
    assert ("5 row(s) matched several cases of the run, which differ in scale.tasks_per_node (4, 2) "
            "that the study does not fix here: the case with scale.tasks_per_node=4 is used; "
            "choose another with --pick scale.tasks_per_node=2") in text
    assert "rows: 5 matched, 0 without a matching case, 0 ambiguous" in text

    chosen = result_of(tmp_path / "b", "archer-fpp-vs-ssf", "local", pick=["scale.tasks_per_node=2"])
    pc2 = chosen.groups[0].comparison
    assert len(pc2.matched) == 5 and not pc2.picks
    assert {p.case_id for p in pc2.matched}.isdisjoint({p.case_id for p in pc.matched})
    assert "only the run's cases with scale.tasks_per_node=2 (--pick)" in chosen.groups[0].adjustments

    exact = result_of(tmp_path / "c", "archer-fpp-vs-ssf", "local", exact=True)
    assert exact.groups[0].comparison.counts() == {"matched": 0, "unmatched": 47, "ambiguous": 0}
    loose = result_of(tmp_path / "d", "archer-fpp-vs-ssf", "local", exact=True,
                      where=["scale.num_tasks=24"], ignore=["scale.num_tasks", "scale.tasks_per_node",
                                                            "block_size"])
    pairs = loose.groups[0].comparison.pairs
    assert [p.status for p in pairs] == ["ambiguous"] * 5
    assert "they differ in scale.tasks_per_node, which the study does not fix here" in pairs[0].notes[0]


def test_pick_errors_name_the_run_values(tmp_path):
    with pytest.raises(IolabError, match=r"--pick scale.tasks_per_node=3: no case of the run has it "
                                         r"\(values in the run: 2, 4\)"):
        result_of(tmp_path, "archer-fpp-vs-ssf", "local", pick=["scale.tasks_per_node=3"])
    with pytest.raises(IolabError, match="expected KEY=VALUE"):
        result_of(tmp_path / "b", "archer-fpp-vs-ssf", "local", pick=["scale.tasks_per_node"])


def test_csc_local_matches_all_nine_rows_by_hints_and_osts(tmp_path):
    result = result_of(tmp_path, "csc-btio-hints", "local")
    pc = result.groups[0].comparison
    assert pc.counts() == {"matched": 9, "unmatched": 0, "ambiguous": 0} and not pc.picks
    assert "scale.nodes" in pc.ignored and "grid" in pc.ignored
    by_value = {p.row.value: p for p in pc.pairs}
    assert pc.setting_words(by_value[4667]) == ("I/O method pnetcdf_blocking, stripe count 2, "
                                                "striping_unit 1MiB, romio_cb_write enable, "
                                                "romio_no_indep_rw true, romio_ds_write disable")
    assert pc.setting_words(by_value[1292.96]) == "I/O method pnetcdf_blocking, stripe count 1, no hints"


def test_kaust_groups_say_two_rows_are_too_few(tmp_path):
    result = result_of(tmp_path, "kaust-stripe-count", "local")
    assert [g.label for g in result.groups] == ["wrf-restart", "dd-small-file (write_time)",
                                                "dd-small-file (write_rate)"]
    for g in result.groups:
        assert len(g.comparison.matched) == 2
        assert g.verdict() == "not assessed: 2 matched rows are too few for a verdict (it needs at least 3)"
    wrf = result.groups[0].comparison
    assert {p.row.params["lustre.stripe_count"] for p in wrf.matched} == {1, 144}
    assert result.verdict().startswith("wrf-restart: not assessed: 2 matched rows")
    text = render_study(result)
    assert "### dd-small-file (write_rate)" in text and "study verdict: wrf-restart: " in text


def test_adio_local_three_tables_and_two_not_compared(tmp_path):
    result = result_of(tmp_path, "lustre-adio-io-size", "local")
    by_label = {g.label: g for g in result.groups}
    assert by_label["adio-driver-old"].verdict().startswith("not compared: ROMIO's Lustre driver")
    assert by_label["hdf5-open"].comparison is None
    assert len(by_label["adio-driver-new"].comparison.matched) == 4
    flash = by_label["flash-io-hdf5"]
    assert len(flash.comparison.matched) == 3
    assert any("the run's scale.nodes (1) is not the study's (256): not matched" in a
               for a in flash.adjustments)
    wrf = by_label["wrf-mode-hdf5"].comparison
    # the talk's own process counts run locally: they are matched, not ignored
    assert "scale.num_tasks" in wrf.match_keys and len(wrf.matched) == 3


def test_cp2k_local_matches_the_aggregator_counts_that_fit(tmp_path):
    result = result_of(tmp_path, "cp2k-aggregators", "local")
    pc = result.groups[0].comparison
    assert sorted(p.row.params["mpiio.cb_nodes"] for p in pc.matched) == [1, 2, 8]
    assert pc.counts()["unmatched"] == 5 and pc.run_metric == "write_bw"
    assert len(pc.matched) == 3 and pc.shape_verdict() != ""
    assert pc.shape_verdict().startswith(("shape ", "not assessed: the run's best is a tie"))


def test_table_option_and_unlinked_studies(tmp_path):
    result = result_of(tmp_path, "kaust-stripe-count", "local", table="wrf-restart")
    assert [g.label for g in result.groups] == ["wrf-restart"]
    with pytest.raises(IolabError, match=r"--table 'nope': kaust-wrf-striping has no such group"):
        result_of(tmp_path / "b", "kaust-stripe-count", "local", table="nope")
    # quickstart is paired with no study: each (table, metric) of the study is its own group
    side = side_of(tmp_path / "c", "quickstart", "local")
    unlinked = compare_study(side, load_study("kaust-wrf-striping", REPO), metric="write_bw")
    assert unlinked.link is None
    assert [g.label for g in unlinked.groups] == ["wrf-restart", "dd-small-file (write_time)",
                                                  "dd-small-file (write_rate)"]


def test_bad_where_and_a_pick_one_table_lacks(tmp_path):
    with pytest.raises(IolabError, match=r"--where 'lustre.stripe_count=four': 'four' is not an integer"):
        result_of(tmp_path, "archer-fpp-vs-ssf", "local", where=["lustre.stripe_count=four"])
    with pytest.raises(IolabError, match=r"--where 'stripes=4': expected COLUMN=VALUE"):
        result_of(tmp_path / "b", "archer-fpp-vs-ssf", "local", where=["stripes=4"])
    # storage is a parameter of KAUST's dd part only: the other tables say so, the dd tables use it
    result = result_of(tmp_path / "c", "kaust-stripe-count", "local", pick=["storage=node_local"])
    wrf, dd_time, dd_rate = result.groups
    assert wrf.comparison is None and "--pick storage=node_local: no case of the run has it" in wrf.error
    assert [p.status for p in dd_time.comparison.pairs] == ["unmatched", "matched"]
