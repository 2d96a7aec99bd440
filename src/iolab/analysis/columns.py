"""A run's tables with the columns a reader asks for by source (`--darshan`, `--storage`,
`--mpiio`, `--job`): a layer's number columns become metrics of their own (mean, interval, n),
text columns sit beside the parameters, one cell per row from its repetitions' records."""

from __future__ import annotations

import dataclasses
import functools

from ..layers import registry as layers
from ..parsers import Metric
from ..results import asrun
from ..results.record import Record
from ..results.run import kept_at
from .report import Table, build_tables, default_metrics, tables_from

def with_layer_columns(records: list[Record], layer, columns: list[str]) -> list[Record]:
    """Records with the asked columns of a layer (Darshan's summary values) added as metrics
    `<layer>.<column>`, so tables treat them like any measured value (mean, interval, n).
    Missing stays missing."""
    out = []
    for rec in records:
        extra = [Metric(f"{layer.name}.{name}", value, unit, layer.name)
                 for name, value, unit in layer.column_values(rec.observed, columns)]
        out.append(dataclasses.replace(rec, metrics=rec.metrics + extra) if extra else rec)
    return out


def layer_metric_names(records: list[Record], layer, columns: list[str]) -> list[str]:
    """The metrics with_layer_columns added for the asked columns, in their order; a column of
    several (`bytes_per_osd`: one per OSD) as each of its parts, in natural order."""
    added = {m.name for rec in records for m in rec.metrics if m.source == layer.name}
    out = []
    for column in columns:
        name = f"{layer.name}.{column}"
        parts = sorted((n for n in added if n.startswith(name + ".")),
                       key=lambda n: [int(w) if w.isdigit() else w for w in n.split(".")])
        out += parts or [name]
    return out


def across_reps(shown: list[tuple[str | None, str | None]], label: str) -> tuple[str, list[str]]:
    """A text column's cell from each repetition's (text, why): the text where every repetition
    says the same, else each with its share, in first-seen order ("node[1-2] (2 of 3 reps),
    node[3-4] (1 of 3 reps)"). A repetition whose record cannot say is "missing", and a note
    says why; nothing stands in for it. No repetition: "-"."""
    if not shown:
        return "-", []
    texts = ["missing" if text is None else text for text, _ in shown]
    counts = dict.fromkeys(texts, 0)
    for text in texts:
        counts[text] += 1
    n = len(texts)
    cell = texts[0] if len(counts) == 1 else ", ".join(f"{t} ({k} of {n} reps)" for t, k in counts.items())
    return cell, list(dict.fromkeys(f"{label} missing: {why}" for text, why in shown if text is None))


def with_text_columns(tables: list[Table], records: list[Record], source, columns: list[str]) -> None:
    """Add a source's text columns (`--job nodes`, `--mpiio cb_nodes`) to each table: per row,
    what the records of the repetitions its figures are made of (ok, drift references left out)
    say, each once (across_reps)."""
    by_case: dict[tuple, list[Record]] = {}
    for rec in records:
        if rec.ok and not rec.drift_reference:
            by_case.setdefault((rec.part, rec.case_id), []).append(rec)
    labels = [source.column_label(c) for c in columns]
    for table in tables:
        table.texts = table.texts + [(f"{source.name}.{c}", label) for c, label in zip(columns, labels)]
        table.kept = None           # its text is not the cached digest's
        for row in table.rows:
            recs = by_case.get((row.part, row.case_id), [])
            row.notes = list(row.notes)         # the digest's list stays as it is
            row.texts = list(row.texts)
            for column, label in zip(columns, labels):
                cell, notes = across_reps([source.column_text(r, column) for r in recs], label)
                row.texts.append(cell)
                row.notes += [n for n in notes if n not in row.notes]


@functools.cache
def column_sources() -> tuple:
    """Whatever a table can add columns of by name, one `--<name>` option each (`iolab table`,
    `iolab publish`, their help and the CLI reference): the layers that have columns, then the
    job's (its nodes, results/placement.py)."""
    from ..results.placement import JOB

    return tuple(layer for layer in layers.registry() if layer.column_help()) + (JOB,)


def run_tables(state, metrics: list[str] | None = None, columns: dict[str, str] | None = None) -> list[Table]:
    """A run's tables (`iolab table`, `iolab publish`), with the columns asked by source
    (column_sources: {"darshan": "small_write_pct", "job": "nodes"}): a number
    column as a metric of its own (mean, interval, n), a text column beside the parameters."""
    asked = {name: text for name, text in (columns or {}).items() if text}
    made = asrun.of(state)
    if not asked:
        return tables_from(state.digest, metrics, made.report, kept_at(state), made.matrix_order)
    sources = {s.name: s for s in column_sources()}
    parsed = {name: sources[name].parse_columns(text) for name, text in asked.items()}
    numbers = {name: cols for name, cols in parsed.items() if not sources[name].text}
    if numbers:
        records = state.records
        if metrics is None:
            metrics = list(made.report.metrics or default_metrics(records[0].benchmark))
            present = {m.name for r in records for m in r.metrics}
            metrics = [m for m in metrics if m in present]
        for name, cols in numbers.items():
            records = with_layer_columns(records, sources[name], cols)
            metrics = metrics + layer_metric_names(records, sources[name], cols)
        tables = build_tables(records, metrics, made.report, made.matrix_order)
    else:
        tables = tables_from(state.digest, metrics, made.report, None, made.matrix_order)
    for name, cols in parsed.items():
        if sources[name].text:
            with_text_columns(tables, state.records, sources[name], cols)
    return tables
