"""`iolab parse`: metrics parsed from benchmark outputs."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import IolabError
from .common import BENCHMARK_HELP, error

VERB = "parse"
EXAMPLES = ["iolab parse fio fio.json", "iolab parse ior ior-summary.json"]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="print metrics parsed from benchmark outputs as JSON lines")
    s.add_argument("benchmark", help=BENCHMARK_HELP)
    s.add_argument("files", nargs="+", metavar="FILE", help="the benchmark's output files")
    s.set_defaults(func=run)


def run(args) -> int:
    from ..benchmarks import get as get_benchmark
    from ..results.files import MAX_IMPORT_BYTES, readable_file

    adapter = get_benchmark(args.benchmark)
    status = 0
    for name in args.files:
        try:
            if Path(name).is_symlink() or Path(name).exists():   # a FIFO or a device would block
                readable_file(Path(name), MAX_IMPORT_BYTES)          # the parser (as import)
            (parsed,) = adapter.parse_files([Path(name)])
        except (IolabError, OSError) as exc:      # ParseError too: each file answers for itself
            error(f"{name}: {exc}")
            status = 1
            continue
        for m in parsed.metrics:
            print(json.dumps({"file": name, **m.as_dict(), "version": parsed.version}))
    return status
