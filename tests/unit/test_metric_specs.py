"""Every metric a benchmark's parsers yield from real recorded outputs is declared by its
descriptor, with the unit the parser gives it (compare's better side is read from there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from iolab import benchmarks
from iolab.analysis.compare import direction
from iolab.errors import IolabError

DATA = Path(__file__).resolve().parents[1] / "data"


def _outputs(name: str) -> list[Path]:
    roots = [*DATA.glob(f"{name}*"), DATA / "replay" / name]
    return sorted(p for root in roots if root.is_dir() for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("name", benchmarks.names())
def test_every_parsed_metric_is_declared_with_its_unit(name):
    bench = benchmarks.get(name)
    seen = {}
    for path in _outputs(name):
        try:
            parsed = bench.parse_files([path])
        except (IolabError, ValueError, UnicodeDecodeError):
            continue                      # not an output of this benchmark (inputs, logs, failures)
        for p in parsed:
            for m in p.metrics:
                seen[m.name] = m.unit
    assert seen, f"no recorded output of {name} parsed: the test would check nothing"
    undeclared = sorted(k for k in seen if bench.metric(k) is None)
    assert not undeclared, f"{name}: metrics not declared by the descriptor: {undeclared}"
    wrong = {k: (u, bench.metric(k).unit) for k, u in seen.items() if bench.metric(k).unit != u}
    assert not wrong, f"{name}: parsed unit differs from the declared one: {wrong}"


def test_better_side_comes_from_the_descriptor():
    assert direction("write_bw", "MiB/s", "ior") == "higher"
    assert direction("write_total_time", "s", "ior") == "lower"
    assert direction("write_bw_stddev", "MiB/s", "ior") is None
    assert direction("write_bytes", "B", "fio") is None
    assert direction("raw_write_rate_std", "MiB/s", "h5bench") is None
