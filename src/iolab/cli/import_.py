"""`iolab import`: outputs of runs made outside iolab, imported."""

from __future__ import annotations

from pathlib import Path

from ..layers.registry import example_param
from .common import BENCHMARK_HELP

VERB = "import"
# a layer's parameter, as its experiment varies it (the first layer that offers one)
_EXAMPLE = example_param()
_PARAM = f"{_EXAMPLE.key}={_EXAMPLE.other}" if _EXAMPLE else None
EXAMPLES = [f"iolab import ior out/*.json --into {_EXAMPLE.experiment} --param {_PARAM}" if _EXAMPLE
            else "iolab import ior out/*.json --into archer-fpp-vs-ssf"]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="import outputs of runs made outside iolab into a results run")
    s.add_argument("benchmark", help=BENCHMARK_HELP)
    s.add_argument("files", nargs="+", metavar="FILE", help="the benchmark's output files to import")
    s.add_argument("--into", required=True, metavar="ID", help="experiment id to file the run under")
    s.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="a parameter of the imported case (repeatable)"
                        + (f", e.g. {_PARAM}" if _PARAM else ""))
    s.add_argument("--label", help="free text stored in the manifest, e.g. the source system")
    s.add_argument("--trust-params", action="store_true",
                   help="import --param values even where the benchmark's output says it ran otherwise")
    s.set_defaults(func=run)


def run(args) -> int:
    from ..results.importer import import_files

    run = import_files(args.benchmark, [Path(f) for f in args.files], args.into,
                       params=args.param or [], label=args.label, trust_params=args.trust_params)
    print(f"imported {len(args.files)} file(s) into {run.path}")
    print(f"an imported run: `iolab table {args.into}` shows the latest measured run; add "
          f"--include-imported or --run {run.run_id} for this one")
    return 0
