"""One parser per output format: text -> metrics. A failed or truncated output raises ParseError."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from ..errors import ParseError


@dataclass(frozen=True)
class Metric:
    name: str
    value: float
    unit: str
    source: str

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Parsed:
    metrics: list[Metric]
    version: str | None = None
    details: dict = field(default_factory=dict)
    echo: dict = field(default_factory=dict)     # what the benchmark says it ran (see echo.py)

    def by_name(self) -> dict[str, Metric]:
        return {m.name: m for m in self.metrics}


def number(value, what: str, source: str) -> float:
    """A metric value must be a finite number: a missing or 'inf' value fails the case."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParseError(f"{source}: {what} is {value!r}, not a number")
    if not math.isfinite(value):
        raise ParseError(f"{source}: {what} is not finite ({value})")
    return float(value)


def printed_number(token: str, what: str, source: str) -> float:
    """A number as a benchmark printed it. Fortran prints '****' on overflow and printf 'inf' or
    '-nan' after a division by zero: all of them fail the case rather than become a value."""
    try:
        return number(float(token), what, source)
    except ValueError:
        raise ParseError(f"{source}: {what} is {token!r}, not a number") from None


def mean(values: list[float]) -> float:
    return sum(values) / len(values)
