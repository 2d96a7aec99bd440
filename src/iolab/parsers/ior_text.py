"""IOR 4 default text output (stdout), for runs made without a JSON summary."""

from __future__ import annotations

import re

from ..errors import ParseError
from . import Metric, Parsed, mean, printed_number

SOURCE = "ior-text"
_ERROR = re.compile(r"(^|\s)(ERROR|Error invalid argument|Invalid options)\b")
_SUMMARY_COLS = ["Operation", "Max(MiB)", "Min(MiB)", "Mean(MiB)", "StdDev", "Max(OPs)",
                 "Min(OPs)", "Mean(OPs)", "StdDev", "Mean(s)"]


def errors(text: str) -> list[str]:
    """Lines where IOR (or its option parser) reports an error."""
    return [line.strip() for line in text.splitlines() if _ERROR.search(line)]


def redirected_to(text: str) -> str | None:
    m = re.search(r"^Writing output to (\S+)", text, re.MULTILINE)
    return m.group(1) if m else None




def parse(text: str, source: str = SOURCE) -> Parsed:
    if not text.strip():
        raise ParseError(f"{source}: the IOR output is empty (IOR did not run?)")
    bad = errors(text)
    if bad:
        raise ParseError(f"{source}: IOR reported an error: " + " | ".join(bad[:3]))
    if "Summary of all tests:" not in text:
        target = redirected_to(text)
        if target:
            raise ParseError(f"{source}: no results here: IOR wrote them to {target} (summaryFile)")
        raise ParseError(f"{source}: no 'Summary of all tests' section: IOR did not finish")
    version = None
    m = re.search(r"^IOR-(\S+?):", text, re.MULTILINE)
    if m:
        version = m.group(1)

    # Per-iteration table: access bw IOPS Latency block xfer open wr/rd close total iter
    per_op: dict[str, list[list[float]]] = {}
    in_results = False
    for line in text.splitlines():
        if line.startswith("access") and "bw(MiB/s)" in line:
            in_results = True
            continue
        if in_results:
            tokens = line.split()
            if not tokens or tokens[0].startswith("---"):
                if not tokens and per_op:
                    in_results = False
                continue
            if tokens[0] in ("write", "read") and len(tokens) >= 11:
                per_op.setdefault(tokens[0], []).append(
                    [printed_number(t, f"{tokens[0]} {col}", source)
                     for t, col in zip(tokens[6:10], ("open", "wr/rd", "close", "total"))])

    summary_part = text.split("Summary of all tests:", 1)[1]
    lines = [ln for ln in summary_part.splitlines() if ln.strip()]
    if not lines or not lines[0].split()[:10] == _SUMMARY_COLS:
        raise ParseError(f"{source}: unexpected summary header")
    header = lines[0].split()
    echo: dict = {}
    metrics: list[Metric] = []
    for line in lines[1:]:
        tokens = line.split()
        if not tokens or tokens[0] not in ("write", "read"):
            continue
        op = tokens[0]
        if len(tokens) < len(header):
            raise ParseError(f"{source}: truncated {op} summary line")
        if not echo:
            echo = _echo(dict(zip(header[10:], tokens[10:])), text)
        reps = int(printed_number(tokens[header.index("reps")], f"{op} reps", source))
        runs = per_op.get(op, [])
        if len(runs) != reps:
            raise ParseError(f"{source}: {len(runs)} of {reps} {op} iterations reported")
        vals = [printed_number(t, f"{op} {c}", source) for t, c in zip(tokens[1:10], header[1:10])]
        if vals[2] <= 0:
            raise ParseError(f"{source}: {op} bandwidth is {vals[2]} MiB/s")
        for name, value, unit in (("bw", vals[2], "MiB/s"), ("bw_max", vals[0], "MiB/s"),
                                  ("bw_min", vals[1], "MiB/s"), ("bw_stddev", vals[3], "MiB/s"),
                                  ("ops", vals[6], "ops/s"), ("ops_max", vals[4], "ops/s"),
                                  ("ops_min", vals[5], "ops/s"), ("ops_stddev", vals[7], "ops/s")):
            metrics.append(Metric(f"{op}_{name}", value, unit, SOURCE))
        for i, name in enumerate(("open_time", "io_time", "close_time", "total_time")):
            metrics.append(Metric(f"{op}_{name}", mean([r[i] for r in runs]), "s", SOURCE))
    if not metrics:
        raise ParseError(f"{source}: the summary has neither a write nor a read line")
    if not re.search(r"^Finished\s*:", text, re.MULTILINE):
        raise ParseError(f"{source}: no 'Finished' line: the output is truncated")
    return Parsed(metrics, version=version, details={}, echo=echo)


# What IOR says it ran, as in the JSON summary's echo: the summary line's columns (#Tasks tPN
# reps fPP reord ... segcnt blksiz xsize API) and the Options block's nodes and type.
_SUMMARY_ECHO = {"#Tasks": "numTasks", "tPN": "tasksPerNode", "reps": "repetitions",
                 "segcnt": "segmentCount", "blksiz": "blockSize", "xsize": "transferSize"}


def _echo(columns: dict, text: str) -> dict:
    out: dict = {}
    for column, key in _SUMMARY_ECHO.items():
        if columns.get(column, "").isdigit():
            out[key] = int(columns[column])
    for column, key in (("fPP", "filePerProc"), ("reord", "reorderTasks")):
        if columns.get(column) in ("0", "1"):
            out[key] = columns[column] == "1"
    if columns.get("API"):
        out["API"] = columns["API"]
    options = dict(m.groups() for m in re.finditer(r"^(nodes|type)\s*: (\S+)\s*$", text, re.MULTILINE))
    if options.get("nodes", "").isdigit():
        out["nodes"] = int(options["nodes"])
    if options.get("type") in ("collective", "independent"):
        out["collective"] = options["type"] == "collective"
    return out
