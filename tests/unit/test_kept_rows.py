"""A table's text is kept in the cache beside the run's cached digest (report.table_rows): a
warm `iolab table` reads it instead of writing 10,000 rows out again. It must never show text
of other records, other columns or damaged bytes.

Runs are built as the ReFrame session writes them (tests/golden/publish_data.py); the cache
threshold is lowered so these small runs use it.
"""

from __future__ import annotations

import pickle

import pytest

from iolab.analysis import report
from iolab.analysis.report import build_tables, render, tables_from
from iolab.results import recordcache
from iolab.results.record import Record
from iolab.results import asrun
from iolab.results.run import kept_at, load_run, run_of
from iolab.results.decoding import decode_records
from iolab.results.files import read_records_bytes
from iolab.results.runfiles import RECORDS
from tests.golden.publish_data import experiment, make_run, records

RUN = "20261121T000000Z-dddddd"


@pytest.fixture
def run_path(tmp_path, monkeypatch, records_cache):
    monkeypatch.setattr(recordcache, "CACHE_MIN_BYTES", 0)
    exp = experiment("archer-fpp-vs-ssf")
    return make_run(tmp_path / "results", exp, RUN, records(exp, RUN, reps=3))


def from_records(path, style="md", metrics=None):
    """The tables as written from the records themselves, nothing cached."""
    recs = decode_records(path / RECORDS, read_records_bytes(path / RECORDS), Record.from_json)[0]
    run = load_run(path)
    return render(build_tables(recs, metrics, asrun.of(run).report), style, run)


def warm(path, style="md", metrics=None):
    run = load_run(path)
    assert kept_at(run) is not None, "the run's digest is not cached: nothing kept"
    return render(tables_from(run.digest, metrics, asrun.of(run).report, kept_at(run)), style, run)


def rows_entries(where):
    return sorted(where.glob("rows-*.pickle"))


def _not_again(*_args):
    raise AssertionError("the table was written out again")


def test_kept_text_is_the_same_and_not_written_again(run_path, records_cache, monkeypatch):
    load_run(run_path)                      # decodes: the digest's entry is written
    want_md, want_csv = from_records(run_path, "md"), from_records(run_path, "csv")
    assert (warm(run_path, "md"), warm(run_path, "csv")) == (want_md, want_csv)
    assert len(rows_entries(records_cache)) == 2        # one per style (the run has one part)
    monkeypatch.setattr(report, "_table_rows", _not_again)
    assert (warm(run_path, "md"), warm(run_path, "csv")) == (want_md, want_csv)


def test_other_columns_are_kept_apart(run_path, records_cache, monkeypatch):
    load_run(run_path)
    metrics = sorted({m.name for r in load_run(run_path).records for m in r.metrics})
    assert len(metrics) >= 2
    one = [metrics[-1]]
    want_all, want_one = from_records(run_path), from_records(run_path, metrics=one)
    assert want_all != want_one
    assert warm(run_path) == want_all
    assert warm(run_path, metrics=one) == want_one          # never the other columns' text
    assert warm(run_path) == want_all


@pytest.mark.parametrize("damage", ["truncated", "another shape", "not a table's"])
def test_a_damaged_entry_is_a_miss_and_written_again(run_path, records_cache, damage):
    load_run(run_path)
    want = from_records(run_path)
    assert warm(run_path) == want
    (entry,) = rows_entries(records_cache)
    data = entry.read_bytes()
    if damage == "truncated":
        entry.write_bytes(data[:len(data) // 2])
    else:
        with open(entry, "rb") as f:
            head = pickle.load(f)           # (cache format, key): the entry's own key kept
        value = ([], [["1"]], []) if damage == "another shape" else (["x"], [[1.5, None]], ["y"])
        entry.write_bytes(pickle.dumps(head) + pickle.dumps(value))
    assert warm(run_path) == want
    assert warm(run_path) == want


def test_changed_records_are_never_shown_as_kept(run_path, records_cache):
    load_run(run_path)
    before = warm(run_path)
    assert warm(run_path) == before
    path = run_path / RECORDS
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]))        # the last record gone: its case has one less
    run = load_run(run_path)
    after = render(tables_from(run.digest, None, asrun.of(run).report, kept_at(run)), "md", run)
    assert after != before and after == from_records(run_path)
    assert warm(run_path) == after


def test_runs_folded_in_memory_keep_nothing(run_path, records_cache):
    run = load_run(run_path)
    assert kept_at(run_of(run.records, run.manifest, run.path)) is None
    assert kept_at(load_run(run_path)) is not None
