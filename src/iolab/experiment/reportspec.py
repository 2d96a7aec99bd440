"""An experiment's `report:` section, typed: the metrics and computed columns of its tables, the
plots of its page, and the published study its runs are set against.

Built once at load (load.py) from the schema-checked document; readers of a run get it from the
experiment as run (run.Run.report), never from the YAML.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TableLink:
    """One group of a study's rows and what of the run is set against it."""

    table: str = ""                     # the study's `table` column value ("" = rows without one)
    metric: str | None = None           # the run's metric (default: the study's)
    part: str | None = None             # only this part of the run
    where: tuple[str, ...] = ()         # more row filters (COLUMN=VALUE), e.g. ("metric=write_time",)
    ignore: tuple[str, ...] = ()        # study columns not matched
    not_compared: str = ""              # why these rows cannot be measured (then none is)
    why: str = ""                       # a note on the pairing, shown with the comparison

    def filters(self, study_metric: str | None = None) -> list[str]:
        out = [f"table={self.table}"] if self.table else []
        if study_metric and not any(w.startswith("metric=") for w in self.where):
            out.append(f"metric={study_metric}")
        return out + list(self.where)


@dataclass(frozen=True)
class StudyLink:
    """How an experiment's run is set against results/published/<study>.csv."""

    study: str
    tables: tuple[TableLink, ...] = (TableLink(),)
    why: str = ""


@dataclass(frozen=True)
class PlotRequest:
    """One `report.plots` entry: line (y a metric) or heatmap (y a parameter, metric the cells)."""

    x: str
    y: str
    kind: str = "line"
    series: str | None = None
    metric: str | None = None
    title: str | None = None


@dataclass(frozen=True)
class Report:
    metrics: tuple[str, ...] = ()        # () : the benchmark's table metrics
    derived: tuple[str, ...] = ()        # computed columns (report.DERIVED)
    plots: tuple[PlotRequest, ...] = ()  # () : the default plots (plots.py)
    published: tuple[StudyLink, ...] = ()

    def study(self, name: str | None = None) -> StudyLink | None:
        """The published study the runs are set against (the first, or the one named)."""
        return next((s for s in self.published if name is None or s.study == name), None)


def _table(data: dict) -> TableLink:
    where = data.get("where") or {}
    return TableLink(table=str(data.get("table", "")), metric=data.get("metric"), part=data.get("part"),
                     where=tuple(f"{k}={v}" for k, v in where.items()),
                     ignore=tuple(data.get("ignore", ())), not_compared=data.get("not_compared", ""),
                     why=data.get("why", ""))


def _study(data) -> StudyLink:
    if isinstance(data, str):
        return StudyLink(data)
    tables = tuple(_table(t) for t in data.get("tables", ())) or (TableLink(),)
    return StudyLink(data["study"], tables, data.get("why", ""))


def from_doc(data: dict) -> Report:
    """The typed section from the schema-checked `report:` mapping."""
    return Report(metrics=tuple(data.get("metrics", ())), derived=tuple(data.get("derived", ())),
                  plots=tuple(PlotRequest(**p) for p in data.get("plots", ())),
                  published=tuple(_study(s) for s in data.get("published", ())))
