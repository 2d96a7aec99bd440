"""Which shipped experiment reproduces which published study, and how a run is lined up with it.

`iolab compare ID RUN published:STUDY` and the report page (`iolab publish`) both call
compare_study(): one comparison per group of the study's rows (a table of the study and one
metric), each with the rows matched, the best setting in the study and in the run, Spearman's rho
with its n and a verdict sentence (compare.PublishedComparison.shape_verdict), then one verdict
for the study.

Lining up a run made at another scale (a laptop run of a cluster study) happens here, once, and
every step is said in the output:
- the run's process counts are not the study's: the scale columns are not matched, and the
  study's rows at the process count closest to the run's largest are used;
- problem-size columns (block_size, grid...) with values the study does not have are not matched;
- where several cases still match one row (the run varies something the study does not fix,
  e.g. tasks per node), the case with the largest value is used, and the output names the
  parameter and how to choose another (--pick KEY=VALUE).
`exact` (--exact) turns all three off: every column is matched as written, and rows matching
several cases are reported as ambiguous.

Which study an experiment reproduces is its `report.published` (reportspec.StudyLink, read from
the experiment as run): the study and, per group of rows, the part of the run and its metric, or
why those rows cannot be measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ... import benchmarks
from .. import doc
from ..compare import Side
from .compare import (PublishedComparison, _setting_value, _where_ok, citation_blocks,
                      compare_published, parse_picks, parse_where, picked_records, published_blocks)
from ...errors import IolabError
from ...results import asrun
from ...results.combine import restricted
from .study import Study
from ...experiment.reportspec import StudyLink, TableLink

SCALE_COLUMNS = ("scale.num_tasks", "scale.nodes", "scale.tasks_per_node")


# ---------------------------------------------------------------------------------- the groups

@dataclass
class Group:
    """One group of the study's rows set against the run: a comparison, or why there is none."""

    label: str
    link: TableLink
    adjustments: list[str] = field(default_factory=list)
    comparison: PublishedComparison | None = None
    error: str = ""

    def verdict(self) -> str:
        if self.comparison is None:
            return f"not compared: {self.error}"
        return self.comparison.shape_verdict()


@dataclass
class StudyResult:
    study: Study
    side: Side
    link: StudyLink | None
    groups: list[Group]
    notes: list[str] = field(default_factory=list)

    @property
    def compared(self) -> list[Group]:
        return [g for g in self.groups if g.comparison is not None]

    def verdict(self) -> str:
        """The study's verdict: its one comparison's, or each group's in turn."""
        if len(self.groups) == 1:
            return self.groups[0].verdict()
        return "; ".join(f"{g.label}: {g.verdict()}" for g in self.groups)

    def ambiguous(self) -> int:
        return sum(g.comparison.counts()["ambiguous"] for g in self.compared)


def _study_tasks(row) -> int | None:
    p = row.params
    if isinstance(p.get("scale.num_tasks"), int):
        return p["scale.num_tasks"]
    if isinstance(p.get("scale.nodes"), int) and isinstance(p.get("scale.tasks_per_node"), int):
        return p["scale.nodes"] * p["scale.tasks_per_node"]
    return None


def _log_distance(a: float, b: float) -> float:
    return abs(math.log2(a) - math.log2(b)) if a > 0 and b > 0 else math.inf


def _where_rows(study: Study, where: list[str]):
    filters = dict(w.partition("=")[::2] for w in where)
    return [r for r in study.rows if _where_ok(r, filters)]


def line_up(side: Side, study: Study, table: TableLink, label: str, *, metric: str | None = None,
            where: list[str] = (), ignore: list[str] = (), picks: dict | None = None,
            exact: bool = False) -> Group:
    group = Group(label, table)
    if table.why:
        group.adjustments.append(table.why)
    if table.not_compared:
        group.error = table.not_compared
        return group
    recs = [r for r in side.records if table.part is None or r.part == table.part]
    if table.part:
        group.adjustments.append(f"only the run's part {table.part!r}")
    if not recs:
        group.error = f"the run has no records of part {table.part!r}"
        return group
    if picks:
        try:
            recs = picked_records(recs, picks)
        except IolabError as exc:
            group.error = exc.message + (f" ({exc.hint})" if exc.hint else "")
            return group
        group.adjustments.append("only the run's cases with " + ", ".join(
            f"{k}={_setting_value(k, v)}" for k, v in picks.items()) + " (--pick)")
    ignore = list(table.ignore) + [i for i in ignore if i not in table.ignore]
    where = list(where)
    columns = study.param_columns
    rows = _where_rows(study, where)
    ok = [r for r in recs if r.ok]
    if not exact and rows and ok:
        run_tasks = sorted({r.num_tasks for r in ok})
        known = sorted({t for t in map(_study_tasks, rows) if t is not None})
        if run_tasks and known and not set(run_tasks) & set(known):
            target = run_tasks[-1]
            dropped = [c for c in SCALE_COLUMNS if c in columns and c not in ignore]
            ignore += dropped
            text = (f"the run's process counts ({', '.join(map(str, run_tasks))}) are not the "
                    f"study's ({', '.join(map(str, known))}): {', '.join(dropped)} not matched")
            if "scale.num_tasks" in columns and len(known) > 1 and not any(
                    w.startswith("scale.num_tasks=") for w in where):
                closest = min(known, key=lambda t: (_log_distance(t, target), t))
                where.append(f"scale.num_tasks={closest}")
                kept = len(_where_rows(study, where))
                text += (f"; the study's rows at {closest} processes (closest to the run's "
                         f"{target}): {kept} of {len(rows)}")
            group.adjustments.append(text)
        for col in ("scale.nodes", "scale.tasks_per_node"):
            # a study that gives only the node count (or only tasks per node)
            want = {row.params[col] for row in rows if isinstance(row.params.get(col), int)}
            have = {r.params.get(col) for r in ok}
            if col in columns and col not in ignore and want and not want & have:
                ignore.append(col)
                group.adjustments.append(
                    f"the run's {col} ({', '.join(map(str, sorted(have)))}) is not the study's "
                    f"({', '.join(map(str, sorted(want)))}): not matched")
        for col in benchmarks.size_params():
            if col not in columns or col in ignore:
                continue
            have = [r.params[col] for r in ok if col in r.params]
            want = [row.params[col] for row in rows if col in row.params]
            if have and any(v not in want for v in have):
                ignore.append(col)
                group.adjustments.append(f"{col}: the run's values are not the study's: not matched")
    try:
        group.comparison = compare_published(Side(side.label, restricted(side.run, recs)), study,
                                             metric, where, ignore, choose=not exact)
    except IolabError as exc:
        group.error = exc.message
    return group


def compare_study(side: Side, study: Study, *,
                  metric: str | None = None, where: list[str] | None = None,
                  ignore: list[str] | None = None, pick: list[str] | None = None,
                  table: str | None = None, exact: bool = False) -> StudyResult:
    """The run against every group of the study's rows (or the one `table` names)."""
    link = asrun.of(side.run).report.study(study.name)
    picks = parse_picks(pick)
    parse_where(study, where)           # a bad --where is an error, not an empty table
    if picks:
        picked_records(side.records, picks)     # a value no case of the run has is an error too
    notes = []
    if link:
        links = list(link.tables)
        if link.why:
            notes.append(link.why)
    else:
        # no pairing: one group per (table, metric) of the study
        links = [TableLink(t, where=(f"metric={m}",)) for t, m in study.groups()] or [TableLink()]
    if table is not None:
        known = list(dict.fromkeys(t.table for t in links))
        links = [t for t in links if t.table == table]
        if not links:
            raise IolabError(f"--table {table!r}: {study.name} has no such group",
                             hint=f"tables: {', '.join(repr(k) for k in known)}")
    groups = []
    several = len(links) > 1
    for t in links:
        filters = t.filters() + list(where or [])
        if "table" in study.columns and not t.table:
            filters.insert(0, "table=")
        rows = _where_rows(study, filters)
        metrics = list(dict.fromkeys(r.metric for r in rows))
        label = t.table or study.name
        if several and len([x for x in links if x.table == t.table]) > 1 and len(metrics) == 1:
            label = f"{label} ({metrics[0]})"
        if t.not_compared:
            groups.append(line_up(side, study, t, label))
            continue
        if not rows:
            g = Group(label, t, error="no row of the study is left by the filters (--where)"
                      if where else f"the study file has no rows here ({study.citation.get('missing', '')})")
            groups.append(g)
            continue
        groups.append(line_up(side, study, t, label, metric=metric or t.metric, where=filters,
                              ignore=ignore or [], picks=picks, exact=exact))
    return StudyResult(study, side, link, groups, notes)


def render_study(result: StudyResult) -> str:
    return doc.markdown(study_blocks(result))


def study_blocks(result: StudyResult) -> list[doc.Block]:
    """`iolab compare ID RUN published:STUDY`: the citation, then each group with its table and
    verdict lines, then the study's verdict."""
    out = citation_blocks(result.side, result.study)
    out += [doc.line(f"- {n}") for n in result.notes]
    out.append(doc.line())
    several = len(result.groups) > 1
    for g in result.groups:
        if several:
            out += [doc.heading(g.label, 3), doc.line()]
        if g.comparison is None:
            out += [doc.line(f"- {a}") for a in g.adjustments] + [doc.line(f"not compared: {g.error}"),
                                                                 doc.line()]
            continue
        out += published_blocks(g.comparison, heading=False, adjustments=g.adjustments)
    if several:
        out += [doc.heading("The study", 3), doc.line(), doc.verdict(f"study verdict: {result.verdict()}"),
                doc.line()]
    return out
