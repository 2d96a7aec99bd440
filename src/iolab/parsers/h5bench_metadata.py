"""h5bench 1.6 metadata kernel (h5bench_hdf5_iotest, metadata_stress/hdf5_iotest.c): stdout.

Rank 0 echoes the configuration it loaded, then prints, after both phases (write every array of
every step, close, reopen, read everything back):

    Wall clock [s]:      0.05                  one value
    File size [B]:       8390656               one value (the file as closed: data + HDF5 metadata)
    Write phase [s]:     _0.03 / ^0.03         each: '_min' then '^max' over the ranks
    Create time [s], Write time [s], Write rate [MiB/s], Read phase [s], Read time [s],
    Read rate [MiB/s]

Times are printed with 2 decimals (small runs read 0.00). The rates are PER RANK: rank 0's byte
count (steps x arrays x its rows x its columns x 8, the same on every rank) over the max (for
_min) and min (for _max) of the ranks' H5Dwrite/H5Dread times, in MiB/s (1024**2, as labelled).

Metrics (parsers/h5bench_metadata_csv.py gives the same names from the CSV):
    wall_time                                   s
    file_size                                   B
    write_phase_min/_max, create_time_min/_max, write_time_min/_max,
    read_phase_min/_max, read_time_min/_max     s
    write_rate_per_rank_min/_max, read_rate_per_rank_min/_max      MiB/s (as printed)
    write_rate, read_rate                       MiB/s: ranks x *_rate_per_rank_min, i.e. all the
                                                bytes over the slowest rank's I/O time (ranks =
                                                the process grid, rows x columns)

Failures: the kernel asserts on bad input (stderr, signal 6), and prints `Failed to create file`,
`Failed to open file`, `Config file not found` or `Can't load` and returns 0 on rank 0 only. A
failure line, an empty output or a missing value raises ParseError.
"""

from __future__ import annotations

import re

from ..errors import ParseError
from . import Metric, Parsed, printed_number

SOURCE = "h5bench-metadata-text"
# (label as printed, metric stem, unit); the rates become *_rate_per_rank_*
PAIRS = [("Write phase [s]", "write_phase", "s"), ("Create time [s]", "create_time", "s"),
         ("Write time [s]", "write_time", "s"), ("Write rate [MiB/s]", "write_rate_per_rank", "MiB/s"),
         ("Read phase [s]", "read_phase", "s"), ("Read time [s]", "read_time", "s"),
         ("Read rate [MiB/s]", "read_rate_per_rank", "MiB/s")]
# Metric names, in the order both parsers return them
NAMES = ["wall_time", "file_size", *[f"{stem}_{m}" for _l, stem, _u in PAIRS for m in ("min", "max")],
         "write_rate", "read_rate"]
UNITS = {"wall_time": "s", "file_size": "B", "write_rate": "MiB/s", "read_rate": "MiB/s",
         **{f"{stem}_{m}": unit for _l, stem, unit in PAIRS for m in ("min", "max")}}

_FAILURE = re.compile(r"fail|error|can't load|not found|assert", re.IGNORECASE)
_CONFIG = [
    re.compile(r"^\tsteps=(?P<steps>\d+), arrays=(?P<arrays>\d+), rows=(?P<rows>\d+), "
               r"columns=(?P<columns>\d+), scaling=(?P<scaling>\S+)$"),
    re.compile(r"^\tproc-grid=(?P<process_rows>\d+)x(?P<process_columns>\d+), "
               r"slowest-dimension=(?P<slowest_dimension>\S+), rank=(?P<dataset_rank>\d+)$"),
    re.compile(r"^\tlayout=(?P<layout>\S+), mpi-io=(?P<mpi_io>\S+)$"),
]
_INTS = ("steps", "arrays", "rows", "columns", "process_rows", "process_columns", "dataset_rank")


def failures(text: str) -> list[str]:
    """The kernel's failure lines (the 'Config loaded from <path>' echo aside), once each."""
    return list(dict.fromkeys(line.strip() for line in text.splitlines()
                              if _FAILURE.search(line) and not line.startswith("Config loaded from")))


def finish(values: dict[str, float], config: dict, source_tag: str, source: str) -> Parsed:
    """The metrics from the printed values (keyed by metric name) and the echoed configuration."""
    for rate in ("write_rate_per_rank_min", "read_rate_per_rank_min"):
        if values[rate] <= 0:
            raise ParseError(f"{source}: {rate} is {values[rate]} MiB/s")
    ranks = config["process_rows"] * config["process_columns"]
    values = {**values, "write_rate": ranks * values["write_rate_per_rank_min"],
              "read_rate": ranks * values["read_rate_per_rank_min"]}
    metrics = [Metric(name, values[name], UNITS[name], source_tag) for name in NAMES]
    return Parsed(metrics, version=None, details={**config, "ranks": ranks}, echo={"ranks": ranks})


def parse(text: str, source: str = SOURCE) -> Parsed:
    if not text.strip():
        raise ParseError(f"{source}: the h5bench_hdf5_iotest output is empty (it stopped before its "
                         f"results: an assertion on stderr?)")
    bad = failures(text)
    if bad:
        raise ParseError(f"{source}: h5bench_hdf5_iotest reported a failure: " + " | ".join(bad[:4]))
    lines = text.splitlines()
    config: dict = {}
    for line in lines:
        for pattern in _CONFIG:
            m = pattern.match(line)
            if m:
                config.update(m.groupdict())
    if len(config) != 11:
        raise ParseError(f"{source}: no complete 'Config loaded from' echo: not an h5bench_hdf5_iotest "
                         f"output?")
    for key in _INTS:
        config[key] = int(config[key])

    values: dict[str, float] = {}
    for name, label in (("wall_time", "Wall clock [s]"), ("file_size", "File size [B]")):
        found = [ln for ln in lines if ln.startswith(label + ":")]
        if not found:
            raise ParseError(f"{source}: no '{label}' line (h5bench_hdf5_iotest did not finish?)")
        values[name] = printed_number(found[0].split(":", 1)[1].strip(), label, source)
    for label, stem, _unit in PAIRS:
        at = [i for i, ln in enumerate(lines) if ln.startswith(label + ":")]
        if not at:
            raise ParseError(f"{source}: no '{label}' line (truncated?)")
        first = lines[at[0]].split(":", 1)[1].strip()
        second = lines[at[0] + 1].strip() if at[0] + 1 < len(lines) else ""
        if not first.startswith("_") or not second.startswith("^"):
            raise ParseError(f"{source}: '{label}' is not '_min' then '^max' (truncated?)")
        values[f"{stem}_min"] = printed_number(first[1:], f"{label} min", source)
        values[f"{stem}_max"] = printed_number(second[1:], f"{label} max", source)
    return finish(values, config, SOURCE, source)
