"""h5bench 1.6 metadata kernel (h5bench_hdf5_iotest): its csv-file.

One header line and one row, written by rank 0 after stdout's results (hdf5_iotest.c l.384-398):
the configuration (steps ... mpi-io), then the same values as stdout with the same 2 decimals.
Same metric names and units as parsers/h5bench_metadata.py. The file is created empty before the
run (file_create_try), so an empty CSV means the kernel stopped before its results.
"""

from __future__ import annotations

from ..errors import ParseError
from . import Parsed, printed_number
from .h5bench_metadata import PAIRS, finish

SOURCE = "h5bench-metadata-csv"
HEADER = ("steps,arrays,rows,cols,scaling,proc-rows,proc-cols,slowdim,rank,layout,mpi-io,wall [s],"
          "fsize [B],write-phase-min [s],write-phase-max [s],creat-min [s],creat-max [s],write-min [s],"
          "write-max [s],write-rate-min [MiB/s],write-rate-max [MiB/s],read-phase-min [s],"
          "read-phase-max [s],read-min [s],read-max [s],read-rate-min [MiB/s],read-rate-max [MiB/s]")
_CONFIG = {"steps": "steps", "arrays": "arrays", "rows": "rows", "cols": "columns",
           "scaling": "scaling", "proc-rows": "process_rows", "proc-cols": "process_columns",
           "slowdim": "slowest_dimension", "rank": "dataset_rank", "layout": "layout",
           "mpi-io": "mpi_io"}
_COLUMNS = ["write-phase", "creat", "write", "write-rate", "read-phase", "read", "read-rate"]


def parse(text: str, source: str = SOURCE) -> Parsed:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise ParseError(f"{source}: the h5bench_hdf5_iotest CSV is empty (it stopped before its "
                         f"results)")
    if lines[0].strip() != HEADER:
        raise ParseError(f"{source}: not an h5bench_hdf5_iotest CSV (unexpected header)")
    if len(lines) != 2:
        raise ParseError(f"{source}: {len(lines) - 1} data rows, expected 1")
    header = HEADER.split(",")
    cells = lines[1].strip().split(",")
    if len(cells) != len(header):
        raise ParseError(f"{source}: {len(cells)} cells for {len(header)} columns (truncated?)")
    row = dict(zip(header, cells))
    config = {}
    for column, key in _CONFIG.items():
        value = row[column]
        config[key] = value if key in ("scaling", "slowest_dimension", "layout", "mpi_io") \
            else int(printed_number(value, column, source))
    values = {"wall_time": printed_number(row["wall [s]"], "wall", source),
              "file_size": printed_number(row["fsize [B]"], "fsize", source)}
    for column, (_label, stem, unit) in zip(_COLUMNS, PAIRS):
        suffix = " [MiB/s]" if unit == "MiB/s" else " [s]"
        for m in ("min", "max"):
            values[f"{stem}_{m}"] = printed_number(row[f"{column}-{m}{suffix}"], f"{column}-{m}", source)
    return finish(values, config, SOURCE, source)
