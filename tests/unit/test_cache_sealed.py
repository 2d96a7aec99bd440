"""A cache entry that was edited after it was written is never shown: each entry is sealed with
the sha256 of its content, and one whose content is not what was sealed is a miss, derived again
from the run's files. One test per kind that reaches output, on a real recorded grid (the
interleaved xfer-local run of test_drift_blocks), each entry edited so that it still unpickles
(a digit changed in place: the same length, the same structure), as a hand edit would."""

from __future__ import annotations

import io
import pickle
import re

import pytest

from iolab.cli import main
from iolab.results import cache, recordcache
from iolab.results.record import Record
from iolab.results.run import load_run
from iolab.results.decoding import decode_records
from iolab.results.files import read_records_bytes
from iolab.results.runfiles import RECORDS
from tests.unit.test_drift_blocks import EXP, _interleaved, _records, _run, _slow_middle

RUN = "20261123T211105Z-bbbbbb"


def _unpickles(body: bytes) -> bool:
    f = io.BytesIO(body)
    try:
        while f.tell() < len(body):
            pickle.load(f)
    except Exception:  # noqa: BLE001
        return False
    return True


def poison(entry) -> bytes:
    """Change one digit of the entry's content (past its (format, key) head) so that every pickle
    in it still loads; the seal at its end is left as it was. Returns the poisoned bytes."""
    data = entry.read_bytes()
    body, seal = data[:-cache.Sealed.SIZE], data[-cache.Sealed.SIZE:]
    head = io.BytesIO(body)
    pickle.load(head)
    start = head.tell()
    # numbers shown in a table first ("1234.5"), then any digit of the content
    spots = [m.start() for m in re.finditer(rb"\d(?=\.\d)", body[start:])] + \
            [m.start() for m in re.finditer(rb"\d", body[start:])]
    for i in (start + s for s in spots):
        edited = body[:i] + (b"3" if body[i:i + 1] != b"3" else b"8") + body[i + 1:]
        if _unpickles(edited):
            entry.write_bytes(edited + seal)
            return edited + seal
    raise AssertionError(f"{entry.name}: no digit to change that keeps it a pickle")


@pytest.fixture
def warm(tmp_path, monkeypatch, capsys, records_cache):
    """The slow-middle grid run, its table shown once from its records (the truth) and once
    warm, so every kind of entry is in the cache."""
    results = tmp_path / "results"
    monkeypatch.setenv("IOLAB_RESULTS", str(results))
    monkeypatch.setattr(recordcache, "CACHE_MIN_BYTES", 0)
    path = _run(results, RUN, _slow_middle(_interleaved(_records())))
    assert main(["table", EXP, "--run", "bbbbbb"]) == 0
    truth = capsys.readouterr().out
    assert main(["table", EXP, "--run", "bbbbbb"]) == 0
    assert capsys.readouterr().out == truth and "drift in main" in truth
    return path, truth


@pytest.mark.parametrize("kind", ["rows", "digest", "run-digest", "drift", "experiment", "matrix-order"])
def test_an_edited_entry_that_reaches_a_table_is_rebuilt_never_shown(warm, capsys, records_cache, kind):
    path, truth = warm
    if kind == "digest":        # the cache's copy of a digest: for a run without records.digest
        (path / "records.digest").unlink()
        for _ in range(2):
            assert main(["table", EXP, "--run", "bbbbbb"]) == 0
            assert capsys.readouterr().out == truth
    entries = sorted(records_cache.glob(f"{kind}-*.pickle"))
    assert entries, f"no {kind} entry was cached"
    poisoned = {e: poison(e) for e in entries}
    assert main(["table", EXP, "--run", "bbbbbb"]) == 0
    assert capsys.readouterr().out == truth
    # the edited entries were misses, written again from the run's files
    for entry, bad in poisoned.items():
        assert not entry.exists() or entry.read_bytes() != bad
    assert main(["table", EXP, "--run", "bbbbbb"]) == 0
    assert capsys.readouterr().out == truth


OTHER = "20261123T221105Z-cccccc"
# a run's cases by a parameter, and two runs (the other without the slow middle)
COMPARES = {"by": ["compare", EXP, "bbbbbb", "--by", "transfer_size", "--baseline", "4096"],
            "runs": ["compare", EXP, "bbbbbb", "cccccc"]}


@pytest.fixture(params=sorted(COMPARES))
def compared(request, warm, capsys):
    """What the comparison shows, computed (its statistics not kept yet), and how to show it."""
    path, _truth = warm
    if request.param == "runs":
        _run(path.parent.parent, OTHER, _interleaved(_records()))

    def show() -> str:
        assert main(COMPARES[request.param]) == 0
        return capsys.readouterr().out
    truth = show()
    assert any(v in truth for v in ("| faster", "| slower", "within drift"))
    return truth, show


def test_an_edited_entry_of_a_comparisons_statistics_is_computed_again(compared, records_cache):
    truth, show = compared
    (entry,) = records_cache.glob("pair-stats-*.pickle")
    assert show() == truth       # read from the entry
    bad = poison(entry)
    assert show() == truth
    assert entry.read_bytes() != bad


def test_kept_statistics_of_other_pairs_are_never_used(compared, records_cache):
    """An entry sealed as written but holding the pairs' values in another order (as a bug in
    what chose the pairs would write) is not this comparison's: each pair's values are used
    only for the n, mean and stddev they were computed from."""
    truth, show = compared
    (entry,) = records_cache.glob("pair-stats-*.pickle")
    with open(entry, "rb") as f:
        _format, _code, key = pickle.load(f)
    kept = cache.read_value(entry, key, list)
    assert len(kept) > 2 and kept[0][1:] != kept[-1][1:]
    cache.write_value(entry, key, kept[::-1], entry.name[:entry.name.rindex("-") + 1])
    assert cache.read_value(entry, key, list) == kept[::-1]
    assert show() == truth


def test_edited_pickled_records_are_decoded_again(warm, records_cache):
    path, _truth = warm
    want = decode_records(path / RECORDS, read_records_bytes(path / RECORDS), Record.from_json)[0]
    assert load_run(path).records == want      # decoded once: the pickled records are cached
    (entry,) = records_cache.glob("records-*.pickle")
    poison(entry)
    assert load_run(path).records == want


def test_a_sealed_entry_reads_back_and_a_trailing_byte_is_a_miss(tmp_path):
    entry = tmp_path / "kind-x-key.pickle"
    cache.write_value(entry, "key", ("text", [1.5]), "kind-x-")
    assert cache.read_value(entry, "key", tuple) == ("text", [1.5])
    entry.write_bytes(entry.read_bytes() + b"\0")
    assert cache.read_value(entry, "key", tuple) is None
    cache.write_value(entry, "key", ("text", [1.5]), "kind-x-")
    entry.write_bytes(entry.read_bytes()[:-1])
    assert cache.read_value(entry, "key", tuple) is None
