"""What the verbs share: the project and an experiment named on the command line, iolab's one
form of errors and notes, the parser and formatter every verb's help is made with, the column
options, and the checks of arguments that several verbs take."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import IolabError

ID_HELP = "the experiment's id: the stem of experiments/ID.yaml, its runs in results/ID/"
YAML_HELP = "an experiment YAML, or the id of one in experiments/"
BENCHMARK_HELP = "the benchmark that wrote the files, named as an experiment names it (fio, ior...)"


def project_dir() -> Path:
    from ..project import project_root

    return project_root()


def experiment_path(ref: str) -> Path:
    """Accept a path to a YAML or a bare experiment id."""
    path = Path(ref)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return path
    return project_dir() / "experiments" / f"{ref}.yaml"


def error(text: str) -> None:
    """An error in iolab's one form, on stderr."""
    print(f"iolab: error: {text}", file=sys.stderr)


def note(text: str) -> None:
    """A note in iolab's one form, on stderr (not in the output a reader pipes on)."""
    print(f"iolab: note: {text}", file=sys.stderr)


def print_run_notes(state, label: str = "") -> None:
    from ..results import notes as run_notes

    for text in run_notes.of(state):
        note(f"{label}{text}")


class Parser(argparse.ArgumentParser):
    """argparse's own errors in iolab's one form, "iolab: error: ...", after the verb's usage
    (argparse writes "iolab VERB: error: ...")."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(2, f"iolab: error: {message}\n")


class Formatter(argparse.HelpFormatter):
    """Descriptions wrapped as usual; the examples kept line by line."""

    def _fill_text(self, text, width, indent):
        if text.startswith(("examples:", "a first session:")):
            return "\n".join(indent + line for line in text.splitlines())
        return super()._fill_text(text, width, indent)


def add_include_imported(s) -> None:
    s.add_argument("--include-imported", action="store_true",
                   help="let 'latest' be an imported run too (default: the latest measured run)")


def add_set_aside(s) -> None:
    s.add_argument("--set-aside", action="store_true",
                   help="show the records that pass the integrity checks and name the others in a "
                        "note (default: refuse a run with records that fail them)")


def add_column_options(s) -> None:
    """One `--<name> COLUMNS` option per column source (analysis.columns.column_sources), its
    help every column it has and what each shows: the sources' own words, so --help and the
    CLI reference name every column there is."""
    from ..analysis.columns import column_sources

    for src in column_sources():
        known = "; ".join(f"{name}: {text}" for name, text in src.column_help().items())
        kind = "words beside the parameters" if src.text else "numbers, as metrics over the repetitions"
        s.add_argument(f"--{src.name}", metavar="COLUMNS", dest=f"columns_{src.name}",
                       help=f"add {src.title} columns ({kind}), comma-separated: "
                            + known.replace("%", "%%"))


def columns_asked(args) -> dict[str, str]:
    """The columns asked for with each source's `--<name>` option (add_column_options)."""
    from ..analysis.columns import column_sources

    return {src.name: getattr(args, f"columns_{src.name}") for src in column_sources()}


def metrics_arg(text: str | None, *states) -> list[str] | None:
    """--metrics a,b: names, each one that some record of the runs reports."""
    if text is None:
        return None
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise IolabError(f"--metrics {text!r}: an empty name; give names separated by commas, "
                         "e.g. write_bw,write_bw_max")
    present = set().union(*(pf.present for st in states for pf in st.digest.parts.values()))
    unknown = [n for n in names if n not in present]
    if unknown:
        raise IolabError(f"--metrics: no record reports {', '.join(map(repr, unknown))}",
                         hint="the records report " + (", ".join(sorted(present)) or "no metric"))
    return names


def integrity_text(run) -> str:
    """For `runs` and `status`: what the records' checks set aside (counted as tables count)."""
    from ..results import notes as run_notes
    from ..results.runfiles import RECORDS

    found = run_notes.problems(run)
    if not found:
        return ""
    aside = sum(p.set_aside for _r, p in found)
    first = found[0][1]
    return (f"; {aside} record line(s) set aside, {len(found)} problem(s) (first: "
            f"{first.where(RECORDS)}: {first.reason}; `iolab verify`)")
