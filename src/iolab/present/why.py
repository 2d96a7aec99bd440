"""`iolab why` as text: each explanation in sentences a reader can check (docs/why.md), said as
measured association over the run's cases, never as cause."""

from __future__ import annotations

import math

from ..analysis.association import ALPHA
from ..analysis.why import CANNOT, EXPLAINED, NOTHING, Explanation, Moved, p_text
from ..units import format_size


def number(value: float, unit: str) -> str:
    """An evidence value with its unit: sizes as written (64KiB), counts whole, others 3 digits."""
    if not math.isfinite(value):
        return "not recorded"
    if unit == "B" and value >= 1024 and float(value).is_integer():
        return format_size(int(value))
    size = abs(value)
    text = (str(int(value)) if float(value).is_integer() else f"{value:.0f}" if size >= 1000
            else f"{value:.1f}" if size >= 10 else f"{value:.3g}")
    return f"{text} {unit}" if unit not in ("count", "ratio", "") else text


def _p(p: float | None) -> str:
    return "-" if p is None else p_text(p)


def sentence(e: Explanation, m: Moved) -> str:
    """'write_bw rose as darshan tiny_write_share fell (100 % -> 0 % from the worst case to the
    best; rho = -0.69 over 3 cases, 5 repetitions each, p = 0.021 after Holm)'."""
    a = m.association
    better = "rose" if e.better == "higher" else "fell"
    went = ("rose" if m.at_best > m.at_worst else "fell" if m.at_best < m.at_worst
            else "rose" if ((a.rho or 0) > 0) == (e.better == "higher") else "fell")
    reps = sorted(set(e.reps.values()))
    each = f"{reps[0]} repetitions each" if len(reps) == 1 else f"{a.pairs} repetitions in all"
    text = (f"{e.metric} {better} as {m.source} {m.name} {went} ({number(m.at_worst, m.unit)} -> "
            f"{number(m.at_best, m.unit)} from the worst case to the best; rho = {a.rho:.2f} over "
            f"{a.cases} cases, {each}, p {_p(m.p_holm)} after Holm)")
    if a.best_minus_rest is not None:
        d, lo, hi = a.best_minus_rest
        text += (f"; best minus rest {_signed(d, m.unit)} [{_signed(lo, m.unit)}, "
                 f"{_signed(hi, m.unit)}]")
    return text


def _signed(v: float, unit: str) -> str:
    return ("+" if v > 0 else "-" if v < 0 else "") + number(abs(v), unit)


def render(e: Explanation, limit: int = 8) -> str:
    head = (f"{e.experiment} run {e.run_id}, {e.part}: {e.metric}"
            + (f" ({e.unit}, {e.better} is better)" if e.unit and e.better else ""))
    lines = [head]
    if e.verdict == CANNOT and not e.spread:
        lines += [f"Cannot tell: {e.reason}."]
        return "\n".join(lines)
    reps = sorted(set(e.reps.values()))
    lines.append(f"{len(e.cases)} cases, {'/'.join(map(str, reps))} repetitions each. "
                 + (f"Nothing to explain: {e.reason}." if e.verdict == NOTHING
                    else f"{e.reason[0].upper()}{e.reason[1:]}."))
    best, worst = e.cases[0], e.cases[-1]
    lines.append(f"Best: {e.labels[best]}, {number(e.means[best], e.unit)}; worst: "
                 f"{e.labels[worst]}, {number(e.means[worst], e.unit)} (means).")
    if e.verdict == EXPLAINED:
        lines.append("")
        if e.moved:
            lines.append(f"Moved with {e.metric} beyond noise, strongest first (measured "
                         f"association over these cases, not cause):")
            lines += [f"  {i}. {sentence(e, m)}" for i, m in enumerate(e.moved[:limit], 1)]
            if len(e.moved) > limit:
                lines.append(f"  ... and {len(e.moved) - limit} more (--all)")
        else:
            lines.append(f"No recorded evidence moved with {e.metric} beyond noise (p < {ALPHA:g} "
                         f"after Holm's correction): the mechanism is not among what was recorded.")
    lines += _ruled_out(e)
    lines += _rules(e)
    lines += _along(e)
    lines += _missing(e)
    return "\n".join(lines)


def _ruled_out(e: Explanation) -> list[str]:
    out = []
    if e.still:
        out += ["", f"Varied, but not with {e.metric} (p >= {ALPHA:g} after Holm" +
                ("" if e.verdict == EXPLAINED else "; nothing to explain here either") + "):",
                "  " + ", ".join(f"{m.source} {m.name} (rho {m.association.rho:+.2f})"
                                 for m in e.still)]
    if e.constant:
        out += ["", "The same in every case, so it explains no difference between them:",
                "  " + ", ".join(f"{name} {number(v, unit)}" for name, unit, v in e.constant)]
    if e.restated:
        out += ["", f"Left out, as they move with {e.metric} by construction (its own time, or "
                f"shares of the job's time): {', '.join(e.restated)}."]
    return out


def _rules(e: Explanation) -> list[str]:
    """Each rule of thumb that applies somewhere, with the values that made it and whether it
    separates the best case from the rest; the others in a line each kind."""
    from ..layers.rule import APPLIES, CANNOT, MIXED, CannotCheck, Finding

    if not e.rules:
        return []
    out = ["", "Rules of thumb, checked on each repetition (docs/reference/rules.md):"]
    quiet, unchecked = [], {}
    for r in e.rules:
        hit = [c for c in r.checks if r.checks[c].state in (APPLIES, MIXED)]
        if not hit:
            if all(check.state == CANNOT for check in r.checks.values()):
                cannot = next(iter(r.checks.values())).first(CannotCheck)
                unchecked.setdefault(cannot.needs if cannot else "", []).append(r.rule.name)
            else:
                quiet.append(r.rule.name)
            continue
        out.append(f"  {r.rule.name} ({r.rule.title}):")
        for c in hit:
            finding = r.checks[c].first(Finding)
            values = ", ".join(x.shown() for x in finding.readings) if finding else ""
            state = "applies" if r.checks[c].state == APPLIES else r.checks[c].text
            out.append(f"    {e.labels[c]}: {state}" + (f" ({values})" if values else ""))
        if r.separation is not None:
            out.append(f"    best against the rest: {r.separation.text}")
    if quiet:
        out.append(f"  Applies to no case: {', '.join(quiet)}.")
    for needs, names in unchecked.items():
        out.append(f"  Cannot be checked on any case: {', '.join(names)}"
                   + (f" (needs {needs})" if needs else "") + ".")
    return out


def _along(e: Explanation) -> list[str]:
    out, quiet = [], []
    for a in e.along:
        moved = bool(a.spread and a.spread.differs)
        if not moved and not a.changed:
            quiet.append(a.param)
            continue
        said = ("moved beyond noise" if moved else "did not move beyond noise" if a.spread
                else "cannot tell (one repetition)")
        p = f", ANOVA p {_p(a.spread.p)}" if a.spread else ""
        out += ["", f"Along {a.param} ({' -> '.join(a.values)}): {e.metric} {said}{p}."]
        if a.changed:
            out.append(f"  What changed with {a.param} (first -> last value, beyond noise):")
            out += [f"    {name}: {number(first, unit)} -> {number(last, unit)}"
                    for name, unit, first, last in a.changed]
        else:
            out.append(f"  No recorded evidence changed with {a.param}.")
    if quiet:
        out += ["", f"Along {', '.join(quiet)}: neither {e.metric} nor any recorded evidence "
                f"changed beyond noise."]
    return out


def _missing(e: Explanation) -> list[str]:
    by_source: dict[str, dict[tuple, list[str]]] = {}
    hows: dict[str, str | None] = {}
    for m in e.missing:
        by_source.setdefault(m.source, {}).setdefault(m.reasons, []).append(m.name)
        hows[m.source] = m.how
    if not by_source:
        return []
    out = ["", "Not recorded (so neither for nor against):"]
    for source, reasons in by_source.items():
        for why, names in reasons.items():
            out.append(f"  {source}: {', '.join(names)}: {'; '.join(why) or 'no reason kept'}")
        if hows[source] and _absent_everywhere(e, source):
            out.append(f"    to record it: {hows[source]}")
    return out


def _absent_everywhere(e: Explanation, source: str) -> bool:
    """No piece of the source was recorded for any case: the layer itself was missing."""
    return source not in e.sources


# ------------------------------------------------------------------------------- on the page
WHY_PLOT = "why"


def strongest(e: Explanation) -> tuple[str, str] | None:
    """(name, unit) of the evidence the page plots: the strongest that moved with the metric,
    else the first that changed along a parameter; None where nothing did."""
    if e.moved:
        return e.moved[0].name, e.moved[0].unit
    for a in e.along:
        if a.changed:
            return a.changed[0][0], a.changed[0][1]
    return None


def _pairs(run, e: Explanation, name: str) -> dict[str, list[tuple[float, float]]]:
    """case id -> (evidence, metric) of each repetition that has both."""
    part = run.digest.parts[e.part]
    out = {}
    for cid in e.cases:
        case = part.cases[cid]
        metric = dict(zip(case.reps.get(e.metric, ()), case.values.get(e.metric, ())))
        series = case.evidence.get(name)
        got = [] if series is None else [(v, metric[r]) for r, v in series.recorded() if r in metric]
        if got:
            out[cid] = got
    return out


def evidence_plot(run, e: Explanation, out_dir, prefix: str = "", formats=None) -> dict | None:
    """The metric of each repetition against the strongest evidence, a colour per case (the
    page's figure of `iolab why`). None without matplotlib or without evidence to plot."""
    import importlib.util

    chosen = strongest(e)
    if importlib.util.find_spec("matplotlib") is None or chosen is None:
        return None
    import matplotlib as mpl

    from ..analysis.report import metric_label
    from .plots import (COLORS, FIGSIZE, FORMATS, MARKERS, MAX_SERIES, RC, axis_label, new_figure,
                        save_figure)

    name, unit = chosen
    pairs = _pairs(run, e, name)
    if not pairs:
        return None
    xlabel = f"{name} ({unit})" if unit and unit != "count" else name
    ylabel = axis_label(e.metric, e.unit)
    title = f"{metric_label(e.metric)} against {name}, each repetition"
    with mpl.rc_context(RC):
        fig = new_figure(*FIGSIZE)
        ax = fig.add_subplot()
        if len(pairs) <= MAX_SERIES:
            for i, (cid, got) in enumerate(pairs.items()):
                ax.scatter([x for x, _y in got], [y for _x, y in got], zorder=3,
                           color=COLORS[i % len(COLORS)], marker=MARKERS[i % len(MARKERS)],
                           label=e.labels[cid])
        else:       # past MAX_SERIES a legend cannot be read: one colour, said in the notes
            ax.scatter([x for got in pairs.values() for x, _y in got],
                       [y for got in pairs.values() for _x, y in got], color=COLORS[0],
                       s=8, zorder=3, label=f"{len(pairs)} cases, one colour")
        if min(y for got in pairs.values() for _x, y in got) >= 0:
            ax.set_ylim(bottom=0)
        xs = [x for got in pairs.values() for x, _y in got]
        if min(xs) > 0 and max(xs) >= 100 * min(xs):     # 16 to 4096 writes: a log axis
            ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend(loc="best", frameon=True, fontsize="small").set_gid("legend")
        stem = f"{prefix}{WHY_PLOT}-{e.part}-{e.metric}"
        files = save_figure(fig, out_dir, stem, formats or FORMATS)
    moved = bool(e.moved) and e.moved[0].name == name
    note = ("the strongest evidence that moved with the metric" if moved else
            "what changed most plainly along a parameter; it did not move with the metric "
            "beyond noise")
    return {"title": title, "files": files, "notes": [note, "measured association, not cause"],
            "alt": f"{ylabel} against {xlabel}, one point per repetition, a colour per case"}


# A page is drawn within seconds at 100k records (scripts/bench-analysis); explaining a part
# reads every case's evidence, so past this many cases the page says to run `iolab why`.
PAGE_MAX_CASES = 1000


def section(run, out_dir, prefix: str = "") -> list[dict]:
    """`iolab why`'s explanations of a run for its page: the text and the plot of each part."""
    from ..analysis import why
    from ..results.runfiles import run_name

    out = []
    for part in run.digest.parts.values():
        if len(part.cases) > PAGE_MAX_CASES:
            out.append({"part": part.part, "metric": "", "verdict": "", "plot": None,
                        "text": f"{part.part}: {len(part.cases):,} cases, past the page's "
                                f"{PAGE_MAX_CASES:,}: `iolab why {run.experiment_id} "
                                f"{run_name(run.path)}` prints the explanation."})
    big = {entry["part"] for entry in out}
    for e in why.explain(run, parts=lambda name: name not in big):
        plot = evidence_plot(run, e, out_dir, prefix)
        out.append({"part": e.part, "metric": e.metric, "verdict": e.verdict,
                    "text": render(e), "plot": plot})
    return out
