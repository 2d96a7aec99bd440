"""`iolab import-bundle`: another site's bundle, checked whole before its runs are stored."""

from __future__ import annotations

from pathlib import Path

from .common import project_dir

VERB = "import-bundle"
EXAMPLES = [
    "iolab import-bundle quickstart.tar.gz",
    "iolab import-bundle quickstart.tar.gz --site their-cluster",
]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="check another site's bundle (every file's digest, every run's "
                       "chain) and store its runs under results/ID/@SITE/")
    s.add_argument("file", type=Path, metavar="FILE", help="a bundle written by `iolab bundle`")
    s.add_argument("--site", metavar="NAME",
                   help="the site to file the runs under (default: the bundle's)")
    s.set_defaults(func=run)


def run(args) -> int:
    from ..results.bundle import sha256_of
    from ..results.runfiles import results_root
    from ..results.unbundle import import_bundle

    done = import_bundle(args.file, results_root(project_dir()), site=args.site,
                         project_root=project_dir())
    print(f"{args.file}: sha256 {sha256_of(args.file)[1]}; every file and chain verified")
    print_stored(done)
    first = (done.stored or done.present)[0]
    print(f"read it with `iolab verify {done.experiment} {first}@{done.site}` or "
          f"`iolab table {done.experiment} --run {first}@{done.site}`")
    return 0


def print_stored(done) -> None:
    """Which runs a bundle's import stored, and which were there already (an Imported)."""
    for run_id in done.stored:
        print(f"stored {done.experiment} run {run_id}@{done.site} in {done.target / run_id}")
    for run_id in done.present:
        print(f"{done.experiment} run {run_id}@{done.site} is already there, the same bytes")
