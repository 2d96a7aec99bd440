"""One descriptor per benchmark: everything the rest of iolab knows about a benchmark is read here.

A benchmark is a module of this package (`<name>.py`) whose `BENCHMARK` is a `Benchmark`, with
its typed parameters beside it (`<name>.json`, the experiment schema's part for it: defaults,
titles, units, descriptions). It says how to build argv and input files for a case, which parser
reads its outputs and which metrics they give (units, better higher or lower), its Spack package
and binaries, how its version is read, what it echoes of its parameters, and what a case of it
writes. Registries elsewhere (the schema's benchmark list, table defaults, Spack packages) are
derived from these descriptors, so adding a benchmark adds a module, its JSON, its parser, its
template and its tests, and touches nothing else.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil

from ..errors import IolabError
from .base import Benchmark, MetricSpec, RunSpec, read_output

__all__ = ["Benchmark", "MetricSpec", "RunSpec", "get", "names", "read_output", "registry", "size_params"]


@functools.cache
def registry() -> dict[str, Benchmark]:
    """name -> descriptor, for every module of this package that defines BENCHMARK."""
    found: dict[str, Benchmark] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        bench = getattr(module, "BENCHMARK", None)
        if isinstance(bench, Benchmark):
            found[bench.name] = bench
    return found


def get(name: str) -> Benchmark:
    try:
        return registry()[name]
    except KeyError:
        raise IolabError(f"unknown benchmark {name!r}", hint=f"allowed: {', '.join(registry())}") from None


def names() -> list[str]:
    return list(registry())


def size_params() -> list[str]:
    """Parameters that set how much a case writes, over every benchmark (a laptop run differs
    from a published study in them)."""
    return list(dict.fromkeys(p for b in registry().values() for p in b.size_params))
