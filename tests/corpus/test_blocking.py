"""Nothing blocks (issue 23): a run's records.jsonl or manifest.json that is a FIFO, a symlink to
/dev/zero, a symlink out of the run or a file over the size limit, and a chain of parents that
loops, through every verb that reads a run; `iolab import` of a FIFO or a device. Each is
refused in one line naming the file and why, within the corpus's 10 s per command."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from iolab.results.files import MAX_MANIFEST_BYTES, MAX_RECORDS_BYTES
from iolab.results.chain import MAX_CHAIN

from .conftest import iolab, noted, rechain, refused


def fifo(path):
    path.unlink()
    os.mkfifo(path)


def dev_zero(path):
    path.unlink()
    path.symlink_to("/dev/zero")


DAMAGES = {"fifo": (fifo, "a FIFO, not a regular file"),
           "dev-zero": (dev_zero, "a symlink to /dev/zero, outside the run")}


def sibling(copy, run_id: str, parent: str | None = None):
    """Another run of the experiment beside the copy (the same records), optionally continuing
    `parent`."""
    other = copy.run.parent / run_id
    shutil.copytree(copy.run, other, symlinks=True)
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["run_id"] = run_id
    manifest["created_unix"] = manifest.get("created_unix", 0) + 1
    if parent:
        manifest["parent"] = parent
    (other / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    recs = [{**json.loads(line), "run_id": run_id} for line in copy.lines() if line.strip()]
    rechain(other, recs)        # its own records: of its run id, chained from its own seed
    return other


def loop_onto_itself(copy):
    manifest = copy.manifest()
    manifest["parent"] = copy.run.name
    copy.write_manifest(manifest)
    return f"{copy.run.name} -> {copy.run.name}"


def loop_of_two(copy):
    other = sibling(copy, "20990101T000000Z-cafe01", parent=copy.run.name)
    manifest = copy.manifest()
    manifest["parent"] = other.name
    copy.write_manifest(manifest)
    return f"{copy.run.name} -> {other.name} -> {copy.run.name}"


LOOPS = {"self": loop_onto_itself, "two-runs": loop_of_two}


# ----------------------------------------------------------------- records.jsonl and manifest.json

VERBS = {
    "table": lambda c: ("table", "corpus-fio"),
    "table-run": lambda c: ("table", "corpus-fio", "--run", c.run.name),
    "status": lambda c: ("status", "corpus-fio", c.run.name),
    "compare": lambda c: ("compare", "corpus-fio", c.run.name, sibling(c, "20990101T000000Z-beef02").name),
    "publish": lambda c: ("publish", "corpus-fio", "--runs", c.run.name, "--out", c.root / "page"),
    "search-report": lambda c: ("search-report", "corpus-fio", c.run.name),
    "resume": lambda c: ("resume", "corpus-fio", c.run.name, "--dry-run"),
    "darshan": lambda c: ("darshan", "corpus-fio", "--run", c.run.name),
    "reproduce": lambda c: ("reproduce", "corpus-fio", c.run.name, c.records()[0]["case_id"]),
}


@pytest.mark.parametrize("verb", sorted(VERBS))
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_records_that_are_no_regular_file_are_refused(run_copy, verb, damage):
    args = VERBS[verb](run_copy)        # before the damage: reproduce reads a case id
    make, says = DAMAGES[damage]
    make(run_copy.records_path)
    refused(run_copy.iolab(*args), "records.jsonl", says)


@pytest.mark.parametrize("verb", ["table", "status", "resume", "search-report", "publish"])
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_manifest_that_is_no_regular_file_is_refused(run_copy, verb, damage):
    args = VERBS[verb](run_copy)
    make, says = DAMAGES[damage]
    make(run_copy.run / "manifest.json")
    refused(run_copy.iolab(*args), "manifest.json", says)


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_runs_lists_the_other_runs_and_names_the_damaged_one(run_copy, damage):
    other = sibling(run_copy, "20990101T000000Z-d00d03")
    make, says = DAMAGES[damage]
    make(run_copy.records_path)
    answer = run_copy.iolab("runs", "corpus-fio")
    refused(answer, "some runs of 'corpus-fio' are unreadable")
    (bad,) = [line for line in answer.stdout.splitlines() if line.startswith(run_copy.run.name)]
    assert "unreadable" in bad and says in bad, answer
    assert any(line.startswith(other.name) and "8 records" in line
               for line in answer.stdout.splitlines()), answer


def test_runs_names_a_run_whose_manifest_is_a_fifo(run_copy):
    fifo(run_copy.run / "manifest.json")
    answer = run_copy.iolab("runs", "corpus-fio")
    refused(answer, "unreadable")
    assert "manifest.json: a FIFO, not a regular file" in answer.stdout, answer


def test_a_symlink_to_a_file_outside_the_run_is_refused(run_copy, tmp_path):
    elsewhere = tmp_path / "elsewhere.jsonl"
    shutil.copy(run_copy.records_path, elsewhere)
    run_copy.records_path.unlink()
    run_copy.records_path.symlink_to(elsewhere)
    refused(run_copy.iolab("table", "corpus-fio"), "records.jsonl",
            f"a symlink to {elsewhere}, outside the run")


def test_a_symlink_inside_the_run_is_read(run_copy):
    """A run's own file under another name is still the run's: the table is the undamaged one."""
    kept = run_copy.run / "records.kept.jsonl"
    run_copy.records_path.rename(kept)
    run_copy.records_path.symlink_to(kept.name)
    noted(run_copy.iolab("table", "corpus-fio"), "| write |", "| randwrite |")


def test_records_over_the_size_limit_are_refused_at_once(run_copy):
    with open(run_copy.records_path, "ab") as f:      # sparse: no disk used
        f.truncate(MAX_RECORDS_BYTES + 1)
    refused(run_copy.iolab("status", "corpus-fio", run_copy.run.name), "records.jsonl",
            f"over iolab's limit of {MAX_RECORDS_BYTES} bytes")


def test_a_manifest_over_the_size_limit_is_refused_at_once(run_copy):
    with open(run_copy.run / "manifest.json", "ab") as f:
        f.truncate(MAX_MANIFEST_BYTES + 1)
    refused(run_copy.iolab("table", "corpus-fio", "--run", run_copy.run.name), "manifest.json",
            f"over iolab's limit of {MAX_MANIFEST_BYTES} bytes")


# ------------------------------------------------------------------------------------ parent loops

CHAIN_VERBS = {
    "table-run": VERBS["table-run"],
    "status": VERBS["status"],
    "resume": VERBS["resume"],
    "publish": VERBS["publish"],
    "search-report": VERBS["search-report"],
    "runs": lambda c: ("runs", "corpus-fio"),
}


@pytest.mark.parametrize("verb", sorted(CHAIN_VERBS))
@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_a_chain_of_parents_that_loops_is_refused(run_copy, verb, loop):
    shown = LOOPS[loop](run_copy)
    answer = run_copy.iolab(*CHAIN_VERBS[verb](run_copy))
    if verb == "runs":      # the other runs are still listed; the looping ones are named
        refused(answer, "some runs of 'corpus-fio' are unreadable")
        assert f"its chain of parents loops ({shown})" in answer.stdout, answer
    else:
        refused(answer, "its chain of parents loops", shown)


def test_a_parent_that_is_no_run_here_ends_the_chain(run_copy):
    """A parent that names no run (deleted, or from another copy) is where the chain starts."""
    manifest = run_copy.manifest()
    manifest["parent"] = "20000101T000000Z-gone00"
    run_copy.write_manifest(manifest)
    noted(run_copy.iolab("table", "corpus-fio", "--run", run_copy.run.name), "| write |")


def test_a_chain_longer_than_the_limit_is_refused(run_copy, monkeypatch):
    """MAX_CHAIN runs are many (a copy per link would be slow): the walk is checked in-process
    on a chain of manifests only."""
    from iolab.results import chain
    from iolab.errors import IolabError

    monkeypatch.setattr(chain, "MAX_CHAIN", 3)
    prev = run_copy.run.name
    for n in range(4):
        prev = sibling(run_copy, f"20990101T00000{n}Z-aaaa0{n}", parent=prev).name
    with pytest.raises(IolabError, match="its chain holds more than 3 runs"):
        chain.chain_paths(run_copy.run.parent / prev)
    assert MAX_CHAIN >= 1000


# ------------------------------------------------------------------------------------------ import

@pytest.mark.parametrize("what", ["dev-zero", "fifo", "symlink-to-dev-zero", "directory"])
def test_import_refuses_what_is_no_regular_file(run_copy, tmp_path, what):
    target = {"dev-zero": "/dev/zero", "fifo": tmp_path / "out.fifo",
              "symlink-to-dev-zero": tmp_path / "out.json", "directory": tmp_path}[what]
    if what == "fifo":
        os.mkfifo(target)
    elif what == "symlink-to-dev-zero":
        target.symlink_to("/dev/zero")
    says = {"dev-zero": "a character device", "fifo": "a FIFO",
            "symlink-to-dev-zero": "a character device", "directory": "a directory"}[what]
    answer = run_copy.iolab("import", "fio", target, "--into", "imported-fio")
    refused(answer, str(target), says, "not a regular file")
    assert not (run_copy.results / "imported-fio").exists()


# ------------------------------------------------------------------------- search, Darshan logs

def as_search(copy):
    """The copy as the first round of a search (iolab search continues it)."""
    yaml = copy.root / "experiments" / "corpus-fio.yaml"
    yaml.write_text(yaml.read_text() + "search: {objective: write_bw, budget: 6}\n")
    manifest = copy.manifest()
    manifest["search_round"] = 1
    copy.write_manifest(manifest)


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_search_over_records_that_are_no_regular_file_is_refused(run_copy, damage):
    as_search(run_copy)
    make, says = DAMAGES[damage]
    make(run_copy.records_path)
    refused(run_copy.iolab("search", "corpus-fio", "--dry-run"), "records.jsonl", says)


def test_search_over_a_chain_that_loops_is_refused(run_copy):
    as_search(run_copy)
    shown = loop_onto_itself(run_copy)
    refused(run_copy.iolab("search", "corpus-fio", "--dry-run"), "its chain of parents loops", shown)


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_stored_darshan_log_that_is_no_regular_file_is_refused(run_copy, damage):
    """`iolab darshan ID --html` reads each case's stored log: a FIFO or a device in its place
    is named, never read; without --html the stored summaries are shown as they are."""
    recs = run_copy.records()
    rec = recs[0]
    rec["observed"]["darshan"] = {"status": "ok", "summary": {"status": "ok"}, "findings": []}
    rec["raw"]["files"]["darshan.log"] = "0" * 64
    run_copy.rechain(recs)
    log = run_copy.run / rec["raw"]["dir"] / "darshan.log"
    log.touch()
    make, says = DAMAGES[damage]
    make(log)
    refused(run_copy.iolab("darshan", "corpus-fio", "--run", run_copy.run.name, "--html",
                           run_copy.root / "pages"), "darshan.log", says)


def test_darshan_of_a_run_leaves_no_scratch_behind(run_copy, tmp_path):
    """`iolab darshan ID` gunzips stored logs into a scratch directory: it is removed when the
    verb ends, shown or refused (it once stayed behind, one per call)."""
    recs = run_copy.records()
    recs[0]["observed"]["darshan"] = {"status": "ok", "summary": {"status": "ok"}, "findings": []}
    run_copy.rechain(recs)
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    env = {**run_copy.env, "TMPDIR": str(scratch)}
    shown = iolab("darshan", "corpus-fio", "--run", run_copy.run.name, env=env, cwd=run_copy.root)
    assert shown.returncode == 0, str(shown)
    assert f"case {recs[0]['case_id']} rep {recs[0]['repetition']}" in shown.stdout, str(shown)
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("parent", ["../other-experiment/20990101T000000Z-f00d00", ".."])
def test_a_parent_outside_the_experiment_s_runs_is_refused(run_copy, parent):
    """A parent is a run beside its child: a path that climbs out would pull another
    experiment's run (or the experiment's directory itself) into the chain."""
    other = run_copy.results / "other-experiment" / "20990101T000000Z-f00d00"
    shutil.copytree(run_copy.run, other)
    manifest = run_copy.manifest()
    manifest["parent"] = parent
    run_copy.write_manifest(manifest)
    refused(run_copy.iolab("table", "corpus-fio", "--run", run_copy.run.name),
            f"run {run_copy.run.name}: its manifest's parent {parent!r} is not a plain name")


@pytest.mark.parametrize("what", ["dev-zero", "fifo", "symlink-to-dev-zero"])
def test_parse_refuses_what_is_no_regular_file_and_goes_on(run_copy, tmp_path, what):
    """`iolab parse` reads outputs as import does: a FIFO or a device is named, never waited on,
    and the other files are still parsed."""
    target = {"dev-zero": "/dev/zero", "fifo": tmp_path / "out.fifo",
              "symlink-to-dev-zero": tmp_path / "out.json"}[what]
    if what == "fifo":
        os.mkfifo(target)
    elif what == "symlink-to-dev-zero":
        target.symlink_to("/dev/zero")
    good = tmp_path / "good.json"
    rec = run_copy.records()[0]
    good.write_bytes((run_copy.run / rec["raw"]["dir"] / "fio.json").read_bytes())
    answer = run_copy.iolab("parse", "fio", target, good)
    assert answer.returncode == 1, answer
    says = "a FIFO" if what == "fifo" else "a character device"
    assert f"iolab: error: {target}: " in answer.stderr and says in answer.stderr, answer
    assert '"name": "write_bw"' in answer.stdout, answer
