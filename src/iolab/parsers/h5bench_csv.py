"""h5bench 1.6 pattern kernels: the CSV_FILE (`metric, value, unit` rows, `", "` separated).

The structured twin of stdout (parsers/h5bench_text.py): same metric names, units normalised to
MiB and MiB/s the same way. It lacks the H5Fcreate/H5Fflush/H5Fclose times. Rows h5bench writes
only for some kernels (collective data, subfiling...) are kept in details. An ENV_METADATA_FILE
block before the header is skipped.
"""

from __future__ import annotations

import re

from ..errors import ParseError
from . import Parsed
from . import printed_number
from .h5bench_text import OPERATIONS, SHARED, metrics, to_mib

SOURCE = "h5bench-csv"
HEADER = "metric, value, unit"
_UNIT = re.compile(r"^([KMGT]?)B(/s)?$")


def rows(text: str, source: str) -> dict[str, tuple[str, str]]:
    lines = text.splitlines()
    try:
        start = [line.strip() for line in lines].index(HEADER) + 1
    except ValueError:
        if not text.strip():
            raise ParseError(f"{source}: the h5bench CSV is empty (h5bench stopped before its "
                             f"results)") from None
        raise ParseError(f"{source}: not an h5bench CSV (no '{HEADER}' header)") from None
    out = {}
    for number, line in enumerate(lines[start:], start + 1):
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",", 2)]
        if len(cells) != 3:
            raise ParseError(f"{source}: line {number} {line!r} is not 'metric, value, unit' "
                             f"(truncated?)")
        out[cells[0]] = (cells[1], cells[2])
    return out


def parse(text: str, source: str = SOURCE) -> Parsed:
    table = rows(text, source)
    for row in ("operation", "ranks", *SHARED):
        if row not in table:
            raise ParseError(f"{source}: no '{row}' row in the h5bench CSV (truncated?)")
    operation = table["operation"][0]
    if operation not in OPERATIONS:
        raise ParseError(f"{source}: unknown h5bench operation {operation!r}")
    values = {}
    for row in SHARED:
        cell, unit = table[row]
        if row.endswith("time"):
            if unit != "seconds":
                raise ParseError(f"{source}: {row} is in {unit!r}, not seconds")
            values[row] = printed_number(cell, row, source)
            continue
        m = _UNIT.match(unit)
        if not m or bool(m.group(2)) != row.endswith("rate"):
            raise ParseError(f"{source}: {row} has an unknown unit {unit!r}")
        values[row] = to_mib(cell, m.group(1), row, source)
    details = {"operation": operation,
               "ranks": int(printed_number(table["ranks"][0], "ranks", source)),
               **{k: v for k, (v, _u) in table.items()
                  if k not in SHARED and k not in ("operation", "ranks")}}
    return Parsed(metrics(OPERATIONS[operation], values, SOURCE, source), version=None, details=details)
