"""The records' digest chain as RunDir writes it: every one-byte change of a real line is found,
a run reopened continues its chain, the end is kept at finish, and records that went to a
fallback file verify once moved back as the error says (the corpus, tests/corpus/
test_integrity.py, damages a real run through the CLI)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from iolab.results import integrity, manifests, rundir
from iolab.errors import IolabError
from iolab.results.decoding import decode_records
from iolab.results.rundir import RunDir
from iolab.results.runfiles import RECORDS
from iolab.results.run import load_run
from tests.golden.publish_data import experiment, records as _records

RUN = "20261121T000000Z-dddddd"


@pytest.fixture
def exp():
    return experiment("archer-fpp-vs-ssf")


def records(exp, n: int) -> list[dict]:
    return [r.to_json() for r in _records(exp, RUN, reps=2)[:n]]


def verdict(path):
    scan = integrity.Scan(manifests.read_manifest(path), path.name)
    recs, _bad = decode_records(path / RECORDS, (path / RECORDS).read_bytes(), scan=scan)
    return recs, scan.verdict


def test_every_one_byte_change_of_a_real_line_is_found(exp, tmp_path):
    run = RunDir.create(tmp_path / "results", exp.id, RUN, {"experiment": exp.id,
                                                            "experiment_sha256": exp.sha256})
    run.append(records(exp, 1)[0])
    line = (run.path / RECORDS).read_bytes().rstrip(b"\n")
    body, sealed = integrity.unseal(line)
    assert sealed[:2] == (1, integrity.seed({"experiment": exp.id, "experiment_sha256": exp.sha256}, RUN))
    assert sealed[3] and json.loads(body) == records(exp, 1)[0]
    missed = []
    for i in range(len(line)):
        changed = line[:i] + bytes([line[i] ^ 0x01]) + line[i + 1:]
        _body, got = integrity.unseal(changed)
        if got is not None and got[3] and got[:3] == sealed[:3]:
            missed.append(i)
    assert missed == [], f"{len(missed)} of {len(line)} one-byte changes were not found"


def test_a_reopened_run_continues_its_chain_and_finish_keeps_the_end(exp, tmp_path):
    recs = records(exp, 4)
    run = RunDir.create(tmp_path / "results", exp.id, RUN, {"experiment": exp.id})
    for rec in recs[:2]:
        run.append(rec)
    again = RunDir(run.path)              # another writer object for the same run
    for rec in recs[2:]:
        again.append(rec)
    again.finish({"complete": True})
    manifest = manifests.read_manifest(run.path)
    got, v = verdict(run.path)
    assert v.state == "verified" and v.problems == [] and len(got) == 4
    assert manifest["finished"]["records"] == 4 == v.count
    assert manifest["finished"]["last_digest"] == v.last
    assert manifest[integrity.MANIFEST_KEY] == integrity.FORMAT


def test_an_old_run_appended_to_stays_unchained(exp, tmp_path):
    """A run written before the chain (no digests, no marker) is not half chained by a later
    append: it stays unverified, and whole."""
    recs = records(exp, 3)
    run = RunDir.create(tmp_path / "results", exp.id, RUN, {"experiment": exp.id})
    manifest = manifests.read_manifest(run.path)
    del manifest[integrity.MANIFEST_KEY]
    (run.path / "manifest.json").write_text(json.dumps(manifest))
    (run.path / RECORDS).write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in recs[:2]))
    RunDir(run.path).append(recs[2])
    got, v = verdict(run.path)
    assert v.state == "unverified" and v.problems == [] and len(got) == 3
    assert "chain" not in json.loads((run.path / RECORDS).read_text().splitlines()[-1])


def test_records_of_a_fallback_file_verify_once_moved_back(exp, tmp_path, monkeypatch):
    """records.jsonl unwritable (a directory in its place): the records go to the fallback file,
    and keep going there, after the first, until it is merged back, so `cat FILE >>
    records.jsonl` puts them in chain order; then the run verifies to its end."""
    monkeypatch.setattr(rundir, "RETRY_DELAYS_S", (0, 0))
    recs = records(exp, 5)
    run = RunDir.create(tmp_path / "results", exp.id, RUN, {"experiment": exp.id})
    run.append(recs[0])
    kept = (run.path / RECORDS).read_bytes()
    (run.path / RECORDS).unlink()
    (run.path / RECORDS).mkdir()
    with pytest.raises(IolabError, match="Nothing is lost"):
        run.append(recs[1])
    (run.path / RECORDS).rmdir()
    (run.path / RECORDS).write_bytes(kept)            # the disk is fine again
    with pytest.raises(IolabError, match="earlier records are in the fallback file"):
        run.append(recs[2])
    fallback = run.path / f"records.unsaved-{os.getpid()}.jsonl"
    assert [json.loads(x)["chain"][0] for x in fallback.read_text().splitlines()] == [2, 3]
    _got, v = verdict(run.path)
    assert v.problems == [] and v.count == 1           # unfinished: its end cannot be checked yet
    assert load_run(run.path).reading.unsaved == [fallback.name]

    subprocess.run(f"cat {fallback} >> {run.path / RECORDS} && rm {fallback}", shell=True, check=True)
    got, v = verdict(run.path)
    assert v.problems == [] and v.count == 3 and len(got) == 3
    run.append(recs[3])                                 # merged: records.jsonl again, in order
    run.finish({"complete": True})
    got, v = verdict(run.path)
    assert v.problems == [] and v.count == 4 and len(got) == 4
    assert manifests.read_manifest(run.path)["finished"]["records"] == 4
