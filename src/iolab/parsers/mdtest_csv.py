"""mdtest 4.0.0 per-rank CSV (--saveRankPerformanceDetails=FILE).

Header `rank,items,rate-<Operation>,time-<Operation>,...` for every operation; then an `all` row
(items per rank, and rate and time of the last iteration's aggregate), then one row per rank and
iteration with each rank's own rate and time before the closing barrier (file, directory
operations; the tree ones are rank 0's and only in `all`). Empty cells: the phase did not run.
This parser yields the spread over ranks: the slowest and fastest rank's rate per operation.
mdtest leaves 'Directory read' out of its summary (its rate is inf: the phase times nothing);
so does this parser.
"""

from __future__ import annotations

import csv
import io

from ..errors import ParseError
from . import Metric, Parsed, printed_number
from .mdtest_text import OPERATIONS

SOURCE = "mdtest-csv"
_SKIPPED = ("Directory read",)


def looks_like(text: str) -> bool:
    return text.startswith("rank,items,rate-")


def parse(text: str, source: str = SOURCE) -> Parsed:
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or not looks_like(text):
        raise ParseError(f"{source}: not an mdtest --saveRankPerformanceDetails CSV")
    header = rows[0]
    if len(rows) < 2 or rows[1][:1] != ["all"]:
        raise ParseError(f"{source}: no 'all' row: mdtest did not finish")
    ranks = [r for r in rows[2:] if r and r[0].isdigit()]
    if not ranks:
        raise ParseError(f"{source}: no per-rank rows")
    metrics: list[Metric] = []
    for i, column in enumerate(header):
        if not column.startswith("rate-"):
            continue
        op = column.removeprefix("rate-")
        if op in _SKIPPED or op not in OPERATIONS:
            continue
        cells = [r[i] for r in ranks if i < len(r) and r[i] != ""]
        if not cells:
            continue                                 # the phase did not run, or is rank 0's own
        values = [printed_number(c, f"rank {op} rate", source) for c in cells]
        if len(values) != len(ranks):
            raise ParseError(f"{source}: {op}: {len(values)} of {len(ranks)} rank rows have a rate")
        name = OPERATIONS[op]
        metrics.append(Metric(f"{name}_rank_rate_min", min(values), "ops/s", SOURCE))
        metrics.append(Metric(f"{name}_rank_rate_max", max(values), "ops/s", SOURCE))
    if not metrics:
        raise ParseError(f"{source}: no operation has per-rank rates")
    items = rows[1][1] if len(rows[1]) > 1 else ""
    echo = {"items_per_rank": int(items)} if items.isdigit() else {}
    return Parsed(metrics, details={"ranks_x_iterations": len(ranks)}, echo=echo)
