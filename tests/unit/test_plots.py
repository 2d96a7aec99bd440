"""Plots: the default choice from an experiment's axes, report.plots overrides, and the files
(PNG and SVG, axis labels with units, error bars, not-applied markers, deterministic bytes).

Records are built as the ReFrame session writes them, with metrics parsed from real IOR outputs
(tests/golden/publish_data.py).
"""

from __future__ import annotations

import dataclasses
import textwrap

import pytest

from iolab.experiment.load import load_experiment
from iolab.present.plots import make_plots
from iolab.present.plotspec import AGGREGATOR_KEYS, NUM_TASKS, choose, find_axes, log2_axis
from iolab.results import asrun
from iolab.results.run import load_run
from tests.golden.publish_data import experiment, make_run, records

RUN_ID = "20261121T000000Z-0b1e75"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run_of(tmp_path, exp, **kw):
    return load_run(make_run(tmp_path / "results", exp, RUN_ID, records(exp, RUN_ID, **kw)))


def specs_of(run):
    chosen, notes = choose(run)
    return [spec for _table, spec in chosen], notes


def own_experiment(tmp_path, text: str):
    (tmp_path / "experiments").mkdir(exist_ok=True)
    text = textwrap.dedent(text)
    exp_id = text.split("\n", 1)[0].removeprefix("id:").strip()
    path = tmp_path / "experiments" / f"{exp_id}.yaml"
    path.write_text(text)
    return load_experiment(path)


# ----------------------------------------------------------------------------- default choice

def test_scale_varies_gives_bandwidth_against_processes_one_line_per_stripe_setting(tmp_path):
    run = run_of(tmp_path, experiment("archer-fpp-vs-ssf"))
    specs, notes = specs_of(run)
    assert notes == []
    assert [s.metric for s in specs] == ["write_bw", "read_bw"]      # the table's metrics
    spec = specs[0]
    assert (spec.kind, spec.x.keys) == ("line", (NUM_TASKS,))
    series = [a.keys for a in spec.series]
    # the zip group (file per process, POSIX vs collective MPI-IO, block size) is one axis
    assert series == [("api", "block_size", "collective", "file_per_process"),
                      ("lustre.stripe_count",), ("lustre.stripe_size",)]
    assert spec.series[0].shown == ("file_per_process", "api")
    assert "process count varies" in spec.rule


def test_aggregators_vary_gives_bandwidth_against_aggregators(tmp_path):
    run = run_of(tmp_path, experiment("cp2k-aggregators"), effective_cb_nodes=1)
    specs, _ = specs_of(run)
    assert [(s.kind, s.x.keys, s.metric) for s in specs] == [
        ("line", ("mpiio.cb_nodes",), "write_bw"), ("line", ("mpiio.cb_nodes",), "write_total_time")]
    assert "mpiio.cb_nodes" in AGGREGATOR_KEYS


def test_two_parameters_give_a_heatmap_one_gives_a_line(tmp_path):
    run = run_of(tmp_path, experiment("kaust-stripe-count"))
    specs, _ = specs_of(run)
    by_part = {}
    for s in specs:
        by_part.setdefault(s.part, []).append(s)
    shared = by_part["shared-file"][0]
    assert shared.kind == "heatmap"
    assert {shared.x.keys, shared.y.keys} == {("block_size",), ("lustre.stripe_count",)}
    small = by_part["small-files"][0]
    assert (small.kind, small.x.keys) == ("line", ("lustre.stripe_count",))


def test_one_categorical_parameter_gives_bars(tmp_path):
    exp = own_experiment(tmp_path, """\
        id: api-only
        description: POSIX against MPI-IO
        benchmark: ior
        scale: {nodes: 1, tasks_per_node: 4}
        fixed: {transfer_size: 1MiB, block_size: 4MiB}
        matrix:
          api: [POSIX, MPIIO]
        repetitions: 3
        """)
    run = run_of(tmp_path, exp)
    specs, _ = specs_of(run)
    assert [(s.kind, s.x.keys) for s in specs] == [("bar", ("api",)), ("bar", ("api",))]


def test_three_axes_give_bars_against_the_axis_with_most_values(tmp_path):
    """CSC: io_method x stripe count x a zip of five hints (one axis, read from the YAML as run)."""
    run = run_of(tmp_path, experiment("csc-btio-hints"))
    groups = asrun.of(run).zip_groups("main")
    assert groups and "mpiio.cb_config_list" in groups[0]
    specs, _ = specs_of(run)
    spec = specs[0]
    assert spec.kind == "bar"
    assert set(spec.x.keys) == {"mpiio.striping_unit", "mpiio.cb_config_list", "mpiio.romio_cb_write",
                                "mpiio.romio_ds_write", "mpiio.romio_no_indep_rw"}
    assert [a.keys for a in spec.series] == [("io_method",), ("lustre.stripe_count",)]


def test_one_to_one_parameters_fold_into_one_axis_without_the_yaml():
    params = [{"api": "POSIX", "file_per_process": True, "lustre.stripe_count": c} for c in (1, 4)]
    params += [{"api": "MPIIO", "file_per_process": False, "lustre.stripe_count": c} for c in (1, 4)]
    axes = find_axes(params, ["api", "file_per_process", "lustre.stripe_count"])
    assert [a.keys for a in axes] == [("api", "file_per_process"), ("lustre.stripe_count",)]


@pytest.mark.parametrize("values, log2", [
    ([24 * 2 ** k for k in range(10)], True),         # ARCHER's 24 ... 12288 processes
    ([1 << 20, 8 << 20], True),                        # 1 and 8 MiB stripes
    ([1, 2, 8, 24, 48, 64, 96, 192], True),            # CP2K's aggregators: spread over > 16x
    ([2, 4], False),                                   # a factor of 2 only
    ([1, 3, 5], False),
    ([-1, 1, 4], False),                               # stripe count -1 is a category
])
def test_log2_axis_rule(values, log2):
    assert log2_axis(values) is log2


# ------------------------------------------------------------------------------------ overrides

OVERRIDES = """\
id: plot-overrides
description: Shared-file collective writes over stripe counts and aggregators
benchmark: ior
scale: {nodes: 1, tasks_per_node: 4}
fixed: {api: MPIIO, collective: true, transfer_size: 1MiB, block_size: 4MiB}
matrix:
  lustre.stripe_count: [1, 4]
  mpiio.cb_nodes: [1, 2, 4]
repetitions: 3
report:
  metrics: [write_bw]
  plots:
    - {kind: heatmap, x: mpiio.cb_nodes, y: lustre.stripe_count, metric: write_bw,
       title: "Stripe count x aggregators"}
    - {x: mpiio.cb_nodes, y: write_total_time, series: lustre.stripe_count}
    - {x: lustre.stripe_size, y: write_bw}
"""


def test_report_plots_replace_the_defaults(tmp_path):
    exp = own_experiment(tmp_path, OVERRIDES)
    run = run_of(tmp_path, exp, effective_cb_nodes=1)
    specs, notes = specs_of(run)
    assert [(s.kind, s.x.keys, s.metric, s.rule) for s in specs] == [
        ("heatmap", ("mpiio.cb_nodes",), "write_bw", "report.plots"),
        ("line", ("mpiio.cb_nodes",), "write_total_time", "report.plots")]
    assert specs[0].y.keys == ("lustre.stripe_count",) and specs[0].title == "Stripe count x aggregators"
    assert [a.keys for a in specs[1].series] == [("lustre.stripe_count",)]
    assert notes == ["report.plots[2] (line of lustre.stripe_size): lustre.stripe_size does not vary "
                     "in part main"]


def test_override_heatmap_file_marks_cells_and_lowered_requests(tmp_path):
    exp = own_experiment(tmp_path, OVERRIDES)
    run = run_of(tmp_path, exp, effective_cb_nodes=1)
    plots, _ = make_plots(run, tmp_path / "plots")
    heat, line = plots
    svg = heat.files["svg"].read_text()
    assert "Stripe count x aggregators" in svg
    assert "Mean Write Bandwidth (MiB/s)" in svg          # the colour bar names metric and unit
    assert "cb_nodes (requested)" in svg and "Stripe Count" in svg
    assert "†" in svg                                     # cells of cases not applied as requested
    # the line plot annotates each point whose request the MPI library lowered
    line_svg = line.files["svg"].read_text()
    assert line_svg.count("eff. 1") == 4                  # cb_nodes 2 and 4, at two stripe counts
    assert "Write Total Time (s)" in line_svg
    assert any("effective 1" in n for n in line.notes)


# ---------------------------------------------------------------------------------------- files

def test_files_labels_error_bars_and_not_applied_markers(tmp_path):
    run = run_of(tmp_path, experiment("archer-fpp-vs-ssf"))
    plots, notes = make_plots(run, tmp_path / "plots")
    assert notes == [] and len(plots) == 2
    plot = plots[0]
    png, svg = plot.files["png"], plot.files["svg"]
    assert png.name == "main-line-write_bw-by-scale-num_tasks.png"
    assert png.read_bytes().startswith(PNG_MAGIC) and png.stat().st_size > 10_000
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "</svg>" in text
    assert "Write Bandwidth (MiB/s)" in text              # y axis: metric and unit
    assert "Number of Processes" in text                  # x axis
    # legend title names the parameters, including the stripe size with its unit
    assert "File per Process / API / Stripe Count / Stripe Size (MiB)" in text
    assert 'id="errorbar-0"' in text and 'id="errorbar-7"' in text   # one set of error bars per line
    assert 'id="not-applied-0"' in text                   # hollow markers: striping not applied
    assert "hollow: a setting was not applied as requested" in text
    assert "all (-1)" in text                             # stripe count -1 named in the legend
    assert plot.notes[0] == "error bars: 95% confidence interval of the mean (Student t)"
    assert "<dc:date>" not in text


def test_output_is_deterministic(tmp_path):
    run = run_of(tmp_path, experiment("archer-fpp-vs-ssf"))
    a, _ = make_plots(run, tmp_path / "a")
    b, _ = make_plots(run, tmp_path / "b")
    for pa, pb in zip(a, b):
        for fmt in ("png", "svg"):
            assert pa.files[fmt].read_bytes() == pb.files[fmt].read_bytes(), (pa.spec.name, fmt)


def test_bars_hatch_not_applied_cases_and_show_hint_sets(tmp_path):
    run = run_of(tmp_path, experiment("csc-btio-hints"))
    plots, _ = make_plots(run, tmp_path / "plots")
    text = plots[0].files["svg"].read_text()
    assert "MPI-IO hint set" in text and "none set" in text and "cb_config_list=*:4" in text
    assert "I/O Method / Stripe Count" in text            # legend title
    assert 'id="errorbar-3"' in text
    assert "hatched: a setting was not applied as requested" in text


def test_failed_cases_and_single_repetitions(tmp_path):
    """A case without successful repetitions is left out; one repetition has no error bar."""
    exp = experiment("cp2k-aggregators")
    recs = records(exp, RUN_ID, reps=1)
    recs[0] = dataclasses.replace(recs[0], status="failed", metrics=[], error="ior exited with status 1")
    path = make_run(tmp_path / "results", exp, RUN_ID, recs)
    plots, _ = make_plots(load_run(path), tmp_path / "plots")
    assert plots and "no error bar: fewer than 2 repetitions (n too small)" in plots[0].notes


def test_without_matplotlib_there_are_no_plots_and_a_note(tmp_path, monkeypatch):
    import importlib.util

    from iolab.present import plots as plots_module

    run = run_of(tmp_path, experiment("cp2k-aggregators"))
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    made, notes = make_plots(run, tmp_path / "plots")
    assert made == [] and notes == [plots_module.MISSING_MATPLOTLIB]
    assert not (tmp_path / "plots").exists()


def test_too_many_series_are_pooled_and_too_many_bars_cut_and_the_notes_say_so(tmp_path):
    """Three axes give bars; 7 x 6 combinations of the other two are more series than a plot can
    tell apart (MAX_SERIES): one bar per x value pools every case there, and the notes say so."""
    from iolab.present import plots as plotmod

    exp = own_experiment(tmp_path, """\
        id: many-series
        description: more series than a legend can hold
        benchmark: ior
        scale: {nodes: 1, tasks_per_node: 2}
        fixed: {transfer_size: 1MiB, api: POSIX}
        matrix:
          block_size: [1MiB, 2MiB, 4MiB, 8MiB, 16MiB, 32MiB, 64MiB, 128MiB]
          segments: [1, 2, 3, 4, 5, 6, 7]
          iterations: [1, 2, 3, 4, 5, 6]
        repetitions: 2
        """)
    run = run_of(tmp_path, exp, reps=2)
    plots, _ = make_plots(run, tmp_path / "plots", ["write_bw"])
    (plot,) = plots
    assert plot.spec.kind == "bar" and plot.spec.x.keys == ("block_size",)
    pooled = [n for n in plot.notes if "are more than 40 a plot can tell apart" in n]
    assert pooled and pooled[0].startswith("42 series (Iterations / Segments)")
    text = plot.files["svg"].read_text()
    assert 'id="series-0"' in text and 'id="series-1"' not in text    # one pooled series
    # each bar's mean is the mean over every repetition of every case at its block size
    table = next(t for t, s in plotmod.choose(run, ["write_bw"])[0])
    pts = plotmod.points(table, "write_bw", run)
    first = [p for p in pts if p.params["block_size"] == 1 << 20]
    pool = plotmod._pool_series(pts, plot.spec.x)[0]
    assert pool.summary.n == 2 * len(first) == 84
    # bars past MAX_BARS: the first x values only, said in the notes
    old = plotmod.MAX_BARS
    try:
        plotmod.MAX_BARS = 5
        (cut,), _ = make_plots(run, tmp_path / "cut", ["write_bw"])
    finally:
        plotmod.MAX_BARS = old
    assert any("8 bars are more than 5 a plot can show: the first 5 of 8 values of Block Size" in n
               for n in cut.notes)


def test_bandwidth_error_bars_stay_at_or_above_zero_and_the_note_says_so():
    from iolab import stats
    from iolab.present.plots import CLIP_NOTE, Point, _yerr

    wide = Point("a", {}, stats.summarize([10.0, 1000.0]), [])     # 505 ± 6290: below 0
    tight = Point("b", {}, stats.summarize([100.0, 101.0]), [])
    notes: list[str] = []
    below, above = _yerr([wide, tight], "MiB/s", notes)
    assert wide.summary.mean - wide.summary.ci_half_width < 0
    assert below[0] == wide.summary.mean and above[0] == wide.summary.ci_half_width
    assert below[1] == above[1] == tight.summary.ci_half_width
    assert notes == [CLIP_NOTE]
    notes = []
    assert _yerr([tight], "s", notes)[0] == [tight.summary.ci_half_width] and notes == []
    # a quantity that may be negative keeps its interval
    assert _yerr([wide], "", notes)[0] == [wide.summary.ci_half_width] and notes == []


def test_a_campaign_without_mpiio_axes_is_plotted_from_its_digest(tmp_path, monkeypatch, records_cache):
    """The plots of a run read from its digest decode no record when no axis is an MPI-IO hint
    (whose values in effect only the records hold): a fio campaign's 100,000 records were all
    decoded for two plots."""
    pytest.importorskip("matplotlib")
    import shutil
    from pathlib import Path

    from iolab.present.plots import make_plots
    from iolab.results import recordcache
    from iolab.results.record import Record

    src = next((Path(__file__).parents[1] / "data" / "runs" / "855c081" / "quickstart").iterdir())
    run_path = tmp_path / "results" / "quickstart" / src.name
    shutil.copytree(src, run_path)
    monkeypatch.setattr(recordcache, "CACHE_MIN_BYTES", 0)
    recordcache.write_run_digest(run_path)
    want, _ = make_plots(load_run(run_path), tmp_path / "decoded")
    assert want
    run = load_run(run_path)
    assert run._records is None                     # read from its digest

    def decoded(*_a, **_k):
        raise AssertionError("a record was read")
    monkeypatch.setattr(Record, "from_json", decoded)
    run._later = decoded                            # from the file or the cache alike
    plots, _ = make_plots(run, tmp_path / "digest")
    assert [p.spec.name for p in plots] == [p.spec.name for p in want]
    for a, b in zip(plots, want):
        assert a.files["svg"].read_bytes() == b.files["svg"].read_bytes()
