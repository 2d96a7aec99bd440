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
    from ..results.run import Run

    current = current_ids({c.case_id for c in cases})
    seen: dict[str, list[float]] = {}
    for path in run_paths:
        for rec in Run.load(path).records:
            timing = rec.provenance.get("timing") or {}
            start, end = timing.get("benchmark_start"), timing.get("benchmark_end")
            cid = current(rec.case_id)
            if rec.ok and cid and isinstance(start, (int, float)) and isinstance(end, (int, float)):
                seen.setdefault(cid, []).append(max(0.0, end - start))
    return {cid: sum(v) / len(v) for cid, v in seen.items()}


def plan_cost(cases, repetitions: int, earlier: dict[str, float] | None = None) -> Cost:
    earlier = earlier or {}
    per_case = {c.case_id: c.nodes * _hours(c) * repetitions for c in cases}
    core = sum(c.num_tasks * _hours(c) * repetitions for c in cases)
    estimate = None
    if earlier:
        estimate = sum(c.nodes * (earlier[c.case_id] / 3600 if c.case_id in earlier else _hours(c))
                       * repetitions for c in cases)
    peak = max((get_benchmark(c.benchmark).bytes_written(c) for c in cases), default=0)
    return Cost(sum(per_case.values()), core, estimate, sum(c.case_id in earlier for c in cases),
                peak, per_case)


def trim_suggestions(cases, cost: Cost, keys: list[str], repetitions: int) -> list[str]:
    """Per varied axis, what keeping only its cheapest value would save; largest first."""
    out = []
    for key in keys:
        by_value: dict[str, float] = {}
        for c in cases:
            value = repr(c.params.get(key))
            by_value[value] = by_value.get(value, 0) + cost.per_case[c.case_id]
        if len(by_value) < 2:
            continue
        keep = min(by_value.values())
        out.append((cost.node_hours - keep, f"{key}: {len(by_value)} values; one value alone costs "
                                            f"{keep:.2f} node-hours (saves {cost.node_hours - keep:.2f})"))
    if repetitions > 1:
        saved = cost.node_hours * (repetitions - 1) / repetitions
        out.append((saved, f"repetitions: {repetitions}; 1 would save {saved:.2f} node-hours "
                           "(and leave no confidence interval)"))
    return [text for _saved, text in sorted(out, key=lambda t: -t[0])]


def suggestion_node_hours(suggestions, cases_by_id: dict) -> float:
    """Node-hours of running each case the repetitions `iolab plan --suggest-reps` suggests (the
    most any of its metrics needs), at the time limits."""
    need: dict[str, int] = {}
    for s in suggestions:
        if s.suggested is not None:
            need[s.case_id] = max(need.get(s.case_id, 0), s.suggested)
    return sum(cases_by_id[cid].nodes * _hours(cases_by_id[cid]) * n for cid, n in need.items())
