"""The one place where values become shell words.

Everything iolab writes into a job script goes through here: argv words are single-quoted
(`word`), paths that may hold job-time variables such as $DW_JOB_STRIPED keep exactly those
variables live and nothing else (`path_word`), and text with a newline or another control
character is refused, because a job script is read line by line by schedulers too.

One rule for job-time variables: a location known only in the job ($DW_JOB_STRIPED, $SCRATCH of
the compute node) reaches every place a path goes with the same expansion. In argv, a descriptor
marks such an argument as a JobPath and `words` quotes it with `path_word`, as `mkdir` is; in an
input file, the job writes the file (`write_file`), so its path expands as the job sees it; a
program that expands ${NAME} itself from its environment (fio's job file) gets `braced` paths
and the variables exported. Every other value, and every other part of these, stays literal.
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


class JobPath(str):
    """An argument that is (or ends in) a path whose $NAME and ${NAME} expand in the job, as the
    case directory's `mkdir` expands them; every other argument is taken literally."""

    __slots__ = ()


def words(values, what: str = "argument") -> list[str]:
    return [path_word(v, what) if isinstance(v, JobPath) else word(v, what) for v in values]


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


def variables(path: str) -> list[str]:
    """The names of the variables path_word leaves for the job, in order, each once."""
    return list(dict.fromkeys(m.group().strip("${}") for m in _VAR.finditer(path)))


def braced(path: str) -> str:
    """$NAME as ${NAME}: the only form fio expands in a job file (from its environment)."""
    return _VAR.sub(lambda m: "${" + m.group().strip("${}") + "}", path)


def write_file(name: str, text: str, live: str, max_line: int | None = None) -> str:
    """Shell that writes `text` to the file `name` in the job, with the variables of the path
    `live` expanded wherever that path occurs and everything else literal: an input file naming
    a job-time location (BTIO's deck, h5bench's ini) cannot be written before the job. With
    max_line, a line longer than that once expanded stops the job with the reason (the program
    would cut it)."""
    check_line(name, "file name")
    live_word = path_word(live, "path")
    lines = text[:-1].split("\n") if text.endswith("\n") else text.split("\n")
    out = [live_word.join(word(part, f"a line of {name}") for part in line.split(live))
           for line in lines]
    cmd = f"printf '%s\\n' {' '.join(out)} > {word(name)}"
    if max_line is not None:
        cmd += (f" && {{ awk -v m={int(max_line)} 'length($0) > m {{ exit 1 }}' {word(name)} || "
                + stop_job(f"{name}: a line is longer than {max_line} characters once {live} "
                           "is expanded in the job") + "; }")
    return cmd


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
