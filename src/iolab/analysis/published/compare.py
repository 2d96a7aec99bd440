"""A run against a published study's rows: each row lined up with the run's case that has its
values, the row-by-row table, the best setting in the study and in the run, Spearman's rho with its
n and the verdict sentence (PublishedComparison.shape_verdict). Absolute values are judged only
when the run's system declares itself the same machine as the study's (extras['iolab']
['same_machine_as'])."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .. import doc
from ...experiment import site
from ... import stats
from ...errors import IolabError
from ...units import CELL, shown
from ...layers import registry as layers
from ...experiment.matrix import format_param, show_value
from .study import DEFAULT, DESCRIPTIVE, VALUE_COLUMNS, PublishedRow, Study, coerce_param
from .study import spec_of as _param_spec
from ...results.record import Manifest, Record, param_value
from ..report import fmt_measure, note_mark, spec_label
from ..compare import (Side, direction, flag_notes, footnoted, mean_ci_cell, ratio_cell,
                       set_aside_notes)

SHAPE_RHO = 0.7        # Spearman's rho at or above this: the ordering of settings agrees
SAME_MACHINE_KEY = "same_machine_as"


def same_machine_studies(manifest: Manifest) -> list[str]:
    """Studies the run's system declares itself to be the same machine as.

    Read from the manifest's `system_extras` (the partition's extras['iolab'] as recorded by the
    run): `system_extras: {same_machine_as: [archer-fpp-ssf]}`. Absent: a different machine.
    """
    return list(site.recorded(manifest.system_extras).same_machine_as)


# ------------------------------------------------------------------------------------- published

MIN_VERDICT_ROWS = 3   # fewer matched rows: the verdict says so instead of guessing a shape
# The rule a study's verdict follows, printed under every comparison with a study (compare and the
# page), as VERDICT_RULE is under every comparison of runs.
SHAPE_RULE = (f"rule: a verdict against a study judges the shape, not the numbers (the study has "
              f"no intervals to test against): reproduced when the study's best setting is also the "
              f"run's best and the ordering agrees (Spearman's ρ ≥ {SHAPE_RHO} over the matched "
              f"rows); partly reproduced when one of the two holds; not reproduced when neither "
              f"does; not assessed under {MIN_VERDICT_ROWS} matched rows. Absolute values are "
              f"judged only on the machine the study was measured on. Runs set against runs "
              f"(iolab compare) follow the rule of faster / slower where interval and test agree.")


@dataclass
class PublishedPair:
    row: PublishedRow
    case_id: str | None
    run: stats.Summary | None
    status: str                     # matched | unmatched | ambiguous
    notes: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float | None:
        if self.run is None or self.run.mean is None or not self.row.value:
            return None
        return self.run.mean / self.row.value

    @property
    def deviation(self) -> float | None:
        r = self.ratio
        return None if r is None else abs(r - 1)


@dataclass
class Pick:
    """Rows that matched several cases of the run, which differ in `key`: the case with `chosen`
    was used. The user names another with --pick KEY=VALUE."""

    key: str
    chosen: object
    others: list
    rows: int = 0

    def describe(self, benchmark: str = "ior") -> str:
        show = [show_value(benchmark, self.key, v) for v in [self.chosen, *self.others]]
        return (f"{self.rows} row(s) matched several cases of the run, which differ in {self.key} "
                f"({', '.join(show)}) that the study does not fix here: the case with "
                f"{self.key}={show[0]} is used; choose another with --pick "
                f"{self.key}={show[1] if len(show) > 1 else show[0]}")


@dataclass
class PublishedComparison:
    study: Study
    side: Side
    run_metric: str
    study_metric: str
    run_unit: str
    study_unit: str
    match_keys: list[str]
    ignored: list[str]
    where: dict
    pairs: list[PublishedPair]
    same_machine: bool
    picks: list[Pick] = field(default_factory=list)

    @property
    def matched(self) -> list[PublishedPair]:
        return [p for p in self.pairs if p.status == "matched" and p.run and p.run.n]

    @property
    def study_better(self) -> str | None:
        return direction(self.study_metric, self.study_unit)

    @property
    def run_better(self) -> str | None:
        bench = next((p.benchmark for p in self.side.run.digest.parts.values()), None)
        return direction(self.run_metric, self.run_unit, bench)

    @property
    def comparable_units(self) -> bool:
        return self.run_unit == self.study_unit

    def counts(self) -> dict[str, int]:
        return {s: sum(p.status == s for p in self.pairs) for s in ("matched", "unmatched", "ambiguous")}

    def _goodness(self, value: float, better: str | None) -> float:
        return -value if better == "lower" else value

    def best(self) -> tuple[PublishedPair, list[PublishedPair]] | None:
        """(the study's best row, the run's best rows: several when their means tie), among the
        matched rows."""
        rows = self.matched
        if len(rows) < 2 or self.study_better is None or self.run_better is None:
            return None
        by_study = max(rows, key=lambda p: self._goodness(p.row.value, self.study_better))
        top = max(self._goodness(p.run.mean, self.run_better) for p in rows)
        by_run = [p for p in rows if self._goodness(p.run.mean, self.run_better) == top]
        return by_study, by_run

    def _varying_keys(self) -> list[str]:
        rows = self.matched
        return [k for k in self.match_keys if len({repr(p.row.params.get(k)) for p in rows}) > 1]

    def setting(self, pair: PublishedPair) -> str:
        """The row's values of the columns that vary among the matched rows, as key=value."""
        bits = [f"{k}={_setting_value(k, pair.row.params[k])}" for k in self._varying_keys()
                if k in pair.row.params]
        return ", ".join(bits) or f"line {pair.row.line}"

    def setting_words(self, pair: PublishedPair) -> str:
        """The same in words: 'stripe count -1, stripe size 8MiB'; hints left unset are left out."""
        keys = self._varying_keys()
        words, unset = [], {}       # layers with a parameter left unset -> their word for none set
        for k in keys:
            value = pair.row.params.get(k)
            if value is None:
                continue
            if value == DEFAULT:
                layer = layers.owner(k)
                if layer and layer.none_set:
                    unset[layer.name] = layer.none_set
                continue
            words.append(f"{_words(k)} {_setting_value(k, value)}")
        for name, word in unset.items():
            if not any(getattr(layers.owner(k), "name", None) == name
                       and pair.row.params.get(k) not in (None, DEFAULT) for k in keys):
                words.append(word)
        return ", ".join(words) or f"the row on line {pair.row.line}"

    def best_status(self) -> str | None:
        """agrees, differs, or tied (the run's best is not unique)."""
        best = self.best()
        if best is None:
            return None
        study_best, run_best = best
        if len(run_best) > 1:
            return "tied"
        return "agrees" if study_best is run_best[0] else "differs"

    def rho(self) -> float | None:
        rows = self.matched
        if self.study_better is None or self.run_better is None:
            return None
        return stats.spearman([self._goodness(p.row.value, self.study_better) for p in rows],
                              [self._goodness(p.run.mean, self.run_better) for p in rows])

    def shape_verdict(self) -> str:
        """One sentence a reader can check against the table: the best setting in the study and in
        the run, and whether the ordering agrees (Spearman's rho over the matched rows, with n)."""
        n = len(self.matched)
        if self.study_better is None or self.run_better is None:
            which = self.study_metric if self.study_better is None else self.run_metric
            return f"not assessed: {which} has no better side (neither a time nor a rate)"
        if n < MIN_VERDICT_ROWS:
            return (f"not assessed: {n} matched row{'' if n == 1 else 's'} "
                    f"{'is' if n == 1 else 'are'} too few for a verdict (it needs at least "
                    f"{MIN_VERDICT_ROWS})")
        study_best, run_best = self.best()
        status, rho = self.best_status(), self.rho()
        if status == "agrees":
            best = f"{self.setting_words(study_best)} is best in both"
        elif status == "tied":
            best = (f"the run's best is a tie of {len(run_best)} rows "
                    f"({'; '.join(self.setting_words(p) for p in run_best)}), the study's is "
                    f"{self.setting_words(study_best)}")
        else:
            best = (f"the best setting differs (study: {self.setting_words(study_best)}; run: "
                    f"{self.setting_words(run_best[0])})")
        if rho is None:
            side = "run's" if len({p.run.mean for p in self.matched}) < 2 else "study's"
            return (f"not assessed: {best}; the {side} values do not differ over {n} rows, so "
                    f"there is no ordering to compare")
        ordered = rho >= SHAPE_RHO
        order = f"ordering {'agrees' if ordered else 'differs'}, ρ = {rho:.2f} over {n} rows"
        agrees = status == "agrees"
        kind = ("reproduced" if agrees and ordered else
                "partly reproduced" if agrees or ordered else "not reproduced")
        return f"shape {kind}: {best}; {order}"


def _words(key: str) -> str:
    """A column's title in running text: 'Stripe Count' -> 'stripe count', 'I/O Method' -> 'I/O
    method'; hint names stay as ROMIO spells them."""
    if key == "scale.num_tasks":
        return "processes"
    title = _param_spec(key).get("title", key)
    return " ".join(w if (w.isupper() or "/" in w or "_" in w) else w.lower() for w in title.split())


def _run_value(params: dict, key: str):
    return param_value(params, key)


def _matches(row: PublishedRow, params: dict, keys: list[str]) -> bool:
    for key in keys:
        if key not in row.params:
            continue                     # the study does not say: no constraint
        want, have = row.params[key], _run_value(params, key)
        if want == DEFAULT:
            if have is not None:
                return False
        elif have != want:
            return False
    return True


def parse_picks(items: list[str] | None) -> dict:
    """--pick KEY=VALUE (repeatable): the run's cases with that value only."""
    out = {}
    for item in items or []:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise IolabError(f"--pick {item!r}: expected KEY=VALUE, e.g. scale.tasks_per_node=4")
        try:
            out[key] = coerce_param(key, text)
        except ValueError as exc:
            raise IolabError(f"--pick {item!r}: {exc}", key=key) from None
    return out


def picked_records(records: list[Record], picks: dict) -> list[Record]:
    """The records whose case has every picked value; an unknown value names the run's values."""
    for key, want in picks.items():
        have = [r.param(key) for r in records]
        if want not in have:
            values = sorted({json.dumps(v) for v in have if v is not None})
            raise IolabError(f"--pick {key}={_setting_value(key, want)}: no case of the run has it",
                             hint=f"values in the run: {', '.join(values) or 'none (not a parameter of it)'}")
        records = [r for r, v in zip(records, have) if v == want]
    return records


def _order_value(value):
    """Sort key that puts the largest number (or the first value seen) first."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, -value)
    return (1, 0)


def compare_published(side: Side, study: Study, metric: str | None = None,
                      where: list[str] | None = None, ignore: list[str] | None = None,
                      choose: bool = False) -> PublishedComparison:
    """Line each study row up with the run's case that has the row's values in the study's
    columns (an empty cell does not constrain; '-' wants the setting unset).

    A row that matches several cases is ambiguous; with `choose`, the case with the largest value
    of the parameters those cases differ in is used instead, and the comparison lists each such
    choice (Pick) so that it can be shown and changed. A case matched by several rows makes those
    rows ambiguous either way.
    """
    ignore = list(ignore or [])
    for key in ignore:
        if key not in study.param_columns:
            raise IolabError(f"--ignore {key}: not a parameter column of {study.name}",
                             hint=f"columns: {', '.join(study.param_columns)}")
    filters = parse_where(study, where)
    rows = [r for r in study.rows if _where_ok(r, filters)]
    if not rows:
        why = study.citation.get("missing") or "no row matches the --where filters"
        raise IolabError(f"study {study.name} has no rows to compare: {why}")
    metrics = sorted({r.metric for r in rows})
    if len(metrics) > 1:
        raise IolabError(f"study {study.name} has several metrics ({', '.join(metrics)})",
                         hint="pick one with --where metric=NAME")
    study_metric = metrics[0]
    study_unit = rows[0].unit
    run_metric = metric or study_metric
    match_keys = [k for k in study.param_columns if k not in ignore]

    tables = side.tables([run_metric])
    cases = [(t, r) for t in tables for r in t.rows]
    run_units = {t.units.get(run_metric) for t in tables if t.units.get(run_metric)}
    if not run_units:
        raise IolabError(f"run {side.run_id} has no metric {run_metric!r}",
                         hint="choose the run's metric with --metric")
    run_unit = sorted(run_units)[0]

    pairs = []
    picks: dict[str, Pick] = {}
    claimed: dict[str, list[PublishedPair]] = {}
    for row in rows:
        pair = _pair(row, [(t, r) for t, r in cases if _matches(row, r.params, match_keys)],
                     choose, run_metric, picks)
        if pair.case_id:
            claimed.setdefault(pair.case_id, []).append(pair)
        pairs.append(pair)
    for case_id, group in claimed.items():
        if len(group) > 1:
            _claimed_by_several(case_id, group)
    same = study.name in same_machine_studies(side.manifest)
    return PublishedComparison(study, side, run_metric, study_metric, run_unit, study_unit,
                               match_keys, ignore, filters, pairs, same, list(picks.values()))


def _pair(row, hits: list, choose: bool, run_metric: str, picks: dict[str, Pick]) -> PublishedPair:
    """A study row and the run's cases that match it: unmatched, ambiguous, or the one case
    (with `choose`, the largest of what the matching cases differ in, noted in `picks`)."""
    if not hits:
        return PublishedPair(row, None, None, "unmatched")
    differ = sorted(k for k in {k for _, r in hits for k in r.params}
                    if len({json.dumps(r.params.get(k), sort_keys=True) for _, r in hits}) > 1)
    if len(hits) > 1 and not choose:
        ids = ", ".join(r.case_id for _, r in hits)
        return PublishedPair(row, None, None, "ambiguous",
                             [f"{len(hits)} cases match ({ids}): they differ in "
                              f"{', '.join(differ)}, which the study does not fix here; "
                              f"choose with --pick KEY=VALUE"])
    notes = []
    if len(hits) > 1:
        hits.sort(key=lambda h: [_order_value(h[1].params.get(k)) for k in differ])
        chosen = hits[0][1]
        for k in differ:
            others = list(dict.fromkeys(r.params.get(k) for _, r in hits[1:]
                                        if r.params.get(k) != chosen.params.get(k)))
            p = picks.setdefault(k, Pick(k, chosen.params.get(k), []))
            p.others = list(dict.fromkeys(p.others + [o for o in others if o != p.chosen]))
            p.rows += 1
        notes.append(f"{len(hits)} cases match; used the one with "
                     + ", ".join(f"{k}={_setting_value(k, chosen.params.get(k))}" for k in differ))
    _table, case = hits[0]
    return PublishedPair(row, case.case_id, case.cells[run_metric].summary, "matched",
                         notes + flag_notes("run", case))


def _claimed_by_several(case_id: str, group: list[PublishedPair]) -> None:
    """A case that several study rows matched makes each of those rows ambiguous."""
    differ = sorted(k for k in {k for g in group for k in (*g.row.params, *g.row.descriptive)}
                    if len({repr(g.row.params.get(k, g.row.descriptive.get(k))) for g in group}) > 1)
    for p in group:
        p.status = "ambiguous"
        p.notes.append(f"case {case_id} matches {len(group)} published rows (lines "
                       f"{', '.join(str(g.row.line) for g in group)}), which differ in "
                       f"{', '.join(differ) or 'nothing'}: narrow with --where")


def parse_where(study: Study, where: list[str] | None) -> dict[str, str]:
    """--where COLUMN=VALUE (repeatable) -> {column: text}, each checked against the study."""
    filters = {}
    for item in where or []:
        key, sep, text = item.partition("=")
        if not sep or key not in study.columns:
            raise IolabError(f"--where {item!r}: expected COLUMN=VALUE with a column of {study.name}",
                             hint=f"columns: {', '.join(study.columns)}")
        if key not in (*VALUE_COLUMNS, *DESCRIPTIVE) and text != "-":
            try:
                coerce_param(key, text)
            except ValueError as exc:
                raise IolabError(f"--where {item!r}: {exc}", key=key) from None
        filters[key] = text
    return filters


def _where_ok(row: PublishedRow, filters: dict) -> bool:
    for key, text in filters.items():
        if key == "metric":
            if row.metric != text:
                return False
        elif key == "unit":
            if row.unit != text:
                return False
        elif key in DESCRIPTIVE:
            if row.descriptive.get(key, "") != text:
                return False
        else:
            value = row.params.get(key)
            if value is None:
                return False
            want = DEFAULT if text == "-" else coerce_param(key, text)
            if value != want:
                return False
    return True


# ------------------------------------------------------------------------------------- rendering

def _num(v) -> str:
    return fmt_measure(v)


def citation_blocks(side: Side, study: Study) -> list[doc.Block]:
    cite = study.citation
    out = [doc.heading(f"{side.experiment} run {side.run_id} vs published: {study.name}", 2), doc.line(),
           doc.line(f"{cite.get('title')}"), doc.line(f"source: {_source(cite)}"), doc.line(side.describe())]
    if cite.get("missing"):
        out.append(doc.line(f"the study file notes as missing: {cite['missing']}"))
    return out


def published_blocks(pc: PublishedComparison, heading: bool = True,
                     adjustments: list[str] = ()) -> list[doc.Block]:
    """One comparison with a study (or one of its tables): the citation (with `heading`), how the
    run was lined up, the row-by-row table and the verdict lines."""
    study, side = pc.study, pc.side
    out = []
    if heading:
        out += citation_blocks(side, study) + [doc.line()]
    out += [doc.line(f"- {a}") for a in adjustments] + [doc.line(f"- {p.describe(_bench(side))}")
                                                       for p in pc.picks]
    units = pc.run_unit if pc.comparable_units else f"run {pc.run_unit}, study {pc.study_unit}"
    out.append(doc.line(f"metric: run {pc.run_metric} against study {pc.study_metric} ({units})"))
    out.append(doc.line(f"matched on: {', '.join(pc.match_keys) or 'nothing'}"
               + (f"; ignored: {', '.join(pc.ignored)}" if pc.ignored else "")
               + (f"; rows where {', '.join(f'{k}={v}' for k, v in pc.where.items())}" if pc.where else "")))
    out.append(doc.line())
    shown = [k for k in study.param_columns if any(k in p.row.params for p in pc.pairs)]
    desc = [k for k in ("note",) if any(k in p.row.descriptive for p in pc.pairs)]
    unit = f" ({pc.study_unit})"
    header = [_column(k)[0] + (" (ignored)" if k in pc.ignored else "") for k in shown]
    header += [k.capitalize() for k in desc] + [
        f"Published{unit}", f"Run mean ± 95% CI ({pc.run_unit})", "n", "Case"]
    if pc.comparable_units:
        header.append("Reproduced" if pc.same_machine else "Run / Published")
    header.append("Notes")
    rows = []
    seen: list[str] = []
    for p in pc.pairs:
        cells = [_published_cell(k, p.row.params.get(k)) for k in shown]
        cells += [p.row.descriptive.get(k, "") for k in desc]
        cells += [_num(p.row.value), mean_ci_cell(p.run) if p.status == "matched" else "-",
                  str(p.run.n) if p.run else "0", p.case_id or p.status]
        if pc.comparable_units:
            if p.status != "matched" or p.ratio is None:
                cells.append("-")
            elif pc.same_machine:
                cells.append(f"within {100 * p.deviation:.1f}%")
            else:
                cells.append(ratio_cell(p.ratio))
        cells.append(footnoted(p.notes + set_aside_notes(("run", p.run)), seen))
        rows.append(cells)
    out += [doc.table(header, rows), doc.line()]
    if seen:
        out += [doc.line(f"{note_mark(i)} {n}") for i, n in enumerate(seen)] + [doc.line()]
    out += verdict_blocks(pc)
    out.append(doc.line())
    return out


def verdict_blocks(pc: PublishedComparison) -> list[doc.Block]:
    """Rows matched, the best setting in the study and in the run, Spearman's rho with its n, the
    verdict sentence, and what is said about absolute values."""
    counts = pc.counts()
    out = [doc.line(f"rows: {counts['matched']} matched, {counts['unmatched']} without a matching case, "
                    f"{counts['ambiguous']} ambiguous")]
    best = pc.best()
    unit = f" {pc.study_unit}"
    if best is not None:
        study_best, run_best = best
        run_text = " / ".join(f"{pc.setting_words(p)} ({_num(p.run.mean)} {pc.run_unit})" for p in run_best)
        tie = f" (a tie of {len(run_best)} rows)" if len(run_best) > 1 else ""
        out.append(doc.line(f"best of the matched rows: study {pc.setting_words(study_best)} "
                            f"({_num(study_best.row.value)}{unit}); run {run_text}{tie}"))
    rho = pc.rho()
    n = len(pc.matched)
    out.append(doc.line(f"ordering: Spearman's ρ = {rho:.2f} over n = {n} rows (agrees at ρ ≥ {SHAPE_RHO})"
                        if rho is not None else
                        f"ordering: not tested (n = {n} matched rows; Spearman's ρ needs "
                        f"{MIN_VERDICT_ROWS} with spread on both sides)"))
    out.append(doc.verdict(f"verdict: {pc.shape_verdict()}"))
    out.append(doc.line(SHAPE_RULE))
    if pc.same_machine and pc.comparable_units and pc.matched:
        worst = max(p.deviation for p in pc.matched)
        inside = sum(1 for p in pc.matched if p.run.ci and p.run.ci[0] <= p.row.value <= p.run.ci[1])
        out.append(doc.verdict(f"verdict (absolute, same machine): reproduced within {100 * worst:.1f}% "
                               f"on every matched row; the published value lies inside the run's 95% "
                               f"CI on {inside} of {len(pc.matched)}"))
    elif pc.same_machine:
        out.append(doc.verdict("absolute: not assessed (the run and the study use different units)"))
    else:
        out.append(doc.verdict(
            f"absolute: not assessed: hardware differs (the run's system does not declare "
            f"extras['iolab']['{SAME_MACHINE_KEY}'] containing {pc.study.name!r}); the ratios "
            f"above are context, not a verdict"))
    return out


def _source(cite: dict) -> str:
    bits = [f"seed {cite['seed']}" if cite.get("seed") else None, cite.get("url"), cite.get("table")]
    return "; ".join(b for b in bits if b)


def _bench(side: Side) -> str:
    return next((p.benchmark for p in side.run.digest.parts.values()), "ior")


def _setting_value(key: str, value) -> str:
    if value is None:
        return "?"
    if value == DEFAULT:
        return "default"
    if isinstance(value, list):
        return "x".join(map(str, value))
    return format_param(_param_spec(key), value)


def _column(key: str) -> tuple[str, float | None]:
    """Header and display divisor of a study column, whichever benchmark defines it."""
    return spec_label(key, _param_spec(key))


def _published_cell(key: str, value) -> str:
    if value is None:
        return ""
    if value == DEFAULT:
        return "default"
    return shown(value, CELL, divisor=_column(key)[1])
