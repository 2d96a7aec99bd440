"""How many repetitions a campaign needs: per case and metric, the repetitions for a 95% CI
half-width of a target share of the mean, from the values of earlier runs of the same cases
(`iolab plan --suggest-reps`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import stats
from .report import N_TOO_SMALL, default_metrics


REPS_FORMULA = ("n = the smallest n >= 2 with t(0.975, n-1) * CV / sqrt(n) <= target, "
                "CV = s / mean over every earlier repetition of the case (all runs pooled)")


@dataclass
class RepSuggestion:
    part: str
    case_id: str
    metric: str
    unit: str
    runs: int                   # earlier runs with at least one value
    summary: stats.Summary      # pooled over those runs
    planned: int                # the experiment's repetitions
    suggested: int | None       # None: fewer than 2 earlier values

    @property
    def planned_rel_half_width(self) -> float | None:
        """What the planned repetitions would give at the observed CV."""
        if self.summary.cv is None or self.planned < 2:
            return None
        return stats.t_quantile(self.planned - 1) * self.summary.cv / math.sqrt(self.planned)


def suggest_reps(run_paths, cases, planned: int, target_pct: float,
                 metrics: dict[str, list[str]] | None = None) -> list[RepSuggestion]:
    """Per case and metric: repetitions for a 95% CI half-width of target_pct % of the mean,
    from the values of earlier runs of the same case ids (their repetitions: a drift
    reference's jobs are left out, as tables leave them out of the case's figures)."""
    from ..results.upgrade import current_ids
    from ..results.run import load_run

    target = target_pct / 100
    wanted = {c.case_id: c for c in cases}
    current = current_ids(wanted)       # earlier runs may have recorded 8-digit ids
    values: dict[tuple[str, str], list[float]] = {}
    units: dict[str, str] = {}
    runs: dict[tuple[str, str], set] = {}
    for path in run_paths:
        for rec in load_run(path).records:
            case = wanted.get(current(rec.case_id) or "")
            # a drift reference's extra jobs are not repetitions (tables keep them out too)
            if case is None or not rec.ok or rec.drift_reference:
                continue
            names = (metrics or {}).get(case.benchmark) or default_metrics(case.benchmark)
            for m in rec.metrics:
                if m.name in names:
                    values.setdefault((case.case_id, m.name), []).append(m.value)
                    runs.setdefault((case.case_id, m.name), set()).add(path.name)
                    units[m.name] = m.unit
    out = []
    for case in cases:
        names = (metrics or {}).get(case.benchmark) or default_metrics(case.benchmark)
        for name in names:
            vals = values.get((case.case_id, name), [])
            if not vals and name not in units:
                continue
            out.append(RepSuggestion(case.part, case.case_id, name, units.get(name, ""),
                                     len(runs.get((case.case_id, name), ())), stats.summarize(vals),
                                     planned, stats.reps_needed(vals, target) if len(vals) >= 2 else None))
    return out


def render_rep_suggestions(rows: list[RepSuggestion], experiment: str, runs: int, target_pct: float,
                           planned: int) -> str:
    out = [f"repetitions for a 95% CI half-width of {target_pct:g}% of the mean, "
           f"from {runs} earlier run(s) of {experiment}:", f"  {REPS_FORMULA}"]
    if not rows:
        out.append("  no earlier values for these cases: run them first (case ids depend on the profile)")
        return "\n".join(out)
    table = [["case", "metric", "runs", "n", "mean", "CV %", f"±% at {planned} reps", "suggested"]]
    for r in rows:
        s, now = r.summary, r.planned_rel_half_width
        table.append([r.case_id, r.metric, str(r.runs), str(s.n),
                      "-" if s.mean is None else f"{s.mean:.4g} {r.unit}".strip(),
                      "-" if s.cv is None else f"{100 * s.cv:.1f}",
                      "-" if now is None else f"{100 * now:.1f}",
                      N_TOO_SMALL if r.suggested is None else str(r.suggested)])
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    out += ["  " + "  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in table]
    out += [f"  {r.case_id} {r.metric}: {stats.set_aside_text(r.summary.set_aside)}, not in n"
            for r in rows if r.summary.set_aside]
    return "\n".join(out)
