"""The digest a run keeps beside its records (records.digest, issue 28), damaged on purpose.

The real run (conftest.recorded_run, made by `reframe -r` with real fio) ends with its digest
written by the session, exactly as a campaign's does. Its first table reads that digest and
decodes no record. A digest that is not exactly of the run's records.jsonl and manifest, or not
whole, is never used: the reader says why in one line and reads records.jsonl, so every command
answers exactly as it does for the same run without a digest (the truth)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from iolab.results import digest, integrity, recordcache
from iolab.results.record import Record
from iolab.results.decoding import decode_records
from iolab.results.manifests import read_manifest

from .conftest import noted, refused

EXP = "corpus-fio"
NOTE = "records.digest: not used: "


def without_digest(copy) -> tuple:
    """What `iolab table` answers for the run as it is, read from records.jsonl alone (the
    digest moved aside and back)."""
    moved = copy.run.parent / "records.digest.aside"
    os.replace(copy.run / "records.digest", moved)
    try:
        answer = copy.iolab("table", EXP, "--set-aside")
    finally:
        os.replace(moved, copy.run / "records.digest")
    assert NOTE not in answer.stderr
    return answer.returncode, answer.stdout


def read_as_truth(copy, why: str) -> None:
    """The table of the damaged run equals the one made from records.jsonl, with one note
    saying why the digest was not used."""
    truth = without_digest(copy)
    answer = copy.iolab("table", EXP, "--set-aside")
    assert (answer.returncode, answer.stdout) == truth, str(answer)
    notes = [line for line in answer.stderr.splitlines() if NOTE in line]
    assert len(notes) == 1 and why in notes[0], str(answer)


def test_the_session_writes_the_digest_and_the_first_table_reads_it(run_copy):
    digest_file = run_copy.run / "records.digest"
    assert digest_file.is_file()
    assert not list(run_copy.run.glob(".records.digest.tmp*"))       # written whole, renamed
    header = json.loads(digest_file.read_bytes().partition(b"\n")[0])
    data = run_copy.records_path.read_bytes()
    assert header["records"]["bytes"] == len(data)
    assert header["records"]["chain"] == list(integrity.tail_position(data))
    # what the reader takes from it (no record decoded) is the fold of the decoded records
    manifest = read_manifest(run_copy.run)
    sha = recordcache.hashlib.sha256((run_copy.run / "manifest.json").read_bytes()).hexdigest()
    got = recordcache.open_run(run_copy.run, manifest=manifest, manifest_key=sha)
    assert got.records is None and got.verdict.state == "verified" and got.verdict.count == 8
    scan = integrity.Scan(manifest, run_copy.run.name)
    records, _bad = decode_records(run_copy.records_path, data, Record.from_json, scan)
    folded = digest.fold(records)
    folded.summarize()
    assert got.digest == folded
    assert got.later() == records           # the records, when a verb asks for them
    # and the table from it is the table from the records
    answer = run_copy.iolab("table", EXP)
    assert answer.returncode == 0 and NOTE not in answer.stderr
    assert (0, answer.stdout) == without_digest(run_copy)


def test_a_missing_digest_is_rebuilt_from_the_records_without_a_word(run_copy):
    truth = without_digest(run_copy)
    (run_copy.run / "records.digest").unlink()
    answer = run_copy.iolab("table", EXP, "--set-aside")
    assert (answer.returncode, answer.stdout) == truth and NOTE not in answer.stderr


def test_a_torn_digest_is_not_used(run_copy):
    path = run_copy.run / "records.digest"
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    read_as_truth(run_copy, "damaged: its content does not match its own sha256")


def test_a_digest_edited_by_hand_is_not_used(run_copy):
    path = run_copy.run / "records.digest"
    head, _, body = path.read_bytes().partition(b"\n")
    got = json.loads(body)
    values = next(iter(next(iter(got["digest"]["parts"].values()))["metrics"].values()))["values"]
    values[0][0] *= 10          # a value no record has
    path.write_bytes(head + b"\n" + json.dumps(got, separators=(",", ":")).encode())
    read_as_truth(run_copy, "damaged: its content does not match its own sha256")


def test_records_edited_by_hand_are_refused_as_without_a_digest(run_copy):
    lines = run_copy.lines()
    rec = json.loads(lines[2])
    value = rec["metrics"][0]["value"]
    i = lines[2].index(json.dumps(value))
    lines[2] = lines[2][:i] + ("1" if lines[2][i] != "1" else "2") + lines[2][i + 1:]   # one byte
    run_copy.write_lines(lines)
    read_as_truth(run_copy, "records.jsonl changed since it was written (same size, another sha256")
    refused(run_copy.iolab("table", EXP), "records.jsonl:3", "edited since it was written")


def test_a_record_appended_by_an_older_iolab_is_named_by_the_chain(run_copy):
    lines = run_copy.lines()
    rec = json.loads(lines[-1])
    rec.pop("chain")
    rec["repetition"] = 3           # a job the plan does not have, without a chain
    run_copy.write_lines(lines + [json.dumps(rec, sort_keys=True) + "\n"])
    read_as_truth(run_copy, "(chain position 8), the file has")
    noted(run_copy.iolab("table", EXP, "--set-aside"), "set aside", "records.jsonl:9")


def test_records_rechained_whole_with_their_manifest_make_the_digest_stale(run_copy):
    recs = run_copy.records()
    for rec in recs:
        rec["metrics"][0]["value"] *= 2         # another measurement, chained as iolab would
    run_copy.rechain(recs)
    read_as_truth(run_copy, "manifest.json changed since it was written")


def test_a_copy_of_the_digest_of_another_run_is_not_used(run_copy, tmp_path):
    """The digest of the same experiment's run with other records and manifest."""
    other = run_copy.records()
    other[0]["metrics"][0]["value"] += 1
    run_copy.rechain(other)
    recordcache.write_run_digest(run_copy.run)
    foreign = (run_copy.run / "records.digest").read_bytes()
    run_copy.rechain(run_copy.records())       # this run's records and manifest again, other bytes
    manifest = run_copy.manifest()
    manifest["finished"]["ended"] = "2026-11-26T00:00:00Z"
    run_copy.write_manifest(manifest)
    (run_copy.run / "records.digest").write_bytes(foreign)
    read_as_truth(run_copy, "manifest.json changed since it was written")


@pytest.mark.parametrize("content, why", [
    (b"", "unreadable"),
    (b"not json at all\n{}", "unreadable (JSONDecodeError"),
    (b'{"iolab_digest": 99, "fold": 1, "records": {}}\n{}', "another version of iolab"),
    (b'{"iolab_digest": 1}\n{}', "unreadable (KeyError"),
])
def test_a_foreign_file_is_not_used(run_copy, content, why):
    (run_copy.run / "records.digest").write_bytes(content)
    read_as_truth(run_copy, why)


def test_a_digest_that_is_a_fifo_is_not_waited_on(run_copy):
    path = run_copy.run / "records.digest"
    path.unlink()
    os.mkfifo(path)
    read_as_truth(run_copy, "a FIFO, not a regular file")


def test_a_run_still_being_written_reads_its_new_records_quietly(run_copy):
    """A digest behind the records of an unfinished run is expected (it is rewritten as the
    records double): the records are read, and nothing is said."""
    manifest = run_copy.manifest()
    manifest.pop("finished")
    run_copy.write_manifest(manifest)
    recs = run_copy.records()
    run_copy.rechain(recs[:4])
    recordcache.write_run_digest(run_copy.run)      # the digest of the first four records
    run_copy.rechain(recs)                          # four more appended since
    answer = run_copy.iolab("table", EXP)
    assert answer.returncode == 0 and NOTE not in answer.stderr, str(answer)
    assert "8 records" in answer.stdout or "unfinished" in answer.stdout, str(answer)


def test_the_digest_grows_when_the_records_double(run_copy):
    path = run_copy.run / "records.digest"
    path.unlink()
    assert not recordcache.grow_run_digest(run_copy.run, recordcache.CHECKPOINT_FROM - 1, 0)
    assert not path.exists()
    assert recordcache.grow_run_digest(run_copy.run, recordcache.CHECKPOINT_FROM, 0)
    assert path.is_file()
    assert not recordcache.grow_run_digest(run_copy.run, 3000, 2000)
    assert recordcache.grow_run_digest(run_copy.run, 4000, 2000)
    assert not list(run_copy.run.glob(".records.digest.tmp*"))


def test_a_run_copied_whole_under_another_run_id_is_not_read_from_its_digest(run_copy):
    """records, manifest and digest copied as they are: the records are another run's, which
    only a read of them says (the checks name the run by its directory)."""
    other = run_copy.run.with_name("20261126T000000Z-0ther0")
    shutil.copytree(run_copy.run, other)
    answer = run_copy.iolab("table", EXP, "--run", other.name, "--set-aside")
    assert answer.returncode != 0 and "no readable records" in answer.stderr, str(answer)
    assert f"it was written for run '{run_copy.run.name}', not '{other.name}'" in answer.stderr


def test_verify_writes_the_digest_anew_only_for_records_that_verify(run_copy):
    """After records are moved back from a fallback file, say: the digest is behind them."""
    lines = run_copy.lines()
    manifest = run_copy.manifest()
    manifest["finished"].update(records=7, last_digest=json.loads(lines[6])["chain"][2])
    run_copy.write_manifest(manifest)           # the run ended with 7 lines: the 8th is extra
    answer = run_copy.iolab("table", EXP, "--set-aside")
    assert "--write-digest` writes it anew" in answer.stderr, str(answer)
    refused(run_copy.iolab("verify", EXP, "--write-digest"), "records.jsonl:8")
    assert "records.digest: not used" in run_copy.iolab("table", EXP, "--set-aside").stderr
    run_copy.write_lines(lines[:7])             # the records as the run ended them
    done = run_copy.iolab("verify", EXP, "--write-digest")
    assert done.returncode == 0 and "digest written" in done.stdout, str(done)
    answer = run_copy.iolab("table", EXP)
    assert answer.returncode == 0 and NOTE not in answer.stderr, str(answer)
    assert (0, answer.stdout) == without_digest(run_copy)
