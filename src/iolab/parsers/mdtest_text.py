"""mdtest 4.0.0 text output (stdout): the 'SUMMARY rate' table.

mdtest prints one row per operation with the Max, Min, Mean and Std Dev over its iterations of
the aggregate rate (items per second of all ranks). A phase that did not run prints 0.000 in
every column: such a row is no result and yields no metric (the descriptor then fails a case
whose requested phase is absent). mdtest exits 0 after some errors (a failed read, a data
verification error): any error line fails the parse.
"""

from __future__ import annotations

import re

from ..errors import ParseError
from . import Metric, Parsed, argv, printed_number

SOURCE = "mdtest-text"
DIR = "<dir>"                   # stands for -d's directory in the echoed arguments
# mdtest's operation names (mdtest_test_name) -> iolab's metric prefix
OPERATIONS = {
    "Directory creation": "dir_create", "Directory stat": "dir_stat", "Directory read": "dir_read",
    "Directory rename": "dir_rename", "Directory removal": "dir_remove",
    "File creation": "file_create", "File stat": "file_stat", "File read": "file_read",
    "File removal": "file_remove", "Tree creation": "tree_create", "Tree removal": "tree_remove",
}
_ROW = re.compile(r"^\s+(" + "|".join(OPERATIONS) + r")\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$")
# ERROR lines, failed calls (FAILED in ...), option errors and WARNF's "unable to ..." lines
_ERROR = re.compile(r"(^|\s)(ERROR\b|Error invalid argument|Invalid options)|FAILED in |"
                    r"^WARNING: [Uu]nable to |returned EOF prematurely")


def errors(text: str) -> list[str]:
    """Lines where mdtest (or its option parser) reports an error."""
    return [line.strip() for line in text.splitlines() if _ERROR.search(line)]


def _echo(text: str) -> dict:
    """What mdtest says it ran: its tasks and nodes, and its command line's arguments."""
    out: dict = {}
    m = re.search(r"^mdtest-\S+ was launched with (\d+) total task\(s\) on (\d+) node\(s\)", text,
                  re.MULTILINE)
    if m:
        out["tasks"], out["nodes"] = int(m.group(1)), int(m.group(2))
        if out["nodes"] and out["tasks"] % out["nodes"] == 0:
            out["tasks_per_node"] = out["tasks"] // out["nodes"]
    m = re.search(r"^Command line used: \S+((?: '[^']*')*)\s*$", text, re.MULTILINE)
    if m:
        args = re.findall(r"'([^']*)'", m.group(1))
        # the directory differs from run to run (and in a replay): the arguments without it
        out["args"] = [DIR if i and args[i - 1] == "-d" else a for i, a in enumerate(args)]
        out.update(command_line_echo(args))
    m = re.search(r"^SUMMARY rate: \(of (\d+) iterations\)", text, re.MULTILINE)
    if m:
        out["iterations"] = int(m.group(1))
    return out


# mdtest 4.0.0's short options that take a value (mdtest.c); every other letter is a flag. What
# its command line says it ran, under mdtest's own names (its option's variable).
_VALUED = set("abBdefGiIlnNpsVwWxz")
_SIZES = {"n": "items", "z": "depth", "b": "branch_factor", "w": "write_bytes", "e": "read_bytes",
          "i": "iterations", "W": "stone_wall_timer_seconds"}
_FLAGS = {"u": "unique_dir_per_task", "S": "shared_file", "y": "sync_file"}
_PHASES = {"C": "create_only", "T": "stat_only", "E": "read_only", "r": "remove_only"}
_NOT_EXTRA = set(_SIZES) | set(_FLAGS) | set(_PHASES) | {"F", "D", "d", "--saveRankPerformanceDetails"}


def command_line_echo(args: list[str]) -> dict:
    """mdtest's settings as its command line gives them; a setting it does not give is mdtest's
    default (0, off, every phase, files and directories). Nothing when -f/-l/-s run several task
    counts, or -I sets items per directory instead of -n."""
    opts = argv.options(args, _VALUED)
    letters = {option for option, _ in opts}
    if letters & {"f", "l", "s", "I"}:
        return {}
    out: dict = {"items": 0, "depth": 0, "branch_factor": 1, "write_bytes": 0, "read_bytes": 0,
                 "iterations": 1, "stone_wall_timer_seconds": 0}
    out.update({name: False for name in (*_FLAGS.values(), *_PHASES.values())})
    extra: list[str] = []
    for option, value in opts:
        if option in _SIZES:
            number = argv.size(value)
            if number is None:
                return {}           # not a number mdtest reads: nothing here to vouch for
            out[_SIZES[option]] = number
        elif option in _FLAGS or option in _PHASES:
            out[{**_FLAGS, **_PHASES}[option]] = value != "0" if value is not None else True
        elif option not in _NOT_EXTRA:
            flag = option if option.startswith("--") or not option else f"-{option}"
            extra += ([f"{flag}={value}"] if option.startswith("--") and value is not None else
                      [a for a in (flag, value) if a])
    if not any(out[name] for name in _PHASES.values()):
        out.update({name: True for name in _PHASES.values()})      # none named: all four
    out["entries"] = ("files" if "F" in letters and "D" not in letters else
                      "directories" if "D" in letters and "F" not in letters else "both")
    out["extra_args"] = extra
    if not out["items"]:
        del out["items"]            # mdtest then runs none: it needs -n (or -I)
    return out


def parse(text: str, source: str = SOURCE) -> Parsed:
    if not text.strip():
        raise ParseError(f"{source}: the mdtest output is empty (mdtest did not run?)")
    bad = errors(text)
    if bad:
        raise ParseError(f"{source}: mdtest reported an error: " + " | ".join(bad[:3]))
    if "SUMMARY rate:" not in text and not re.search(r"^mdtest-\S+ was launched", text, re.MULTILINE):
        raise ParseError(f"{source}: not an mdtest output (no 'mdtest-<version> was launched' line)")
    if "SUMMARY rate:" not in text:
        if "SUMMARY time:" in text:
            raise ParseError(f"{source}: only a 'SUMMARY time' table (-Z): iolab reads rates")
        raise ParseError(f"{source}: no 'SUMMARY rate' table: mdtest did not finish")
    tables = text.count("SUMMARY rate:")
    if tables > 1:
        raise ParseError(f"{source}: {tables} 'SUMMARY rate' tables, one per task count (-f/-l/-s): "
                         "iolab takes one run of one task count per case")
    m = re.search(r"^mdtest-(\S+) was launched", text, re.MULTILINE)
    version = m.group(1) if m else None
    table = text.split("SUMMARY rate:", 1)[1].split("SUMMARY time:", 1)[0]
    metrics: list[Metric] = []
    for line in table.splitlines():
        row = _ROW.match(line)
        if not row:
            continue
        op = OPERATIONS[row.group(1)]
        vals = [printed_number(t, f"{row.group(1)} {c}", source)
                for t, c in zip(row.groups()[1:], ("Max", "Min", "Mean", "Std Dev"))]
        if not any(vals[:3]):
            continue                    # the phase did not run
        if vals[2] <= 0:
            raise ParseError(f"{source}: {row.group(1)} mean rate is {vals[2]}")
        for suffix, value in (("", vals[2]), ("_max", vals[0]), ("_min", vals[1]), ("_stddev", vals[3])):
            metrics.append(Metric(f"{op}_rate{suffix}", value, "ops/s", SOURCE))
    if not metrics:
        raise ParseError(f"{source}: the summary has no operation that ran")
    if not re.search(r"^-- finished at .* --", text, re.MULTILINE):
        raise ParseError(f"{source}: no '-- finished at' line: the output is truncated")
    return Parsed(metrics, version=version, echo=_echo(text))
