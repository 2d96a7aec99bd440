"""What `iolab plan` says of an experiment before it runs: its cases with the bytes each writes,
the jobs, a search's budget, the cost at the time limits (refused over a --budget), and the
repetitions earlier runs suggest."""

from __future__ import annotations

import textwrap

from ..benchmarks import get as get_benchmark
from ..errors import IolabError
from ..experiment.matrix import describe, jobs_per_case, reference_cases, varied_keys
from ..units import format_bytes_human
from . import cost


def overview(exp, cases, keys, profile_note: str = "") -> str:
    """The experiment, its cases and the totals, as lines ending in a newline: one block per part,
    with what that part fixes and, per case, only what varies between its cases. `keys`: the
    keys that vary anywhere in the experiment (the order in which they are shown)."""
    lines = [f"{exp.id}: {exp.description.strip()}"]
    if exp.source:
        lines.append(f"source: {exp.source}")
    lines += [f"profile: {exp.profile or '(base)'}{profile_note}  repetitions: {exp.repetitions}"]
    total = 0
    jobs = jobs_per_case(exp, cases)       # every job the run submits, a drift reference's too
    parts = list(dict.fromkeys(c.part for c in cases))
    for part in parts:
        mine = [c for c in cases if c.part == part]
        own = set(varied_keys(mine))
        varied = [k for k in keys if k in own]
        fixed = [k for k in mine[0].params if k not in varied and mine[0].params[k] not in (None, [])]
        name = f"part {part} ({mine[0].benchmark})" if len(parts) > 1 else mine[0].benchmark
        lines += ["", f"{name}: {len(mine)} case{'s' if len(mine) != 1 else ''}"]
        if fixed:
            lines += textwrap.wrap("fixed: " + describe(mine[0], fixed), 100, initial_indent="  ",
                                   subsequent_indent="    ", break_on_hyphens=False)
        rows = []
        for c in mine:
            nbytes = get_benchmark(c.benchmark).bytes_written(c)
            total += nbytes * jobs[c.case_id]
            rows.append([c.case_id, str(c.num_tasks), format_bytes_human(nbytes),
                         describe(c, varied) if varied else "-"])
        header = ["case", "tasks", "writes/case", "parameters"]
        widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
        lines += ["  " + "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip()
                  for r in [header] + rows]
    lines.append("")
    by_id = {c.case_id: c for c in cases}
    for part, (cid, every) in reference_cases(exp, cases).items():
        case, more = by_id[cid], jobs[cid] - exp.repetitions
        own = varied_keys([c for c in cases if c.part == part])
        lines.append(f"drift reference: {cid} ({describe(case, own) if own else part}) runs {more} more "
                     f"jobs (at the start, every {every} jobs and the end), repetitions "
                     f"{exp.repetitions + 1} to {jobs[cid]}")
    lines += [f"cases: {len(cases)}  jobs: {sum(jobs.values())}  "
              f"bytes written: {format_bytes_human(total)} ({total} B)"]
    if exp.search is not None:
        s = exp.search
        jobs = s.budget * s.repetitions
        grid = len(cases) * s.repetitions
        lines.append(f"search: {s.strategy}, {s.direction} {s.objective}: at most {min(jobs, grid)} jobs "
                     f"({s.budget} cases' worth x {s.repetitions} repetitions) of the grid's "
                     f"{grid} with `iolab search {exp.id}`; the figures above are "
                     "the whole grid's, which `reframe -r` runs")
    return "".join(line + "\n" for line in lines)


def plan_cost(exp, cases, runs) -> tuple[cost.Cost, cost.Modes]:
    """Node-hours, core-hours and peak scratch at the time limits of every job the run submits,
    with an estimate from the earlier runs `runs` where there are any; and what the same jobs
    cost in each mode (a job each, or steps of one allocation)."""
    jobs = jobs_per_case(exp, cases)
    earlier = cost.durations(runs, cases) if runs else None
    return cost.plan_cost(cases, jobs, earlier), cost.by_mode(cases, jobs, earlier)


def check_budget(exp, cases, keys, spent: cost.Cost, budget: float | None) -> None:
    """Refuse a plan over `budget` node-hours, naming the axes whose trimming saves most."""
    if budget is not None and spent.node_hours > budget:
        trims = cost.trim_suggestions(exp, cases, spent, keys)
        raise IolabError(f"the plan needs {spent.node_hours:.2f} node-hours at its time limits, over the "
                         f"budget of {budget:g}",
                         hint="trim (largest saving first): " + "; ".join(t.text for t in trims[:3])
                              if trims else "shorten job.time_limit")


def suggestions(exp, cases, runs, target_ci: float) -> str:
    """Repetitions per case and metric for a 95% CI half-width of target_ci % of the mean, from
    the earlier runs `runs`, and what a run with them submits and costs: every job, a drift
    reference's too (their number follows the jobs of the run, as in `overview`)."""
    from .repetitions import render_rep_suggestions, suggest_reps

    chosen = list(exp.report.metrics)
    rows = suggest_reps(runs, cases, exp.repetitions, target_ci,
                        {b: chosen for b in exp.benchmarks} if chosen else None)
    text = render_rep_suggestions(rows, exp.id, len(runs), target_ci, exp.repetitions)
    if not any(r.suggested is not None for r in rows):
        return text
    reps = cost.suggested_reps(rows, cases, exp.repetitions)
    jobs = jobs_per_case(exp, cases, reps)
    hours = cost.plan_cost(cases, jobs).node_hours
    lines = [f"  with the suggested repetitions (the planned {exp.repetitions} where there is no "
             f"suggestion) a run submits {sum(jobs.values())} jobs and costs {hours:.2f} node-hours "
             "at the time limits"]
    for cid, every in reference_cases(exp, cases).values():
        lines.append(f"  of them drift reference {cid}: {jobs[cid] - reps[cid]} more jobs (at the "
                     f"start, every {every} jobs and the end), kept out of its repetitions")
    return text + "\n" + "\n".join(lines)
