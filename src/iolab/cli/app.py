"""`iolab`: the parser made of every verb's module, in the order `iolab --help` lists them, and
main(), which runs the verb asked for and prints what stops it in one line."""

from __future__ import annotations

import argparse
import os
import sys

from .. import __version__
from ..errors import IolabError
from . import (bundle, compare, import_, import_bundle, list_, parse, plan, publish, render,
               reproduce, resume, runs, search, search_report, status, submit, table, trend,
               validate, verify, why)
from .common import Formatter, Parser, error
from .layer_verbs import with_layer_verbs

# cli/'s verbs, and where each layer's verb goes among them (layers.base.Layer.verbs)
VERBS = with_layer_verbs((validate, list_, plan, render, table, compare, why, trend, parse, import_, runs,
                          verify, bundle, import_bundle, reproduce, status, resume, submit, search,
                          search_report, publish))

DESCRIPTION = """\
Parallel I/O experiments made reproducible: check and plan an experiment YAML, run it with
`scripts/run ID SYSTEM` (ReFrame), then read its results as tables, comparisons and pages."""

# A few lines a user can copy, per verb (each verb's module has its own); `iolab VERB --help`
# ends with them, and the generated CLI reference shows them (a test keeps every verb covered).
# They work with fio alone, as after `scripts/setup --no-spack` with fio installed; one that
# needs another benchmark says so.
EXAMPLES = {verb.VERB: verb.EXAMPLES for verb in VERBS}

SESSION = """\
a first session:
  scripts/run quickstart local            run the quickstart on this machine, print its table
  iolab list                              the experiments and their last runs
  iolab plan kaust-stripe-count           cases, jobs, bytes and node-hours, before you spend them
  iolab compare quickstart RUN_A RUN_B    what changed between two runs, with a verdict
  iolab publish quickstart --out page     a page with provenance, tables and plots

`iolab VERB --help` shows a verb's options and examples; docs/ has the rest."""


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="iolab", description=DESCRIPTION, epilog=SESSION, formatter_class=Formatter)
    p.add_argument("--version", action="version", version=f"iolab {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for verb in VERBS:
        verb.add_parser(sub)
    for name, verb in sub.choices.items():
        verb.formatter_class = Formatter
        verb.epilog = "examples:\n" + "\n".join(f"  {line}" for line in EXAMPLES.get(name, ()))
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:            # bare `iolab`: what there is, not "arguments are required: command"
        build_parser().print_help()
        return 2
    args = build_parser().parse_args(argv)
    try:
        from ..results.cache import cache_dir

        cache_dir()         # a cache inside the results is refused before any verb runs
        return args.func(args)
    except IolabError as exc:
        error(str(exc))
        return exc.exit_code
    except BrokenPipeError:
        # `iolab plan X | head`: the reader has all it wanted; Python's own flush at exit must
        # not complain either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        # An input or output iolab could not use (permissions, a vanished file): one line.
        where = f"{exc.filename}: " if exc.filename else ""
        error(f"{where}{exc.strerror or exc}")
        return 1
    except KeyboardInterrupt:
        return 130
