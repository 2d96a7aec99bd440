"""Published studies as data: results/published/<study>.csv.

A study file starts with `# key: value` comment lines that cite it (title, url, table,
transcription are required; `seed` names the source text in ../shared/seeds/, `stated` quotes the
text's numbers that are not rows, `missing` says what the text does not let one read; system and
others are free to add), then one CSV header line and one row per published number. Columns are
iolab parameter names (scale.num_tasks or scale.nodes/scale.tasks_per_node, lustre.*, mpiio.*,
benchmark parameters), a free-text `note` and the study's own `table` (neither is matched; a
study with several tables or metrics is compared one (table, metric) group at a time), and
`metric`, `value`, `unit`. Sizes are bytes (or "1MiB"); a
list (BTIO's grid) is written with spaces: "2048 1024 256".

Cells: empty = the study does not say (the column does not constrain matching for that row);
"-" = the setting was not set (library or file-system default), which matches only a case that
does not set it either.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
from dataclasses import dataclass, field
from pathlib import Path

from ...experiment import schema as schemas
from ...errors import IolabError
from ...units import format_size, parse_size

PREFIX = "published:"
REQUIRED_CITATION = ("title", "url", "table", "transcription")
VALUE_COLUMNS = ("metric", "value", "unit")
DESCRIPTIVE = ("note", "table")
SCALE_DERIVED = ("scale.num_tasks",)
NOT_SET = "-"


class _NotSet:
    """A setting the study states was left at its default."""

    def __repr__(self) -> str:
        return NOT_SET

    def __eq__(self, other) -> bool:
        return isinstance(other, _NotSet)

    def __hash__(self) -> int:
        return hash(NOT_SET)


DEFAULT = _NotSet()


@dataclass
class PublishedRow:
    line: int
    params: dict            # column -> typed value, DEFAULT, or absent when the cell is empty
    metric: str
    value: float
    unit: str
    descriptive: dict = field(default_factory=dict)

    def label(self) -> str:
        bits = [f"{k}={v}" for k, v in self.params.items()]
        bits += [f"{k}={v}" for k, v in self.descriptive.items()]
        return ", ".join(bits)


@dataclass
class Study:
    name: str
    path: Path
    citation: dict[str, str]
    columns: list[str]
    rows: list[PublishedRow]

    @property
    def param_columns(self) -> list[str]:
        return [c for c in self.columns if c not in VALUE_COLUMNS and c not in DESCRIPTIVE]

    def groups(self) -> list[tuple[str, str]]:
        """(table, metric) pairs in file order: the rows that are compared together."""
        return list(dict.fromkeys((r.descriptive.get("table", ""), r.metric) for r in self.rows))


def published_dir(project_root: Path) -> Path:
    return project_root / "results" / "published"


def list_studies(project_root: Path) -> list[str]:
    base = published_dir(project_root)
    return sorted(p.stem for p in base.glob("*.csv")) if base.is_dir() else []


def study_path(ref: str, project_root: Path) -> Path:
    """`published:archer-fpp-ssf`, `archer-fpp-ssf` or a path to a CSV."""
    ref = ref.removeprefix(PREFIX)
    path = Path(ref)
    if path.suffix == ".csv" or path.exists():
        return path
    return published_dir(project_root) / f"{ref}.csv"


def _all_benchmarks() -> list[str]:
    return schemas.benchmarks()


def known_column(name: str) -> bool:
    if name in VALUE_COLUMNS or name in DESCRIPTIVE or name in SCALE_DERIVED:
        return True
    return any(schemas.param_spec(b, name) is not None for b in _all_benchmarks())


def _known_names() -> list[str]:
    names = set(VALUE_COLUMNS) | set(DESCRIPTIVE) | set(SCALE_DERIVED)
    for b in _all_benchmarks():
        names |= set(schemas.param_specs(b))
    return sorted(names)


def spec_of(name: str) -> dict:
    for b in _all_benchmarks():
        spec = schemas.param_spec(b, name)
        if spec is not None:
            return spec
    return {}


def param_text(name: str, value) -> str:
    """A parameter value as an experiment writes it, the inverse of coerce_param: a size in its
    shortest binary unit (4194304 -> 4MiB), anything else as it is."""
    spec = spec_of(name)
    size = schemas.is_size_param(spec) or spec.get("$ref", "").endswith("/size")
    if size and isinstance(value, int) and not isinstance(value, bool):
        return format_size(value)
    return str(value)


def coerce_param(name: str, text: str):
    """A parameter value as written in a CSV cell or on the command line, typed as iolab types it."""
    text = text.strip()
    if name in SCALE_DERIVED:
        return int(text)
    spec = spec_of(name)
    types = spec.get("type")
    types = types if isinstance(types, list) else [types]
    if schemas.is_size_param(spec) or spec.get("$ref", "").endswith("/size"):
        return parse_size(int(text) if text.isdigit() else text)
    if types == ["array"]:
        item = spec.get("items", {}).get("type")
        parts = text.replace("x", " ").split()
        return [int(v) if item == "integer" else v for v in parts]
    lowered = text.lower()
    if "boolean" in types and lowered in ("true", "false", "yes", "no"):
        return lowered in ("true", "yes")
    if "integer" in types:
        try:
            return int(text)
        except ValueError:
            if types == ["integer"]:
                raise ValueError(f"{text!r} is not an integer") from None
    if "enum" in spec and text not in spec["enum"]:
        raise ValueError(f"{text!r} is not one of {', '.join(map(str, spec['enum']))}")
    return text


def _fail(path: Path, line: int | None, message: str, hint: str | None = None):
    raise IolabError(message, file=str(path), line=line, hint=hint)


def load_study(ref: str, project_root: Path) -> Study:
    path = study_path(ref, project_root)
    try:
        text = path.read_text()
    except FileNotFoundError:
        known = ", ".join(list_studies(project_root)) or "none"
        raise IolabError(f"no published study {path.stem!r} ({path})", hint=f"known: {known}") from None
    return parse_study(text, path)


def parse_study(text: str, path: Path) -> Study:
    lines = text.splitlines()
    citation: dict[str, str] = {}
    n = 0
    while n < len(lines) and (lines[n].startswith("#") or not lines[n].strip()):
        body = lines[n].lstrip("#").strip()
        if body:
            key, sep, value = body.partition(":")
            if not sep or not key.strip() or " " in key.strip():
                _fail(path, n + 1, f"citation line is not '# key: value': {lines[n]!r}")
            citation[key.strip().lower()] = value.strip()
        n += 1
    missing = [k for k in REQUIRED_CITATION if not citation.get(k)]
    if missing:
        _fail(path, 1, f"citation header lacks {', '.join(missing)}",
              hint="start the file with '# title: ...', '# url: ...', '# table: ...', "
                   "'# transcription: ...' lines")
    if n >= len(lines):
        _fail(path, n, "no CSV header line after the citation")
    header_line = n + 1
    reader = csv.reader(io.StringIO("\n".join(lines[n:])))
    columns = [c.strip() for c in next(reader)]
    for c in columns:
        if not known_column(c):
            close = difflib.get_close_matches(c, _known_names(), n=1)
            _fail(path, header_line, f"unknown column {c!r}",
                  hint=f"did you mean {close[0]!r}?" if close else "columns are iolab parameter names, "
                  "note, metric, value, unit")
    if len(set(columns)) != len(columns):
        _fail(path, header_line, "a column appears twice")
    for c in VALUE_COLUMNS:
        if c not in columns:
            _fail(path, header_line, f"no {c!r} column")
    rows = []
    for offset, cells in enumerate(reader, start=1):
        line = header_line + offset
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(columns):
            _fail(path, line, f"{len(cells)} cells for {len(columns)} columns")
        row = dict(zip(columns, (c.strip() for c in cells)))
        rows.append(_row(path, line, row))
    return Study(path.stem, path, citation, columns, rows)


def _row(path: Path, line: int, row: dict) -> PublishedRow:
    try:
        value = float(row["value"])
    except ValueError:
        _fail(path, line, f"value {row['value']!r} is not a number")
    if not math.isfinite(value):
        _fail(path, line, f"value {row['value']!r} is not finite")
    if not row["metric"] or not row["unit"]:
        _fail(path, line, "metric and unit must not be empty")
    params, descriptive = {}, {}
    for key, cell in row.items():
        if key in VALUE_COLUMNS or cell == "":
            continue
        if key in DESCRIPTIVE:
            descriptive[key] = cell
            continue
        if cell == NOT_SET:
            params[key] = DEFAULT
            continue
        try:
            params[key] = coerce_param(key, cell)
        except ValueError as exc:
            _fail(path, line, f"{key}: {exc}")
    return PublishedRow(line, params, row["metric"], value, row["unit"], descriptive)
