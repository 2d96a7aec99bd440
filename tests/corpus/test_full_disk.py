"""What a full results disk leaves behind (issue 23), on the corpus's real run: records in a
fallback file in the run directory, in $TMPDIR or in the home directory, named by the manifest
(`fallback_files` from the run's start, `finished.unsaved` from its end). `iolab runs` and the
table's notes list them wherever they are; after the README's merge the run reads complete; a
manifest that names other files (a device, someone else's file) lists none of them."""

from __future__ import annotations

import os
import re

import pytest

from .conftest import noted

RESERVED = "records not in records.jsonl: No space left on device (ENOSPC)"


def spill(copy, where, n: int = 2) -> str:
    """Move the last n records into a fallback file in `where`, as a full disk leaves them, and
    end the run as the session ends such a run. Returns the fallback's path (or name)."""
    lines = copy.lines()
    if where == "run":
        fallback = copy.run / f"records.unsaved-{os.getpid()}.jsonl"
    else:
        fallback = where / f"iolab-corpus-fio-{copy.run.name}-records.unsaved-{os.getpid()}.jsonl"
    fallback.write_text("".join(lines[-n:]))
    copy.write_lines(lines[:-n])
    manifest = copy.manifest()
    manifest["finished"].update(complete=False, reason=RESERVED, complete_once_merged=True,
                                unsaved=[str(fallback)])
    copy.write_manifest(manifest)
    return fallback.name if where == "run" else str(fallback)


@pytest.fixture
def spill_dirs(tmp_path):
    out = {"tmpdir": tmp_path / "tmpdir", "home": tmp_path / "home"}
    for d in out.values():
        d.mkdir()
    return out


@pytest.mark.parametrize("where", ["run", "tmpdir", "home"])
def test_runs_lists_a_fallback_wherever_it_is(run_copy, spill_dirs, where):
    shown = spill(run_copy, "run" if where == "run" else spill_dirs[where])
    answer = run_copy.iolab("runs", "corpus-fio")
    assert answer.returncode == 0, answer
    (line,) = [x for x in answer.stdout.splitlines() if x.startswith(run_copy.run.name)]
    assert "6 records" in line and "incomplete" in line and f"unmerged: {shown}" in line, answer
    noted(run_copy.iolab("table", "corpus-fio"), f"records not merged yet: {shown}",
          "`cat FILE >> records.jsonl && rm FILE`")


def test_a_fallback_named_only_from_the_run_s_start_is_listed(run_copy, spill_dirs):
    """Killed after records went to $TMPDIR, before its end: the manifest's fallback_files."""
    shown = spill(run_copy, spill_dirs["tmpdir"])
    manifest = run_copy.manifest()
    del manifest["finished"]
    manifest["fallback_files"] = [shown]
    run_copy.write_manifest(manifest)
    answer = run_copy.iolab("runs", "corpus-fio")
    assert f"unmerged: {shown}" in answer.stdout and "unfinished" in answer.stdout, answer


@pytest.mark.parametrize("where", ["run", "tmpdir"])
def test_after_the_merge_the_run_reads_complete(run_copy, spill_dirs, where):
    shown = spill(run_copy, "run" if where == "run" else spill_dirs[where])
    fallback = run_copy.run / shown if where == "run" else spill_dirs[where] / os.path.basename(shown)
    with open(run_copy.records_path, "a") as f:         # the README's merge
        f.write(fallback.read_text())
    fallback.unlink()
    answer = run_copy.iolab("runs", "corpus-fio")
    (line,) = [x for x in answer.stdout.splitlines() if x.startswith(run_copy.run.name)]
    # complete, nothing after it but the run's order
    order = r"(; blocks by repetition, shuffled with seed \d+)?"
    assert re.search(r"8 records: 8 ok  complete" + order + "$", line), answer
    table = noted(run_copy.iolab("table", "corpus-fio"), "| write |")
    assert "not merged" not in table and "incomplete" not in table


def test_an_interrupted_run_stays_incomplete_after_the_merge(run_copy, spill_dirs):
    shown = spill(run_copy, spill_dirs["tmpdir"])
    manifest = run_copy.manifest()
    manifest["finished"].update(reason="interrupted by SIGINT", complete_once_merged=False)
    run_copy.write_manifest(manifest)
    with open(run_copy.records_path, "a") as f:
        f.write(open(shown).read())
    os.unlink(shown)
    answer = run_copy.iolab("runs", "corpus-fio")
    assert "incomplete" in answer.stdout and "interrupted by SIGINT" in answer.stdout, answer


@pytest.mark.parametrize("named", [["/dev/zero"], ["/etc/passwd"], "not-a-list", [42, None],
                                   ["iolab-corpus-fio-RUN-records.unsaved-1.jsonl"]])
def test_a_manifest_naming_other_files_lists_none(run_copy, spill_dirs, named):
    """Only regular files with this run's fallback name count; nothing is opened to tell."""
    if isinstance(named, list) and named and str(named[0]).startswith("iolab-"):
        fifo = spill_dirs["tmpdir"] / named[0].replace("RUN", run_copy.run.name)
        os.mkfifo(fifo)             # the right name, but a FIFO
        named = [str(fifo)]
    manifest = run_copy.manifest()
    manifest["fallback_files"] = named
    run_copy.write_manifest(manifest)
    answer = run_copy.iolab("runs", "corpus-fio")
    assert answer.returncode == 0 and "unmerged" not in answer.stdout, answer
    assert "8 records: 8 ok  complete" in answer.stdout, answer
