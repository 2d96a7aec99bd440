"""Tables from result records: rows are the varied parameters, columns the metrics over repetitions.

Reads only results/<id>/<run-id>/ (never stage directories), so a table can be rebuilt anywhere.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from dataclasses import dataclass, field

from . import schema as schemas

DEFAULT_METRICS = {
    "ior": ["write_bw", "read_bw"],
    "fio": ["write_bw", "read_bw", "write_iops", "read_iops"],
}
_WORDS = {"bw": "Bandwidth", "iops": "IOPS", "ops": "OPs", "clat": "Latency", "io": "I/O"}


def metric_label(name: str) -> str:
    return " ".join(_WORDS.get(w, w.capitalize()) for w in name.split("_"))


DERIVED = {
    # name: (header, display divisor)
    "file_size": ("File Size (GiB)", float(1024**3)),
    "sqrt_rule_osts": ("OSTs by sqrt(GB) Rule", None),
}


def param_label(key: str, benchmark: str) -> tuple[str, float | None]:
    """Header and display divisor: ('Stripe Size (MiB)', 1048576)."""
    if key == "scale.num_tasks":
        return "Number of Processes", None
    if key.startswith("derived."):
        return DERIVED[key.removeprefix("derived.")]
    if key.endswith(EFFECTIVE):
        title, divisor = param_label(key.removesuffix(EFFECTIVE), benchmark)
        return f"{title} (effective)", divisor
    spec = schemas.param_spec(benchmark, key) or {}
    title = spec.get("title", key)
    unit = spec.get("x-unit")
    if unit:
        return f"{title} ({unit})", float({"KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}[unit])
    return title, None


def fmt_value(value, divisor: float | None = None) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if divisor and isinstance(value, (int, float)):
        value = value / divisor
    if isinstance(value, float):
        if value.is_integer():
            return str(int(value))
        return f"{value:.2f}" if abs(value) >= 0.01 else f"{value:.3g}"
    if isinstance(value, list):
        return " ".join(map(str, value)) or "-"
    return str(value)


@dataclass
class Cell:
    values: list[float]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.values) if self.values else None

    @property
    def max(self) -> float | None:
        return max(self.values) if self.values else None

    @property
    def stddev(self) -> float | None:
        return statistics.stdev(self.values) if len(self.values) >= 2 else None


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
    notes: list[str] = field(default_factory=list)
    cells: dict[str, Cell] = field(default_factory=dict)


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


EFFECTIVE = "@effective"


def _display_keys(varied: list[str], derived: list[str]) -> list[str]:
    """Nodes and tasks per node fold into one 'Number of Processes' column, as in the studies;
    each varied MPI-IO hint is followed by the value the MPI library actually used."""
    keys = []
    for k in varied:
        if k.startswith("scale."):
            continue
        keys.append(k)
        if k.startswith("mpiio."):
            keys.append(k + EFFECTIVE)
    if any(k.startswith("scale.") for k in varied):
        keys.insert(0, "scale.num_tasks")
        if "scale.nodes" in varied and "scale.tasks_per_node" in varied:
            keys.insert(1, "scale.nodes")
    return keys + [f"derived.{d}" for d in derived]


def file_size(params: dict) -> int | None:
    """Bytes in one file after one write phase (IOR: a shared file, or one rank's file)."""
    if "block_size" in params:
        per_rank = params["block_size"] * params.get("segments", 1)
        if params.get("file_per_process"):
            return per_rank
        return per_rank * params.get("scale.nodes", 1) * params.get("scale.tasks_per_node", 1)
    return params.get("size")


def _param(params: dict, key: str):
    if key == "scale.num_tasks":
        return params.get("scale.nodes", 1) * params.get("scale.tasks_per_node", 1)
    if key == "derived.file_size":
        return file_size(params)
    if key == "derived.sqrt_rule_osts":
        size = file_size(params)
        return None if size is None else max(1, math.ceil(math.sqrt(size / 1e9)))
    return params.get(key)


def _effective(record: dict, key: str) -> str | None:
    hints = (record.get("observed") or {}).get("mpiio_hints")
    if not hints:
        return None
    if hints.get("effective") is None:
        return "unverified"
    return hints["effective"].get(key.removeprefix("mpiio."), "absent")


def striping_note(record: dict) -> str | None:
    lustre = record.get("observed", {}).get("lustre") or {}
    if lustre.get("requested") and lustre.get("applied") is False:
        return f"striping not applied: {lustre.get('reason', 'unknown reason')}"
    return None


def record_notes(record: dict) -> list[str]:
    """Requested-vs-applied differences: the record's flags (older records: striping only)."""
    if "flags" in record:
        return list(record["flags"])
    note = striping_note(record)
    return [note] if note else []


def report_settings(manifest: dict) -> dict:
    """The `report:` section of the experiment as it was run (from the run's manifest)."""
    import yaml

    try:
        doc = yaml.safe_load(manifest.get("experiment_yaml") or "") or {}
    except yaml.YAMLError:
        return {}
    return doc.get("report", {}) if isinstance(doc, dict) else {}


def build_tables(records: list[dict], metrics: list[str] | None = None,
                 settings: dict | None = None) -> list[Table]:
    """One table per part (benchmark), rows in first-seen case order."""
    settings = settings or {}
    by_part: dict[str, list[dict]] = {}
    for rec in records:
        by_part.setdefault(rec.get("part", "main"), []).append(rec)
    tables = []
    for part, recs in by_part.items():
        bench = recs[0]["benchmark"]
        varied = recs[0].get("varied") or []
        keys = _display_keys(varied, settings.get("derived", []))
        present = {m["name"] for r in recs for m in r.get("metrics", [])}
        wanted = metrics or settings.get("metrics") or DEFAULT_METRICS.get(bench, [])
        chosen = metrics or [m for m in wanted if m in present]
        if not chosen:
            chosen = sorted(present)[:2]
        units: dict[str, str] = {}
        rows: dict[str, Row] = {}
        for rec in recs:
            cid = rec["case_id"]
            row = rows.get(cid)
            if row is None:
                row = rows[cid] = Row(part, bench, cid, rec["params"],
                                      [_param(rec["params"], k) for k in keys],
                                      cells={m: Cell([]) for m in chosen})
            for i, k in enumerate(keys):
                if k.endswith(EFFECTIVE) and rec.get("status") == "ok":
                    seen = _effective(rec, k.removesuffix(EFFECTIVE))
                    current = row.key_values[i]
                    values = [] if current is None else str(current).split("/")
                    if seen is not None and seen not in values:
                        row.key_values[i] = "/".join(values + [seen])
            status = rec.get("status")
            if status == "ok":
                row.ok += 1
                for m in rec.get("metrics", []):
                    if m["name"] in row.cells:
                        row.cells[m["name"]].values.append(m["value"])
                        units[m["name"]] = m["unit"]
            elif status == "skipped":
                row.skipped.append(rec.get("error") or "skipped")
            else:
                row.failed.append(rec.get("error") or "failed")
            for note in record_notes(rec):
                if note not in row.notes:
                    row.notes.append(note)
        tables.append(Table(recs[0]["experiment"], recs[0].get("run_id", ""), part, bench, keys,
                            chosen, units, list(rows.values())))
    return tables


def _status(row: Row) -> str:
    bits = []
    if row.failed:
        bits.append(f"{len(row.failed)} failed")
    if row.skipped:
        bits.append(f"skipped: {row.skipped[0]}")
    return "; ".join(bits)


def _num(value) -> str:
    return "-" if value is None else fmt_value(float(value))


def table_rows(table: Table) -> tuple[list[str], list[list[str]], list[str]]:
    """Header, body and footnotes as text, shared by the Markdown and CSV writers."""
    header = [param_label(k, table.benchmark)[0] for k in table.keys]
    for m in table.metrics:
        unit = table.units.get(m, "")
        label, u = metric_label(m), f" ({unit})" if unit else ""
        header += [f"Mean {label}{u}", f"Max. {label}{u}", f"StdDev{u}"]
    header += ["n", "Notes"]
    notes: list[str] = []
    body = []
    for row in table.rows:
        line = [fmt_value(v, param_label(k, table.benchmark)[1]) for k, v in zip(table.keys, row.key_values)]
        if not table.keys:
            line = []
        for m in table.metrics:
            cell = row.cells[m]
            line += [_num(cell.mean), _num(cell.max), _num(cell.stddev)]
        marks = []
        for note in row.notes:
            if note not in notes:
                notes.append(note)
            marks.append("†" * (notes.index(note) + 1))
        status = _status(row)
        line += [str(row.ok), " ".join(filter(None, [" ".join(marks), status]))]
        body.append(line)
    footnotes = [f"{'†' * (i + 1)} {n}" for i, n in enumerate(notes)]
    return header, body, footnotes


def to_markdown(table: Table) -> str:
    header, body, footnotes = table_rows(table)
    if not table.keys:
        header = ["Case"] + header
        body = [[row.case_id] + line for row, line in zip(table.rows, body)]
    out = [f"### {table.experiment} · {table.part} ({table.benchmark}) · run {table.run_id}", "",
           "| " + " | ".join(header) + " |",
           "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(line) + " |" for line in body]
    if footnotes:
        out += [""] + footnotes
    return "\n".join(out) + "\n"


def to_csv(tables: list[Table]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for i, table in enumerate(tables):
        header, body, footnotes = table_rows(table)
        if i:
            writer.writerow([])
        writer.writerow(["part", "case_id"] + header)
        for row, line in zip(table.rows, body):
            writer.writerow([table.part, row.case_id] + line)
    return buf.getvalue()


def to_json(tables: list[Table]) -> str:
    out = []
    for table in tables:
        for row in table.rows:
            out.append({
                "experiment": table.experiment, "run_id": table.run_id, "part": table.part,
                "benchmark": table.benchmark, "case_id": row.case_id,
                "params": {k: v for k, v in zip(table.keys, row.key_values)},
                "n": row.ok, "failed": row.failed, "skipped": row.skipped, "notes": row.notes,
                "metrics": {m: {"unit": table.units.get(m), "mean": c.mean, "max": c.max,
                                "stddev": c.stddev, "n": c.n, "values": c.values}
                            for m, c in row.cells.items()},
            })
    return json.dumps(out, indent=2, allow_nan=False) + "\n"


def render(tables: list[Table], fmt: str) -> str:
    if fmt == "csv":
        return to_csv(tables)
    if fmt == "json":
        return to_json(tables)
    return "\n".join(to_markdown(t) for t in tables)


def compare_tables(a: list[Table], b: list[Table], label_a: str, label_b: str) -> str:
    """Same rows (matched by case id) side by side, with the ratio B/A of the means."""
    out = []
    b_rows = {(t.part, r.case_id): (t, r) for t in b for r in t.rows}
    for ta in a:
        header = [param_label(k, ta.benchmark)[0] for k in ta.keys] or ["Case"]
        for m in ta.metrics:
            unit = ta.units.get(m, "")
            header += [f"{metric_label(m)} {label_a} ({unit})", f"{metric_label(m)} {label_b} ({unit})",
                       "Ratio"]
        header += ["n A", "n B"]
        out += [f"### {ta.experiment} · {ta.part}: {label_a} vs {label_b}", "",
                "| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        for ra in ta.rows:
            tb, rb = b_rows.get((ta.part, ra.case_id), (None, None))
            keys = [fmt_value(v, param_label(k, ta.benchmark)[1]) for k, v in zip(ta.keys, ra.key_values)]
            line = keys or [ra.case_id]
            for m in ta.metrics:
                ma = ra.cells[m].mean
                mb = rb.cells[m].mean if rb is not None and m in rb.cells else None
                ratio = (mb / ma) if (ma and mb is not None) else None
                line += [_num(ma), _num(mb), "-" if ratio is None or math.isnan(ratio) else f"{ratio:.2f}"]
            line += [str(ra.ok), str(rb.ok) if rb else "0"]
            out.append("| " + " | ".join(line) + " |")
        out.append("")
    return "\n".join(out)
