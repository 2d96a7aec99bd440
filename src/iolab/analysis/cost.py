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


# iolab's own work between two steps of an allocation (the next case's directory, striping,
# witnesses, ReFrame's stages): an allowance added to the allocation's length per job.
BETWEEN_STEPS_S = 10
# the allocation's clock keeps this much at its end (rfm/allocation.RESERVE): a step is started
# only where its limit and this still fit, so the allocation asks for it once more
END_RESERVE_S = 30


def slurm_time(seconds: float) -> str:
    """A time limit as sbatch and salloc take it: 2:05:00, 1-02:00:00 (rounded up to a minute)."""
    minutes = -(-int(seconds) // 60)
    days, rest = divmod(minutes, 24 * 60)
    hours = f"{rest // 60:02d}" if days else f"{rest // 60}"
    return f"{days}-{hours}:{rest % 60:02d}:00" if days else f"{hours}:{rest % 60:02d}:00"


def _span(seconds: float) -> str:
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min"


@dataclass(frozen=True)
class Modes:
    """What a plan costs in each mode. Job mode: one Slurm job per case and repetition, each
    queued on its own and charged its own nodes. Allocation mode: one allocation holding the
    largest node count for its whole length, each job an srun step inside it."""
    jobs: int
    job_node_hours: float        # at the time limits, every job its own nodes
    nodes: int                   # the largest node count of any job: what the allocation holds
    seconds: float               # the allocation's length: limits summed, with the allowance
    idle_node_hours: float       # nodes held but not used by the step that runs
    estimated_seconds: float | None = None      # the length from earlier runs' durations

    @property
    def allocation_node_hours(self) -> float:
        return self.nodes * self.seconds / 3600

    def lines(self, queue_wait: float | None = None, longest: float | None = None) -> list[str]:
        """The comparison `iolab plan` prints; `queue_wait`: seconds a job waits in the queue,
        `longest`: the longest allocation the partition allows (both in seconds, optional)."""
        allocations = -(-int(self.seconds) // int(longest)) if longest else 1
        ask = slurm_time(min(self.seconds, longest) if longest else self.seconds)
        waits = "one queue wait" if allocations == 1 else f"{allocations} queue waits"
        s = "s" if self.nodes > 1 else ""
        out = ["modes (docs/campaigns.md):",
               f"  job mode: {self.jobs} jobs, each its own queue wait; {self.job_node_hours:.2f} "
               "node-hours at the time limits",
               f"  allocation mode: {waits}; {self.nodes} node{s} held for {slurm_time(self.seconds)} "
               f"(the jobs' time limits, {BETWEEN_STEPS_S} s each between steps and "
               f"{END_RESERVE_S} s at the end): "
               f"{self.allocation_node_hours:.2f} node-hours at the time limits"]
        if self.idle_node_hours > 0.005:
            share = 100 * self.idle_node_hours / self.allocation_node_hours
            out.append(f"    {self.idle_node_hours:.2f} of them ({share:.0f}%) idle: the {self.nodes} "
                       "nodes are held while jobs on fewer run")
        if allocations > 1:
            out.append(f"    longer than the longest allocation allowed ({slurm_time(longest)}): "
                       f"{allocations} allocations of --nodes {self.nodes} --time {ask}, "
                       "`iolab resume` in each after the first")
        else:
            out.append(f"    ask for --nodes {self.nodes} --time {ask}")
        if self.estimated_seconds is not None:
            out.append(f"    from earlier runs' durations: {self.nodes} node{s} for "
                       f"{slurm_time(self.estimated_seconds)}, "
                       f"{self.nodes * self.estimated_seconds / 3600:.3f} node-hours")
        if queue_wait:
            out.append(f"  waiting in the queue at {_span(queue_wait)} a wait: job mode "
                       f"{_span(self.jobs * queue_wait)}, allocation mode {_span(allocations * queue_wait)}")
        return out


def by_mode(cases, jobs: dict[str, int], earlier: dict[str, float] | None = None) -> Modes:
    """Both modes' costs for running each case `jobs[case id]` times (see Modes)."""
    held = max((c.nodes for c in cases), default=0)
    limit = {c.case_id: _hours(c) * 3600 for c in cases}

    def length(took) -> float:
        return sum((took[c.case_id] + BETWEEN_STEPS_S) * jobs[c.case_id] for c in cases) + END_RESERVE_S

    idle = sum((held - c.nodes) * limit[c.case_id] * jobs[c.case_id] for c in cases) / 3600
    estimated = length({cid: (earlier or {}).get(cid, s) for cid, s in limit.items()}) if earlier else None
    return Modes(sum(jobs[c.case_id] for c in cases),
                 sum(c.nodes * limit[c.case_id] * jobs[c.case_id] for c in cases) / 3600,
                 held, length(limit), idle, estimated)
