"""Tables from result records: rows are the varied parameters, columns the metrics over repetitions.

Reads only results/<id>/<run-id>/ (never stage directories), so a table can be rebuilt anywhere.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import math
import re
from dataclasses import dataclass, field

from ..layers import registry as layers
from ..results import cache, digest
from ..results.digest import shows_effective
from ..experiment import reportspec
from ..experiment.matrix import row_order
from .. import stats
from ..experiment import schema as schemas
from ..results.record import NUM_TASKS, Record, param_value
from ..units import CELL, UNIT_BYTES, shown
from ..results.record import NOT_RUN_STRICT


def default_metrics(benchmark: str) -> list[str]:
    """The metrics a table shows unless told otherwise (the benchmark's descriptor says)."""
    from .. import benchmarks

    return list(benchmarks.get(benchmark).table_metrics)

_WORDS = {"bw": "Bandwidth", "iops": "IOPS", "ops": "OPs", "clat": "Latency", "io": "I/O"}


def metric_label(name: str) -> str:
    head, _, rest = name.partition(".")
    layer = layers.find(head) if rest else None
    if layer is not None and layer.title:    # a layer's column: "Darshan small_write_pct"
        return layer.column_label(rest)
    return " ".join(_WORDS.get(w, w.capitalize()) for w in name.split("_"))


# Columns computed from a case's parameters (`report: {derived: [...]}`): the file size here,
# the rest from the layers (a file system's rule of thumb), each with the file systems it speaks
# of (layers.base.DerivedColumn).
FILE_SIZE = "file_size"


def derived_column(name: str) -> layers.DerivedColumn:
    if name == FILE_SIZE:
        return layers.DerivedColumn("File Size (GiB)", lambda size: size,
                                    float(UNIT_BYTES["GiB"]))
    return layers.derived_columns()[name]


def _derived_for(names, facts_of_part) -> list[str]:
    """The derived columns a part shows: one that speaks of some file systems' layouts is left
    out of a part whose cases ask another's (KAUST's OST rule says nothing of CephFS objects)."""
    limited = {d: derived_column(d).file_systems for d in names}
    if not any(limited.values()):
        return list(names)
    asked = {fs for case in facts_of_part.cases.values() for k in case.params
             if (fs := layers.file_system_of(k))}
    return [d for d in names if not limited[d] or asked <= set(limited[d])]


def param_label(key: str, benchmark: str) -> tuple[str, float | None]:
    """Header and display divisor: ('Stripe Size (MiB)', 1048576)."""
    if key == NUM_TASKS:
        return "Number of Processes", None
    if key.startswith("derived."):
        column = derived_column(key.removeprefix("derived."))
        return column.header, column.divisor
    if key.endswith(EFFECTIVE):
        title, divisor = param_label(key.removesuffix(EFFECTIVE), benchmark)
        return f"{title} (effective)", divisor
    return spec_label(key, schemas.param_spec(benchmark, key) or {})


def spec_label(key: str, spec: dict) -> tuple[str, float | None]:
    """Header and display divisor of a parameter from its schema: title, and the x-unit sizes are
    shown in."""
    if key == NUM_TASKS:
        return "Number of Processes", None
    title = spec.get("title", key)
    unit = spec.get("x-unit")
    if unit:       # sizes are shown in their unit; any other unit (s, ops) as they are
        return f"{title} ({unit})", float(UNIT_BYTES[unit]) if unit in UNIT_BYTES else None
    return title, None


@dataclass
class Cell:
    values: list[float]
    reps: list = field(default_factory=list)    # the repetition of each value, when known
    packed: bytes | None = field(default=None, repr=False, compare=False)   # its summary, kept

    @property
    def n(self) -> int:
        return len(self.values)

    @functools.cached_property
    def summary(self) -> stats.Summary:
        """Computed once, when the table is read (the values are complete by then)."""
        if self.packed is not None:
            return stats.unpack(self.values, self.packed)
        return stats.summarize(self.values)

    @property
    def max(self) -> float | None:
        return self.summary.max         # of the values the statistics take (stats.LIMIT)

    def rep(self, index: int):
        rep = self.reps[index] if index < len(self.reps) else None
        return index + 1 if rep is None else rep

    def kept_rep(self, index: int):
        """The repetition of the summary's `index`th value (values set aside are not counted)."""
        if self.summary.set_aside:
            index = [i for i, v in enumerate(self.values) if stats.usable(float(v))][index]
        return self.rep(index)


@dataclass
class Row:
    part: str
    benchmark: str
    case_id: str
    params: dict
    key_values: list
    ok: int = 0
    failed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    cells: dict[str, Cell] = field(default_factory=dict)
    # metric -> the benchmark's own maximum of it per repetition (IOR's bwMaxMIB for write_bw)
    own_max: dict[str, Cell] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)     # the table's text columns, in its order


@dataclass
class Table:
    experiment: str
    run_id: str
    part: str
    benchmark: str
    keys: list[str]
    metrics: list[str]
    units: dict[str, str]
    rows: list[Row]
    # where its text may be kept (run.kept_at: the run's records and its digest's cache key);
    # None: rows not from a run's cached digest (pooled runs, layer columns, records in memory)
    kept: tuple | None = field(default=None, repr=False, compare=False)
    # text columns asked for (with_text_columns): (source.column, header), after the parameters
    texts: list[tuple[str, str]] = field(default_factory=list)


EFFECTIVE = "@effective"


def _display_keys(varied: list[str], derived: list[str]) -> list[str]:
    """Nodes and tasks per node fold into one 'Number of Processes' column, as in the studies;
    each varied parameter whose layer reports it (an MPI-IO hint) is followed by the value the
    system actually used."""
    keys = []
    for k in varied:
        if k.startswith("scale."):
            continue
        keys.append(k)
        if shows_effective(k):
            keys.append(k + EFFECTIVE)
    if any(k.startswith("scale.") for k in varied):
        keys.insert(0, NUM_TASKS)
        if "scale.nodes" in varied and "scale.tasks_per_node" in varied:
            keys.insert(1, "scale.nodes")
    return keys + [f"derived.{d}" for d in derived]


def file_size(params: dict, benchmark: str | None) -> int | None:
    """Bytes in one file after one write phase (the benchmark's descriptor says how)."""
    from .. import benchmarks

    return benchmarks.get(benchmark).file_size(params) if benchmark else None


def _param(params: dict, key: str, benchmark: str | None = None):
    if key.startswith("derived."):
        size = file_size(params, benchmark)
        return None if size is None else derived_column(key.removeprefix("derived.")).value(size)
    return param_value(params, key)


def build_tables(records: list[Record], metrics: list[str] | None = None,
                 settings: reportspec.Report | None = None, order: dict | None = None) -> list[Table]:
    """One table per part (benchmark), rows in the experiment's matrix order (`order`:
    asrun.of(run).matrix_order; see tables_from)."""
    return tables_from(digest.fold(records), metrics, settings, order=order)


def tables_from(facts: digest.Digest, metrics: list[str] | None = None,
                settings: reportspec.Report | None = None, kept: tuple | None = None,
                order: dict | None = None) -> list[Table]:
    """build_tables from a run's records already folded by case (Run.digest). `kept`: the run's
    run.kept_at(run), when `facts` is its digest: the tables' text is then kept in the cache.
    Tables and rows follow `order` (matrix.matrix_order of the experiment as run: its parts, and
    the order its YAML lists the values), never the order the records were written in, which a
    shuffled run changes; values it does not list come after, numbers in numeric order
    (matrix.row_order); {} (an
    experiment that no longer loads) sorts by the values alone. None keeps the records' order
    (records in memory, in an order their caller chose)."""
    settings = settings or reportspec.Report()
    tables = []
    places = {part: i for i, part in enumerate(order or {})}     # the experiment's parts, in order
    parts = list(facts.parts.items())
    if order is not None:
        parts.sort(key=lambda p: places.get(p[0], len(places)))
    for part, pf in parts:
        bench = pf.benchmark
        keys = _display_keys(pf.varied, _derived_for(settings.derived, pf))
        wanted = metrics or list(settings.metrics) or default_metrics(bench)
        chosen = metrics or [m for m in wanted if m in pf.present]
        if not chosen:
            chosen = sorted(pf.present)[:2]
        units = {m: pf.units[m] for m in chosen if m in pf.units}
        rows = []
        effective = [(i, k.removesuffix(EFFECTIVE)) for i, k in enumerate(keys) if k.endswith(EFFECTIVE)]
        # the rows share the digest's lists (nothing changes a table once built)
        for case in pf.cases.values():
            key_values = [_param(case.params, k, bench) for k in keys]
            for i, key in effective:
                seen = case.effective.get(key)
                if not seen:
                    continue
                current = key_values[i]
                values = [] if current is None else list(current) if isinstance(current, tuple) \
                    else [current]
                values += [v for v in seen if v not in values]
                # one value keeps its type (and unit); several are a tuple, shown a/b
                key_values[i] = values[0] if len(values) == 1 else tuple(values)
            cv, cr = case.values, case.reps
            packed = case.summaries or {}
            cells = {m: Cell(cv.get(m, ()), cr.get(m, ()), packed.get(m)) for m in chosen}
            rows.append(Row(part, bench, case.case_id, case.params, key_values, case.ok,
                            case.failed, case.skipped, case.aborted, case.notes, cells,
                            {m: Cell(case.own_max[m]) for m in chosen if m in case.own_max}
                            if case.own_max else {}))
        if order is not None:
            by = row_order(order.get(part), list(pf.varied))
            rows.sort(key=lambda row: by(row.params))
        tables.append(Table(pf.experiment, pf.run_id, part, bench, keys, chosen, units, rows, kept))
    return tables


_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
MARKS_REPEATED = 3      # †, ††, †††; from the fourth note on, numbered marks (†4)


def short_reason(error) -> str:
    """A record's error for a footnote or a CSV cell: its first line, whole (never cut: the third
    way to provide a benchmark is at the end of the line); the lines after it (a benchmark's
    stderr) stay in the record."""
    lines = str(error or "").strip().splitlines()
    first = " ".join(lines[0].split()) if lines else ""
    return first or "no reason recorded"


def reason_mark(index: int) -> str:
    return str(index + 1).translate(_SUPERSCRIPT)


def note_mark(index: int) -> str:
    """The mark of a table's index-th note: †, †† and †††, then †4, †5... (never †††† ††)."""
    return "†" * (index + 1) if index < MARKS_REPEATED else f"†{index + 1}"


def _status(row: Row, reasons: list[tuple[str, str]] | None = None) -> str:
    """'1 failed', '2 skipped'... With `reasons` (Markdown) each count is followed by the marks of
    its footnoted reasons (added to `reasons`); without (CSV), by the reasons in words."""
    bits = []
    for status, errors in (("failed", row.failed), ("skipped", row.skipped), ("aborted", row.aborted)):
        if not errors:
            continue
        why = list(dict.fromkeys(short_reason(e) for e in errors))
        if reasons is None:
            bits.append(f"{len(errors)} {status}: {' / '.join(why)}")
            continue
        marks = []
        for text in why:
            if (status, text) not in reasons:
                reasons.append((status, text))
            marks.append(reason_mark(reasons.index((status, text))))
        bits.append(f"{len(errors)} {status}{','.join(marks)}")
    return "; ".join(bits)


def fmt_measure(value) -> str:
    """A measured value: two decimals, or three significant digits below 1 (times in seconds)."""
    if value is None:
        return "-"
    value = float(value)
    if value != 0 and abs(value) < 1:
        return f"{value:.3g}"
    # a float cell (units.shown), inlined: a table of 10,000 rows formats 60,000 of them
    if value.is_integer():
        return str(int(value))
    return f"{value:.2f}" if abs(value) >= 0.01 else f"{value:.3g}"


NOISY_MARK = "§"
OUTLIER_MARK = "‡"
N_TOO_SMALL = "n too small"
LEGEND = (f"Mean ± half-width of the 95% confidence interval (Student t, n-1 degrees of freedom); "
          f"{N_TOO_SMALL} below 2 repetitions. CV = standard deviation / mean. "
          f"{NOISY_MARK} noisy: CV above {stats.NOISY_CV:.0%}. "
          f"{OUTLIER_MARK} outlier: |modified z-score| above {stats.OUTLIER_Z} "
          f"(0.6745 (x - median) / MAD), flagged from {stats.OUTLIER_MIN_N} repetitions on "
          f"(fewer are never flagged), kept in the mean; see Notes.")


def fmt_mean_ci(s: stats.Summary, marks: bool = True) -> str:
    if s.n == 0:
        return "-"
    spread = f" ({N_TOO_SMALL})" if s.n_too_small else f" ± {fmt_measure(s.ci_half_width)}"
    text = fmt_measure(s.mean) + spread
    if marks:
        text += " " * bool(s.noisy or s.outliers) + NOISY_MARK * s.noisy + OUTLIER_MARK * bool(s.outliers)
    return text


def _cv(s: stats.Summary) -> str:
    return "-" if s.cv is None else f"{100 * s.cv:.1f}"


def _outlier_notes(row: Row, metrics: list[str]) -> list[str]:
    out = []
    for m in metrics:
        cell = row.cells[m]
        for o in cell.summary.outliers:
            out.append(f"{OUTLIER_MARK} {m} rep {cell.kept_rep(o.index)} = {fmt_measure(o.value)} "
                       f"(z {o.modified_z:.1f})")
    return out


def set_aside_notes(row: Row, metrics: list[str]) -> list[str]:
    """'write_bw: 1 value set aside (1e+308: above 1e+150)' for each cell with such values."""
    return [f"{m}: {stats.set_aside_text(s.set_aside)}" for m in metrics
            if (s := row.cells[m].summary).set_aside]


def _fmt_key(value, divisor, seen: dict) -> str:
    """units.shown of a case's parameter, formatted once per column and value (a matrix repeats
    its values over thousands of rows); typed keys, so True and 1 stay apart."""
    try:
        return seen[type(value), value]
    except KeyError:
        text = seen[type(value), value] = shown(value, CELL, divisor=divisor)
        return text
    except TypeError:       # a list: not hashable
        return shown(value, CELL, divisor=divisor)


def table_rows(table: Table, style: str = "md") -> tuple[list[str], list[list[str]], list[str]]:
    """Header, body and footnotes as text, shared by the Markdown and CSV writers.

    Markdown puts mean ± half-width and the marks in one cell; CSV keeps numbers in their own
    columns and says in words, in Notes, which cells are noisy.

    A table of a run's cached digest is written out once: its text is a function of the digest
    (the run's cache key: its records' and manifest's bytes), the columns and iolab's code, and
    is kept in the cache under all of them (10,000 rows are a quarter of a warm table's time).
    """
    if table.kept is None:
        return _table_rows(table, style)
    kind = f"rows-{style}-" + hashlib.sha256(table.part.encode()).hexdigest()[:8]
    got = cache.of_run(table.kept, kind, [style, table.part, table.keys, table.metrics],
                       lambda: _kept(table, style), tuple)
    if _fits(got, table, style):
        return got[1:]
    return _table_rows(table, style)       # a damaged entry: a miss


def _kept(table: Table, style: str) -> tuple:
    """What is kept of a table's text: its rows' case ids, then header, body and footnotes."""
    return ([row.case_id for row in table.rows], *_table_rows(table, style))


def _fits(got: tuple, table: Table, style: str) -> bool:
    """Whether a kept value is this table's text: its case ids, its header (cheap to make), a
    string in each of the header's columns of each row."""
    if len(got) != 4 or not all(type(x) is list for x in got):
        return False
    case_ids, header, body, footnotes = got
    width = len(header)
    return (case_ids == [row.case_id for row in table.rows] and header == _header(table, style)[0]
            and all(type(c) is str for c in footnotes)
            and all(type(line) is list and len(line) == width and all(type(c) is str for c in line)
                    for line in body))


def _header(table: Table, style: str) -> tuple[list[str], dict[str, bool]]:
    """The table's header, and for each metric whether the benchmark reports its own maximum."""
    header = [param_label(k, table.benchmark)[0] for k in table.keys] + [h for _, h in table.texts]
    # "Max." is the benchmark's own maximum where it reports one (IOR's bwMaxMIB, over its
    # iterations, as the studies quote it); otherwise the best repetition, and said so.
    own = {m: any(m in row.own_max for row in table.rows) for m in table.metrics}
    for m in table.metrics:
        unit = table.units.get(m, "")
        label, u = metric_label(m), f" ({unit})" if unit else ""
        best = (f"{table.benchmark.upper()}'s Max. {label}{u}" if own[m] else f"Best Rep. {label}{u}")
        if style == "md":
            header += [f"Mean {label} ± 95% CI{u}", best, "CV (%)"]
        else:
            header += [f"Mean {label}{u}", f"95% CI ± {label}{u}", best, f"CV {label} (%)"]
    header += ["n", "Notes"]
    return header, own


def _table_rows(table: Table, style: str) -> tuple[list[str], list[list[str]], list[str]]:
    header, own = _header(table, style)
    notes: list[str] = []
    reasons: list[tuple[str, str]] = []        # (status, reason) of failed/skipped/aborted jobs
    body = []
    divisors = [param_label(k, table.benchmark)[1] for k in table.keys]
    shown: list[dict] = [{} for _ in divisors]     # per column: (type, value) -> its text
    for row in table.rows:
        line = [] if not table.keys else [_fmt_key(v, d, seen)
                                          for d, v, seen in zip(divisors, row.key_values, shown)]
        line += row.texts
        noisy = []
        for m in table.metrics:
            s = row.cells[m].summary
            top = row.own_max[m].max if own[m] and m in row.own_max else (None if own[m] else s.max)
            if style == "md":
                line += [fmt_mean_ci(s), fmt_measure(top), _cv(s)]
            else:
                half = N_TOO_SMALL if s.n == 1 else fmt_measure(s.ci_half_width)
                line += [fmt_measure(s.mean), half, fmt_measure(top), _cv(s)]
            if s.noisy:
                noisy.append(m)
        marks = []
        for note in row.notes:
            if note not in notes:
                notes.append(note)
            marks.append(note_mark(notes.index(note)))
        words = [" ".join(marks), _status(row, reasons if style == "md" else None)]
        if style != "md" and noisy:
            words.append("noisy: " + ", ".join(noisy))
        words += _outlier_notes(row, table.metrics) + set_aside_notes(row, table.metrics)
        line += [str(row.ok), "; ".join(filter(None, words))]
        body.append(line)
    footnotes = [f"{note_mark(i)} {n}" for i, n in enumerate(notes)]
    footnotes += [f"{reason_mark(i)} {status}: {text}" for i, (status, text) in enumerate(reasons)]
    return header, body, footnotes


def run_notes_markdown(notes: list[str]) -> str:
    """Notes about the run as a whole (imported, incomplete, unreadable lines), above its tables."""
    return "".join(f"**Note:** {n}\n\n" for n in notes)


def to_markdown(table: Table) -> str:
    header, body, footnotes = table_rows(table, "md")
    if not table.keys:
        header = ["Case"] + header
        body = [[row.case_id] + line for row, line in zip(table.rows, body)]
    out = [f"### {table.experiment} · {table.part} ({table.benchmark}) · run {table.run_id}", "",
           "| " + " | ".join(header) + " |",
           "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(line) + " |" for line in body]
    out += ["", LEGEND]
    if footnotes:
        out += [""] + footnotes
    return "\n".join(out) + "\n"


def to_csv(tables: list[Table]) -> str:
    """One CSV with one header, as CSV readers expect: the parts' columns in first-seen order
    (a part's rows leave the others' columns empty)."""
    parts = [(table, *table_rows(table, "csv")[:2]) for table in tables]
    columns = list(dict.fromkeys(["part", "case_id"] + [c for _, header, _ in parts for c in header]))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for table, header, body in parts:
        for row, line in zip(table.rows, body):
            cells = dict(zip(["part", "case_id"] + header, [table.part, row.case_id] + line))
            writer.writerow([cells.get(c, "") for c in columns])
    return buf.getvalue()


def summary_json(cell: Cell, unit: str | None) -> dict:
    s = cell.summary
    return {"unit": unit, "n": s.n, "mean": s.mean, "median": s.median, "min": s.min, "max": s.max,
            "stddev": s.stddev, "cv": s.cv, "ci95_half_width": s.ci_half_width,
            "ci95": list(s.ci) if s.ci else None, "noisy": s.noisy,
            "outliers": [{"repetition": cell.kept_rep(o.index), "value": o.value,
                          "modified_z": o.modified_z} for o in s.outliers],
            "values": list(s.values),
            **({"set_aside": [x if math.isfinite(x) else str(x) for x in s.set_aside],
                "set_aside_reason": stats.set_aside_text(s.set_aside)} if s.set_aside else {})}


def to_json(tables: list[Table], run: dict | None = None) -> str:
    out = []
    for table in tables:
        for row in table.rows:
            out.append({
                "experiment": table.experiment, "run_id": table.run_id, "part": table.part,
                "benchmark": table.benchmark, "case_id": row.case_id,
                "params": {k: v for k, v in zip(table.keys, row.key_values)},
                **({"columns": {name: text for (name, _), text in zip(table.texts, row.texts)}}
                   if table.texts else {}),
                "n": row.ok, "failed": row.failed, "skipped": row.skipped, "aborted": row.aborted,
                "notes": row.notes,
                "metrics": {m: summary_json(c, table.units.get(m)) for m, c in row.cells.items()},
                "rules": {"confidence": stats.CONFIDENCE, "noisy_cv": stats.NOISY_CV,
                          "outlier_modified_z": stats.OUTLIER_Z,
                          "outlier_min_n": stats.OUTLIER_MIN_N},
                **({"run": run} if run is not None else {}),
            })
    return json.dumps(out, indent=2, allow_nan=False) + "\n"


def render(tables: list[Table], fmt: str, state=None, extra_notes: list[str] = ()) -> str:
    """Markdown, CSV or JSON. With the run (run.Run): Markdown starts with its
    notes (and `extra_notes`, e.g. its drift) and every JSON row gets a `run` field with them;
    CSV stays plain (callers print the notes)."""
    from ..results import notes as run_notes

    if fmt == "csv":
        return to_csv(tables)
    if fmt == "json":
        run = run_notes.as_json(state) if state is not None else None
        if run is not None and extra_notes:
            run = {**run, "notes": run["notes"] + list(extra_notes)}
        return to_json(tables, run)
    notes = run_notes_markdown(run_notes.of(state) + list(extra_notes)) if state is not None else ""
    return notes + "\n".join(to_markdown(t) for t in tables)


_ABSENT = re.compile(r"benchmark binary '([^']+)' not found")
PROVIDE_DOC = "docs/benchmarks.md"


def run_summary(state) -> str:
    """One line on how a run went: how many of its jobs ran, how many were skipped (or, in a
    strict run, failed without running), for which absent benchmarks (and where to read how to
    provide them) or for which other reasons."""
    from ..results import state as run_state

    records = state.records
    skipped = [r for r in records if r.status == "skipped"]
    refused = [r for r in records if r.status == "failed" and str(r.error or "").startswith(NOT_RUN_STRICT)]
    refused_ids = {id(r) for r in refused}
    ran = [r for r in records if r.status not in ("skipped", "aborted") and id(r) not in refused_ids]
    ok = sum(r.status == "ok" for r in ran)
    # of the jobs the run planned (a killed run has records of some only), else of its records
    planned = state.reading.planned if isinstance(state.reading.planned, int) else len(records)
    text = f"{state.experiment_id} run {state.run_id}: {len(ran)} of {max(planned, len(records))} jobs ran"
    if len(ran) != ok:
        text += f" ({ok} ok, {len(ran) - ok} not)"
    if planned > len(records):
        text += f", {planned - len(records)} never ran ({run_state.of(state).describe()})"
    aborted = sum(r.status == "aborted" for r in records)
    if aborted:
        text += f", {aborted} aborted"
    if refused:
        text += f", {len(refused)} failed without running (strict): " + _why_not_run(
            refused, NOT_RUN_STRICT)
    if not skipped:
        return text + ("" if refused else ", none skipped")
    return text + f", {len(skipped)} skipped: " + _why_not_run(skipped)


def _why_not_run(records, prefix: str = "") -> str:
    """The reasons a set of jobs did not run, once each: absent benchmarks first."""
    errors = [str(r.error or "no reason recorded").removeprefix(prefix) for r in records]
    absent = sorted({m[1] for e in errors if (m := _ABSENT.search(e))})
    others = list(dict.fromkeys(" ".join(e.split()) for e in errors if not _ABSENT.search(e)))
    why = []
    if absent:
        why.append(f"{', '.join(absent)} not installed here (to provide "
                   f"{'it' if len(absent) == 1 else 'them'}: {PROVIDE_DOC})")
    return "; ".join(why + others)
