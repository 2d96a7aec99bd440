"""BTIO (wkliao/BTIO) report on stdout, printed by rank 0 at the end of bt.f90.

BTIO exits 0 when it fails (non-square rank count, a file it cannot open): a report without its
`I/O bandwidth` line is a failed run, never a result. Every metric carries the mode, as IOR's do:

    write_bw / read_bw                  I/O bandwidth                 MiB/s
    write_amount / read_amount          Total I/O amount              MiB
    write_total_time / read_total_time  Total I/O time in sec         s   (open to close, max over ranks)
    write_open_time / read_open_time    Max file create|open time     s
    write_post_time / read_post_time    Max write|read post time      s
    write_wait_time / read_wait_time    Max write|read wait time      s   (PnetCDF non-blocking: wait_all)

The total time is named as IOR's total_time (open to close), not io_time: IOR's io_time is the
transfer alone, and the two land in the same tables.
"""

from __future__ import annotations

import re

from ..errors import ParseError
from . import Metric, Parsed, printed_number

SOURCE = "btio-text"
MIB = 1024 * 1024
BYTES_PER_POINT = 5 * 8          # five doubles per grid point and time step

METHODS = {
    "MPI collective I/O": "mpi_collective",
    "MPI independent I/O": "mpi_independent",
    "Parallel netCDF blocking I/O": "pnetcdf_blocking",
    "Parallel netCDF non-blocking I/O": "pnetcdf_nonblocking",
}

_HEADER = re.compile(r"^-- BT-IO Benchmark \((write|read) +operation only\) --$", re.MULTILINE)
_FIELD = re.compile(r"^(?P<label>[A-Za-z/][A-Za-z/ ()]*?)\s*:\s*(?P<value>\S.*?)\s*$")
_METHOD = re.compile(r"^Using (.+) method$", re.MULTILINE)
# What BTIO prints instead of a report (bt.f90, mpiio_m.f90, pnetcdf_m.f90, make_set.f90)
_FAILURE = re.compile(r"^\s*(Number of processes must be a square number.*|Error.*|Usage:.*|"
                      r"No input file.*|In nfmpi_.*)$", re.MULTILINE)

# label in the report -> (metric suffix, unit); {op} is "write" or "read"
_TIMES = {
    "Total I/O time in sec": ("total_time", "s"),
    "Max file create time in sec": ("open_time", "s"),
    "Max file open time in sec": ("open_time", "s"),
    "Max {op} post time in sec": ("post_time", "s"),
    "Max {op} wait time in sec": ("wait_time", "s"),
}


def failures(text: str) -> list[str]:
    """BTIO's own error lines, once each, in order."""
    return list(dict.fromkeys(m.group(1).strip() for m in _FAILURE.finditer(text)))




def _optional_int(token: str | None) -> int | None:
    return int(token) if token and token.isdigit() else None


def _fields(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        m = _FIELD.match(line)
        if m:
            # 'Max write post  time' has two spaces: compare labels with single spaces
            out[" ".join(m.group("label").split())] = m.group("value")
    return out


def parse(text: str, source: str = SOURCE) -> Parsed:
    if not text.strip():
        raise ParseError(f"{source}: the BTIO output is empty (BTIO did not run?)")
    if "I/O bandwidth" not in text:
        bad = failures(text)
        if bad:
            raise ParseError(f"{source}: BTIO failed: " + " | ".join(bad[:3]))
        if not _HEADER.search(text):
            raise ParseError(f"{source}: no BT-IO report here (no 'BT-IO Benchmark' header)")
        raise ParseError(f"{source}: no 'I/O bandwidth' line: the BTIO report is truncated")
    header = _HEADER.search(text)
    if not header:
        raise ParseError(f"{source}: no 'BT-IO Benchmark' header before the bandwidth line")
    op = header.group(1)
    fields = _fields(text[header.end():])

    def field(label: str) -> str:
        if label not in fields:
            raise ParseError(f"{source}: no '{label}' line in the BTIO report (truncated?)")
        return fields[label]

    bw_text = field("I/O bandwidth")
    if not bw_text.endswith(" MiB/s"):
        raise ParseError(f"{source}: I/O bandwidth {bw_text!r} is not in MiB/s")
    amount_text = field("Total I/O amount")
    if not amount_text.endswith(" MiB"):
        raise ParseError(f"{source}: Total I/O amount {amount_text!r} is not in MiB")
    bw = printed_number(bw_text.removesuffix(" MiB/s"), "I/O bandwidth", source)
    if bw <= 0:
        raise ParseError(f"{source}: {op} bandwidth is {bw} MiB/s")
    metrics = [Metric(f"{op}_bw", bw, "MiB/s", SOURCE),
               Metric(f"{op}_amount",
                      printed_number(amount_text.removesuffix(" MiB"), "Total I/O amount", source),
                      "MiB", SOURCE)]
    open_label = "Max file create time in sec" if op == "write" else "Max file open time in sec"
    for label, (name, unit) in _TIMES.items():
        label = label.format(op=op)
        if label.startswith("Max file") and label != open_label:
            continue
        metrics.append(Metric(f"{op}_{name}", printed_number(field(label), label, source), unit, SOURCE))

    method = _METHOD.search(text, header.end())
    if not method:
        raise ParseError(f"{source}: no 'Using ... method' line after the bandwidth: the report is "
                         f"truncated")
    if method.group(1) not in METHODS:
        raise ParseError(f"{source}: unknown BTIO method {method.group(1)!r}")
    grid = [int(printed_number(field(f"Global array size {axis}"), f"array size {axis}", source))
            for axis in "XYZ"]
    iterations = int(printed_number(field("Number of I/O iterations"), "iterations", source))
    # The amount is X*Y*Z*40 bytes per iteration (bt.f90): anything else is a misread report
    expected = grid[0] * grid[1] * grid[2] * BYTES_PER_POINT * iterations / MIB
    amount = metrics[1].value
    if abs(amount - expected) > 0.006:
        raise ParseError(f"{source}: Total I/O amount {amount} MiB does not match the "
                         f"{'x'.join(map(str, grid))} grid and {iterations} iterations "
                         f"({expected:.2f} MiB)")
    details = {
        "mode": op,
        "io_method": METHODS[method.group(1)],
        "ranks": int(printed_number(field("Number of MPI processes"), "number of processes", source)),
        "grid": grid,
        "iterations": iterations,
        "path": fields.get("output file path"),
        # read back from the file's MPI-IO info; 0 where the MPI-IO layer does not report it
        "striping_count": _optional_int(fields.get("file striping count")),
        "striping_size": _optional_int(fields.get("file striping size", "").removesuffix(" bytes")),
    }
    return Parsed(metrics, version=None, details=details,
                  echo={k: details[k] for k in ("ranks", "grid", "iterations", "io_method", "mode")})
