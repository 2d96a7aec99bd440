"""The decoded-records cache: records.jsonl stays the truth, the cache only spares decoding it.

Runs are built as the ReFrame session writes them (tests/golden/publish_data.py); the cache
threshold is lowered so these small runs use it.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from iolab.results import decoding, manifests, recordcache
from iolab.results.record import Record
from iolab.results.decoding import decode_records
from iolab.results.files import read_records_bytes
from iolab.results.runfiles import RECORDS
from iolab.results import asrun
from iolab.results import state as run_state
from iolab.results.run import load_run
from tests.golden.publish_data import experiment, make_run, records

RUN = "20261121T000000Z-cccccc"


@pytest.fixture
def run_path(tmp_path, monkeypatch):
    monkeypatch.setattr(recordcache, "CACHE_MIN_BYTES", 0)
    exp = experiment("archer-fpp-vs-ssf")
    return make_run(tmp_path / "results", exp, RUN, records(exp, RUN, reps=2))


def decoded(path):
    """The records as decoded from the file's bytes, without the cache."""
    return decode_records(path / RECORDS, read_records_bytes(path / RECORDS), Record.from_json)[0]


def entries(where):
    return sorted(where.glob("records-*.pickle"))


def test_a_second_read_comes_from_the_cache_and_equals_the_file(run_path, records_cache):
    first, bad = recordcache.load(run_path)
    assert bad == [] and first == decoded(run_path)
    (entry,) = entries(records_cache)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert not any(p.suffix == ".pickle" for p in run_path.rglob("*"))      # nothing in the run
    mtime = entry.stat().st_mtime_ns
    second, _ = recordcache.load(run_path)
    assert second == first and entry.stat().st_mtime_ns == mtime            # read, not rewritten
    # what the tables are made of: the same through Run.load
    assert load_run(run_path).records == first


def test_a_changed_file_is_decoded_again_and_replaces_the_entry(run_path, records_cache):
    recordcache.load(run_path)
    (old,) = entries(records_cache)
    path = run_path / RECORDS
    text = path.read_text()
    line = json.loads(text.splitlines()[0])
    value = line["metrics"][0]["value"]
    changed = text.replace(json.dumps(value), json.dumps(value + 1), 1)    # same records, one value
    assert changed != text
    path.write_text(changed)
    recs, _ = recordcache.load(run_path)
    # the edited line no longer matches its chain digest: set aside, never the cached value
    assert recs == decoded(run_path)[1:] and decoded(run_path)[0].metrics[0].value == value + 1
    (problem,) = recordcache.open_run(run_path, digest_only=False).verdict.problems
    assert problem.line == 1 and problem.reason.startswith("edited since it was written")
    assert entries(records_cache) != [old] and len(entries(records_cache)) == 1


def test_unreadable_lines_are_reported_on_every_process_from_the_cache_too(run_path, capfd):
    with open(run_path / RECORDS, "ab") as f:
        f.write(b"\x00garbage\n")
        f.write(b'{"case_id": "torn')
    for _ in range(2):                        # decoded, then from the cache, each a new process
        decoding._WARNED.clear()
        recs, bad = recordcache.load(run_path)
        assert [(b.line, b.reason.split(" (")[0]) for b in bad] == [
            (len(recs) + 1, "corrupt record"), (len(recs) + 2, "torn last line")]
        err = capfd.readouterr().err
        assert f"{run_path / RECORDS}:{len(recs) + 1}: corrupt record" in err
        assert f"{run_path / RECORDS}:{len(recs) + 2}: torn last line (a write was interrupted), " \
               "skipped: '{\"case_id\": \"torn'" in err


def test_a_damaged_entry_is_a_miss_and_off_means_off(run_path, records_cache, monkeypatch):
    recordcache.load(run_path)
    (entry,) = entries(records_cache)
    entry.write_bytes(entry.read_bytes()[:100])
    recs, _ = recordcache.load(run_path)
    assert recs == decoded(run_path)
    assert entries(records_cache)[0].stat().st_size > 100                   # written again
    monkeypatch.setenv("IOLAB_CACHE", "off")
    for e in entries(records_cache):
        e.unlink()
    assert recordcache.load(run_path)[0] == decoded(run_path)
    assert entries(records_cache) == []


def test_an_entry_of_another_user_or_a_symlink_is_not_read(run_path, records_cache, monkeypatch):
    recordcache.load(run_path)
    (entry,) = entries(records_cache)
    key = entry.name.removesuffix(".pickle").split("-", 2)[2]          # records-<run>-<key>
    assert recordcache._read(entry, key) is not None
    link = entry.with_name("link.pickle")
    link.symlink_to(entry)
    assert recordcache._read(link, key) is None                       # never through a symlink
    monkeypatch.setattr(os, "getuid", lambda: os.geteuid() + 1)
    assert recordcache._read(entry, key) is None


# ---------------------------------------------------------------- the digest: tables without records

def test_a_warm_run_is_read_from_its_digest_and_its_tables_equal_the_records(run_path, records_cache):
    from iolab.analysis.report import build_tables, render, tables_from

    cold = load_run(run_path)               # decodes, writes the records' entry and the digest's
    assert cold._records is not None
    assert len(list(records_cache.glob("digest-*.pickle"))) == 1
    warm = load_run(run_path)
    assert warm._records is None            # a table needs no record: none decoded
    assert [(r.counts, r.planned, r.missing) for r in (warm.reading, cold.reading)] == \
        [(cold.reading.counts, cold.reading.planned, cold.reading.missing)] * 2
    want = render(build_tables(decoded(run_path), None, asrun.of(cold).report), "md", cold)
    assert render(tables_from(warm.digest, None, asrun.of(warm).report), "md", warm) == want
    assert warm._records is None
    assert warm.records == decoded(run_path)        # and the records are there when asked for


def test_records_of_a_digest_whose_file_changed_since_are_refused(run_path, records_cache):
    from iolab.errors import IolabError

    load_run(run_path)
    warm = load_run(run_path)
    for e in entries(records_cache):        # their entry gone, and the file appended to
        e.unlink()
    with open(run_path / RECORDS, "a") as f:
        f.write((run_path / RECORDS).read_text().splitlines()[0] + "\n")
    with pytest.raises(IolabError, match="changed while it was being read"):
        _ = warm.records


def test_a_digest_folds_every_status_hint_and_version(run_path):
    from iolab.results import digest

    recs = decoded(run_path)
    facts = digest.fold(recs)
    assert facts.records == len(recs) and all(facts.recorded(r.job) for r in recs)
    assert not facts.recorded((recs[0].part, recs[0].case_id, 999))
    assert not facts.recorded((recs[0].part, "no-such-case", recs[0].repetition))
    for rec in recs:
        case = facts.case(rec.part, rec.case_id)
        assert case.params == next(r.params for r in recs if (r.part, r.case_id) == (rec.part, rec.case_id))
        if rec.ok:
            assert rec.provenance.binary_version in case.versions
            for m in rec.metrics:
                assert m.value in case.values[m.name]
    assert sum(c.ok + len(c.failed) + len(c.skipped) + len(c.aborted)
               for p in facts.parts.values() for c in p.cases.values()) == len(recs)


def test_a_digest_as_the_run_keeps_it_reads_back_equal():
    """records.digest's body (JSON columns) gives back the fold it was made of: every status and
    reason, note, value in effect, version, metric and summary."""
    import dataclasses

    from iolab.results import digest
    from tests.golden.publish_data import failed

    exp = experiment("cp2k-aggregators")
    recs = records(exp, RUN, reps=3, effective_cb_nodes=1)
    recs[0] = failed(recs[0])
    recs[1] = dataclasses.replace(recs[1], status="skipped", metrics=[], error="no ior binary")
    recs[4] = dataclasses.replace(recs[4], status="aborted", metrics=[], error="SIGTERM")
    facts = digest.fold(recs)
    statuses = {s for p in facts.parts.values() for c in p.cases.values()
                for s, n in (("ok", c.ok), ("failed", c.failed), ("skipped", c.skipped),
                             ("aborted", c.aborted)) if n}
    assert statuses == {"ok", "failed", "skipped", "aborted"}
    assert any(c.effective for p in facts.parts.values() for c in p.cases.values())
    for summarized in (False, True):
        if summarized:
            facts.summarize()
        text = json.dumps(digest.to_json(facts))
        assert digest.from_json(json.loads(text)) == facts
    broken = json.loads(text)
    next(iter(broken["parts"].values()))["ok"].pop()
    with pytest.raises(ValueError, match="columns of unequal length"):
        digest.from_json(broken)


def test_a_manifest_is_parsed_again_when_it_changes(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    (run / "manifest.json").write_text('{"experiment": "a"}')
    first = manifests.read_manifest_shared(run)
    assert manifests.read_manifest_shared(run) is first
    (run / "manifest.json").write_text('{"experiment": "b"}')
    assert manifests.read_manifest_shared(run)["experiment"] == "b"


def test_a_large_manifest_and_its_missing_jobs_are_kept_and_follow_changes(run_path, records_cache,
                                                                           monkeypatch):
    from iolab.results import cache

    monkeypatch.setattr(cache, "MIN_BYTES", 0)
    manifest = json.loads((run_path / "manifest.json").read_text())
    manifest["planned"] = [{"part": r.part, "case_id": r.case_id, "repetition": r.repetition}
                           for r in decoded(run_path)]
    (run_path / "manifest.json").write_text(json.dumps(manifest))
    load_run(run_path)
    warm = load_run(run_path)
    assert warm._records is None and warm.reading.missing == []
    assert len(list(records_cache.glob("manifest-head-*.pickle"))) == 1
    assert len(list(records_cache.glob("plan-*.pickle"))) == 1
    # a job added to the plan (same records): read from the new bytes, never the old entries
    # (the records' checks depend on the manifest too: decoded once more, then warm again)
    manifest["planned"].append({"part": "main", "case_id": "ffffffffffffffff", "repetition": 1})
    (run_path / "manifest.json").write_text(json.dumps(manifest))
    load_run(run_path)
    again = load_run(run_path)
    assert again._records is None
    assert again.reading.missing == [("main", "ffffffffffffffff", 1)]
    assert again.reading.planned == warm.reading.planned + 1
    assert not run_state.of(again).complete


def test_a_digests_page_facts_read_back_equal_and_damaged_ones_are_refused():
    """What a page reads of the records (provenance, flags, Darshan views) is in the digest: it
    reads back equal, and a damaged entry is an error (the digest is then folded again)."""
    from iolab.results import digest
    from tests.golden.publish_data import failed

    exp = experiment("archer-fpp-vs-ssf")
    recs = records(exp, RUN, reps=3, darshan_cases=2, fail_last=True)
    recs[0] = failed(recs[0])
    facts = digest.fold(recs)
    folded = facts.findings["darshan"]
    assert facts.flags and folded and any(f for f, _o in folded.values())
    (part,) = facts.parts.values()
    assert part.ran and part.binaries["version"] and part.stacks
    text = json.dumps(digest.to_json(facts))
    assert digest.from_json(json.loads(text)) == facts

    def damaged(change):
        data = json.loads(text)
        change(data)
        return data
    for change in (lambda d: d["flags"][0][2][0][1].append("2"),            # a repetition as text
                   lambda d: d["flags"][0].pop(),
                   lambda d: d["darshan"][0][2][0].__setitem__(1, ["a list"]),
                   lambda d: d["darshan"][0][3][0].__setitem__(0, 7),
                   lambda d: next(iter(d["parts"].values()))["binaries"].pop("version"),
                   lambda d: next(iter(d["parts"].values())).__setitem__("ran", "yes"),
                   lambda d: next(iter(d["parts"].values()))["stacks"].append("spack"),
                   lambda d: d.__setitem__("reframe", 4.9),
                   lambda d: d["flags"][0].__setitem__(0, "another part"),
                   lambda d: d.pop("darshan")):
        with pytest.raises((ValueError, KeyError, TypeError)):
            digest.from_json(damaged(change))


def test_the_digest_format_changes_with_the_fold():
    """A run's records.digest is read only when written in this iolab's digest.FORMAT: a change
    of what the fold keeps, or of its columns, must come with a new FORMAT (then this sum is
    updated), or digests written before would be read as this fold's."""
    import hashlib
    import inspect

    from iolab.results import digest

    from iolab.results import evidence

    code = "".join(inspect.getsource(o) for o in (
        digest.CaseFacts, digest.PartFacts, digest.Digest, digest.fold, digest._fold_page,
        digest.to_json, digest.from_json, evidence.Series, evidence.CaseEvidence, evidence.add,
        evidence._columns, evidence.to_json, evidence.from_json, evidence._decode))
    assert (digest.FORMAT, hashlib.sha256(code.encode()).hexdigest()[:16]) == (6, "464df818b53a67d2")
