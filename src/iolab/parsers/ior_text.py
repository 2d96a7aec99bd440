"""IOR 4 text output (stdout), for runs made without a JSON summary: the default format, with
`-v` (its "Commencing ..." lines, blank lines and `remove` rows among the results) and with the
`--<module>.showHints` blocks printed at each open. `-O summaryFormat=CSV` output is another
format, read by ior_csv.py: parse() hands it on.

What IOR says it ran (`Parsed.echo`, see echo.py) comes from the summary line, the Options block
and the `Command line` (command_line_echo): the flags that only the command line states (-e,
-k, -z) are read from it, under the names of IOR's JSON summary."""

from __future__ import annotations

import re

from ..errors import ParseError
from . import Metric, Parsed, argv, ior_csv, mean, printed_number

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
    if text.lstrip().startswith(ior_csv.CSV_HEADER):
        return ior_csv.parse(text, source)
    if "Summary of all tests:" not in text:
        target = redirected_to(text)
        if target:
            raise ParseError(f"{source}: no results here: IOR wrote them to {target} (summaryFile)")
        if not re.search(r"^IOR-\S+:", text, re.MULTILINE):
            raise ParseError(f"{source}: not an IOR output (no 'IOR-<version>:' line, no summary)")
        raise ParseError(f"{source}: no 'Summary of all tests' section: IOR did not finish")
    version = None
    m = re.search(r"^IOR-(\S+?):", text, re.MULTILINE)
    if m:
        version = m.group(1)
    metrics, echo = _summary(text, _iterations(text, source), source)
    if not re.search(r"^Finished\s*:", text, re.MULTILINE):
        raise ParseError(f"{source}: no 'Finished' line: the output is truncated")
    # the summary has a line for each phase that ran: one that is absent did not
    echo.setdefault("writeFile", False)
    echo.setdefault("readFile", False)
    m = re.search(r"^Command line\s*: (.*)$", text, re.MULTILINE)
    if m:
        echo = {**command_line_echo(m.group(1)), **echo}
    return Parsed(metrics, version=version, details={"command_line": m.group(1) if m else None},
                  echo=echo)


def _iterations(text: str, source: str) -> dict[str, list[list[float]]]:
    """Each operation's iterations: their open, wr/rd, close and total times.

    The per-iteration table (access bw IOPS Latency block xfer open wr/rd close total iter):
    between its header and the summary, -v adds "Commencing ..." lines, blank lines, `remove`
    rows and "Max Write:" lines, and showHints its hint blocks: only write and read rows are
    results."""
    per_op: dict[str, list[list[float]]] = {}
    in_results = False
    for line in text.splitlines():
        if line.startswith("access") and "bw(MiB/s)" in line:
            in_results = True
            continue
        if line.startswith("Summary of all tests:"):
            break
        tokens = line.split()
        if in_results and tokens and tokens[0] in ("write", "read") and len(tokens) >= 11:
            per_op.setdefault(tokens[0], []).append(
                [printed_number(t, f"{tokens[0]} {col}", source)
                 for t, col in zip(tokens[6:10], ("open", "wr/rd", "close", "total"))])
    return per_op


def _summary(text: str, per_op: dict, source: str) -> tuple[list[Metric], dict]:
    """The metrics of the 'Summary of all tests' lines (times: the iterations' means), and what
    the summary says IOR ran."""
    summary_part = text.split("Summary of all tests:", 1)[1]
    lines = [ln for ln in summary_part.splitlines() if ln.strip()]
    if not lines or not lines[0].split()[:10] == _SUMMARY_COLS:
        raise ParseError(f"{source}: unexpected summary header")
    header = lines[0].split()
    column = header.index("Test#") if "Test#" in header else None
    tests = len({line.split()[column] for line in lines[1:] if column is not None and
                 line.split()[:1] in (["write"], ["read"]) and len(line.split()) == len(header)})
    if tests > 1:
        raise ParseError(f"{source}: {tests} IOR tests in one output (a script, -f); iolab runs "
                         "one per case")
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
        echo["writeFile" if op == "write" else "readFile"] = True
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
    return metrics, echo


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


# IOR 4.0.0's short options that take a value (parse_options.c); every other letter is a flag.
# The flags the command line states, and the -O keys that set them, under the JSON summary's
# names (-w and -r are not among them: without either IOR does both; its summary says which ran).
_VALUED = set("AabDdfGijlMNOoQsTtX")
_FLAGS = {"e": "fsync", "k": "keepFile", "z": "randomOffset", "C": "reorderTasks",
          "F": "filePerProc", "c": "collective"}
_DIRECTIVES = {name.lower(): name for name in _FLAGS.values()}


def command_line_echo(line: str) -> dict:
    """What IOR's `Command line` says of the flags (fsync, keepFile...): a flag it does not give
    is off, as IOR's default is; nothing when a script (-f) may set them instead."""
    seen: dict = {}
    for option, value in argv.options(line.split()[1:], _VALUED):
        if option == "f":
            return {}
        if option == "O":
            seen.update(_directives(value or ""))
        elif option in _FLAGS:
            seen[_FLAGS[option]] = value != "0" if value is not None else True
    return {key: seen.get(key, False) for key in _FLAGS.values()}


def _directives(text: str) -> dict:
    """-O key=value[,key=value] settings of the flags above (IOR reads keys in any case)."""
    out = {}
    for item in text.split("#", 1)[0].split(","):
        key, _, value = item.partition("=")
        name = _DIRECTIVES.get(key.strip().lower())
        if name and value.strip().lstrip("-").isdigit():
            out[name] = int(value) > 0
    return out
