"""The one place where values become shell words.

Everything iolab writes into a job script goes through here: argv words are single-quoted
(`word`), paths that may hold job-time variables such as $DW_JOB_STRIPED keep exactly those
variables live and nothing else (`path_word`), and text with a newline or another control
character is refused, because a job script is read line by line by schedulers too.
"""

from __future__ import annotations

import re
import shlex

from .errors import IolabError

# $NAME or ${NAME}: the only expansions a path from a system config may carry.
_VAR = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*\})")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_line(text: str, what: str) -> str:
    """Refuse a newline or control character: one value, one line."""
    m = _CONTROL.search(text)
    if m:
        raise IolabError(f"{what}: {text!r} contains a control character ({_name(m.group())}); "
                         "it would split a line of the job script")
    return text


def _name(char: str) -> str:
    return {"\n": "a newline", "\r": "a carriage return", "\t": "a tab",
            "\x00": "a NUL byte"}.get(char, f"\\x{ord(char):02x}")


def word(value, what: str = "value") -> str:
    """One shell word, taken literally whatever it holds ($, `, ;, quotes, spaces)."""
    return shlex.quote(check_line(str(value), what))


def words(values, what: str = "argument") -> list[str]:
    return [word(v, what) for v in values]


def join(values, what: str = "argument") -> str:
    return " ".join(words(values, what))


def path_word(path: str, what: str = "path") -> str:
    """A path as one shell word in which $NAME and ${NAME} expand (job-time locations such as
    $DW_JOB_STRIPED or $SCRATCH) and nothing else does: no $(...), no backticks, no globs."""
    check_line(path, what)
    out, pos = [], 0
    for m in _VAR.finditer(path):
        if m.start() > pos:
            out.append(shlex.quote(path[pos:m.start()]))
        out.append(f'"{m.group()}"')
        pos = m.end()
    if pos < len(path) or not out:
        out.append(shlex.quote(path[pos:]))
    return "".join(out)


def has_variables(path: str) -> bool:
    """Whether path_word would leave a variable for the job to expand."""
    return bool(_VAR.search(path))


def assignment_value(value, what: str = "environment value") -> str:
    """The right-hand side of `export NAME=...` (ReFrame writes env_vars as they are)."""
    return word(value, what)


# A job that cannot start its benchmark (no case directory, a failed lfs setstripe) writes why
# into this file and exits before the benchmark; the sanity check quotes it.
JOB_ERROR_FILE = "iolab-job-error.txt"
JOB_ERROR_EXIT = 3


def stop_job(reason: str, detail_file: str | None = None) -> str:
    """Shell that records `reason` (plus the first line of detail_file, e.g. a command's own
    error) in JOB_ERROR_FILE and ends the job before the benchmark runs."""
    detail = f' "$(head -n 1 {detail_file} 2>/dev/null)"' if detail_file else " ''"
    return (f"{{ printf '%s: %s\\n' {word(reason)}{detail} > {JOB_ERROR_FILE}; "
            f"cat {JOB_ERROR_FILE} >&2; exit {JOB_ERROR_EXIT}; }}")
