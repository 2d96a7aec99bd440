"""A search's space: the grid of an experiment (`matrix.expand`, after exclude) as axes, each
varied key with its values, and every case one point of it, named by its case id. An experiment
with several parts has the pseudo-axis `part`."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import IolabError
from ...experiment.matrix import Case


PART = "part"           # the pseudo-axis of an experiment with several parts


GRID = "grid"           # Answer.search.strategy of a run that asked for the whole grid


def _ordered(values) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


@dataclass
class Space:
    """The grid as axes: each varied key with its values (numbers sorted, others as first seen)."""

    cases: list[Case]
    axes: list[str]
    values: dict[str, list]
    ordered: dict[str, bool]
    by_coords: dict[tuple, Case] = field(repr=False, default_factory=dict)

    @classmethod
    def of(cls, cases: list[Case]) -> Space:
        if not cases:
            raise IolabError("the search has no cases: the matrix (after exclude) is empty")
        keys: list[str] = [PART] if len({c.part for c in cases}) > 1 else []
        seen: dict[str, list] = {}
        for c in cases:
            for k, v in c.params.items():
                if v not in seen.setdefault(k, []):
                    seen[k].append(v)
        keys += [k for k, vs in seen.items() if len(vs) > 1 or any(k not in c.params for c in cases)]
        values, ordered = {}, {}
        for k in keys:
            vs = list(dict.fromkeys(_value(c, k) for c in cases))
            ordered[k] = _ordered(vs)
            values[k] = sorted(vs) if ordered[k] else vs
        space = cls(list(cases), keys, values, ordered)
        for c in cases:
            space.by_coords.setdefault(space.coords({k: _value(c, k) for k in keys}), c)
        return space

    def coords(self, setting: dict) -> tuple | None:
        """Index of each axis value, or None when a value is on no axis (off the grid)."""
        out = []
        for k in self.axes:
            try:
                out.append(self.values[k].index(setting.get(k)))
            except ValueError:
                return None
        return tuple(out)

    def setting(self, case: Case) -> dict:
        return {k: _value(case, k) for k in self.axes}

    def case_for(self, setting: dict) -> Case | None:
        at = self.coords(setting)
        return None if at is None else self.by_coords.get(at)

    def distance(self, a: tuple, b: tuple) -> float:
        d = 0.0
        for i, k in enumerate(self.axes):
            n = len(self.values[k])
            d += abs(a[i] - b[i]) / max(1, n - 1) if self.ordered[k] else float(a[i] != b[i])
        return d


def _value(case: Case, key: str):
    return case.part if key == PART else case.params.get(key)
