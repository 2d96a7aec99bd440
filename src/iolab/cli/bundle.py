"""`iolab bundle`: an experiment's runs in one archive that another site checks and imports."""

from __future__ import annotations

from pathlib import Path

from .common import ID_HELP, project_dir

VERB = "bundle"
EXAMPLES = [
    "iolab bundle quickstart --out quickstart.tar.gz",
    "iolab bundle quickstart RUN_A RUN_B --raw --site mysite --out quickstart-raw.tar.gz",
]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="write runs (records, manifests, the stack's lock, optionally "
                       "raw outputs) to one verifiable archive for another site")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("runs", nargs="*", metavar="RUN",
                   help="runs to bundle, each with its continuations (default: the latest)")
    s.add_argument("--out", required=True, type=Path, metavar="FILE",
                   help="the bundle to write, a new file: NAME.tar.gz or NAME.tgz (gzip'd), or "
                        "NAME.tar (the same bytes on any machine)")
    s.add_argument("--raw", action="store_true",
                   help="also carry each job's raw outputs (job script, stdout, the benchmark's "
                        "files, Darshan logs)")
    s.add_argument("--site", metavar="NAME",
                   help="the site the runs come from (default: the system they ran on)")
    s.add_argument("--allow-incomplete", action="store_true",
                   help="bundle runs that are incomplete or written before the digest chain, "
                        "saying so in the content list (a run that fails `iolab verify` never)")
    s.set_defaults(func=run)


def run(args) -> int:
    from ..results import bundle
    from ..results.runfiles import results_root

    bundle.check_out(args.out)
    plan = bundle.plan(results_root(project_dir()), args.experiment, args.runs, raw=args.raw,
                       site=args.site, allow_incomplete=args.allow_incomplete,
                       project_root=project_dir())
    print(plan.describe())
    for facts in plan.contents["runs"]:
        print(f"  run {facts['run']}: {facts['described']}, {facts['records']} record(s), chain "
              f"{facts['chain']}")
    sha = bundle.write(plan, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes), sha256 {sha}")
    return 0
