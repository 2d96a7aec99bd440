"""`iolab verify`: a run's records checked."""

from __future__ import annotations

from ..errors import IolabError
from .common import ID_HELP, project_dir

VERB = "verify"
EXAMPLES = [
    "iolab verify quickstart",
    "iolab verify quickstart RUN",
    "iolab verify quickstart RUN --write-digest",
]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="check a run's records: the digest chain (an edited, inserted, "
                       "duplicated, reordered or removed line is named) and every record's fields")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("run", nargs="?", metavar="RUN", help="default: the latest; RUN@SITE: a run "
                   "of another site (iolab import-bundle)")
    s.add_argument("--write-digest", action="store_true",
                   help="once the records verify, write each run's records.digest anew from them "
                        "(after moving a fallback file's records back, say)")
    s.set_defaults(func=run)


def run(args) -> int:
    """Check a run's records (and its continuations'): the digest chain and every record."""
    from ..results.runfiles import RECORDS, results_root
    from ..results import notes as run_notes
    from ..results.run import run_dir

    path = run_dir(results_root(project_dir()), args.experiment, args.run, True)
    whole, found = run_notes.checked(path, project_dir())
    for run in run_notes.runs_read(whole):
        print(f"{args.experiment} run {run.run_id}: {run.reading.total} record(s); "
              f"{run.reading.verdict.describe()}")
        for b in run.reading.unreadable:
            print(f"  {RECORDS}:{b.line}: unreadable, skipped: {b.reason}")
        for p in run.reading.verdict.problems:
            print(f"  {p.where(RECORDS)}: {p.reason}"
                  + ("" if p.set_aside else " (no record of it is left out)"))
    if found:
        run, first = found[0]
        raise IolabError(f"{first.where(run.path / RECORDS)}: {first.reason}",
                         hint=f"{len(found)} problem(s) in all, listed above")
    if args.write_digest:
        from ..results.recordcache import write_run_digest

        for run in run_notes.runs_read(whole):
            print(f"{args.experiment} run {run.run_id}: digest written: {write_run_digest(run.path)}")
    return 0
