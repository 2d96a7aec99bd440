"""A search's answer in words (`iolab search-report`, the search section of a published page):
the settings as the matrix writes them, intervals, the runner-up, the cases the model cannot
rule out, the model's optimum."""

from __future__ import annotations

from .. import stats
from ..results import asrun
from ..results.run import chain_of
from ..campaigns.search.answer import Answer, Unmeasured, answer, of_run, space_bench
from ..campaigns.search.observations import NOT_APPLIED, Point
from ..campaigns.search.space import GRID, PART, Space


def report_run(run, objective: str | None = None) -> tuple[str, bool]:
    """`iolab search-report`: the answer of a run (with its continuations), from its records and
    the experiment as run, and whether it found anything. A run without `search:` (a full grid)
    is answered for `objective`."""
    search, space, unit = of_run(run, objective)
    rounds = len(chain_of(run))
    head = f"{asrun.of(run).experiment.id} run {run.run_id}" + (f" (+{rounds - 1} continuations)"
                                                               if rounds > 1 else "")
    found = answer(search, space, run.records)
    return head + "\n" + render_answer(found, space, unit), found.best is not None


def render_answer(a: Answer, space: Space, unit: str = "") -> str:
    from ..experiment.matrix import show_value

    s = a.search
    keys = [k for k in space.axes if k != PART] + ([PART] if PART in space.axes else [])

    def setting(p_setting: dict, bench: str) -> str:
        return ", ".join(f"{k}={show_value(bench, k, v) if v != NOT_APPLIED else v}"
                         for k, v in ((k, p_setting.get(k)) for k in keys)) or "(one case)"

    def shown(p: Point) -> str:
        m = stats.summarize(p.values)
        ci = (f" ± {m.ci_half_width:.4g} (95% CI {m.ci[0]:.4g} to {m.ci[1]:.4g})"
              if m.ci else " (n too small for an interval)")
        return f"{setting(p.setting, p.case.benchmark)}\n    {s.objective} {m.mean:.4g}{unit}{ci}, n={m.n}"

    budget = (f"budget {s.budget} cases x {s.repetitions} repetitions" if s.strategy == "random"
              else f"budget {s.budget} x {s.repetitions} repetitions = {s.budget * s.repetitions} jobs")
    lines = [f"search: {s.strategy}, {s.direction} {s.objective}, {budget}, seed {s.seed}"
             if s.strategy != GRID else
             f"search: none (the run asked for the grid); {s.direction} {s.objective}",
             f"cases run: {a.cases_run} of the grid's {a.grid} ({a.jobs} jobs; the grid: "
             f"{a.grid * s.repetitions})"]
    if a.best is None:
        lines.append(f"no case of the grid gave a value of {s.objective}: nothing found")
    else:
        lines.append(f"best found: {shown(a.best)}")
        lines += [f"    (asked for {', '.join(a.best.requested)}: {n})" for n in a.best.notes]
    if a.runner_up is not None:
        lines.append(f"runner-up: {shown(a.runner_up)}")
        w = a.welch
        if w is None:
            lines.append("best vs runner-up: n too small for Welch's test (2 values each needed)")
        elif w.p < stats.ALPHA:
            lines.append(f"best vs runner-up: distinguishable (Welch p={w.p:.3g} < {stats.ALPHA})")
        else:
            lines.append(f"best vs runner-up: NOT distinguishable (Welch p={w.p:.3g} >= {stats.ALPHA}):"
                         " either may be the better; more repetitions of both would tell")
    if a.best is not None and len(a.ranked) > 1:
        lines += _separation(a, setting, unit)
    if a.best is not None and a.not_run:
        lines += _unmeasured(a, space, setting, unit)
    if a.predicted is not None:
        case, value = a.predicted
        ran = next((p for p in a.ranked if p.case is case), None)
        status = f"run: {ran.mean:.4g}{unit}" if ran else "not run"
        lines.append(f"model's optimum (each axis's main effect, fitted to the cases run): "
                     f"{setting(space.setting(case), case.benchmark)}, predicted {value:.4g}{unit} "
                     f"({status})")
    elif a.best is not None and len(a.ranked) >= 3:
        lines.append("model's optimum: the best found")
    for p in a.off_grid:
        lines.append(f"ran on no setting of the grid (not counted as any case): "
                     f"{setting(p.setting, space_bench(space, p))}, "
                     f"{s.objective} {p.mean:.4g}{unit}, n={len(p.values)}; " + "; ".join(p.notes))
    if a.no_value:
        lines.append(f"cases run without a value of {s.objective}: {', '.join(a.no_value)}")
    if a.set_aside:
        shown = ", ".join(f"{cid} rep {rep}" for cid, rep, _v in a.set_aside[:6])
        lines.append(f"{s.objective}: {stats.set_aside_text([v for *_, v in a.set_aside])}, "
                     f"in no figure above: {shown}{', …' if len(a.set_aside) > 6 else ''}")
    return "\n".join(lines) + "\n"


def _separation(a: Answer, setting, unit: str) -> list[str]:
    """Which cases run cannot be told apart from the best, and why: their intervals."""
    b = stats.summarize(a.best.values)
    if b.ci is None:
        return [f"indistinguishable from the best: not known (the best has n={b.n}: no interval "
                "to separate it by)"]
    if not a.indistinguishable:
        return [f"the best is separated: no other case's 95% interval reaches its own "
                f"({b.ci[0]:.4g} to {b.ci[1]:.4g}{unit}); {len(a.ranked) - 1} other case(s) run"]

    def interval(p: Point) -> str:
        m = stats.summarize(p.values)
        if m.ci is None:
            return (f"{m.mean:.4g}{unit}, n=1: one value, taken as noisy as the best "
                    f"({m.mean - b.ci_half_width:.4g} to {m.mean + b.ci_half_width:.4g}{unit})")
        return f"95% CI {m.ci[0]:.4g} to {m.ci[1]:.4g}{unit}, n={m.n}"

    out = [f"statistically indistinguishable from the best ({len(a.indistinguishable)}: their 95% "
           f"intervals overlap the best's, {b.ci[0]:.4g} to {b.ci[1]:.4g}{unit}; more repetitions "
           "of them may tell them apart):"]
    out += [f"    {setting(p.setting, p.case.benchmark)}: {interval(p)}"
            for p in a.indistinguishable[:10]]
    if len(a.indistinguishable) > 10:
        out.append(f"    … and {len(a.indistinguishable) - 10} more")
    return out


def _unmeasured(a: Answer, space: Space, setting, unit: str) -> list[str]:
    """The cases not run that the model cannot rule out (`not_ruled_out`), or that it rules out
    every one: what the answer says of the cases it never measured."""
    from ..experiment.matrix import show_value

    b = stats.summarize(a.best.values)
    side = "lower" if a.search.maximize else "upper"
    bound = (f"the best's mean, {b.mean:.4g}{unit} (one value)" if b.ci is None else
             f"the best's 95% interval's {side} end, "
             f"{(b.ci[0] if a.search.maximize else b.ci[1]):.4g}{unit}")
    if not a.not_ruled_out:
        return [f"the {a.not_run} case(s) not run are ruled out by the model (main effects, fitted "
                f"to the cases run): their 95% prediction intervals do not reach {bound}"]
    out = [f"not measured; could be as good ({len(a.not_ruled_out)} of the {a.not_run} case(s) "
           f"not run: the model cannot rule them out, their predicted 95% interval reaches "
           f"{bound}, or it cannot predict them):"]

    def said(u: Unmeasured) -> str:
        if u.interval is None:
            return f"not run, not predicted: {u.reason(show_value)}"
        return (f"not run, predicted {u.predicted:.4g}{unit} (95% prediction interval "
                f"{u.interval[0]:.4g} to {u.interval[1]:.4g}{unit})")

    out += [f"    {setting(space.setting(u.case), u.case.benchmark)}: {said(u)}"
            for u in a.not_ruled_out[:10]]
    if len(a.not_ruled_out) > 10:
        out.append(f"    … and {len(a.not_ruled_out) - 10} more")
    return out
