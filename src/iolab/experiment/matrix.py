"""Expand an experiment into typed cases with stable ids.

A case id is a hash of the benchmark and of every parameter that differs from its default, so it
survives renaming the file, adding new defaulted parameters, or running on another system. It is
the first CASE_ID_DIGITS (16) hex digits of a sha256. Older runs recorded the first 8 of the same
digest, so an old id is a prefix of the new one (results/upgrade.py pairs them).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import os
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from . import schema as schemas
from ..errors import IolabError
from .model import Experiment, Job, Part
from .order import reference_jobs
from ..units import shown
from .yamlpos import brief


@dataclass(frozen=True)
class Case:
    experiment: str
    part: str
    benchmark: str
    case_id: str
    params: dict[str, Any]            # every parameter, defaults included, typed
    job: Job = field(default_factory=Job)

    @property
    def nodes(self) -> int:
        return self.params["scale.nodes"]

    @property
    def tasks_per_node(self) -> int:
        return self.params["scale.tasks_per_node"]

    @property
    def num_tasks(self) -> int:
        return self.nodes * self.tasks_per_node

    def get(self, key, default=None):
        return self.params.get(key, default)


def defaults(benchmark: str) -> dict[str, Any]:
    return dict(_defaults(benchmark))


@functools.cache
def _defaults(benchmark: str) -> MappingProxyType:
    return MappingProxyType({name: spec["default"] for name, spec in
                             schemas.param_specs(benchmark).items() if "default" in spec})


# 64 bits: with 8 hex digits (32 bits), two of 100,000 cases already shared an id by chance.
CASE_ID_DIGITS = 16


def case_id(benchmark: str, params: dict[str, Any]) -> str:
    base = _defaults(benchmark)
    identity = {k: v for k, v in params.items() if k not in base or base[k] != v}
    blob = json.dumps({"benchmark": benchmark, "params": identity}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:CASE_ID_DIGITS]


def _dimensions(part: Part) -> list[list[dict[str, Any]]]:
    dims = [[{key: v} for v in values] for key, values in part.matrix.items()]
    for group in part.zips:
        keys = list(group)
        length = len(group[keys[0]])
        dims.append([{k: group[k][i] for k in keys} for i in range(length)])
    return dims


def _excluded(params: dict[str, Any], exclude: list[dict[str, Any]]) -> bool:
    return any(all(params.get(k) == v for k, v in entry.items()) for entry in exclude)


MAX_CASES = 10_000      # per experiment, before exclude; IOLAB_MAX_CASES raises it


def max_cases() -> int:
    raw = os.environ.get("IOLAB_MAX_CASES", "").strip()
    if not raw:
        return MAX_CASES
    if not raw.isdigit() or int(raw) < 1:
        raise IolabError(f"IOLAB_MAX_CASES={brief(raw)}: give a whole number of cases, e.g. 50000")
    return int(raw)


def count_cases(exp: Experiment) -> int:
    """How many cases the matrix makes before exclude, without making them. Refuses more than
    max_cases(), saying how many there would be and how to raise the limit."""
    sizes = {part.name: [(key, len(values)) for key, values in part.matrix.items()]
             + [(f"zip({', '.join(group)})", len(next(iter(group.values())))) for group in part.zips]
             for part in exp.parts}
    counts = {name: math.prod(n for _, n in dims) for name, dims in sizes.items()}
    total = sum(counts.values())
    limit = max_cases()
    if total > limit:
        detail = "; ".join((f"part {name}: " if len(sizes) > 1 else "")
                           + " x ".join(f"{n} {key}" for key, n in dims if n > 1) for name, dims in
                           sizes.items() if counts[name] > 1) or f"{len(sizes)} parts"
        excluded = " before exclude" if any(part.exclude for part in exp.parts) else ""
        raise IolabError(f"the matrix would make {total:,} cases{excluded} ({detail}), more than "
                         f"the limit of {limit:,} per experiment",
                         file=str(exp.path), hint=f"drop values, or raise the limit: "
                                                  f"IOLAB_MAX_CASES={total}")
    return total


def expand(exp: Experiment) -> list[Case]:
    """Deterministic: parts in file order, then the cross product in key order."""
    from ..benchmarks import get as get_benchmark

    count_cases(exp)
    cases: list[Case] = []
    seen: dict[str, Case] = {}
    for part in exp.parts:
        adapter = get_benchmark(part.benchmark)
        unset = _defaults(part.benchmark)
        base = {**unset, **part.fixed}
        for combo in itertools.product(*_dimensions(part)):
            params = dict(base)
            for piece in combo:
                params.update(piece)
            # null in a matrix or zip list: the parameter is not set for this case
            for key in [k for k, v in params.items() if v is None]:
                if key in unset:
                    params[key] = unset[key]
                else:
                    del params[key]
            if _excluded(params, part.exclude):
                continue
            cid = case_id(part.benchmark, params)
            case = Case(exp.id, part.name, part.benchmark, cid, dict(sorted(params.items())), part.job)
            if cid in seen:
                if seen[cid].benchmark == case.benchmark and seen[cid].params == case.params:
                    continue  # the same case reached twice (e.g. through two zips): run it once
                raise _collision(exp, seen[cid], case)
            problem = common_check(case) or adapter.check(case)
            if problem:
                varied = varied_keys_of(exp, part)
                what = f"case {cid} ({describe(case, varied)})" if varied else f"case {cid}"
                raise IolabError(f"{what}: {problem}", file=str(exp.path))
            seen[cid] = case
            cases.append(case)
    if not cases:
        raise IolabError("the matrix expands to no cases (everything was excluded)", file=str(exp.path))
    try:
        producers(cases)
    except IolabError as exc:
        raise IolabError(exc.message, file=str(exp.path)) from None
    if exp.search is not None:
        check_objective(exp.search, cases)
    reference_cases(exp, cases)
    return cases


def reference_cases(exp: Experiment, cases: list[Case], *,
                    present: bool = False) -> dict[str, tuple[str, int]]:
    """Each part's drift reference (`drift: {case, every}`): part -> (the one case its
    parameters name, every). Refused, naming the cases: parameters that name no case or several,
    and a case that reads another's data (its extra jobs would have no write to read).
    present: only the parts `cases` has any case of (a plan with some parts left out)."""
    out = {}
    readers = None
    for part in exp.parts:
        ref = part.drift
        if ref is None or present and not any(c.part == part.name for c in cases):
            continue
        file, line, key = ref.at
        mine = [c for c in cases if c.part == part.name]
        varied = varied_keys_of(exp, part) or list(ref.params)
        asked = ", ".join(f"{k}={show_value(part.benchmark, k, v)}" for k, v in ref.params.items())
        found = [c for c in mine if all(c.params.get(k) == v for k, v in ref.params.items())]
        if len(found) != 1:
            named = found or mine
            shown = "; ".join(f"{c.case_id} ({describe(c, varied)})" for c in named[:6])
            more = f"; and {len(named) - 6} more" if len(named) > 6 else ""
            what = (f"{asked} names no case" if not found else
                    f"{asked} names {len(found)} cases, not one: {shown}{more}")
            raise IolabError(what, file=file, line=line, key=key,
                             hint=(f"the cases: {shown}{more}" if not found else
                                   f"add parameters that tell them apart ({', '.join(varied)})"))
        if readers is None:
            readers = producers(cases)
        if found[0].case_id in readers:
            raise IolabError(f"{asked} names {found[0].case_id} ({describe(found[0], varied)}), "
                             "a read of another case's data: a reference job would have no write "
                             "to read", file=file, line=line, key=key,
                             hint="name a case that writes")
        out[part.name] = (found[0].case_id, ref.every)
    return out


def jobs_per_case(exp: Experiment, cases: list[Case], repetitions: int | dict[str, int] | None = None,
                  *, present: bool = False) -> dict[str, int]:
    """How many jobs `reframe -r` runs of each case: the repetitions (the experiment's, unless
    given: one number, or case id -> its own, as `plan --suggest-reps` prices them), and for a
    drift reference case its reference jobs too, counted over the jobs of every part
    (experiment/order.py; the run's test class asks this for its repetitions). present: as for
    reference_cases."""
    reps = exp.repetitions if repetitions is None else repetitions
    out = {c.case_id: reps[c.case_id] if isinstance(reps, dict) else reps for c in cases}
    total = sum(out.values())
    for cid, every in reference_cases(exp, cases, present=present).values():
        out[cid] += reference_jobs(total, every)
    return out


def check_objective(search, cases: list[Case]) -> None:
    """The search's objective is a metric every case of the grid reports, as its parameters say
    (fio's rw, IOR's write and read); a benchmark whose metrics only its run can tell is held to
    its declared patterns (load._search)."""
    from ..benchmarks import get as get_benchmark

    objective = search.objective
    reported = {c.case_id: get_benchmark(c.benchmark).reported(c.params) for c in cases}
    lacking = [c for c in cases if reported[c.case_id] is not None and objective not in reported[c.case_id]]
    if not lacking:
        return
    first = lacking[0]
    names = reported[first.case_id]
    alike = [c for c in lacking if reported[c.case_id] == names]
    every = set.intersection(*(set(r) for r in reported.values() if r is not None))
    some = "every" if any(r is None or objective in r for r in reported.values()) else "any"
    file, line = search.at
    raise IolabError(f"{brief(objective)} is not reported by {some} case searched: {len(alike)} of "
                     f"{len(cases)} {first.benchmark} cases ({describe(first, varied_keys(cases))}"
                     f"{', …' if len(alike) > 1 else ''}) report only {', '.join(names)}, as their "
                     "parameters say", file=file, line=line, key="search.objective",
                     hint="metrics every case reports: " + (", ".join(n for n in names if n in every)
                                                            or "none"))


def _collision(exp: Experiment, a: Case, b: Case) -> IolabError:
    """Two different cases with one id: never drop one of them silently."""
    keys = sorted(k for k in set(a.params) | set(b.params) if a.params.get(k) != b.params.get(k))
    return IolabError(f"two different cases share the id {a.case_id}: {a.benchmark} "
                      f"({describe(a, keys)}) and {b.benchmark} ({describe(b, keys)})",
                      file=str(exp.path), hint="a sha256 prefix collision: please report it")


def _distance(a: Case, b: Case) -> int:
    """How many parameters differ between two cases."""
    return sum(a.params.get(k) != b.params.get(k) for k in set(a.params) | set(b.params))


def producers(cases: list[Case]) -> dict[str, str]:
    """Read case id -> the write case id whose data it reads.

    Among the writes with the read's data key (see the benchmark descriptors), the one whose parameters differ
    least from the read's is chosen (a read with mpi_independent reads the mpi_independent
    write, not the collective one); a tie is an error, since the pairing would be arbitrary.
    """
    from ..benchmarks import get as get_benchmark
    from ..layers import registry as layers

    writers: dict[str, list[Case]] = {}
    for c in cases:
        key = get_benchmark(c.benchmark).produces(c)
        if key is not None:
            writers.setdefault(key, []).append(c)
    out = {}
    for c in cases:
        key = get_benchmark(c.benchmark).consumes(c)
        if key is None:
            continue
        private = layers.private_data(c)
        if private:
            raise IolabError(f"case {c.case_id} ({c.benchmark} read) cannot read {private}: "
                             "another job wrote it, possibly on another node")
        candidates = writers.get(key)
        if not candidates:
            raise IolabError(f"case {c.case_id} ({c.benchmark} read) needs data that no write case "
                             f"in this experiment produces (key {key}); add the matching write case")
        distances = {w.case_id: _distance(w, c) for w in candidates}
        best = min(distances.values())
        ties = [cid for cid, d in distances.items() if d == best]
        if len(ties) > 1:
            raise IolabError(f"case {c.case_id} ({c.benchmark} read) could read the data of several "
                             f"write cases equally well ({', '.join(ties)}); make the read differ "
                             f"from all but one, or drop the extra writes")
        out[c.case_id] = ties[0]
    return out


def common_check(case: Case) -> str | None:
    """Checks every benchmark shares: each layer's request against the job shape and the rules
    of what it drives (hints, stripe requests)."""
    from ..layers.registry import registry

    for layer in registry():
        problem = layer.check(case)
        if problem:
            return problem
    return None


def varied_keys_of(exp: Experiment, part: Part | None = None) -> list[str]:
    parts = [part] if part else exp.parts
    keys: list[str] = []
    for p in parts:
        for k in list(p.matrix) + [k for g in p.zips for k in g]:
            if k not in keys:
                keys.append(k)
    return keys


def matrix_order(exp: Experiment) -> dict[str, tuple[list[str], dict[str, dict[str, int]]]]:
    """Per part, the order of its matrix: its axes as the YAML lists them (matrix keys, then
    zips) and, per axis, each value's place as the cases expand (the order the YAML lists the
    values; repr of the typed value -> index). Tables sort their rows by it (row_order)."""
    cases = expand(exp)
    out = {}
    for part in exp.parts:
        places: dict[str, dict[str, int]] = {}
        for c in cases:
            if c.part == part.name:
                for k in varied_keys_of(exp, part):
                    mine = places.setdefault(k, {})
                    mine.setdefault(repr(c.params.get(k)), len(mine))
        out[part.name] = (varied_keys_of(exp, part), places)
    return out


def row_order(order, keys: list[str]):
    """A sort key for a row's parameters: by `order` (one part's matrix_order, or None), each
    axis in turn at its value's place; values the matrix does not list (an imported run's, an
    older YAML's) after them, numbers in numeric order, then the rest as text."""
    axes, places = order or ([], {})
    axes = axes + [k for k in keys if k not in axes]
    # each axis's places, and its ints' and strings' sort keys made once (equal ints, or equal
    # strings, have one repr; a campaign's 10,000 rows repeat a few values)
    lookups = [(k, places.get(k, {}), {}) for k in axes]

    def key(params: dict) -> tuple:
        out = []
        for k, mine, made in lookups:
            v = params.get(k)
            t = type(v)
            if t is int or t is str:
                part = made.get(v)
                if part is None:
                    part = made[v] = _place(mine, v)
                out.append(part)
            else:
                out.append(_place(mine, v))
        return tuple(out)

    return key


def _place(places: dict, v) -> tuple:
    """A value's sort key on its axis (row_order)."""
    at = places.get(repr(v))
    if at is not None:
        return (0, at, 0.0, "")
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v:
        return (1, 0, float(v), "")
    return (1, 1, 0.0, str(v))


def varied_keys(cases: list[Case]) -> list[str]:
    """Parameters whose value differs between cases, in first-seen order.

    Two values are the same when their JSON is (1 and 1.0, or 1 and true, differ; a list and a
    tuple of the same items do not). Linear in cases x keys: each value is checked against the
    first case's, with JSON made only for values that are not plain text, integers or flags.
    """
    keys = list(dict.fromkeys(k for case in cases for k in case.params))
    return [k for k in keys if _differs(cases, k)]


_PLAIN = (str, int, bool, type(None))


def _differs(cases: list[Case], key: str) -> bool:
    first = cases[0].params.get(key)
    kind = type(first)
    blob = None
    for case in cases:
        value = case.params.get(key)
        if value is first:
            continue
        if kind in _PLAIN and type(value) is kind:
            if value != first:
                return True
            continue
        if blob is None:
            blob = json.dumps(first, sort_keys=True)
        if json.dumps(value, sort_keys=True) != blob:
            return True
    return False


def show_value(benchmark: str, key: str, value) -> str:
    """A parameter's value as a person writes it (units.shown), a size where its schema says so."""
    return shown(value, size=_is_size(benchmark, key))


def format_param(spec: dict, value) -> str:
    """A value of the parameter `spec` (its schema) as written in a YAML: 4MiB, true."""
    return shown(value, size=schemas.is_size_param(spec))


@functools.cache
def _is_size(benchmark: str, key: str) -> bool:
    return schemas.is_size_param(schemas.param_spec(benchmark, key) or {})


def describe(case: Case, keys: list[str]) -> str:
    return (", ".join(f"{k}={show_value(case.benchmark, k, case.params.get(k))}" for k in keys)
            or case.case_id)
