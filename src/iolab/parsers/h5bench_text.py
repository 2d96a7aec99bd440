"""h5bench 1.6 pattern kernels (h5bench_write, _read, _overwrite, _append, _write_unlimited): stdout.

The results are the block after `=== Performance Results ===` (h5bench_write.c l.1142-1180,
h5bench_read.c l.763-793). The CSV (CSV_FILE, parsers/h5bench_csv.py) holds the same numbers
except the H5Fcreate/H5Fflush/H5Fclose times, which only stdout has.

h5bench scales sizes and rates itself (' ', K, M, G, T) in powers of 1024 and writes 'MB' and
'MB/s' for what are MiB: every size is returned in MiB and every rate in MiB/s.

Metrics; {op} is write (write, write_unlimited), read, or modify (overwrite, append: h5bench's
own word for both):
    raw_{op}_rate, observed_{op}_rate      MiB/s  bytes / raw I/O time; bytes / (observed - compute)
    total_size                             MiB
    raw_time, metadata_time, observed_time, compute_time              s
    h5fcreate_time, h5fflush_time, h5fclose_time                      s  (write kernels only)

h5bench exits 0 after most failures (an unknown key prints `Configuration file read failed`):
a failure line or a missing or truncated results block raises ParseError.
"""

from __future__ import annotations

import re

from ..errors import ParseError
from . import Metric, Parsed, printed_number

SOURCE = "h5bench-text"
RESULTS = "=================== Performance Results =================="
_END = "==========================================================="
_PREFIX = {"": 1 / 1024**2, " ": 1 / 1024**2, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2}

# The CSV's 'operation' cell -> the word h5bench prints on stdout for that kernel
OPERATIONS = {"write": "write", "write unlimited": "write", "read": "read",
              "overwrite": "modify", "append": "modify"}

# Values both outputs carry, by their CSV row name -> (metric name, unit); {op} as above
SHARED = {
    "raw rate": ("raw_{op}_rate", "MiB/s"),
    "observed rate": ("observed_{op}_rate", "MiB/s"),
    "total size": ("total_size", "MiB"),
    "raw time": ("raw_time", "s"),
    "metadata time": ("metadata_time", "s"),
    "observed time": ("observed_time", "s"),
    "total compute time": ("compute_time", "s"),
}
FILE_TIMES = ("create", "flush", "close")

# What h5bench prints when it gives up (commons/h5bench_util.c, h5bench_patterns/*.c)
_FAILURE = re.compile(r"fail|error|invalid|unknown|usage|\bmust\b|make sure|inconsist|exceeds|"
                      r"please check|not recognized|unsupported", re.IGNORECASE)
# Lines that echo a path, which may contain any word
_PATH_LINES = ("Configuration file: ", "Output data file: ", "Read data file: ", "File: ",
               "Opened HDF5 file... [")
_LINES = {
    "ranks": re.compile(r"^Total number of ranks: (\S+)$"),
    "total compute time": re.compile(r"^Total emulated compute time: (\S+) s$"),
    "total size": re.compile(r"^Total (\w+) size: (\S+) (.)B$"),
    "raw time": re.compile(r"^Raw (\w+) time: (\S+) s$"),
    "metadata time": re.compile(r"^Metadata time: (\S+) s$"),
    "observed time": re.compile(r"^Observed (?:(\w+) )?completion time: (\S+) s$"),
    "raw rate": re.compile(r"^(SYNC|ASYNC) Raw (\w+) rate: (\S+) (.)B/s$"),
    "observed rate": re.compile(r"^(SYNC|ASYNC) Observed (\w+) rate: (\S+) (.)B/s$"),
    **{f"H5F{t}": re.compile(rf"^H5F{t}\(\) time: (\S+) s$") for t in FILE_TIMES},
}




def to_mib(token: str, prefix: str, what: str, source: str) -> float:
    """h5bench's '<value> <prefix>B' (base 1024) in MiB."""
    if prefix not in _PREFIX:
        raise ParseError(f"{source}: {what} has an unknown unit {prefix + 'B'!r}")
    return printed_number(token, what, source) * _PREFIX[prefix]


def metrics(op: str, values: dict[str, float], source_tag: str, source: str) -> list[Metric]:
    """The shared metrics from values keyed by CSV row name (sizes in MiB, rates in MiB/s)."""
    out = []
    for row, (name, unit) in SHARED.items():
        if row not in values:
            raise ParseError(f"{source}: no '{row}' value (the output is truncated?)")
        out.append(Metric(name.format(op=op), values[row], unit, source_tag))
    for rate in ("raw rate", "observed rate"):
        if values[rate] <= 0:
            raise ParseError(f"{source}: {rate} is {values[rate]} MiB/s")
    return out


def failures(text: str) -> list[str]:
    """h5bench's failure lines, once each, in order."""
    return list(dict.fromkeys(line.strip() for line in text.splitlines()
                              if _FAILURE.search(line) and not line.startswith(_PATH_LINES)))


_CONFIG_START = "================ Benchmark Configuration =================="


def parse(text: str, source: str = SOURCE) -> Parsed:
    if not text.strip():
        raise ParseError(f"{source}: the h5bench output is empty (h5bench did not run?)")
    bad = failures(text)
    if bad:
        what = ("h5bench could not read its configuration (an unknown key, a blank line or a "
                "rejected value; it exits 0)" if "Configuration file read failed" in text
                else "h5bench reported a failure")
        raise ParseError(f"{source}: {what}: " + " | ".join(bad[:4]))
    lines = [line.rstrip() for line in text.splitlines()]
    if RESULTS not in lines:
        raise ParseError(f"{source}: no 'Performance Results' block: h5bench did not finish")
    start = lines.index(RESULTS) + 1
    if _END not in lines[start:]:
        raise ParseError(f"{source}: the 'Performance Results' block is truncated (no closing line)")
    block = lines[start:lines.index(_END, start)]

    found: dict[str, re.Match] = {}
    for line in block:
        for key, pattern in _LINES.items():
            m = pattern.match(line)
            if m:
                found[key] = m
    missing = [k for k in _LINES if k not in found and not k.startswith("H5F")]
    if missing:
        raise ParseError(f"{source}: no '{missing[0]}' line in the results block (truncated?)")
    op = found["total size"].group(1)
    words = {op, found["raw time"].group(1), found["raw rate"].group(2),
             found["observed rate"].group(2), found["observed time"].group(1) or op}
    if op not in ("write", "read", "modify") or len(words) != 1:
        raise ParseError(f"{source}: the results block mixes operations ({', '.join(sorted(words))})")
    modes = {found["raw rate"].group(1), found["observed rate"].group(1)}
    if len(modes) != 1:
        raise ParseError(f"{source}: the results block mixes SYNC and ASYNC rates")

    values = {
        "total compute time": printed_number(found["total compute time"].group(1), "compute time", source),
        "total size": to_mib(*found["total size"].group(2, 3), "total size", source),
        "raw time": printed_number(found["raw time"].group(2), "raw time", source),
        "metadata time": printed_number(found["metadata time"].group(1), "metadata time", source),
        "observed time": printed_number(found["observed time"].group(2), "observed time", source),
        "raw rate": to_mib(*found["raw rate"].group(3, 4), "raw rate", source),
        "observed rate": to_mib(*found["observed rate"].group(3, 4), "observed rate", source),
    }
    out = metrics(op, values, SOURCE, source)
    if op == "write":   # h5bench_write and h5bench_write_unlimited time the file calls too
        for t in FILE_TIMES:
            if f"H5F{t}" not in found:
                raise ParseError(f"{source}: no 'H5F{t}() time' line in the results block")
            seconds = printed_number(found[f"H5F{t}"].group(1), f"H5F{t} time", source)
            out.append(Metric(f"h5f{t}_time", seconds, "s", SOURCE))
    details = {"operation": op, "mode": modes.pop(),
               "ranks": int(printed_number(found["ranks"].group(1), "number of ranks", source))}
    return Parsed(out, version=None, details=details, echo={"ranks": details["ranks"], **_config(lines)})


# The 'Benchmark Configuration' block h5bench prints from its config file (h5bench_util.c
# print_params): label -> (echo key, type)
_CONFIG = {"Number of time steps": ("timesteps", int), "Number of dimensions": ("num_dims", int),
           "Dim_1": ("dim_1", int), "Dim_2": ("dim_2", int), "Dim_3": ("dim_3", int),
           "Collective metadata operations": ("collective_metadata", "YES"),
           "Collective buffering for data operations": ("collective_data", "YES"),
           "Mode": ("mode", ("SYNC", "ASYNC"))}


def _config(lines: list[str]) -> dict:
    out: dict = {}
    if _CONFIG_START not in lines:
        return out
    for line in lines[lines.index(_CONFIG_START) + 1:]:
        if line.startswith("====="):
            break
        label, sep, value = line.strip().partition(":")
        if sep and label in _CONFIG:
            key, kind = _CONFIG[label]
            value = value.strip()
            if kind is int and value.isdigit():
                out[key] = int(value)
            elif kind == "YES" and value in ("YES", "NO"):
                out[key] = value == "YES"
            elif isinstance(kind, tuple) and value in kind:
                out[key] = value
    return out
