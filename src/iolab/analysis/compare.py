"""Comparisons of runs with their uncertainty: two runs (or two systems), or two values of one
parameter inside a run. A run against a published study is analysis/published/.

Per row: both means with their 95% intervals, the ratio B/A with a 95% interval (delta method on
the log ratio, stats.ratio_ci), Welch's two-sided t-test at alpha 0.05 and a verdict by one rule
(VERDICT_RULE): faster or slower where interval and test agree, "unclear" (saying which found
what) where they disagree, no clear difference where neither finds one. Bandwidths and
operation rates (units ending in /s) are better higher, times (s, ms, us, ns) better lower.

Rows whose settings were not applied as requested (the records' flags) or whose provenance
differs (spack.lock, benchmark binary version) are marked and footnoted, never merged silently.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path

from .. import benchmarks
from ..layers import registry as layers
from .. import stats
from . import doc, drift as drifts
from ..errors import IolabError
from .. import units
from .published.study import coerce_param, param_text
from ..results.record import Manifest, Record
from .report import (fmt_mean_ci, metric_label, note_mark, param_label, short_reason,
                     tables_from)
from ..results.upgrade import current_ids
from ..results import asrun, cache
from ..results.run import Run, kept_at, load_run
from ..results.runfiles import run_name

TIME_UNITS = ("s", "ms", "us", "ns")



def direction(metric: str, unit: str | None, benchmark: str | None = None) -> str | None:
    """'higher' or 'lower' is better, or None when the metric has no better side (spreads, bytes):
    as the benchmark's descriptor declares it, else (a published study's metric) from its unit."""
    if benchmark in benchmarks.registry():
        spec = benchmarks.get(benchmark).metric(metric)
        if spec is not None and spec.unit == unit:
            return spec.better
    if metric.endswith(("_stddev", "_bytes")) or not unit:
        return None
    if unit in TIME_UNITS:
        return "lower"
    if unit.endswith("/s"):
        return "higher"
    return None


def verdict(welch: stats.Welch | None, diff: float | None, better: str | None,
            ci: tuple[float, float] | None = None) -> str:
    """B against A, by one rule (VERDICT_RULE): a difference is called when the 95% CI of B/A
    excludes 1 and Welch's test gives p < alpha; when only one of them finds it, the verdict says
    they disagree and which way the one that found it points; where the CI cannot be computed,
    the test alone decides."""
    if welch is None or diff is None:
        return "n too small"
    by_test = welch.p < stats.ALPHA
    by_ci = by_test if ci is None else not (ci[0] <= 1 <= ci[1])
    if better is None:
        way = "higher" if diff > 0 else "lower"
    else:
        way = "faster" if (diff > 0) == (better == "higher") else "slower"
    if by_test and by_ci:
        return way
    if by_ci:
        return f"unclear: the CI says {way}, Welch p ≥ {stats.ALPHA:g}"
    if by_test:
        return f"unclear: Welch says {way}, the CI includes 1"
    return "no clear difference"


VERDICT_RULE = ("Verdict: faster / slower only when both the 95% CI of B/A excludes 1 and Welch's "
                f"two-sided t-test gives p < {stats.ALPHA:g}; when only one of them finds a "
                "difference the verdict is 'unclear', says which one found it and which way it "
                "points; when neither does, no clear difference; n too small below 2 repetitions "
                "on a side. A difference no larger than the drift measured in either run (the "
                "far end of a trend's 95% CI, or the slowest or fastest block against the median "
                "block) is not declared: the verdict says 'within drift'.")


def within_drift(verdict_text: str, ratio: float | None, floor: drifts.Drift | None) -> str:
    """A declared faster / slower (or higher / lower) that the drift could explain: |B/A - 1|
    not above the drift's size in the run that drifts most."""
    if floor is None or ratio is None or verdict_text not in ("faster", "slower", "higher", "lower"):
        return verdict_text
    if abs(ratio - 1) <= floor.size:
        return f"within drift: {verdict_text} by {abs(ratio - 1):.0%}, the drift is up to {floor.size:.0%}"
    return verdict_text


# ----------------------------------------------------------------------------------------- sides

@dataclass
class Side:
    """One run in a comparison, with its label (A, B, run)."""

    label: str
    run: Run

    @classmethod
    def load(cls, path: Path, label: str) -> Side:
        run = load_run(path)
        if not run.reading.total:
            raise IolabError(f"run {path.name} has no records yet")
        return cls(label, run)

    @property
    def path(self) -> Path:
        return self.run.path

    @property
    def manifest(self) -> Manifest:
        return self.run.manifest

    @property
    def records(self) -> list[Record]:
        return self.run.records

    @property
    def experiment(self) -> str:
        return self.run.experiment_id

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def system(self) -> str | None:
        return self.manifest.system or self.manifest.label

    @property
    def name(self) -> str:
        """The run as commands name it: RUN, or RUN@SITE for another site's."""
        return run_name(self.path)

    def describe(self) -> str:
        return f"{self.label} = run {self.name} (system {self.system or 'unknown'})"

    def tables(self, metrics):
        made = asrun.of(self.run)
        return tables_from(self.run.digest, metrics, made.report, order=made.matrix_order)

    def binary_versions(self, part: str, case_id: str) -> frozenset:
        case = self.run.digest.case(part, case_id)
        return frozenset() if case is None else case.versions

    @property
    def drifts(self) -> list[drifts.Drift]:
        if "_drifts" not in self.__dict__:
            self.__dict__["_drifts"] = drifts.of_run(self.run)
        return self.__dict__["_drifts"]

    def drift_floor(self, part: str) -> drifts.Drift | None:
        return drifts.floor(self.drifts, part)


def _larger(*found: drifts.Drift | None) -> drifts.Drift | None:
    found = [d for d in found if d is not None]
    return max(found, key=lambda d: d.size) if found else None


def _drift_note(label: str, d: drifts.Drift | None) -> list[str]:
    return [] if d is None else [f"{label}: {d.short()}; a smaller difference is not declared"]


# ---------------------------------------------------------------------------------- comparisons

@dataclass
class Pair:
    key_values: list[str]
    case_a: str | None
    case_b: str | None
    a: stats.Summary
    b: stats.Summary
    notes: list[str] = field(default_factory=list)
    drift: drifts.Drift | None = None      # the larger drift of the two runs, if any

    @property
    def ratio(self) -> float | None:
        if self.a.mean and self.b.mean is not None:
            return self.b.mean / self.a.mean
        return None

    # once per pair: a campaign's comparison reads each several times (verdict, cells), and
    # their t distributions were most of its time
    @functools.cached_property
    def ratio_ci(self):
        return stats.ratio_ci(self.a, self.b)

    @functools.cached_property
    def welch(self):
        return stats.welch(self.a, self.b)

    @property
    def stats_of(self) -> tuple:
        """What ratio_ci and welch are computed from: each side's n, mean and stddev."""
        a, b = self.a, self.b
        return a.n, a.mean, a.stddev, b.n, b.mean, b.stddev

    def verdict(self, better: str | None) -> str:
        diff = None if self.a.mean is None or self.b.mean is None else self.b.mean - self.a.mean
        return within_drift(verdict(self.welch, diff, better, self.ratio_ci), self.ratio, self.drift)


@dataclass
class MetricTable:
    part: str
    benchmark: str
    metric: str
    unit: str
    headers: list[str]
    pairs: list[Pair]

    @property
    def better(self) -> str | None:
        return direction(self.metric, self.unit, self.benchmark)


@dataclass
class Comparison:
    title: str
    label_a: str
    label_b: str
    context: list[str]
    tables: list[MetricTable]
    # of `context`, the lines saying which parts were not compared, and why
    left_out: list[str] = field(default_factory=list)


def _headers(table) -> list[str]:
    return [param_label(k, table.benchmark)[0] for k in table.keys]


def _key_values(table, row) -> list[str]:
    return _key_values_of(table)(row)


def _key_values_of(table):
    """A row's parameters as shown, for the rows of one table (each row formatted once)."""
    divisors = [param_label(k, table.benchmark)[1] for k in table.keys]
    done: dict[int, list[str]] = {}

    def shown(row) -> list[str]:
        if id(row) not in done:
            done[id(row)] = [units.shown(v, units.CELL, divisor=d) for d, v in zip(divisors, row.key_values)]
        return list(done[id(row)])
    return shown


def flag_notes(label: str, row) -> list[str]:
    return [f"{label}: {n}" for n in row.notes]


def _provenance_notes(a: Side, b: Side) -> list[str]:
    """Run-level differences: the Spack environment."""
    la, lb = a.manifest.get("spack_lock_sha256"), b.manifest.get("spack_lock_sha256")
    if la == lb:
        return []
    if la and lb:
        return [f"spack.lock differs ({a.label} {la[:12]}, {b.label} {lb[:12]})"]
    return [f"spack.lock recorded for {a.label if la else b.label} only"]


def _version_note(a: Side, b: Side, part: str, case_a: str, case_b: str,
                  labels: tuple[str, str] | None = None) -> list[str]:
    """A differing benchmark binary version (as the benchmark printed it) between the two cases."""
    va, vb = a.binary_versions(part, case_a), b.binary_versions(part, case_b)
    if not va or not vb or va == vb:
        return []
    la, lb = labels or (a.label, b.label)

    def show(vs):
        return "/".join(sorted(str(v) for v in vs))
    return [f"binary version differs ({la} {show(va)}, {lb} {show(vb)})"]


def compare_runs(a: Side, b: Side, metrics: list[str] | None = None) -> Comparison:
    """The same cases (by part and case id) of two runs, e.g. from two systems."""
    tables_a = a.tables(metrics)
    chosen = metrics or list(dict.fromkeys(m for t in tables_a for m in t.metrics))
    tables_b = {t.part: t for t in b.tables(chosen)}
    run_notes = _provenance_notes(a, b)
    context = [a.describe(), b.describe()]
    if a.system != b.system:
        context.append(f"systems differ: {a.label} on {a.system or 'unknown'}, "
                       f"{b.label} on {b.system or 'unknown'}")
    out, left_out = [], []

    def leave_out(text: str) -> None:
        context.append(text)
        left_out.append(text)
    for part in [p for p in tables_b if p not in {t.part for t in tables_a}]:
        leave_out(f"{part}: left out, only in {b.label}")
    for ta in tables_a:
        tb = tables_b.get(ta.part)
        if tb is None:
            leave_out(f"{ta.part}: left out, only in {a.label}")
            continue
        rows_b = {r.case_id: r for r in tb.rows} if tb else {}
        # runs recorded with 8-digit case ids pair with the same cases' 16-digit ids
        in_b = current_ids(rows_b)
        matched_b = {in_b(r.case_id) for r in ta.rows}
        only_b = [cid for cid in rows_b if cid not in matched_b]
        if only_b:
            context.append(f"{ta.part}: {len(only_b)} case(s) only in {b.label}: {', '.join(only_b)}")
        mine = []
        da, db = a.drift_floor(ta.part), b.drift_floor(ta.part)
        floor = _larger(da, db)
        drift_notes = _drift_note(a.label, da) + _drift_note(b.label, db)
        for m in ta.metrics:
            pairs = []
            for ra in ta.rows:
                rb = rows_b.get(in_b(ra.case_id) or "")
                sa = ra.cells[m].summary
                sb = rb.cells[m].summary if rb is not None and m in rb.cells else stats.summarize([])
                notes = list(run_notes) + flag_notes(a.label, ra)
                if rb is None:
                    notes.append(f"case not in {b.label}")
                else:
                    notes += flag_notes(b.label, rb) + _version_note(a, b, ta.part, ra.case_id, rb.case_id)
                notes += drift_notes
                pairs.append(Pair(_key_values(ta, ra), ra.case_id, rb.case_id if rb else None, sa, sb,
                                  notes, floor))
            unit = ta.units.get(m) or (tb.units.get(m) if tb else "") or ""
            mine.append(MetricTable(ta.part, ta.benchmark, m, unit, _headers(ta), pairs))
        if any(p.a.n and p.b.n for t in mine for p in t.pairs):
            out += mine
        else:
            leave_out(f"{ta.part}: left out, no metric to compare ({_outcomes(a.label, ta)}; "
                      f"{_outcomes(b.label, tb)})")
    title = f"{a.experiment}: {a.label} vs {b.label}"
    kept = kept_at(a.run) if b.run.reading.key else None
    return _kept_stats(_something(Comparison(title, a.label, b.label, context, out, left_out)),
                       kept, ["runs", b.run.reading.key, metrics])


def _kept_stats(c: Comparison, kept: tuple | None, inputs) -> Comparison:
    """Each pair's ratio_ci and welch, kept in the cache beside the run's digest (`kept`:
    run.kept_at(); `inputs`: what chose the pairs): a campaign's 19,200 pairs took half of a
    comparison's time in their t distributions. Each kept pair holds what it was computed from
    (Pair.stats_of) and is used only where that equals the pair's, so a value is never another
    pair's; an entry that does not fit these pairs is a miss, computed again."""
    pairs = [p for t in c.tables for p in t.pairs]
    got = cache.of_run(kept, "pair-stats", inputs,
                       lambda: [(p.stats_of, p.ratio_ci, p.welch) for p in pairs], list)
    if len(got) != len(pairs):
        return c
    for (of, ci, w), p in zip(got, pairs):
        if of != p.stats_of or not (ci is None or type(ci) is tuple) or not (
                w is None or type(w) is stats.Welch):
            return c
    for (_, ci, w), p in zip(got, pairs):
        p.__dict__["ratio_ci"], p.__dict__["welch"] = ci, w
    return c


def _outcomes(label: str, table) -> str:
    """'A: 4 skipped (benchmark binary 'ior' not found ...)': what became of a part's jobs."""
    counts = {"ok": sum(r.ok for r in table.rows)}
    reasons: list[str] = []
    for status in ("failed", "skipped", "aborted"):
        errors = [e for r in table.rows for e in getattr(r, status)]
        counts[status] = len(errors)
        reasons += [why for why in dict.fromkeys(map(short_reason, errors)) if why not in reasons]
    said = ", ".join(f"{n} {status}" for status, n in counts.items() if n) or "no jobs"
    return f"{label}: {said}" + (f" ({'; '.join(reasons)})" if reasons else "")


def _something(c: Comparison) -> Comparison:
    """The comparison, if at least one row has values on both sides; else why not, as an error."""
    if any(p.a.n and p.b.n for t in c.tables for p in t.pairs):
        return c
    raise IolabError(f"{c.title}: nothing could be compared",
                     hint="; ".join(c.context[2:]) or "no row has values on both sides")


def compare_by_param(side: Side, key: str, baseline: str, metrics: list[str] | None = None) -> Comparison:
    """Each case against the baseline case that differs from it only in `key`."""
    tables = side.tables(metrics)
    seen_values, out, left_out, measured_nothing = set(), [], [], False
    try:
        base_value = coerce_param(key, baseline)
    except ValueError as exc:
        raise IolabError(f"--baseline {baseline!r}: {exc}", key=key) from None
    found_key = False
    for table in tables:
        rows = [r for r in table.rows if key in r.params]
        found_key = found_key or bool(rows)
        for r in rows:
            seen_values.add(r.params[key])
        # the baseline of each case: the one differing only in `key`, found by the other values
        others = [_without(r.params, key) for r in rows]
        bases: dict[str, object] = {}
        for r, rest in zip(rows, others):
            if r.params[key] == base_value:
                bases.setdefault(rest, r)
        if rows and bases and not table.metrics:     # every job skipped or failed
            measured_nothing = True
            left_out.append(f"{table.part}: left out, no metric to compare "
                            f"({_outcomes(side.label, table)})")
            continue
        if not rows or not bases:
            left_out.append(f"{table.part}: left out, " + (f"no case has {key}" if not rows else
                            f"no case has the baseline {key} = {baseline}"))
            continue
        shown = _key_values_of(table)
        floor = side.drift_floor(table.part)
        drift_note = _drift_note("run", floor)
        # each case's baseline and notes, the same for every metric
        against = []
        for r, rest in zip(rows, others):
            if r.params[key] == base_value:
                continue
            base = bases.get(rest)
            notes = flag_notes("this case", r)
            if base is None:
                against.append((r, None, notes + ["no baseline case differing only in " + key]))
                continue
            notes = flag_notes("baseline", base) + notes
            notes += _version_note(side, side, table.part, base.case_id, r.case_id,
                                   ("baseline", "this case"))
            against.append((r, base, notes + drift_note))
        for m in table.metrics:
            pairs = []
            for r, base, notes in against:
                sb = r.cells[m].summary
                if base is None:
                    pairs.append(Pair(shown(r), None, r.case_id, stats.summarize([]), sb, list(notes)))
                    continue
                pairs.append(Pair(shown(r), base.case_id, r.case_id,
                                  base.cells[m].summary, sb, list(notes), floor))
            out.append(MetricTable(table.part, table.benchmark, m, table.units.get(m, ""),
                                   _headers(table), pairs))
    if not found_key:
        varied = sorted({k for t in tables for r in t.rows for k in (r.params or {})
                         if k.startswith((*layers.prefixes(), "scale.")) or k in _all_varied(side)})
        raise IolabError(f"no case of run {side.run_id} has parameter {key!r}",
                         hint=f"parameters: {', '.join(varied)}")
    if not any(t.pairs for t in out) and not measured_nothing:
        try:
            values = sorted(seen_values)
        except TypeError:           # of several types: as text
            values = sorted(seen_values, key=str)
        shown = ", ".join(param_text(key, v) for v in values)
        raise IolabError(f"no case has {key} = {baseline} with another value to compare against",
                         hint=f"values of {key} in this run: {shown}")
    context = [side.describe(),
               f"A = the baseline case ({key} = {baseline}); B = the case in the row, which differs "
               f"from A only in {key}"] + left_out
    title = f"{side.experiment}: {key} against {key} = {baseline}"
    return _kept_stats(_something(Comparison(title, "baseline", "case", context, out)),
                       kept_at(side.run), ["by", key, baseline, metrics])


# json.dumps with options builds an encoder per call: a third of _without's time
_ENCODE = json.JSONEncoder(sort_keys=True, default=str).encode


def _without(params: dict, key: str) -> str:
    return _ENCODE({k: v for k, v in params.items() if k != key})


def _all_varied(side: Side) -> set:
    return set(side.run.digest.varied)


# ------------------------------------------------------------------------------------- rendering

def mean_ci_cell(s: stats.Summary | None) -> str:
    return "-" if s is None else fmt_mean_ci(s, marks=False)


def _cell(cells: dict[int, str], s: stats.Summary) -> str:
    """mean_ci_cell, once per summary of a table being written (kept alive by its pairs)."""
    text = cells.get(id(s))
    if text is None:
        text = cells[id(s)] = mean_ci_cell(s)
    return text


def ratio_cell(v) -> str:
    return "-" if v is None else f"{v:.2f}"


def set_aside_notes(*sides: tuple[str, stats.Summary | None]) -> list[str]:
    """'A: 1 value set aside (1e+308: above 1e+150)' for a side whose summary left values out."""
    return [f"{label}: {stats.set_aside_text(s.set_aside)}" for label, s in sides
            if s is not None and s.set_aside]


def footnoted(notes: list[str], seen: list[str]) -> str:
    marks = []
    for n in notes:
        if n not in seen:
            seen.append(n)
        marks.append(note_mark(seen.index(n)))
    return " ".join(marks)


METHOD = ("B/A: ratio of the means, 95% CI by the delta method on log(B/A) with Welch-Satterthwaite "
          "degrees of freedom. " + VERDICT_RULE + " Bandwidths and rates (…/s) are better higher, "
          "times better lower.")


def render_comparison(c: Comparison) -> str:
    return doc.markdown(comparison_blocks(c))


def comparison_blocks(c: Comparison) -> list[doc.Block]:
    """The comparison as doc blocks: its title and context, a table per part and metric, the
    method (Markdown for the terminal, HTML on a published page)."""
    return head_blocks(c, c.context) + table_blocks(c) + method_blocks()


def head_blocks(c: Comparison, context: list[str]) -> list[doc.Block]:
    return [doc.heading(c.title, 2), doc.line(), *map(doc.line, context), doc.line()]


def method_blocks() -> list[doc.Block]:
    return [doc.line(METHOD), doc.line()]


def table_blocks(c: Comparison) -> list[doc.Block]:
    """A table per part and metric, each with its footnotes."""
    out = []
    for t in c.tables:
        unit = f" ({t.unit})" if t.unit else ""
        header = (t.headers or ["Case"]) + [f"{c.label_a} mean ± 95% CI{unit}", f"n {c.label_a}",
                                            f"{c.label_b} mean ± 95% CI{unit}", f"n {c.label_b}",
                                            "B/A", "95% CI of B/A", "Welch p", "B vs A", "Notes"]
        seen: list[str] = []
        better = t.better
        cells: dict[int, str] = {}      # a summary's cell, once (a baseline is in many rows)
        rows = []
        for p in t.pairs:
            w = p.welch
            ci = p.ratio_ci
            rows.append((p.key_values or [p.case_b or p.case_a or "-"]) + [
                _cell(cells, p.a), str(p.a.n), _cell(cells, p.b), str(p.b.n), ratio_cell(p.ratio),
                "-" if ci is None else f"{ci[0]:.2f}–{ci[1]:.2f}",
                "-" if w is None else f"{w.p:.3g}", p.verdict(better),
                footnoted(p.notes + set_aside_notes((c.label_a, p.a), (c.label_b, p.b)), seen)])
        out += [doc.heading(f"{t.part} · {metric_label(t.metric)} ({t.metric}, "
                            f"{_better_words(t.better)})", 3), doc.line(), doc.table(header, rows),
                doc.line()]
        if seen:
            out += [doc.line(f"{note_mark(i)} {n}") for i, n in enumerate(seen)] + [doc.line()]
    return out


def _better_words(better: str | None) -> str:
    return {"higher": "higher is better", "lower": "lower is better"}.get(better, "no better side")
