"""Results runs on disk: durable appends (a real full disk), damaged lines read back, names that
cannot leave the results root, run states, and which run `latest` is.

Records are built as the ReFrame session writes them, with metrics parsed from real IOR outputs
(tests/golden/publish_data.py). CLI behaviour is checked through real `iolab` subprocesses.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iolab.results import provenance, rundir as results
from iolab.errors import IolabError
from iolab.results.lookup import find_run
from iolab.results.decoding import decode_records
from iolab.results.files import read_records_bytes
from iolab.results.rundir import RunDir
from iolab.results.runfiles import RECORDS
from iolab.results import notes as run_notes
from iolab.results import state as run_state
from iolab.results.run import load_run
from tests.golden.publish_data import REPO, experiment, make_run, records as _records

RUN = "20261121T000000Z-aaaaaa"


def records(*args, **kw) -> list[dict]:
    """The fixture's records as records.jsonl lines (these tests are about storing lines)."""
    return [r.to_json() for r in _records(*args, **kw)]


def iolab(*args, results_root: Path, **env):
    return subprocess.run([sys.executable, "-m", "iolab.cli", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120,
                          env={**os.environ, "IOLAB_RESULTS": str(results_root), **env})


@pytest.fixture
def no_wait(monkeypatch):
    """The retries of a failed append, without their back-off."""
    monkeypatch.setattr(results, "RETRY_DELAYS_S", (0, 0))


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB tmpfs: a results disk that really fills up."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mount refused: {done.stderr.strip() or done.returncode}")
    yield disk
    subprocess.run(["umount", str(disk)], check=True)


def fill(disk: Path, leave: int) -> Path:
    """Fill the disk, then free `leave` bytes (whole pages)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    os.truncate(filler, filler.stat().st_size - leave)
    return filler


def lines_of(path: Path) -> list[dict]:
    data = path.read_bytes()
    assert data == b"" or data.endswith(b"\n"), "a torn line was left"
    return [json.loads(line) for line in data.splitlines()]


def big_records(n: int) -> list[dict]:
    """Records of about 4.6 KB, like those of a job with a long environment."""
    exp = experiment("archer-fpp-vs-ssf")
    recs = records(exp, RUN, reps=1)[:n]
    path = ":".join(f"/opt/site/apps/tool{i}/bin" for i in range(40))
    for rec in recs:
        rec["provenance"]["env"] = {"PATH": path}
    return recs


# ------------------------------------------------------------------------------------ full disk

def test_full_disk_no_torn_line_and_nothing_lost(small_disk, tmp_path, monkeypatch, no_wait):
    fallback_dir = tmp_path / "tmp"
    fallback_dir.mkdir()
    monkeypatch.setenv("TMPDIR", str(fallback_dir))
    exp = experiment("archer-fpp-vs-ssf")
    root = small_disk / "results"
    run = RunDir.create(root, exp.id, RUN, {"experiment": exp.id, "origin": "reframe",
                                            "experiment_yaml": exp.text, "system": "local:default"})
    recs = big_records(8)
    assert 4400 < len(json.dumps(recs[0])) < 5000
    filler = fill(small_disk, leave=8192)

    written, error = 0, None
    for rec in recs[:4]:
        try:
            run.append(rec)
            written += 1
        except IolabError as exc:
            error = str(exc)
            break
    assert error is not None and 0 < written < 4
    on_disk = lines_of(run.path / RECORDS)                    # every line whole
    assert [r["case_id"] for r in on_disk] == [r["case_id"] for r in recs[:written]]
    (fallback,) = fallback_dir.iterdir()
    assert fallback.name == f"iolab-{exp.id}-{RUN}-records.unsaved-{os.getpid()}.jsonl"
    assert [r["case_id"] for r in lines_of(fallback)] == [recs[written]["case_id"]]
    assert "No space left on device (ENOSPC)" in error and str(fallback) in error
    assert f"cat {fallback} >> {run.path / RECORDS}" in error
    assert not list(run.path.glob("records.unsaved-*"))      # tried first, but the disk is full

    # The next record goes the same way, to the same file.
    with pytest.raises(IolabError, match="could not append 1 record"):
        run.append(recs[written + 1])
    assert len(lines_of(fallback)) == 2

    # Raw outputs onto the full disk: the copy fails, the record keeps the reason.
    output = REPO / "tests" / "data" / "darshan" / "darshan_parser_posix_fpp.txt"     # 47 KB
    raw = run.store_raw(recs[0]["case_id"], 9, [output])
    assert "ENOSPC" in raw["errors"][output.name] and raw["files"] == {}
    assert not (run.path / raw["dir"] / output.name).exists()

    # Readers still read the run.
    table = iolab("table", exp.id, results_root=root)
    assert table.returncode == 0, table.stderr
    assert f"run {RUN}" in table.stdout
    runs = iolab("runs", exp.id, results_root=root)
    assert runs.returncode == 0 and (f"{run_state.of(load_run(run.path)).counts_text()}  complete"
                                   in runs.stdout)
    assert load_run(run.path).reading.counts["ok"] == written

    # Once there is space, the command in the message merges them back.
    filler.unlink()
    subprocess.run(f"cat {fallback} >> {run.path / RECORDS}", shell=True, check=True)
    assert len(lines_of(run.path / RECORDS)) == written + 2
    run.append(recs[written + 2])                               # the disk has room again
    assert len(lines_of(run.path / RECORDS)) == written + 3


def test_fallback_in_the_run_directory_when_only_records_jsonl_fails(tmp_path, no_wait):
    """records.jsonl unwritable (here: a directory in its place): the run directory takes them."""
    exp = experiment("archer-fpp-vs-ssf")
    run = RunDir.create(tmp_path / "results", exp.id, RUN, {"experiment": exp.id})
    (run.path / RECORDS).unlink()
    (run.path / RECORDS).mkdir()
    rec = records(exp, RUN, reps=1)[0]
    with pytest.raises(IolabError) as info:
        run.append(rec)
    fallback = run.path / f"records.unsaved-{os.getpid()}.jsonl"
    assert str(fallback) in str(info.value)
    (saved,) = lines_of(fallback)
    assert saved.pop("chain")[0] == 1           # the run's first line, with its place in the chain
    assert saved == json.loads(json.dumps(rec))
    (run.path / RECORDS).rmdir()
    (run.path / RECORDS).write_text("")
    state = load_run(run.path)
    assert state.reading.unsaved == [fallback.name]
    assert any(fallback.name in n for n in run_notes.of(state))


# ---------------------------------------------------------------------------- damaged records

def read_back(path):
    """A run's records and unreadable lines as its records.jsonl decodes line by line (what the
    record cache reads), before the integrity checks."""
    return decode_records(path / RECORDS, read_records_bytes(path / RECORDS))


def test_torn_last_line_is_reported_once_and_skipped(tmp_path, capfd):
    exp = experiment("archer-fpp-vs-ssf")
    recs = records(exp, RUN, reps=1)[:3]
    path = make_run(tmp_path / "results", exp, RUN, recs[:2])
    whole = json.dumps(recs[2]).encode()
    with open(path / RECORDS, "ab") as f:
        f.write(whole[:3000])                               # a crash mid-write
    got, bad = read_back(path)
    assert [r["case_id"] for r in got] == [r["case_id"] for r in recs[:2]]
    assert [(b.line, b.reason) for b in bad] == [(3, "torn last line (a write was interrupted)")]
    read_back(path)
    err = capfd.readouterr().err
    assert err.count(f"{path / RECORDS}:3: torn last line") == 1

    # The next append starts a new line: the torn fragment stays alone, the new record is whole.
    RunDir(path).append(recs[2])
    got, bad = read_back(path)
    assert [r["case_id"] for r in got] == [r["case_id"] for r in recs]
    assert [b.line for b in bad] == [3] and bad[0].reason.startswith("corrupt record")

    runs = iolab("runs", exp.id, results_root=tmp_path / "results")
    assert runs.returncode == 0 and "3 records: 3 ok" in runs.stdout
    assert "1 unreadable line(s) skipped" in runs.stdout
    table = iolab("table", exp.id, results_root=tmp_path / "results")
    assert table.returncode == 0
    assert table.stdout.startswith("**Note:** 1 unreadable line(s) in records.jsonl skipped: line 3 (corrupt")
    assert f"{path / RECORDS}:3: corrupt record" in table.stderr


def test_corrupt_middle_lines_and_any_case_id_length(tmp_path):
    exp = experiment("archer-fpp-vs-ssf")
    recs = records(exp, RUN, reps=1)[:3]
    recs[0] = dict(recs[0], case_id=recs[0]["case_id"][:8])                # an old, 8-digit id
    recs[1] = dict(recs[1], case_id=recs[1]["case_id"][:8] + "a1b2c3d4")   # a 16-digit one
    path = make_run(tmp_path / "results", exp, RUN, recs[:2])
    with open(path / RECORDS, "ab") as f:
        f.write(b"\x00\x00\x00\n[1, 2]\n\xff\xfe not utf-8\n")
    RunDir(path).append(recs[2])
    got, bad = read_back(path)
    assert [r["case_id"] for r in got] == [r["case_id"] for r in recs]
    assert len(recs[0]["case_id"]) == 8 and len(recs[1]["case_id"]) == 16
    assert [b.line for b in bad] == [3, 4, 5]
    assert all(b.reason.startswith("corrupt record") for b in bad)


# ------------------------------------------------------------------------------------- names

@pytest.mark.parametrize("bad", ["../../x", "/abs/path", "a/b", "", ".", "..", "Upper", "a--b", "x\n"])
def test_create_refuses_experiment_ids_that_are_not_plain(tmp_path, bad):
    with pytest.raises(IolabError, match="not an experiment id"):
        RunDir.create(tmp_path / "results", bad, RUN, {})
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").rglob("*"))


@pytest.mark.parametrize("bad", ["../x", "a/b", "", ".", "..", ".hidden", "/abs"])
def test_create_refuses_run_ids_that_are_not_plain(tmp_path, bad):
    with pytest.raises(IolabError, match="not a plain name"):
        RunDir.create(tmp_path / "results", "my-study", bad, {})
    assert not any(tmp_path.rglob("manifest.json"))


def test_create_refuses_symlinked_experiment_dirs_and_nesting(tmp_path):
    exp = experiment("archer-fpp-vs-ssf")
    root = tmp_path / "results"
    inner = make_run(root, exp, RUN, records(exp, RUN, reps=1)[:1])
    (root / "my-study").symlink_to(inner)                   # results/<id> -> a run
    with pytest.raises(IolabError, match="is a symlink"):
        RunDir.create(root, "my-study", "20261122T000000Z-bbbbbb", {})
    with pytest.raises(IolabError, match="runs are never nested"):
        RunDir.create(inner / "sub", "my-study", "20261122T000000Z-bbbbbb", {})
    assert sorted(p.name for p in inner.iterdir()) == ["manifest.json", "records.jsonl"]


def test_store_raw_keeps_going_and_names_what_failed(tmp_path):
    exp = experiment("archer-fpp-vs-ssf")
    run = RunDir.create(tmp_path / "results", exp.id, RUN, {"experiment": exp.id})
    good = REPO / "tests" / "data" / "ior" / "ior_mpiio_coll_4r_t256k_b8m.txt"
    raw = run.store_raw("0c909ce9", 1, [tmp_path / "absent.txt", good])
    assert raw == {"dir": "cases/0c909ce9/rep1", "files": {good.name: provenance.sha256_file(good)}}
    again = run.store_raw("0c909ce9", 1, [good])             # never overwritten
    assert again["files"] == {} and "already exists" in again["errors"]["cases/0c909ce9/rep1"]
    bad_id = run.store_raw("../escape", 1, [good])
    assert bad_id["files"] == {} and "not a plain name" in next(iter(bad_id["errors"].values()))
    assert not (tmp_path / "results" / exp.id / "escape").exists()


# --------------------------------------------------------------------------------- run states

def planned_run(root: Path, run_id: str, recs: list[dict], planned: list[dict], finished: dict | None):
    exp = experiment("archer-fpp-vs-ssf")
    path = make_run(root, exp, run_id, recs, planned=planned)
    if finished is not None:
        RunDir(path).finish(finished)
    return path


def jobs(recs):
    return [{"part": r["part"], "case_id": r["case_id"], "repetition": r["repetition"]} for r in recs]


@pytest.fixture
def four_runs(tmp_path):
    """complete, incomplete (finished.complete false), unfinished (no finished), old (no plan)."""
    exp = experiment("archer-fpp-vs-ssf")
    root = tmp_path / "results"
    ids = [f"2026112{i}T000000Z-{c * 6}" for i, c in enumerate("abcd", 1)]
    recs = [records(exp, rid, reps=1)[:4] for rid in ids]
    planned_run(root, ids[0], recs[0], jobs(recs[0]), {"complete": True, "reason": None})
    aborted = recs[1][:2] + [dict(recs[1][2], status="aborted", metrics=[], error="SIGTERM\nat rep 1")]
    planned_run(root, ids[1], aborted, jobs(recs[1]),
                {"complete": False, "reason": "interrupted by SIGTERM", "ended": "2026-11-22T00:10:00Z"})
    planned_run(root, ids[2], recs[2][:1], jobs(recs[2][:3]), None)
    make_run(root, exp, ids[3], recs[3][:2] + [dict(recs[3][2], status="failed", metrics=[],
                                                    error="ior exited with status 1")])
    return root, ids


def test_run_states(four_runs):
    root, ids = four_runs
    states = [load_run(root / "archer-fpp-vs-ssf" / i) for i in ids]
    assert [run_state.of(s).state for s in states] == ["complete", "incomplete", "unfinished", "complete"]
    assert [run_state.of(s).describe() for s in states] == [
        "complete",
        "incomplete: 1 of 4 jobs have no record, 1 aborted (interrupted by SIGTERM)",
        "unfinished (killed or still running): 2 of 3 jobs have no record",
        "complete as recorded"]
    assert states[1].reading.counts == {"ok": 2, "failed": 0, "skipped": 0, "aborted": 1}
    assert [run_notes.of(s) for s in (states[0], states[3])] == [[], []]


def test_runs_lists_states(four_runs):
    root, ids = four_runs
    out = iolab("runs", "archer-fpp-vs-ssf", results_root=root)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ids
    # what was asked and not applied is said too (the stripes these runs ask for, on ext4)
    flagged = [line.split("; flagged: ") for line in lines]
    assert all(len(parts) == 2 for parts in flagged), lines
    lines = [parts[0] for parts in flagged]
    assert flagged[0][1] == "striping not applied: ext4: no striping (4 records)"
    assert lines[0].endswith("4 records: 4 ok  complete") and "measured  local:default" in lines[0]
    assert lines[1].endswith("3 records: 2 ok, 1 aborted  incomplete: 1 of 4 jobs have no record, "
                             "1 aborted (interrupted by SIGTERM)")
    assert lines[2].endswith("1 record: 1 ok  unfinished (killed or still running): 2 of 3 jobs "
                             "have no record")
    assert lines[3].endswith("3 records: 2 ok, 1 failed  complete as recorded")


@pytest.mark.parametrize("which", [0, 1, 2, 3])
def test_table_says_when_a_run_is_incomplete(four_runs, which):
    root, ids = four_runs
    run = ids[which]
    md = iolab("table", "archer-fpp-vs-ssf", "--run", run, results_root=root)
    csv = iolab("table", "archer-fpp-vs-ssf", "--run", run, "--format", "csv", results_root=root)
    js = iolab("table", "archer-fpp-vs-ssf", "--run", run, "--format", "json", results_root=root)
    assert md.returncode == csv.returncode == js.returncode == 0
    state = load_run(root / "archer-fpp-vs-ssf" / run)
    rows = json.loads(js.stdout)
    assert {r["run"]["state"] for r in rows} == {run_state.of(state).state}
    assert csv.stdout.startswith("part,case_id,")                # CSV stays a plain table
    if which in (0, 3):
        assert md.stdout.startswith("### archer-fpp-vs-ssf")     # no note for complete runs
        assert csv.stderr == ""
    else:
        note = f"run {run_state.of(state).describe()}; {run_state.of(state).counts_text()}"
        assert md.stdout.startswith(f"**Note:** {note}\n\n### ")
        assert csv.stderr == f"iolab: note: {note}\n"
        assert rows[0]["run"]["notes"] == [note]
    if which == 1:
        assert note == ("run incomplete: 1 of 4 jobs have no record, 1 aborted (interrupted by SIGTERM); "
                        "3 records: 2 ok, 1 aborted")
        assert "1 aborted¹" in md.stdout and "\n¹ aborted: SIGTERM\n" in md.stdout
    if which == 3:
        assert "1 failed¹" in md.stdout and "\n¹ failed: ior exited with status 1\n" in md.stdout


# ---------------------------------------------------------------------------- latest, imports

def test_latest_is_the_latest_measured_run(tmp_path):
    exp = experiment("archer-fpp-vs-ssf")
    root = tmp_path / "results"
    measured = make_run(root, exp, RUN, records(exp, RUN, reps=1))
    ior = REPO / "tests" / "data" / "ior" / "ior_mpiio_coll_4r_t256k_b8m.summary.json"
    done = iolab("import", "ior", str(ior), "--into", exp.id, "--label", "vm", results_root=root)
    assert done.returncode == 0, done.stderr
    imported = [p for p in (root / exp.id).iterdir() if p != measured][0]
    assert find_run(root, exp.id, None) == measured
    assert find_run(root, exp.id, "latest", include_imported=True) == imported

    table = iolab("table", exp.id, results_root=root)
    assert f"run {RUN}" in table.stdout and "imported" not in table.stdout
    table = iolab("table", exp.id, "--include-imported", results_root=root)
    assert f"run {imported.name}" in table.stdout
    assert table.stdout.startswith("**Note:** imported run: outputs of runs made outside iolab (vm)")
    runs = iolab("runs", exp.id, results_root=root).stdout.splitlines()
    assert runs[0].split()[1] == "measured" and runs[1].split()[1] == "imported"
    assert runs[1].endswith("complete as recorded")


def test_only_imported_runs_say_so(tmp_path):
    root = tmp_path / "results"
    ior = REPO / "tests" / "data" / "ior" / "ior_mpiio_coll_4r_t256k_b8m.summary.json"
    assert iolab("import", "ior", str(ior), "--into", "my-study", results_root=root).returncode == 0
    for verb in (["table"], ["compare", "--by", "api", "--baseline", "MPIIO"], ["darshan"]):
        out = iolab(verb[0], "my-study", *verb[1:], results_root=root)
        assert out.returncode == 2, verb
        assert "has only imported runs (1)" in out.stderr and "--include-imported" in out.stderr
    assert iolab("darshan", "my-study", "--include-imported", results_root=root).stderr.startswith(
        "iolab: error: run ")                              # past `latest`: no Darshan data in it


def test_old_eight_digit_case_ids_name_the_same_cases_as_new_ones():
    from iolab.results.upgrade import current_ids

    now = current_ids(["99a3ce015baa8c12", "99a3ce01ffffffff", "12345678aaaaaaaa"])
    assert now("12345678") == "12345678aaaaaaaa"
    assert now("99a3ce01") is None, "two new cases share the prefix: ambiguous"
    assert now("99a3ce015baa8c12") == "99a3ce015baa8c12"
    assert now("99a3ce0100000000") is None, "16-digit ids match only when equal"
    old = current_ids(["99a3ce01", "12345678"])
    assert old("99a3ce015baa8c12") == "99a3ce01"
    assert old("abcdefab00000000") is None


def test_a_case_given_by_hand_names_old_and_new_ids():
    from iolab.results.upgrade import names_case

    assert names_case("1234", "12345678aaaaaaaa") and names_case("1234", "12345678")
    assert names_case("12345678aaaaaaaa", "12345678"), "an old run's id is the new id's prefix"
    assert not names_case("1234567800", "12345678aaaaaaaa")
    assert not names_case("12345678aaaaaaaa", "12345678bbbbbbbb")


def test_an_untracked_experiment_makes_the_tree_dirty(tmp_path):
    """git status --untracked-files=no would say clean: the run's own YAML is not in git."""
    import subprocess

    from iolab.results.provenance import git_state

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True,
                       env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})

    git("init", "-q")
    (tmp_path / "tracked.yaml").write_text("a: 1\n")
    git("add", "tracked.yaml")
    git("commit", "-q", "-m", "x")
    (tmp_path / "experiments").mkdir()
    new = tmp_path / "experiments" / "new.yaml"
    new.write_text("b: 2\n")
    (tmp_path / "scratch.txt").write_text("not used by the run\n")
    assert git_state(tmp_path)["dirty"] is False
    assert git_state(tmp_path, [tmp_path / "tracked.yaml"])["dirty"] is False
    state = git_state(tmp_path, [new, tmp_path / "tracked.yaml"])
    assert state["dirty"] is True and state["untracked"] == ["experiments/new.yaml"]
