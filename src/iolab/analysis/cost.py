"""What a plan costs an allocation: node-hours and core-hours (at the time limits, and estimated
from earlier runs of the same case ids), bytes written, the scratch space one case needs, and
which axis to trim when a plan is over budget."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..benchmarks import get as get_benchmark
from ..units import format_bytes_human, parse_time_limit


@dataclass
class Cost:
    node_hours: float                  # nodes x time limit x repetitions, every case
    core_hours: float                  # tasks x time limit x repetitions
    estimate: float | None             # node-hours from earlier runs where there are some
    measured_cases: int                # cases with an earlier duration
    peak_scratch: int                  # bytes one case leaves on scratch at most
    per_case: dict[str, float] = field(default_factory=dict)     # case id -> node-hours (limits)

    def lines(self, cases: int) -> list[str]:
        out = [f"node-hours: {self.node_hours:.2f} at the time limits ({self.core_hours:.2f} core-hours, "
               f"one core per task)"]
        if self.estimate is not None:
            out.append(f"node-hours estimated from earlier runs: {self.estimate:.3f} "
                       f"({self.measured_cases} of {cases} cases measured before; the rest at their limits)")
        out.append(f"peak scratch space of one case: {format_bytes_human(self.peak_scratch)}")
        return out


def _hours(case) -> float:
    return parse_time_limit(case.job.time_limit) / 3600


def durations(run_paths, cases) -> dict[str, float]:
    """Mean benchmark time (s) per case id, from the records of earlier runs."""
    from ..results.upgrade import current_ids
    from ..results.run import load_run

    current = current_ids({c.case_id for c in cases})
    seen: dict[str, list[float]] = {}
    for path in run_paths:
        for rec in load_run(path).records:
            timing = rec.provenance.get("timing") or {}
            start, end = timing.get("benchmark_start"), timing.get("benchmark_end")
            cid = current(rec.case_id)
            if rec.ok and cid and isinstance(start, (int, float)) and isinstance(end, (int, float)):
                seen.setdefault(cid, []).append(max(0.0, end - start))
    return {cid: sum(v) / len(v) for cid, v in seen.items()}


def plan_cost(cases, jobs: dict[str, int], earlier: dict[str, float] | None = None) -> Cost:
    """The cost of running each case `jobs[case id]` times (matrix.jobs_per_case: its
    repetitions and any drift reference jobs)."""
    earlier = earlier or {}
    per_case = {c.case_id: c.nodes * _hours(c) * jobs[c.case_id] for c in cases}
    core = sum(c.num_tasks * _hours(c) * jobs[c.case_id] for c in cases)
    estimate = None
    if earlier:
        estimate = sum(c.nodes * (earlier[c.case_id] / 3600 if c.case_id in earlier else _hours(c))
                       * jobs[c.case_id] for c in cases)
    peak = max((get_benchmark(c.benchmark).bytes_written(c) for c in cases), default=0)
    return Cost(sum(per_case.values()), core, estimate, sum(c.case_id in earlier for c in cases),
                peak, per_case)


@dataclass(frozen=True)
class Advice:
    """One way to trim a plan: the node-hours the trimmed plan needs and what that saves, which
    add up to the plan's."""
    text: str
    remaining: float
    saved: float


def _advice(what: str, total: float, remaining: float) -> Advice:
    # the figures shown add up as printed: the saving is the difference of the rounded ones
    shown = round(total, 2) - round(remaining, 2)
    return Advice(f"{what} leaves {remaining:.2f} node-hours (saves {shown:.2f})", remaining,
                  total - remaining)


def trim_suggestions(exp, cases, cost: Cost, keys: list[str]) -> list[Advice]:
    """What trimming the plan would leave and save, largest saving first: per axis, keeping one
    value of it in each part that varies it (the cheapest; in a part with a drift reference, the
    reference case's value, which the reference needs), every other case kept; per part (when
    there are several), leaving it out; and one repetition. Each trimmed plan is priced as the
    plan is (matrix.jobs_per_case, so a drift reference's jobs follow the jobs left)."""
    from ..experiment.matrix import jobs_per_case, reference_cases

    def left(kept, repetitions=None) -> float:
        return plan_cost(kept, jobs_per_case(exp, kept, repetitions, present=True)).node_hours

    total = cost.node_hours
    parts = list(dict.fromkeys(c.part for c in cases))
    reference = {cid for cid, _every in reference_cases(exp, cases).values()}
    out = []
    for key in keys:
        values: dict[str, list] = {}        # part -> its distinct values of key, in case order
        for part in parts:
            mine = list(dict.fromkeys(repr(c.params.get(key)) for c in cases if c.part == part))
            if len(mine) > 1:
                values[part] = mine
        if not values:          # the same in each part (it differs between parts only)
            continue
        kept = [c for c in cases if c.part not in values]
        for part, mine in values.items():
            own = [c for c in cases if c.part == part]
            fixed = [repr(c.params.get(key)) for c in own if c.case_id in reference]
            choices = fixed or mine
            best = min(choices, key=lambda v: sum(cost.per_case[c.case_id] for c in own
                                                   if repr(c.params.get(key)) == v))
            kept += [c for c in own if repr(c.params.get(key)) == best]
        counts = sorted({len(v) for v in values.values()})
        where = (f" in part{'s' if len(values) > 1 else ''} {', '.join(values)}"
                 if len(parts) > 1 else "")
        out.append(_advice(f"{key}: {'-'.join(map(str, counts))} values{where}; one value alone",
                           total, left(kept)))
    if len(parts) > 1:
        for part in parts:
            kept = [c for c in cases if c.part != part]
            out.append(_advice(f"part {part} left out", total, left(kept)))
    if exp.repetitions > 1:
        out.append(_advice(f"repetitions: {exp.repetitions}; 1 alone (no confidence interval)",
                           total, left(cases, 1)))
    return sorted(out, key=lambda a: -a.saved)


def suggested_reps(suggestions, cases, planned: int) -> dict[str, int]:
    """Case id -> the repetitions `iolab plan --suggest-reps` suggests for it (the most any of
    its metrics needs); the planned repetitions where it has no suggestion."""
    need = {c.case_id: None for c in cases}
    for s in suggestions:
        if s.suggested is not None and s.case_id in need:
            need[s.case_id] = max(need[s.case_id] or 0, s.suggested)
    return {cid: planned if n is None else n for cid, n in need.items()}
