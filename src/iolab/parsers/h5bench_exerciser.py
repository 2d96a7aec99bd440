"""h5bench 1.6 exerciser kernel (h5bench_exerciser, exerciser/h5bench_exerciser.c): stdout.

For each local buffer size (--nsizes of them: --minels, times --bufmult per dimension each
time) the kernel runs NUM_ITERATIONS = 10 iterations of create file / write / close / open /
read back / close, and rank 0 prints five rows, one per statistic over the 10 iterations:

    Metric      Bufsize   H5DWrite    RawWrBDWTH    H5Dread    RawRdBDWTH    Dataset ...
    Min           65536   0.000398    222.076540   0.000351    359.826650   0.000072 ...

Bufsize is one rank's double dataset in bytes. The times are, per iteration, the max over the
ranks, in seconds; RawWrBDWTH/RawRdBDWTH are, per iteration, the min over the ranks of
(Bufsize / 1048576 / the rank's H5Dwrite or H5Dread time) x ranks: aggregate MiB/s (the README
says MB/s; the code divides by 1048576).

Metrics, {stat} = min, max, avg, std ('Med' is not kept: getmoments() sorts a[1..n] of an
n-element array, reading past its end, so it is not the median):
    raw_write_rate_{stat}, raw_read_rate_{stat}                       MiB/s
    h5dwrite_time_{stat}, h5dread_time_{stat}, dataset_time_{stat}, group_time_{stat},
    attribute_time_{stat}, h5fopen_time_{stat}, h5fclose_time_{stat}, h5fflush_time_{stat},
    other_close_time_{stat}                                           s
With several buffer sizes every name ends in _<Bufsize>B (e.g. raw_write_rate_avg_8192B).

Details: the echoed flags (useMetaDataCollectives ... rankShift), the buffer sizes, whether the
build has collective metadata (`Metadata Collectives are DISABLED` without -DMETACOLOK, which
h5bench's CMake does not set) and whether the requested --dimranks were dropped ('WARNING!! -
ndomains ... Only dividing dim-0'): the adapter fails a case on those, this parser only reports.

Failures: `ERROR ...` (unknown option, data check, zero time), `... failed with rc`, `... error -`;
a missing statistic row or no `All done -- Finishing normally.` raise ParseError.
"""

from __future__ import annotations

import re

from ..errors import ParseError
from . import Metric, Parsed, printed_number

SOURCE = "h5bench-exerciser-text"
COLUMNS = [("H5DWrite", "h5dwrite_time", "s"), ("RawWrBDWTH", "raw_write_rate", "MiB/s"),
           ("H5Dread", "h5dread_time", "s"), ("RawRdBDWTH", "raw_read_rate", "MiB/s"),
           ("Dataset", "dataset_time", "s"), ("Group", "group_time", "s"),
           ("Attribute", "attribute_time", "s"), ("H5Fopen", "h5fopen_time", "s"),
           ("H5Fclose", "h5fclose_time", "s"), ("H5Fflush", "h5fflush_time", "s"),
           ("OtherClose", "other_close_time", "s")]
STATS = ("Min", "Med", "Max", "Avg", "Std")          # the order the kernel prints them
KEPT = ("min", "max", "avg", "std")
HEADER = ("Metric      Bufsize   H5DWrite    RawWrBDWTH    H5Dread    RawRdBDWTH    Dataset      Group  "
          "Attribute    H5Fopen   H5Fclose   H5Fflush OtherClose")
DONE = "All done -- Finishing normally."
FLAGS = ("useMetaDataCollectives", "addDerivedTypeDataset", "addAttributes", "useIndependentIO",
         "numDims", "useChunked", "rankShift")

_ROW = re.compile(r"^(Min|Med|Max|Avg|Std)\s+(\d+)((?:\s+\S+){11})\s*$")
_FLAGS = re.compile(r"^" + r" ".join(rf"{f}: (-?\d+)" for f in FLAGS) + r"$")
_FAILURE = re.compile(r"ERROR|failed with rc|error - ", re.IGNORECASE)
_FALLBACK = re.compile(r"^WARNING!! - ndomains: (\d+) must be: (\d+)\. Only dividing dim-0$")


def failures(text: str) -> list[str]:
    return list(dict.fromkeys(line.strip() for line in text.splitlines() if _FAILURE.search(line)))


def parse(text: str, source: str = SOURCE) -> Parsed:
    if not text.strip():
        raise ParseError(f"{source}: the h5bench_exerciser output is empty (it did not run?)")
    bad = failures(text)
    if bad:
        raise ParseError(f"{source}: h5bench_exerciser reported a failure: " + " | ".join(bad[:4]))
    lines = [ln.rstrip() for ln in text.splitlines()]
    flags = [m for m in map(_FLAGS.match, lines) if m]
    if not flags:
        raise ParseError(f"{source}: no 'useMetaDataCollectives: ...' line: not an h5bench_exerciser "
                         f"output?")
    if HEADER not in lines:
        raise ParseError(f"{source}: no 'Metric      Bufsize ...' header line (truncated?)")
    details: dict = dict(zip(FLAGS, map(int, flags[0].groups())))

    blocks: dict[int, dict[str, list[float]]] = {}
    for line in lines:
        m = _ROW.match(line)
        if not m:
            continue
        stat, size = m.group(1), int(m.group(2))
        cells = m.group(3).split()
        block = blocks.setdefault(size, {})
        if stat in block:
            raise ParseError(f"{source}: two '{stat}' rows for Bufsize {size}")
        block[stat] = [printed_number(c, f"{stat} {name} (Bufsize {size})", source)
                       for c, (name, _stem, _unit) in zip(cells, COLUMNS)]
    if not blocks:
        raise ParseError(f"{source}: no result rows (h5bench_exerciser did not finish a buffer size)")
    for size, block in blocks.items():
        missing = [s for s in STATS if s not in block]
        if missing:
            raise ParseError(f"{source}: no '{missing[0]}' row for Bufsize {size} (truncated?)")
    if DONE not in lines:
        raise ParseError(f"{source}: no '{DONE}' line: h5bench_exerciser did not finish")

    metrics = []
    several = len(blocks) > 1
    for size, block in blocks.items():
        for stat in KEPT:
            values = block[stat.capitalize()]
            for value, (name, stem, unit) in zip(values, COLUMNS):
                if unit == "MiB/s" and stat == "min" and value <= 0:
                    raise ParseError(f"{source}: {name} Min is {value} (Bufsize {size})")
                suffix = f"_{size}B" if several else ""
                metrics.append(Metric(f"{stem}_{stat}{suffix}", value, unit, SOURCE))
    fallback = [m for m in map(_FALLBACK.match, lines) if m]
    details.update(bufsizes=list(blocks),
                   metacoll_available="Warning: Metadata Collectives are DISABLED." not in lines,
                   dimranks_dropped=bool(fallback))
    return Parsed(metrics, version=None, details=details)
