"""The result model: Record, Observed, Provenance, Manifest (record.py) and Run (run.py).

Records of this version round-trip exactly; records of earlier versions load with defaults; a run
re-loads its experiment from the manifest's copy through load.py, and says so when it cannot.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from iolab.results import integrity
from iolab.layers.mpiio.layer import hint_value
from iolab.results.record import Manifest, Observed, Record, num_tasks
from iolab.results.rundir import RunDir
from iolab.results import asrun
from iolab.results import notes as run_notes
from iolab.results import state as run_state
from iolab.results.run import load_run
from tests.golden.publish_data import REPO, experiment, make_run, records

RUN = "20261121T000000Z-0b1e75"


def test_records_of_this_version_round_trip(tmp_path):
    exp = experiment("cp2k-aggregators")
    path = make_run(tmp_path / "results", exp, RUN, records(exp, RUN, effective_cb_nodes=1, darshan_cases=2))
    lines = [json.loads(line) for line in (path / "records.jsonl").read_text().splitlines()]
    assert lines
    for line in lines:
        assert Record.from_json(line).to_json() == line
    manifest = json.loads((path / "manifest.json").read_text())
    assert Manifest.from_json(manifest).to_json() == manifest


def test_an_old_record_loads_with_defaults_and_keeps_what_it_had():
    """The first format: no schema, part, flags or varied; a field this version does not know."""
    old = {"experiment": "quickstart", "case_id": "0123abcd", "benchmark": "ior", "status": "ok",
           "repetition": 1, "params": {"scale.tasks_per_node": 4, "lustre.stripe_count": 4},
           "metrics": [{"name": "write_bw", "value": 1400.5, "unit": "MiB/s", "source": "ior"}],
           "observed": {"lustre": {"requested": {"stripe_count": 4}, "applied": False,
                                   "reason": "ext4: no striping"}},
           "host": "node1"}
    rec = Record.from_json(old)
    assert rec.part == "main" and rec.varied == [] and rec.schema is None
    assert rec.flags == ["striping not applied: ext4: no striping"]     # from observed
    assert rec.value("write_bw") == 1400.5 and rec.num_tasks == 4 and rec.ok
    assert rec.extra == {"host": "node1"}
    back = rec.to_json()
    assert back["host"] == "node1" and "schema" not in back


def test_derived_facts_have_one_home():
    assert num_tasks({"scale.nodes": 2, "scale.tasks_per_node": 4}) == 8 and num_tasks({}) == 1
    seen = Observed.from_json(dict(mpiio_hints={"flavour": "openmpi-romio", "requested": {"cb_nodes": "4"},
                                 "effective": {"cb_nodes": "1", "cb_config_list": "*:2"}}))
    assert seen.effective("mpiio.cb_nodes") == 1 and seen.effective("mpiio.aggregators") == 1
    assert seen.effective("mpiio.aggregators_per_node") == 2
    assert seen.effective("mpiio.cb_config_list") == "*:2"     # the hint itself stays as written
    assert seen.effective_shown("mpiio.romio_cb_write") == "absent"
    assert Observed.from_json(dict(mpiio_hints={"flavour": "ompio", "requested": {"cb_nodes": "2"},
                                 "effective": None})).effective_shown("mpiio.cb_nodes") == "unverified"
    assert hint_value("mpiio.cb_buffer_size", " 16777216") == 16777216


def test_run_state_counts_and_missing_jobs(tmp_path):
    exp = experiment("archer-fpp-vs-ssf")
    recs = records(exp, RUN, reps=1)
    planned = [{"part": r.part, "case_id": r.case_id, "repetition": r.repetition} for r in recs]
    path = make_run(tmp_path / "results", exp, RUN, recs[:-2] + [replace(recs[-2], status="aborted")],
                    planned=planned)
    run = load_run(path)
    assert run.reading.planned == len(recs) and run.reading.missing == [(recs[-1].part, recs[-1].case_id, 1)]
    assert run.reading.counts["aborted"] == 1 and run_state.of(run).state == "unfinished"
    assert asrun.of(run).experiment is not None and asrun.of(run).experiment.id == exp.id
    assert run.digest.case("main", recs[0].case_id).versions == {"4.0.0"}


@pytest.mark.parametrize("field, value, says", [
    ("profile", {"full": {"repetitions": 9}}, "the manifest's profile is not a profile's name"),
    ("experiment_yaml", ["id: archer-fpp-vs-ssf"], "the manifest's experiment_yaml is not text"),
])
def test_a_manifest_field_of_the_wrong_type_is_named_not_a_traceback(tmp_path, field, value, says):
    """Another site's (or a hand-edited) manifest: a profile that is a mapping ended the loader
    of the experiment as run in a TypeError under table and compare."""
    exp = experiment("archer-fpp-vs-ssf")
    path = make_run(tmp_path / "results", exp, RUN, records(exp, RUN, reps=1), **{field: value})
    run = load_run(path, REPO)
    assert asrun.of(run).experiment is None and asrun.of(run).why_not.startswith(says)
    assert any(says in n for n in run_notes.of(run))


def test_a_run_whose_experiment_no_longer_loads_says_so_and_keeps_its_pairing(tmp_path):
    """An old run: its copy of the YAML uses a key today's schema refuses."""
    exp = experiment("archer-fpp-vs-ssf")
    path = make_run(tmp_path / "results", exp, RUN, records(exp, RUN, reps=1),
                    experiment_yaml=exp.text + "retired_key: 1\n")
    run = load_run(path, REPO)
    assert asrun.of(run).experiment is None
    assert any("no longer loads" in n and "retired_key" in n for n in run_notes.of(run))
    assert asrun.of(run).report.study().study == "archer-fpp-ssf"       # today's pairing
    assert asrun.of(run).zip_groups("main") == []
    assert asrun.of(load_run(path)).report.study() is None               # no project: no pairing


def test_run_dir_appends_records(tmp_path):
    exp = experiment("quickstart", None)
    (rec,) = records(exp, RUN, reps=1)[:1]
    run = RunDir.create(tmp_path / "results", exp.id, RUN, {"experiment": exp.id})
    run.append(rec)
    (line,) = (run.path / "records.jsonl").read_text().splitlines()
    written = json.loads(line)
    position, seed, _digest = written.pop("chain")          # the record, then its place in the chain
    assert written == rec.to_json() and position == 1 and seed == integrity.seed({"experiment": exp.id}, RUN)
