"""The block test of drift (analysis/drift.py) on a real recorded grid (tests/data/grids/xfer-local:
IOR through ROMIO, 48 cases x 3 repetitions, all ok), damaged on purpose: its start times
rewritten as the interleaved order of a seed would have run its jobs (experiment/order.py, the
same spacing), then the values of the jobs that started in the middle third of the run's time
made 40% slower, and the digest chain written whole again. A dip that recovers has no slope: the
block test finds it, with its size and its time window, in `iolab runs`, `iolab table` (read from
the run's digest, no record decoded) and the published page, and `iolab compare` with the
undamaged copy says "within drift" instead of declaring the 13% it makes on each case's mean."""

from __future__ import annotations

import datetime
import gzip
import json
import math
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from iolab import stats
from iolab.analysis import drift
from iolab.analysis.compare import Side, compare_runs, verdict
from iolab.cli import main
from iolab.experiment.order import Order
from iolab.results import integrity, recordcache
from iolab.results.digest import fold
from iolab.results.record import Record
from iolab.results.run import load_run
from tests.corpus.conftest import rechain

GRID = Path(__file__).parent.parent / "data" / "grids" / "xfer-local"
EXP = "grid-xfer-local"
SEED = 20261126
SLOW = 0.6                  # 40% slower in the middle third of the run's time


def _records() -> list[dict]:
    with gzip.open(GRID / "records.jsonl.gz", "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def _start(r: dict) -> float:
    return Record.from_json(r).started


def _interleaved(recs: list[dict], seed: int = SEED) -> list[dict]:
    """The records with their start times as an interleaved run would have had them: the jobs in
    the order Order(blocks, seed) gives, one every (the real run's span / jobs) seconds from its
    first start; every timing field moves with its start."""
    starts = [_start(r) for r in recs]
    t0, step = min(starts), (max(starts) - min(starts)) / (len(recs) - 1)
    cases = [SimpleNamespace(case_id=cid, part=part) for part, cid in
             dict.fromkeys((r["part"], r["case_id"]) for r in recs)]
    order = Order("blocks", seed, 3).jobs(cases)
    place = {(cid, rep): k for k, (_part, cid, rep) in enumerate(order)}
    out = []
    for r in recs:
        r = json.loads(json.dumps(r))
        shift = t0 + place[(r["case_id"], r["repetition"])] * step - _start(r)
        timing = r["provenance"]["timing"]
        for key, value in timing.items():
            timing[key] = value + shift
        r["recorded"] = datetime.datetime.fromtimestamp(
            timing["recorded"], datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        out.append(r)
    return out


def _slow_middle(recs: list[dict], factor: float = SLOW, scale: float = 1.0) -> list[dict]:
    """Every metric of the records that started in the middle third of the run's time, times
    factor (bandwidths and rates slower; no time metric is tested); every record's times scale."""
    starts = [_start(r) for r in recs]
    t0, span = min(starts), max(starts) - min(starts)
    out = []
    for r in recs:
        r = json.loads(json.dumps(r))
        slow = t0 + span / 3 <= _start(r) < t0 + 2 * span / 3
        for m in r["metrics"]:
            m["value"] *= scale * (factor if slow else 1.0)
        out.append(r)
    return out


def _run(results: Path, name: str, recs: list[dict], seed: int = SEED) -> Path:
    """A copy of the grid's run under `results` as run `name`, in a blocks order of `seed`, its
    records chained as iolab writes them, and its digest written as a run's end writes it."""
    dest = results / EXP / name
    dest.mkdir(parents=True)
    manifest = json.loads((GRID / "manifest.json").read_text())
    manifest.update(run_id=name, order={"by": "blocks", "seed": seed, "repetitions": 3})
    manifest[integrity.MANIFEST_KEY] = integrity.FORMAT
    (dest / "manifest.json").write_text(json.dumps(manifest))
    rechain(dest, [{**r, "run_id": name} for r in recs])
    recordcache.write_run_digest(dest)
    return dest


def test_the_f_test_is_snedecors_and_the_fit_least_squares():
    scipy = pytest.importorskip("scipy.stats")
    for f, a, b in [(1.0, 2, 5), (3.5, 3, 40), (0.2, 1, 1), (10.0, 5, 200), (2.2, 10, 3)]:
        assert stats.f_sf(f, a, b) == pytest.approx(scipy.f.sf(f, a, b), rel=1e-10)
    # unbalanced cells (a case without its third value): the backfitting's F is the one of the
    # least-squares fit, here against the closed form of two cells and two blocks
    groups = [[(0, 1.0), (1, 2.0)], [(0, 3.0), (1, 5.0)], [(0, 0.0), (1, 1.5), (2, 9.0)]]
    got = stats.block_effects(groups)
    assert (got.df1, got.df2, got.n, got.cells) == (1, 2, 6, 3)      # block 2 has one value: out
    diffs = [1.0, 2.0, 1.5]         # block 1 - block 0 in each cell
    mean = sum(diffs) / 3
    ss_block = 3 * mean ** 2 / 2
    ss_resid = sum((d - mean) ** 2 for d in diffs) / 2
    assert got.f == pytest.approx(ss_block / (ss_resid / 2))
    assert got.effects[1] - got.effects[0] == pytest.approx(mean)


def test_the_real_run_interleaved_is_not_flagged_and_its_slow_middle_is():
    real = [Record.from_json(r) for r in _interleaved(_records())]
    assert not [d.text() for d in drift.of_digest(fold(real)) if d.drifts]
    damaged = [Record.from_json(r) for r in _slow_middle(_interleaved(_records()))]
    found = drift.of_digest(fold(damaged))
    (trend,) = [d for d in found if d.test == "trend test"]
    assert not trend.drifts, trend.text()       # a dip that recovers has no slope
    (blocks,) = [d for d in found if d.test == "block test"]
    assert blocks.drifts and blocks.blocks.p < 1e-6
    assert blocks.worst == 1        # the middle block, 40% below the median block
    assert blocks.percent == pytest.approx(-40, abs=8)
    # its window: the starts of the jobs made slower
    starts = sorted(r.started for r in damaged)
    third = (starts[-1] - starts[0]) / 3
    low, high = blocks.windows[1]
    assert starts[0] + third <= low <= high < starts[0] + 2 * third


def test_a_matrix_order_run_says_what_a_block_is():
    recs = [Record.from_json(r) for r in _records()]
    (found,) = drift.block_test(recs, interleaved=False)
    assert not found.drifts
    assert "matrix order" in found.text() and "between cases is not seen" in found.text()


def test_runs_table_page_and_compare_flag_the_slow_middle(tmp_path, monkeypatch, capsys,
                                                          records_cache):
    results = tmp_path / "results"
    monkeypatch.setenv("IOLAB_RESULTS", str(results))
    clean = _run(results, "20261123T211105Z-aaaaaa", _interleaved(_records()))
    slow = _run(results, "20261123T211105Z-bbbbbb", _slow_middle(_interleaved(_records())))
    (blocks,) = [d for d in drift.of_run(load_run(slow)) if d.test == "block test"]
    window = blocks.window()
    # iolab table of a run with its digest: no record decoded, the drift still noted
    monkeypatch.setattr(Record, "from_json", _no_decoding)
    assert main(["table", EXP, "--run", "bbbbbb"]) == 0
    out = capsys.readouterr().out
    assert f"drift in main (write_bw): {blocks.percent:+.1f}% in block 2 of 3" in out
    assert window in out and "block test" in out
    # read again: the tests' result comes from the cache beside the cached digest, the same;
    # a damaged entry is a miss, computed again from the digest
    monkeypatch.setattr(recordcache, "CACHE_MIN_BYTES", 0)
    assert main(["table", EXP, "--run", "bbbbbb"]) == 0
    first = capsys.readouterr().out
    (entry,) = records_cache.glob("drift-*.pickle")
    assert len(list(records_cache.glob("experiment-*.pickle"))) == 1     # its copy, checked once
    assert main(["table", EXP, "--run", "bbbbbb"]) == 0
    assert capsys.readouterr().out == first and window in first
    entry.write_bytes(entry.read_bytes()[:40])
    assert main(["table", EXP, "--run", "bbbbbb"]) == 0
    assert capsys.readouterr().out == first
    assert main(["table", EXP, "--run", "aaaaaa"]) == 0
    assert "drift" not in capsys.readouterr().out
    monkeypatch.undo()
    monkeypatch.setenv("IOLAB_RESULTS", str(results))
    monkeypatch.setenv("IOLAB_CACHE", str(records_cache))
    assert main(["runs", EXP]) == 0
    lines = capsys.readouterr().out.splitlines()
    (line,) = [ln for ln in lines if "bbbbbb" in ln]
    assert f"drift in main (write_bw) {blocks.percent:+.1f}% in block 2 of 3 ({window}; block test" in line
    assert "drift" not in next(ln for ln in lines if "aaaaaa" in ln)
    page = tmp_path / "page"
    assert main(["publish", EXP, "--run", "bbbbbb", "--out", str(page)]) == 0
    html = (page / "index.html").read_text()
    assert f"{blocks.percent:+.1f}% in block 2 of 3" in html and window in html
    # compare: each case's mean is 13% lower in the damaged run, from one slow repetition of
    # three: no case's difference is declared, and the drift is said
    assert main(["compare", EXP, "aaaaaa", "bbbbbb", "--metrics", "write_bw"]) == 0
    out = capsys.readouterr().out
    assert _raw_verdicts(clean, slow)["slower"] == 0
    assert "B: drift in main (write_bw)" in out and "a smaller difference is not declared" in out
    assert "| slower |" not in out
    # the same dip and every value 20% lower: some case's difference is declared by the tests
    # alone, and compare says it is within the drift (40% in the middle block)
    lower = _run(results, "20261123T211105Z-cccccc", _slow_middle(_interleaved(_records()), scale=0.8))
    raw = _raw_verdicts(clean, lower)
    assert raw["slower"] >= 1, raw
    assert main(["compare", EXP, "aaaaaa", "cccccc", "--metrics", "write_bw"]) == 0
    out = capsys.readouterr().out
    assert out.count("within drift: slower by") == raw["slower"]
    assert "| slower |" not in out


def _raw_verdicts(a: Path, b: Path) -> Counter:
    """compare's verdicts of each case without the drift floor (Welch and the ratio's CI)."""
    c = compare_runs(Side("A", load_run(a)), Side("B", load_run(b)), ["write_bw"])
    (table,) = c.tables
    return Counter(verdict(p.welch, p.b.mean - p.a.mean, table.better, p.ratio_ci) for p in table.pairs)


def _no_decoding(*_args, **_kwargs):
    raise AssertionError("a record was decoded")


def test_the_reference_free_size_is_what_compare_takes():
    damaged = [Record.from_json(r) for r in _slow_middle(_interleaved(_records()))]
    found = drift.of_digest(fold(damaged))
    floor = drift.floor(found, "main")
    assert floor.test == "block test" and floor.size == pytest.approx(abs(floor.percent) / 100)
    assert math.isclose(floor.size, max(d.size for d in found if d.drifts))


@pytest.mark.parametrize("grid", ["romio-local", "small-io-local", "xfer-local", "api-local",
                                  "cephfs-local", "ior-local"])
def test_the_recorded_grids_as_they_ran(grid):
    """The real grids in their own (matrix) order: the block test finds nothing, except on
    ior-local, whose first repetitions were slower (a warm-up the trend test finds too)."""
    path = GRID.parent / grid
    text = ((path / "records.jsonl").read_text() if (path / "records.jsonl").exists()
            else gzip.open(path / "records.jsonl.gz", "rt").read())
    recs = [Record.from_json(json.loads(line)) for line in text.splitlines() if line.strip()]
    (found,) = drift.block_test(recs, interleaved=False)
    if grid == "ior-local":
        assert found.drifts and found.worst == 0 and found.percent < -15, found.text()
    else:
        assert not found.drifts, found.text()
