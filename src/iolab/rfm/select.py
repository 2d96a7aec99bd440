"""Which experiments a ReFrame process builds tests for: only those it can run.

Building a thousand cases' tests costs seconds, so the loader skips the experiments that neither
IOLAB_EXPERIMENTS (set by scripts/run) nor ReFrame's -n/-x can select. A pattern is read only
where it plainly names experiments (`quickstart`, `^quickstart\\b`, `quickstart@3`); any other
regular expression, or a command line this module cannot read for certain, loads every
experiment, as before, and ReFrame's own filter decides. Loading more than a run selects is
always safe; loading less never happens: a name that matches no experiment loads them all, so
ReFrame reports that nothing matched (and iolab's session refuses a run of nothing).

An experiment's id may be given as its YAML writes it, with hyphens (`-n cp2k-aggregators`):
`as_written` reads it as its tests' class name, here and in ReFrame's own filter (register.py).

No ReFrame import here: the rules are plain functions of argv, the environment and the names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..experiment.load import class_name

ENV = "IOLAB_EXPERIMENTS"

# `lit`, `^lit`, `^lit\b`, `lit$`, `^lit%case=...`: a run of word characters, optionally anchored,
# optionally followed by a word boundary, the end, or the rest of a display name.
_LITERAL = re.compile(r"(\^?)(\w+)(\\b|\$|%\S*)?")
# Display names are `<class>%case=<16 hex digits>%repetition=<n>` (spaces removed): a bare word
# may also match these parts, and then it can select a case of any experiment.
_OTHER_WORDS = ("case", "repetition")


@dataclass(frozen=True)
class Selection:
    wanted: frozenset[str] | None = None      # experiment ids; None: every experiment
    excluded: frozenset[str] = frozenset()
    unknown: tuple[str, ...] = ()             # names in IOLAB_EXPERIMENTS that are no experiment

    def wants(self, experiment_id: str) -> bool:
        return (self.wanted is None or experiment_id in self.wanted) and experiment_id not in self.excluded


def is_reframe(argv0: str) -> bool:
    """Whether this process is ReFrame's command line (`reframe` or `python -m reframe`)."""
    path = Path(argv0)
    return path.name == "reframe" or (path.name == "__main__.py" and path.parent.name == "reframe")


def reframe_names(args: list[str]) -> tuple[list[str], list[str]] | None:
    """The values of -n/--name and -x/--exclude in ReFrame's arguments, or None where an
    argument might be one of them in a form not read here (an abbreviation, `-Rn`)."""
    names: list[str] = []
    excludes: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        for short, long, into in (("-n", "--name", names), ("-x", "--exclude", excludes)):
            if arg in (short, long):
                if i + 1 < len(args):
                    into.append(args[i + 1])
                i += 1
                break
            if arg.startswith(long + "="):
                into.append(arg[len(long) + 1:])
                break
            if arg.startswith(short) and len(arg) > 2:
                into.append(arg[2:])
                break
        else:
            option = arg.split("=", 1)[0]
            if arg.startswith("--") and len(option) > 2 and option != "--" and (
                    "--name".startswith(option) or "--exclude".startswith(option)):
                return None         # argparse takes an unambiguous abbreviation
            if re.fullmatch(r"-[A-Za-z]{2,}.*", arg) and re.search(r"[nx]", arg[2:]):
                return None         # -Rn NAME: short options run together
        i += 1
    return names, excludes


def as_written(pattern: str, known: set[str]) -> str:
    """-n/-x PATTERN with every experiment id it names as its YAML writes it (`cp2k-aggregators`,
    `^cp2k-aggregators\\b`, `cp2k-aggregators@2`) in its tests' class name (`cp2k_aggregators`),
    which is what ReFrame matches; longer ids first, so `a-b-c` is not read as `a-b` and `-c`."""
    for exp in sorted((e for e in known if class_name(e) != e), key=len, reverse=True):
        pattern = pattern.replace(exp, class_name(exp))
    return pattern


def named(pattern: str, known: set[str]) -> set[str] | None:
    """The experiments whose tests -n PATTERN can select; None when that cannot be told."""
    if "@" in pattern:          # TEST@VARIANT: one variant of one test class
        test = pattern.rpartition("@")[0]
        return {e for e in known if class_name(e) == test}
    m = _LITERAL.fullmatch(pattern)
    if not m:
        return None
    anchored, word, _tail = m.groups()
    if not anchored and (any(word in w for w in _OTHER_WORDS) or re.fullmatch(r"[0-9a-f]+|\d+", word)):
        return None
    return {e for e in known if (class_name(e).startswith(word) if anchored else word in class_name(e))}


def excluded(pattern: str, known: set[str]) -> set[str]:
    """The experiments every test of which -x PATTERN excludes."""
    m = _LITERAL.fullmatch(pattern)
    if not m or m.group(3) not in (None, r"\b"):
        return set()
    anchored, word, tail = m.groups()
    out = set()
    for e in known:
        name = class_name(e)
        if tail:            # the word ends where the class name does
            hit = name == word if anchored else name.endswith(word)
        else:
            hit = name.startswith(word) if anchored else word in name
        if hit:
            out.add(e)
    return out


def from_command_line(argv: list[str], environ, known: set[str]) -> Selection:
    """The selection of this process: IOLAB_EXPERIMENTS (ids, comma or space separated), then
    -n (the union of what each names) and -x, when argv is ReFrame's."""
    wanted: set[str] | None = None
    unknown: tuple[str, ...] = ()
    ids = [x for x in re.split(r"[,\s]+", environ.get(ENV, "")) if x]
    if ids:
        wanted = {i for i in ids if i in known}
        unknown = tuple(dict.fromkeys(i for i in ids if i not in known))
    parsed = reframe_names(argv[1:]) if argv and is_reframe(argv[0]) else None
    names, excludes = parsed or ([], [])
    names = [as_written(n, known) for n in names]
    excludes = [as_written(x, known) for x in excludes]
    if names:
        by_name: set[str] | None = set()
        for pattern in names:
            found = named(pattern, known)
            if not found:       # cannot tell, or names nothing here: ReFrame's filter decides
                by_name = None
                break
            by_name |= found
        if by_name is not None:
            wanted = by_name if wanted is None else wanted & by_name
    out: set[str] = set()
    for pattern in excludes:
        out |= excluded(pattern, known)
    return Selection(frozenset(wanted) if wanted is not None else None, frozenset(out), unknown)
