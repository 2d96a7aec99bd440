"""A campaign's manifest is read without its plan (`planned`, most of its bytes) until the plan
is asked for: a warm table never needs it. The plan must still be there for whoever asks, be of
the bytes the rest was read from, and check the records whenever they are decoded.

Runs are built as the ReFrame session writes them (tests/golden/publish_data.py); the size
from which a manifest counts as a campaign's is lowered so these small runs are.
"""

from __future__ import annotations

import json
import pickle

import pytest

from iolab.errors import IolabError
from iolab.results import cache, manifests, recordcache
from iolab.results.run import load_run
from tests.golden.publish_data import experiment, make_run, records

RUN = "20261121T000000Z-eeeeee"


def _fresh_process():
    """What a new process knows of manifests: nothing (the cache on disk stays)."""
    manifests._SHARED_MANIFESTS.clear()
    manifests._TYPED.clear()


@pytest.fixture
def run_path(tmp_path, monkeypatch, records_cache):
    monkeypatch.setattr(recordcache, "CACHE_MIN_BYTES", 0)
    monkeypatch.setattr(cache, "MIN_BYTES", 0)
    exp = experiment("archer-fpp-vs-ssf")
    path = make_run(tmp_path / "results", exp, RUN, records(exp, RUN, reps=2))
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["planned"] = [{"part": r["part"], "case_id": r["case_id"], "repetition": r["repetition"]}
                           for r in map(json.loads, (path / "records.jsonl").read_text().splitlines())]
    (path / "manifest.json").write_text(json.dumps(manifest))
    if (path / "records.digest").exists():
        recordcache.write_run_digest(path)      # of this manifest
    _fresh_process()
    return path


@pytest.fixture
def reads_of_the_plan(monkeypatch):
    calls = []
    real = manifests.whole_manifest

    def counted(*args):
        calls.append(args)
        return real(*args)
    monkeypatch.setattr(manifests, "whole_manifest", counted)
    return calls


def test_a_warm_run_reads_its_plan_only_when_asked(run_path, records_cache, reads_of_the_plan):
    plan = json.loads((run_path / "manifest.json").read_text())["planned"]
    cold = load_run(run_path)
    assert cold.manifest.planned == plan
    _fresh_process()
    load_run(run_path)          # from the digest: the jobs without a record found and kept
    _fresh_process()
    reads_of_the_plan.clear()
    warm = load_run(run_path)
    assert warm._records is None and (warm.reading.planned, warm.reading.missing) == \
        (cold.reading.planned, cold.reading.missing)
    assert "planned" not in manifests.read_manifest_shared(run_path, whole=False)
    assert reads_of_the_plan == []              # neither read nor parsed: not needed
    assert warm.manifest.planned == plan        # there when asked for
    assert len(reads_of_the_plan) == 1
    assert warm.manifest == cold.manifest


def test_records_decoded_later_are_checked_against_the_plan(run_path, records_cache,
                                                           reads_of_the_plan):
    manifest = json.loads((run_path / "manifest.json").read_text())
    dropped = manifest["planned"].pop()         # one recorded job the plan does not have
    (run_path / "manifest.json").write_text(json.dumps(manifest))
    (run_path / "records.digest").unlink(missing_ok=True)
    for e in records_cache.glob("*.pickle"):
        e.unlink()
    _fresh_process()
    run = load_run(run_path)
    assert reads_of_the_plan                    # the head read first, the plan for the checks
    problems = [p.reason for p in run.reading.verdict.problems]
    assert any("not in the run's plan" in why and dropped["case_id"] in why for why in problems), problems


def test_a_manifest_changed_before_its_plan_is_read_is_an_error(run_path, records_cache):
    for _ in range(2):
        load_run(run_path)
        _fresh_process()
    warm = load_run(run_path)
    manifest = json.loads((run_path / "manifest.json").read_text())
    manifest["planned"] = manifest["planned"][:1]
    (run_path / "manifest.json").write_text(json.dumps(manifest))
    for _ in range(2):          # never the new plan under the old manifest, never None
        with pytest.raises(IolabError, match="changed while it was read"):
            _ = warm.manifest.planned
    _fresh_process()
    assert load_run(run_path).manifest.planned == manifest["planned"]


@pytest.mark.parametrize("value", [({"experiment": "x"},), ("not a dict", True), ({}, "yes")])
def test_a_head_entry_of_another_shape_is_a_miss(run_path, records_cache, value):
    want = manifests.read_manifest_shared(run_path, whole=False)
    (entry,) = records_cache.glob("manifest-head-*.pickle")
    with open(entry, "rb") as f:
        head = pickle.load(f)           # (cache format, key): the entry's own key kept
    entry.write_bytes(pickle.dumps(head) + pickle.dumps(value))
    _fresh_process()
    assert manifests.read_manifest_shared(run_path, whole=False) == want
    assert "planned" not in want and want["experiment"] == "archer-fpp-vs-ssf"


def test_a_small_manifest_is_always_whole(tmp_path, monkeypatch, records_cache):
    run = tmp_path / "r"
    run.mkdir()
    (run / "manifest.json").write_text('{"experiment": "a", "planned": []}')
    assert manifests.read_manifest_shared(run, whole=False) == {"experiment": "a", "planned": []}
    assert manifests.manifest_whole(run)
