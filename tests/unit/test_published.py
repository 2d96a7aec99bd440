"""Published studies as data: loading, validation, line-up with a run and the shape verdict."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from iolab.benchmarks.ior import parse_any
from iolab.analysis.compare import Side
from iolab.analysis.published.compare import compare_published, published_blocks, same_machine_studies
from iolab.errors import IolabError
from iolab.analysis.published.study import DEFAULT, list_studies, load_study, parse_study
from iolab.results.record import Manifest
from iolab.results.rundir import RunDir
from iolab.analysis import doc

REPO = Path(__file__).resolve().parents[2]
IOR = REPO / "tests" / "data" / "ior"
MiB = 1024 * 1024
CITATION = """\
# title: A study
# url: https://example.org/study
# table: Table 2
# transcription: typed by hand from the table
"""


def _shown(pc) -> str:
    """A comparison as `iolab compare` and the report page show it (published_blocks)."""
    return doc.markdown(published_blocks(pc))


def study(tmp_path, body: str, name: str = "toy", citation: str = CITATION):
    path = tmp_path / f"{name}.csv"
    path.write_text(citation + textwrap.dedent(body).lstrip("\n"))
    return parse_study(path.read_text(), path)


# ----------------------------------------------------------------------------- shipped studies

def test_every_shipped_study_loads_with_a_citation():
    names = list_studies(REPO)
    assert {"archer-fpp-ssf", "csc-btio-mahti", "kaust-wrf-striping", "cp2k-aggregators",
            "lustre-adio-talk"} <= set(names)
    for name in names:
        s = load_study(f"published:{name}", REPO)
        for key in ("title", "url", "table", "transcription", "seed"):
            assert s.citation[key], (name, key)
        assert s.rows, name


def test_archer_tables_every_row():
    s = load_study("archer-fpp-ssf", REPO)
    assert len(s.rows) == 9 + 10 + 10 + 9 + 9
    fpp = [r for r in s.rows if r.params["file_per_process"]]
    assert [r.params["scale.num_tasks"] for r in fpp] == [24, 48, 96, 192, 384, 768, 1536, 3072, 6144]
    assert [r.value for r in fpp][-2:] == [13426, 14425]
    assert {r.params["lustre.stripe_count"] for r in fpp} == {1}
    assert "api" not in fpp[0].params           # Fortran writes: the study states no IOR API
    assert fpp[0].descriptive == {"note": "unformatted Fortran writes"}
    keys = ("scale.num_tasks", "lustre.stripe_count", "lustre.stripe_size")
    by_key = {tuple(r.params[k] for k in keys): r.value for r in s.rows if not r.params["file_per_process"]}
    assert by_key[(12288, -1, 8 * MiB)] == 8205
    assert by_key[(6144, -1, 8 * MiB)] == 15946
    assert by_key[(24, -1, MiB)] == 662
    assert by_key[(6144, 4, MiB)] == 946
    assert {r.metric for r in s.rows} == {"write_bw_max"} and {r.unit for r in s.rows} == {"MiB/s"}


def test_csc_btio_settings_attached_to_each_number():
    s = load_study("csc-btio-mahti", REPO)
    values = {r.value: r for r in s.rows}
    assert set(values) == {1292.96, 2939.85, 3699.31, 3500, 4667, 1820, 4565, 9520, 7772}
    r = values[4667]
    assert r.params["lustre.stripe_count"] == 2 and r.params["mpiio.striping_unit"] == MiB
    assert r.params["mpiio.romio_cb_write"] == "enable" and r.params["mpiio.romio_no_indep_rw"] is True
    assert r.params["mpiio.romio_ds_write"] == "disable" and r.params["mpiio.cb_config_list"] == DEFAULT
    assert values[3699.31].params["mpiio.cb_config_list"] == "*:2"
    assert values[9520].params["io_method"] == "pnetcdf_nonblocking"
    assert values[1292.96].params["io_method"] == "pnetcdf_blocking"
    assert {tuple(r.params["grid"]) for r in s.rows} == {(2048, 1024, 256)}
    assert {(r.params["time_steps"], r.params["scale.nodes"], r.params["scale.tasks_per_node"])
            for r in s.rows} == {(5, 16, 16)}
    assert values[9520].params["mpiio.cb_config_list"] == "*:4"
    assert values[1292.96].params["mpiio.striping_unit"] == DEFAULT


def test_studies_with_several_tables_group_their_rows():
    kaust = load_study("kaust-wrf-striping", REPO)
    assert kaust.groups() == [("wrf-restart", "restart_write_time"), ("dd-small-file", "write_time"),
                              ("dd-small-file", "write_rate")]
    assert [(r.params["lustre.stripe_count"], r.value, r.unit) for r in kaust.rows[:2]] == [
        (1, 674.26, "s"), (144, 10.35, "s")]
    assert "taken from the issue" not in kaust.path.read_text()
    cp2k = load_study("cp2k-aggregators", REPO)
    assert [(r.params["mpiio.cb_nodes"], r.value) for r in cp2k.rows] == [
        (1, 893.6), (2, 175.3), (8, 434.2), (24, 601.5), (48, 418.6), (64, 1161.6), (96, 186.4), (192, 436.4)]
    assert "Figures 1 and 2" in cp2k.citation["missing"] and "30 %" in cp2k.citation["stated"]
    adio = load_study("lustre-adio-talk", REPO)
    assert [t for t, _ in adio.groups()] == ["adio-driver-old", "adio-driver-new", "flash-io-hdf5",
                                             "wrf-mode-hdf5", "hdf5-open"]
    assert "table" not in adio.param_columns and "note" not in adio.param_columns


# ---------------------------------------------------------------------------------- validation

def test_missing_citation_names_the_file(tmp_path):
    with pytest.raises(IolabError, match=r"bad\.csv:1: citation header lacks url, transcription"):
        study(tmp_path, "lustre.stripe_count,metric,value,unit\n1,write_bw,1,MiB/s\n", "bad",
              "# title: x\n# table: t\n")


def test_unknown_column_suggests_the_nearest(tmp_path):
    with pytest.raises(IolabError, match=r"toy\.csv:5: unknown column 'lustre.stripe_cont' "
                                         r"\(did you mean 'lustre.stripe_count'\?\)"):
        study(tmp_path, "lustre.stripe_cont,metric,value,unit\n1,write_bw,1,MiB/s\n")


@pytest.mark.parametrize("row, message", [
    ("1,write_bw,fast,MiB/s", r"toy\.csv:6: value 'fast' is not a number"),
    ("four,write_bw,1,MiB/s", r"toy\.csv:6: lustre.stripe_count: 'four' is not an integer"),
    ("1,write_bw,1", r"toy\.csv:6: 3 cells for 4 columns"),
    ("1,,1,MiB/s", r"toy\.csv:6: metric and unit must not be empty"),
])
def test_bad_rows_name_the_line(tmp_path, row, message):
    with pytest.raises(IolabError, match=message):
        study(tmp_path, f"lustre.stripe_count,metric,value,unit\n{row}\n")


def test_value_columns_are_required_and_sizes_typed(tmp_path):
    with pytest.raises(IolabError, match="no 'unit' column"):
        study(tmp_path, "lustre.stripe_count,metric,value\n1,write_bw,1\n")
    s = study(tmp_path, "lustre.stripe_size,mpiio.romio_ds_write,mpiio.my_hint,metric,value,unit\n"
                        "4MiB,-,x,write_bw,1,MiB/s\n1048576,,7,write_bw,2,MiB/s\n")
    assert s.rows[0].params == {"lustre.stripe_size": 4 * MiB, "mpiio.romio_ds_write": DEFAULT,
                                "mpiio.my_hint": "x"}
    assert s.rows[1].params == {"lustre.stripe_size": MiB, "mpiio.my_hint": 7}
    with pytest.raises(IolabError, match="romio_ds_write: 'off' is not one of"):
        study(tmp_path, "mpiio.romio_ds_write,metric,value,unit\noff,write_bw,1,MiB/s\n")


def test_unknown_study_lists_the_known(tmp_path):
    with pytest.raises(IolabError, match="no published study 'nope'.*known: .*archer-fpp-ssf"):
        load_study("published:nope", REPO)


# ------------------------------------------------------------------------------ runs and shape

def metrics_of(*names):
    return [[m.as_dict() for m in parse_any(IOR / n).metrics] for n in names]


# Two real outputs per stripe count; write_bw means: 1 -> 1393.09, 4 -> 1501.01, 16 -> 5554.19,
# -1 -> 2117.79 (ordering 1 < 4 < -1 < 16)
STRIPES = {1: ("ior_hdf5_coll_4r_t512k_b8m.txt", "ior_mpiio_coll_4r_t256k_b8m.summary.json"),
           4: ("ior_mpiio_indep_4r_t64k_b4m.txt", "ior_hdf5_coll_4r_t512k_b8m.summary.json"),
           16: ("ior_posix_fpp_4r_t1m_b16m.summary.json", "ior_posix_fpp_4r_t1m_b16m.txt"),
           -1: ("ior_ncmpi_4r_t1m_b8m.summary.json", "ior_ncmpi_4r_t1m_b8m.txt")}


def stripe_run(tmp_path, manifest=None, extra_params=None, stripes=STRIPES) -> Side:
    run = RunDir.create(tmp_path / "results", "toy", "run1", {"experiment": "toy", **(manifest or {})})
    for count, files in stripes.items():
        for variant, params in enumerate(extra_params or [{}]):
            for rep, mets in enumerate(metrics_of(*files), 1):
                run.append({"experiment": "toy", "run_id": "run1", "case_id": f"c{count}v{variant}",
                            "part": "main", "benchmark": "ior", "repetition": rep, "status": "ok",
                            "params": {"api": "MPIIO", "collective": True, "scale.nodes": 1,
                                       "scale.tasks_per_node": 4, "lustre.stripe_count": count, **params},
                            "varied": ["lustre.stripe_count"], "metrics": mets, "flags": []})
    return Side.load(run.path, "run")


def toy_study(tmp_path, values: dict[int, float]):
    rows = "".join(f"{c},96,write_bw,{v},MiB/s\n" for c, v in values.items())
    return study(tmp_path, "lustre.stripe_count,scale.num_tasks,metric,value,unit\n" + rows)


def test_shape_reproduced(tmp_path):
    pc = compare_published(stripe_run(tmp_path), toy_study(tmp_path, {1: 100, 4: 300, -1: 400, 16: 500}),
                           ignore=["scale.num_tasks"])
    assert len(pc.matched) == 4
    m1 = next(p for p in pc.pairs if p.row.params["lustre.stripe_count"] == 1)
    # (1382.13 + 1404.0598) / 2 = 1393.0949; against 100 MiB/s published
    assert m1.run.mean == pytest.approx(1393.0949) and m1.ratio == pytest.approx(13.930949)
    assert pc.rho() == pytest.approx(1.0)
    assert pc.best_status() == "agrees"
    assert pc.shape_verdict() == ("shape reproduced: stripe count 16 is best in both; ordering agrees, "
                                  "ρ = 1.00 over 4 rows")
    text = _shown(pc)
    assert "rows: 4 matched, 0 without a matching case, 0 ambiguous" in text
    assert ("best of the matched rows: study stripe count 16 (500 MiB/s); run stripe count 16 "
            "(5554.19 MiB/s)") in text
    assert "ordering: Spearman's ρ = 1.00 over n = 4 rows (agrees at ρ ≥ 0.7)" in text
    assert "verdict: shape reproduced: stripe count 16 is best in both" in text
    assert "absolute: not assessed: hardware differs" in text
    assert "| Run / Published |" in text and "| 13.93 |" in text and "Reproduced" not in text


def test_shape_partly_and_not_reproduced(tmp_path):
    side = stripe_run(tmp_path)
    # study order 1 < 4 < 16 < -1, run 1 < 4 < -1 < 16: d^2 = 0+0+1+1 = 2, rho = 1 - 12/60 = 0.8
    partly = compare_published(side, toy_study(tmp_path, {1: 100, 4: 300, -1: 600, 16: 500}),
                               ignore=["scale.num_tasks"])
    assert partly.rho() == pytest.approx(0.8) and partly.best_status() == "differs"
    assert partly.shape_verdict() == ("shape partly reproduced: the best setting differs (study: stripe "
                                      "count -1; run: stripe count 16); ordering agrees, ρ = 0.80 over "
                                      "4 rows")
    reverse = compare_published(side, toy_study(tmp_path, {1: 500, 4: 400, -1: 300, 16: 100}),
                                ignore=["scale.num_tasks"])
    assert reverse.rho() == pytest.approx(-1.0)
    assert reverse.shape_verdict() == ("shape not reproduced: the best setting differs (study: stripe "
                                       "count 1; run: stripe count 16); ordering differs, ρ = -1.00 "
                                       "over 4 rows")


def test_fewer_than_three_rows_say_so(tmp_path):
    pc = compare_published(stripe_run(tmp_path), toy_study(tmp_path, {1: 100, 16: 500, 8: 1}),
                           ignore=["scale.num_tasks"])
    assert len(pc.matched) == 2 and pc.best_status() == "agrees"
    assert pc.shape_verdict() == ("not assessed: 2 matched rows are too few for a verdict (it needs "
                                  "at least 3)")
    text = _shown(pc)
    assert "rows: 2 matched, 1 without a matching case, 0 ambiguous" in text
    assert "best of the matched rows: study stripe count 16 (500 MiB/s); run stripe count 16" in text
    assert "ordering: not tested (n = 2 matched rows" in text


def test_lower_is_better_for_times(tmp_path):
    # the study times (lower is better) against the run's bandwidths (higher is better)
    s = study(tmp_path, "lustre.stripe_count,metric,value,unit\n1,io_time,674.26,s\n4,io_time,300,s\n"
                        "-1,io_time,40,s\n16,io_time,10.35,s\n")
    pc = compare_published(stripe_run(tmp_path), s, metric="write_bw")
    assert pc.study_better == "lower" and pc.run_better == "higher"
    assert pc.rho() == pytest.approx(1.0) and pc.best_status() == "agrees"
    assert not pc.comparable_units
    assert "Run / Published" not in _shown(pc)


def test_same_machine_reports_absolute_agreement(tmp_path):
    s = toy_study(tmp_path, {1: 1400, 4: 1500, -1: 2100, 16: 5500})
    side = stripe_run(tmp_path, {"system_extras": {"same_machine_as": ["toy"]}})
    assert same_machine_studies(side.manifest) == ["toy"]
    pc = compare_published(side, s, ignore=["scale.num_tasks"])
    assert pc.same_machine
    text = _shown(pc)
    # stripe 1: |1393.0949 / 1400 - 1| = 0.49%; worst is stripe 16: 5554.1855 / 5500 = 0.99%
    assert "| within 0.5% |" in text
    assert "verdict (absolute, same machine): reproduced within 1.0% on every matched row" in text
    other = Manifest.from_json({"system_extras": {"same_machine_as": "other"}})
    assert same_machine_studies(other) == ["other"]
    assert same_machine_studies(Manifest.from_json({"system": "x"})) == []


def test_unmatched_ambiguous_and_defaults(tmp_path):
    # The run varies the API; a study row that does not state it matches two cases: ambiguous.
    side = stripe_run(tmp_path, extra_params=[{"api": "MPIIO"}, {"api": "POSIX"}],
                      stripes={1: STRIPES[1], 4: STRIPES[4]})
    s = study(tmp_path, "lustre.stripe_count,api,metric,value,unit\n1,,write_bw,1,MiB/s\n"
                        "4,POSIX,write_bw,2,MiB/s\n8,POSIX,write_bw,3,MiB/s\n")
    pc = compare_published(side, s)
    assert [p.status for p in pc.pairs] == ["ambiguous", "matched", "unmatched"]
    assert "2 cases match" in pc.pairs[0].notes[0]
    # '-' matches only a case that leaves the setting unset
    hint = study(tmp_path, "lustre.stripe_count,mpiio.cb_nodes,metric,value,unit\n"
                           "1,-,write_bw,1,MiB/s\n4,2,write_bw,2,MiB/s\n")
    pc = compare_published(stripe_run(tmp_path / "b", stripes={1: STRIPES[1], 4: STRIPES[4]}), hint)
    assert [p.status for p in pc.pairs] == ["matched", "unmatched"]


def test_where_and_ignore_against_the_archer_tables(tmp_path):
    # a small run of the guide's shared-file settings (4 ranks), set against its 24-process rows
    run = RunDir.create(tmp_path / "results", "archer", "run1", {"experiment": "archer"})
    files = ("ior_mpiio_coll_4r_t256k_b8m.summary.json", "ior_mpiio_coll_4r_t256k_b8m.txt")
    for count in (-1, 4):
        for size in (1, 8):
            for rep, mets in enumerate(metrics_of(*files), 1):
                run.append({"experiment": "archer", "run_id": "run1", "case_id": f"c{count}s{size}",
                            "part": "main", "benchmark": "ior", "repetition": rep, "status": "ok",
                            "params": {"api": "MPIIO", "collective": True, "file_per_process": False,
                                       "scale.nodes": 1, "scale.tasks_per_node": 4, "block_size": 4 * MiB,
                                       "lustre.stripe_count": count, "lustre.stripe_size": size * MiB},
                            "varied": ["lustre.stripe_count", "lustre.stripe_size"], "metrics": mets,
                            "flags": ["striping not applied: ext4: no striping"]})
    side = Side.load(run.path, "run")
    archer = load_study("archer-fpp-ssf", REPO)
    pc = compare_published(side, archer, where=["scale.num_tasks=24"],
                           ignore=["scale.num_tasks", "scale.tasks_per_node", "block_size"])
    matched = {(p.row.params["lustre.stripe_count"], p.row.params["lustre.stripe_size"] // MiB): p.row.value
               for p in pc.matched}
    assert matched == {(-1, 1): 662, (-1, 8): 691, (4, 1): 862, (4, 8): 915}
    assert [p.status for p in pc.pairs].count("unmatched") == 1        # the FPP row
    assert all("run: striping not applied: ext4: no striping" in p.notes for p in pc.matched)
    text = _shown(pc)
    assert "Number of Processes (ignored)" in text and "rows where scale.num_tasks=24" in text
    # the run's four cases have the same values: its best setting is a tie, not an agreement
    assert pc.best_status() == "tied"
    with pytest.raises(IolabError, match="--ignore nodes: not a parameter column"):
        compare_published(side, archer, ignore=["nodes"])
    with pytest.raises(IolabError, match="run run1 has no metric 'write_iops'"):
        compare_published(side, archer, metric="write_iops")
    empty = study(tmp_path, "lustre.stripe_count,metric,value,unit\n", "empty",
                  CITATION + "# missing: every row\n")
    with pytest.raises(IolabError, match="empty has no rows to compare: every row"):
        compare_published(side, empty)
