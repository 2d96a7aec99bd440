"""Golden tests: rendered shims and report tables. Regenerate with IOLAB_UPDATE_GOLDEN=1."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from iolab.benchmarks.ior import parse_any
from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand, matrix_order, varied_keys
from iolab.rfm.shims import render_shim
from iolab.analysis.report import build_tables, render
from iolab.results.record import Observed, Provenance, Record
from iolab.results.rundir import RunDir
from iolab.results.run import load_run
from tests.golden.golden import check_golden

HERE = Path(__file__).parent
DATA = HERE.parent / "data" / "ior"

ARCHER_LIKE = """\
id: golden-study
description: Shared file vs file per process over stripe counts
benchmark: ior
scale: {nodes: 1, tasks_per_node: [2, 4]}
fixed: {transfer_size: 1MiB, block_size: 8MiB}
zip:
  api: [POSIX, MPIIO]
  file_per_process: [true, false]
  collective: [false, true]
matrix:
  lustre.stripe_count: [1, 4]
repetitions: 2
"""



@pytest.fixture
def experiment(tmp_path):
    (tmp_path / "experiments").mkdir()
    yaml_path = tmp_path / "experiments" / "golden-study.yaml"
    yaml_path.write_text(ARCHER_LIKE)
    return load_experiment(yaml_path)


def test_shim(experiment, tmp_path):
    generated = tmp_path / "reframe" / "generated"
    generated.mkdir(parents=True)
    text = render_shim(experiment.path, experiment.id, experiment.sha256, generated)
    check_golden("golden_study_shim.py.txt", text)


NOT_APPLIED = {"fs_type": "ext4", "requested": {"stripe_count": 1}, "applied": False,
               "reason": "ext4: no striping"}


def _records(experiment, run_id):
    """Records as the ReFrame session writes them, with metrics from real recorded IOR outputs."""
    summaries = sorted(DATA.glob("ior_*_4r_*.summary.json"))
    texts = sorted(p for p in DATA.glob("ior_*_4r_*.txt") if not p.name.endswith("_json.txt"))
    outputs = [parse_any(p) for p in summaries + texts]
    cases = expand(experiment)
    varied = varied_keys(cases)
    recs = []
    for i, case in enumerate(cases):
        for rep in (1, 2):
            parsed = outputs[(2 * i + rep) % len(outputs)]
            recs.append(Record(
                experiment=experiment.id, run_id=run_id, case_id=case.case_id, part=case.part,
                benchmark="ior", repetition=rep, params=case.params, varied=varied, status="ok",
                metrics=list(parsed.metrics), observed=Observed.from_json(dict(lustre=NOT_APPLIED))))
    recs[-1] = dataclasses.replace(recs[-1], status="failed", metrics=[], error="ior exited with status 1")
    return recs


def test_tables(experiment, tmp_path):
    run_id = "20261121T000000Z-abcdef"
    run = _run(tmp_path, experiment, run_id, _records(experiment, run_id))
    # rows in the matrix's order, which the run's records were written in here too
    tables = build_tables(load_run(run.path).records, order=matrix_order(experiment))
    check_golden("golden_study_table.md", render(tables, "md"))
    check_golden("golden_study_table.csv", render(tables, "csv"))


# Five repetitions per case from real outputs: a tight group (write_bw 1382 to 1578 MiB/s) with, for
# some cases, one far value (7882 MiB/s, the POSIX file-per-process run): CIs, CVs, noisy cells and
# outliers all show.
TIGHT = ["ior_hdf5_coll_4r_t512k_b8m.summary.json", "ior_mpiio_indep_4r_t64k_b4m.summary.json",
         "ior_mpiio_coll_4r_t256k_b8m.txt", "ior_hdf5_coll_4r_t512k_b8m.txt"]
FAR = "ior_posix_fpp_4r_t1m_b16m.summary.json"


def _stats_records(experiment, run_id, shift=0, version="4.0.0"):
    cases = expand(experiment)
    varied = varied_keys(cases)
    recs = []
    for i, case in enumerate(cases):
        files = [TIGHT[(i + shift + k) % len(TIGHT)] for k in range(4)]
        files.append(FAR if i % 3 == 0 else TIGHT[(i + shift) % len(TIGHT)])
        for rep, name in enumerate(files, 1):
            parsed = parse_any(DATA / name)
            recs.append(Record(
                experiment=experiment.id, run_id=run_id, case_id=case.case_id, part=case.part,
                benchmark="ior", repetition=rep, params=case.params, varied=varied, status="ok",
                metrics=list(parsed.metrics),
                observed=Observed.from_json(dict(lustre=NOT_APPLIED if i == 5 else None)),
                provenance=Provenance(extra={"binary": {"name": "ior", "version": version}})))
    return recs


def _run(tmp_path, experiment, run_id, records, **manifest):
    run = RunDir.create(tmp_path / "results", experiment.id, run_id,
                        {"experiment": experiment.id, **manifest})
    for rec in records:
        run.append(rec)
    return run


def test_table_with_statistics(experiment, tmp_path):
    run_id = "20261121T000000Z-5e7e75"
    run = _run(tmp_path, experiment, run_id, _stats_records(experiment, run_id))
    tables = build_tables(load_run(run.path).records, ["write_bw", "write_total_time"],
                          order=matrix_order(experiment))
    check_golden("golden_study_stats_table.md", render(tables, "md"))
    check_golden("golden_study_stats_table.csv", render(tables, "csv"))


def test_compare_markdown(experiment, tmp_path):
    from iolab.analysis.compare import Side, compare_by_param, compare_runs, render_comparison

    a_id, b_id = "20261121T000000Z-aaaaaa", "20261122T000000Z-bbbbbb"
    # the experiment as run in each manifest: its matrix orders the rows
    a = _run(tmp_path, experiment, a_id, _stats_records(experiment, a_id), system="alpha:compute",
             experiment_yaml=ARCHER_LIKE)
    b = _run(tmp_path, experiment, b_id, _stats_records(experiment, b_id, shift=1, version="4.0.1"),
             system="beta:compute", spack_lock_sha256="0" * 64, experiment_yaml=ARCHER_LIKE)
    sa, sb = Side.load(a.path, "A"), Side.load(b.path, "B")
    text = render_comparison(compare_runs(sa, sb, ["write_bw"]))
    by_param = compare_by_param(Side.load(a.path, "run"), "lustre.stripe_count", "1", ["write_bw"])
    text += "\n" + render_comparison(by_param)
    check_golden("golden_study_compare.md", text)


def test_published_markdown(experiment, tmp_path):
    """The 4-process cases of the golden run against the ARCHER guide's 24-process rows."""
    from iolab.analysis.compare import Side
    from iolab.analysis.published.compare import compare_published, published_blocks
    from iolab.analysis import doc
    from iolab.analysis.published.study import load_study

    run_id = "20261121T000000Z-a4c4e7"
    recs = [r for r in _stats_records(experiment, run_id) if r.params["scale.tasks_per_node"] == 4]
    run = _run(tmp_path, experiment, run_id, recs, system="alpha:compute")
    study = load_study("archer-fpp-ssf", HERE.parents[1])
    pc = compare_published(Side.load(run.path, "run"), study,
                           where=["scale.num_tasks=24", "lustre.stripe_size=1MiB"],
                           ignore=["scale.num_tasks", "scale.tasks_per_node", "block_size",
                                   "lustre.stripe_size"])
    check_golden("golden_study_published.md", doc.markdown(published_blocks(pc)))
