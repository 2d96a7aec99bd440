"""IOR 4 JSON summary (-O summaryFormat=JSON -O summaryFile=F)."""

from __future__ import annotations

import json

from ..errors import ParseError
from . import Metric, Parsed, mean, number

SOURCE = "ior-json"
MIB = 1024 * 1024
SUMMARY_METRICS = (
    ("bw", "bwMeanMIB", "MiB/s"), ("bw_max", "bwMaxMIB", "MiB/s"), ("bw_min", "bwMinMIB", "MiB/s"),
    ("bw_stddev", "bwStdMIB", "MiB/s"), ("ops", "OPsMean", "ops/s"), ("ops_max", "OPsMax", "ops/s"),
    ("ops_min", "OPsMin", "ops/s"), ("ops_stddev", "OPsSD", "ops/s"),
)

# With a stonewall (-D), the bytes the phase moved: IOR's bandwidth is over them, not over the
# block size asked for (IOR warns "Using actual aggregate bytes moved")
STONEWALL_METRICS = {"moved_bytes": ("xsizeMiB", "B")}
# With stoneWallingWearOut=1, IOR's figures at the stonewall (stonewall_bw: iolab's, from them)
WEAROUT_METRICS = {"stonewall_time": ("StoneWallTime", "s"),
                   "stonewall_rank_bw": ("StoneWallbwMeanMIB", "MiB/s"),
                   "stonewall_bw": ("StoneWallbwMeanMIB", "MiB/s")}

# each phase's mean over IOR's iterations of these times
PHASE_TIMES = (("open_time", "openTime"), ("io_time", "wrRdTime"), ("close_time", "closeTime"),
               ("total_time", "totalTime"))


def parse(text: str, source: str = SOURCE) -> Parsed:
    if not text.strip():
        raise ParseError(f"{source}: the IOR summary is empty (IOR did not finish?)")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"{source}: the IOR summary is not valid JSON, truncated or corrupt "
                         f"({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, dict) or not {"Version", "Began", "tests"} & set(doc):
        other = " (a fio JSON output: import it as fio)" if isinstance(doc, dict) and \
            "fio version" in doc else ""
        raise ParseError(f"{source}: not an IOR JSON summary{other}")
    if "Finished" not in doc:
        raise ParseError(f"{source}: the IOR summary has no 'Finished' entry: the run did not complete")
    summary = doc.get("summary")
    tests = doc.get("tests")
    if not summary or not tests:
        raise ParseError(f"{source}: the IOR summary has no results (no 'summary' or 'tests')")
    if len(tests) != 1:
        raise ParseError(f"{source}: {len(tests)} IOR tests in one summary; iolab runs one per case")
    results = tests[0].get("Results") or []
    params = tests[0].get("Parameters", {})

    metrics: list[Metric] = []
    for entry in summary:
        op = entry.get("operation")
        if op not in ("write", "read"):
            continue
        reps = int(number(entry.get("repetitions"), f"{op} repetitions", source))
        runs = [r for r in results if r.get("access") == op]
        if len(runs) != reps:
            raise ParseError(f"{source}: {len(runs)} of {reps} {op} iterations reported")
        bw = number(entry.get("bwMeanMIB"), f"{op} bwMeanMIB", source)
        if bw <= 0:
            raise ParseError(f"{source}: {op} bandwidth is {bw} MiB/s")

        for name, key, unit in SUMMARY_METRICS:
            metrics.append(Metric(f"{op}_{name}", number(entry.get(key), f"{op} {key}", source),
                                  unit, SOURCE))
        for name, key in PHASE_TIMES:
            values = [number(r.get(key), f"{op} {key}", source) for r in runs]
            metrics.append(Metric(f"{op}_{name}", mean(values), "s", SOURCE))
        metrics += _stonewall(entry, params, op, source)
    if not metrics:
        raise ParseError(f"{source}: the IOR summary has neither a write nor a read result")
    details = {
        "api": params.get("api"),
        "tasks": summary[0].get("numTasks"),
        "iterations": summary[0].get("repetitions"),
        "command_line": doc.get("Command line"),
        "path": tests[0].get("Path"),
    }
    return Parsed(metrics, version=doc.get("Version"), details=details, echo=_echo(summary[0], params))


def _stonewall(entry: dict, params: dict, op: str, source: str) -> list[Metric]:
    """A stonewalled phase's own figures: the bytes it moved (its bandwidth's numerator) and,
    with wear-out, IOR's stonewall time and per-rank stonewall bandwidth, and all ranks' (that
    times the tasks)."""
    out = []
    if params.get("deadlineForStonewall"):
        moved = number(entry.get("xsizeMiB"), f"{op} xsizeMiB", source)
        out.append(Metric(f"{op}_moved_bytes", moved * MIB, "B", SOURCE))
    if params.get("stoneWallingWearOut"):
        tasks = number(entry.get("numTasks"), f"{op} numTasks", source)
        for name, (key, unit) in WEAROUT_METRICS.items():
            value = number(entry.get(key), f"{op} {key}", source)
            out.append(Metric(f"{op}_{name}", value * tasks if name == "stonewall_bw" else value,
                              unit, SOURCE))
    return out


# What IOR says it ran: the summary's and the test's parameters, under IOR's own names.
_ECHO_INTS = {"numTasks": "summary", "blockSize": "summary", "transferSize": "summary",
              "segmentCount": "summary", "repetitions": "summary", "tasksPerNode": "summary",
              "nodes": "params", "deadlineForStonewall": "params"}
_ECHO_FLAGS = {"filePerProc": "summary", "collective": "params", "fsync": "params",
               "reorderTasks": "params", "randomOffset": "params", "writeFile": "params",
               "readFile": "params", "keepFile": "params", "stoneWallingWearOut": "params"}


def _echo(summary: dict, params: dict) -> dict:
    sources = {"summary": summary, "params": params}
    out: dict = {}
    if isinstance(summary.get("API"), str):
        out["API"] = summary["API"]
    for key, where in _ECHO_INTS.items():
        value = sources[where].get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            out[key] = value
    for key, where in _ECHO_FLAGS.items():
        value = sources[where].get(key)
        if isinstance(value, int):
            out[key] = bool(value)
    return out
