"""Chains of runs (`iolab resume`): which jobs a continuation runs, how a chain reads as one
result set, and what counts as a change."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from iolab.campaigns import campaign
from iolab.errors import IolabError
from iolab.results.chain import chain_paths
from iolab.results import notes as run_notes
from iolab.results import state as run_state
from iolab.results.combine import load_chain, pool_runs
from iolab.results.run import run_of
from tests.golden.publish_data import REPO, experiment, make_run, records

A, B, C = "20261121T000000Z-aaaaaa", "20261121T010000Z-bbbbbb", "20261121T020000Z-cccccc"


def _plan(recs):
    return [{"part": r.part, "case_id": r.case_id, "repetition": r.repetition, "system": "local:default"}
            for r in recs]


def test_jobs_to_resume_and_the_chain_as_one_result_set(tmp_path):
    exp = experiment("archer-fpp-vs-ssf")
    results = tmp_path / "results"
    recs = records(exp, A, reps=1)[:4]
    first = [recs[0], replace(recs[1], status="failed", metrics=[], error="ior exited with status 1"),
             replace(recs[2], status="aborted", metrics=[], error="interrupted by SIGTERM")]
    # recs[3]: planned, never recorded
    make_run(results, exp, A, first, planned=_plan(recs), finished={"complete": False})
    chain = load_chain(results / exp.id / A)
    assert chain.sources is None and run_state.of(chain).state == "incomplete"
    assert campaign.jobs_to_resume(chain) == [r.job for r in recs[1:]]
    assert campaign.jobs_to_resume(chain, failed_only=True) == [recs[1].job, recs[2].job]
    assert campaign.jobs_to_resume(chain, missing_only=True) == [recs[3].job]

    # a continuation re-runs the failed one ok; the aborted one fails again
    second = [replace(recs[1], run_id=B), replace(recs[2], run_id=B, status="failed", metrics=[],
                                                 error="ior exited with status 1")]
    make_run(results, exp, B, second, planned=_plan(recs[1:3]), finished={"complete": True},
             parent=A)
    paths = chain_paths(results / exp.id / A)
    assert [p.name for p in paths] == [A, B] and chain_paths(results / exp.id / B) == paths
    chain = load_chain(results / exp.id / B)
    assert [r.run_id for r in chain.sources.runs] == [A, B] and chain.sources.superseded == 1
    assert [(r.run_id, r.status) for r in chain.records if r.case_id == recs[1].case_id] == [(B, "ok")]
    assert [r.status for r in chain.records if r.case_id == recs[2].case_id] == ["aborted", "failed"]
    assert chain.reading.missing == [recs[3].job] and run_state.of(chain).state == "incomplete"
    assert any("as one result set" in n and "1 failed or aborted" in n for n in run_notes.of(chain))
    assert campaign.jobs_to_resume(chain) == [recs[2].job, recs[3].job]


def test_nothing_to_resume_without_a_plan(tmp_path):
    exp = experiment("archer-fpp-vs-ssf")
    make_run(tmp_path / "results", exp, A, records(exp, A, reps=1)[:2])
    with pytest.raises(IolabError, match="no plan in its manifest"):
        campaign.jobs_to_resume(load_chain(tmp_path / "results" / exp.id / A))


def test_a_read_takes_its_write_along(tmp_path):
    exp = experiment("lustre-adio-io-size")
    recs = records(exp, A, reps=1)
    run = run_of(recs, {"experiment_yaml": exp.text, "experiment": exp.id, "profile": "local"})
    reads = [r for r in recs if r.params.get("kernel") == "read" or r.params.get("write") is False]
    assert reads, "the experiment has read cases"
    jobs, why = campaign.with_producers(run, [reads[0].job])
    assert len(jobs) == 2 and why and why[0].startswith("write case ")


def test_changes_name_the_yaml_difference(tmp_path, monkeypatch):
    # only the YAML differs: no IOR on PATH whose binary would differ from the recorded one
    # (CI has the Spack-built IOR first on PATH)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("IOLAB_SPACK_ENV", "")
    exp = experiment("archer-fpp-vs-ssf")
    project = tmp_path / "project"
    (project / "experiments").mkdir(parents=True)
    path = make_run(tmp_path / "results", exp, A, records(exp, A, reps=1)[:1])
    (project / "experiments" / f"{exp.id}.yaml").write_text(exp.text)
    run = load_chain(path)
    assert campaign.changes(run, project) == []
    changed = exp.text.replace("repetitions: 3", "repetitions: 5")
    (project / "experiments" / f"{exp.id}.yaml").write_text(changed)
    (change,) = campaign.changes(run, project)
    assert "changed since run" in change and "-repetitions: 3; +repetitions: 5" in change
    assert campaign.config_for(run, REPO)[0].name == "local.py"


def test_repetitions_pool_across_runs_where_provenance_agrees(tmp_path, monkeypatch, capsys):
    from iolab.cli import main

    exp = experiment("archer-fpp-vs-ssf")
    results = tmp_path / "results"
    make_run(results, exp, A, records(exp, A, reps=2))
    other = records(exp, B, reps=2)
    odd = other[0].case_id
    other = [replace(r, provenance=replace(r.provenance, extra={**r.provenance.extra, "binary": {
        **r.provenance.binary, "version": "4.0.1", "sha256": "ef" * 32}})) if r.case_id == odd else r
        for r in other]
    make_run(results, exp, B, other)
    pooled = pool_runs([results / exp.id / A, results / exp.id / B])
    by_case = {}
    for rec in pooled.records:
        by_case.setdefault(rec.case_id, []).append(rec)
    assert all(len(v) == 4 for k, v in by_case.items() if k != odd) and len(by_case[odd]) == 2
    assert any(f.startswith(f"run {B} not pooled: binary sha256") and "binary version 4.0.0 vs 4.0.1" in f
               for f in by_case[odd][0].flags)
    assert "repetitions pooled from runs" in run_notes.of(pooled)[0]

    monkeypatch.setenv("IOLAB_RESULTS", str(results))
    assert main(["table", exp.id, "--runs", A, B, "--format", "json"]) == 0
    rows = {r["case_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows[odd]["n"] == 2 and any("not pooled" in n for n in rows[odd]["notes"])
    assert {r["n"] for k, r in rows.items() if k != odd} == {4}
    assert main(["table", exp.id, "--since", "2026-11-21", "--format", "json"]) == 0
    since = {r["case_id"]: r["n"] for r in json.loads(capsys.readouterr().out)}
    assert since == {k: r["n"] for k, r in rows.items()}
    assert main(["table", exp.id, "--since", "yesterday"]) == 2


def test_progress_and_status(tmp_path, monkeypatch, capsys):
    from iolab.cli import main
    from iolab.results.state import progress_text

    assert progress_text(3, 12, {"ok": 2, "failed": 1}, 90) == \
        "3/12 jobs recorded (1 failed), 0:01:30 elapsed, ETA 0:04:30"
    assert progress_text(2, None, {"ok": 2}, 5) == "2/? jobs recorded, 0:00:05 elapsed"
    exp = experiment("archer-fpp-vs-ssf")
    recs = records(exp, A, reps=1)[:4]
    make_run(tmp_path / "results", exp, A, recs[:1], planned=_plan(recs), created_unix=1000.0)
    monkeypatch.setenv("IOLAB_RESULTS", str(tmp_path / "results"))
    assert main(["status", exp.id]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{exp.id} run {A}: unfinished: 1/4 jobs recorded, ") and "ETA" in out


def test_a_long_chain_is_named_by_its_first_and_last_runs(tmp_path):
    exp = experiment("archer-fpp-vs-ssf")
    results = tmp_path / "results"
    recs = records(exp, A, reps=1)[:6]
    ids = [f"20261121T0{i}0000Z-{c * 6}" for i, c in enumerate("abcdef")]
    for i, run_id in enumerate(ids):
        make_run(results, exp, run_id, [replace(recs[i], run_id=run_id)], planned=_plan([recs[i]]),
                 finished={"complete": True}, parent=ids[i - 1] if i else None)
    chain = load_chain(results / exp.id / ids[-1])
    assert len(chain.sources.runs) == 6 and len(chain.records) == 6
    note = next(n for n in run_notes.of(chain) if "as one result set" in n)
    assert note.startswith(f"runs {ids[0]} + {ids[1]} + 3 more + {ids[-1]} as one result set")


def _chain(results, n: int) -> list[str]:
    exp = experiment("archer-fpp-vs-ssf")
    recs = records(exp, A, reps=1)
    ids = [f"20261121T{i // 60:02d}{i % 60:02d}00Z-{i:06x}" for i in range(n)]
    for i, run_id in enumerate(ids):
        rec = recs[i % len(recs)]
        make_run(results, exp, run_id, [replace(rec, run_id=run_id)], planned=_plan([rec]),
                 finished={"complete": True}, parent=ids[i - 1] if i else None)
    return ids


@pytest.mark.parametrize("verb", [["runs"], ["trend", "--since", "2026-11-21"]])
def test_listing_a_long_chain_reads_each_manifest_a_bounded_number_of_times(tmp_path, monkeypatch,
                                                                            capsys, verb):
    """`iolab runs` of a chain of 1,000 continued runs took over 20 s: each line found its run's
    chain by reading every run's manifest again. Reads now grow linearly with the chain."""
    from iolab.cli import main
    from iolab.results import manifests

    reads = {}
    for n in (8, 32):
        results = tmp_path / f"results-{n}"
        _chain(results, n)
        monkeypatch.setenv("IOLAB_RESULTS", str(results))
        count = [0]
        real = manifests.read_typed

        def counted(path, real=real, count=count):
            count[0] += 1
            return real(path)
        monkeypatch.setattr(manifests, "read_typed", counted)
        main([verb[0], "archer-fpp-vs-ssf", *verb[1:]])
        capsys.readouterr()
        monkeypatch.setattr(manifests, "read_typed", real)
        reads[n] = count[0]
    assert reads[32] <= 5 * reads[8], reads          # 4 times the runs: about 4 times the reads
