"""The reference pages, generated from the code when the docs are built (a Sphinx extension).

Seven pages, each read from the one place iolab itself reads: the experiment YAML from the JSON
schema (iolab.experiment.schema.experiment_schema(), with the layers' and benchmarks' fragments
merged in), every verb of `iolab` from its argument parser (iolab.cli.build_parser), each
benchmark's parameters and metrics from its descriptor (iolab.benchmarks.registry()), the
evidence a run's digest keeps per case as the layers and benchmarks declare it
(iolab.results.evidence.specs()), the rules of thumb the layers declare
(iolab.layers.registry.rules()), the system config's extras['iolab'] keys from their schema
(iolab.experiment.site), and the figures the bench scripts recorded (docs/perf/*.json) on the
Performance page. A key or a verb
added to the code is on its page at the next build; tests/unit/test_docs.py checks that none is
missing.

`python docs/_ext/iolab_reference.py OUTDIR` writes the pages without Sphinx.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

GENERATED = "reference"            # the folder of docs/ the pages are written to (not committed)


def _cell(text) -> str:
    """One Markdown table cell: no newline, no bare pipe."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(text) -> str:
    text = str(text)
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _code_cell(text) -> str:
    """Code in a table cell: a pipe inside backticks splits the row too (`YAML|ID`), unless escaped."""
    return _code(text).replace("|", "\\|")


def _kind(spec: dict) -> str:
    """What a schema node takes, in words: its type, enum, format or pattern of sizes."""
    if "const" in spec:
        return _code(json.dumps(spec["const"]))
    if "enum" in spec:
        return " \\| ".join(_code(json.dumps(v)) for v in spec["enum"])
    ref = spec.get("$ref", "")
    if ref:
        return ref.rsplit("/", 1)[-1]
    if "anyOf" in spec or "oneOf" in spec:
        return " or ".join(_kind(s) for s in spec.get("anyOf", spec.get("oneOf")))
    kind = spec.get("type", "")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    if kind == "array" and isinstance(spec.get("items"), dict):
        kind = f"list of {_kind(spec['items']) or 'values'}"
    if spec.get("format"):
        kind = f"{kind} ({spec['format']})".strip()
    return kind


def _default(spec: dict) -> str:
    return _code(json.dumps(spec["default"])) if "default" in spec else ""


def _meaning(spec: dict) -> str:
    parts = [spec.get("title", ""), spec.get("description", "")]
    for branch in spec.get("oneOf", []) + spec.get("anyOf", []):
        parts.append(branch.get("x-allowed", ""))
    if spec.get("x-unit"):
        parts.append(f"shown in {spec['x-unit']}")
    for bound in ("minimum", "maximum"):
        if bound in spec:
            parts.append(f"{bound} {spec[bound]}")
    return _cell("; ".join(p for p in parts if p))


def _table(rows: list[tuple[str, dict]], head: str = "key") -> list[str]:
    out = [f"| {head} | takes | default | meaning |", "|---|---|---|---|"]
    out += [f"| {_code(key)} | {_kind(spec)} | {_default(spec)} | {_meaning(spec)} |" for key, spec in rows]
    return out


def _deref(schema: dict, node: dict) -> tuple[dict, str | None]:
    ref = node.get("$ref")
    if not ref:
        return node, None
    target = schema
    for part in ref.lstrip("#/").split("/"):
        target = target[part]
    merged = dict(target)
    merged.update({k: v for k, v in node.items() if k != "$ref"})
    return merged, ref


def rows_of(schema: dict, top: dict) -> list[tuple[str, dict]]:
    """Every key under a node of the schema, as (dotted path, its schema), nested keys included;
    each $def is walked once (`parts.<part>` has the keys of a flat experiment), and the
    parameters (`fixed`, `matrix`...) have tables of their own."""
    rows: list[tuple[str, dict]] = []
    seen: set[str] = {"#/$defs/params", "#/$defs/fixed", "#/$defs/matrix"}

    def walk(prefix: str, node: dict) -> None:
        node, ref = _deref(schema, node)
        if ref in seen:
            return
        if ref:
            seen.add(ref)
        for key, spec in node.get("properties", {}).items():
            target, _ = _deref(schema, spec)
            if "description" in target and "description" not in spec:
                spec = {**spec, "description": target["description"]}     # the $def's own words
            rows.append((prefix + key, spec))
            walk(prefix + key + ".", spec)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and prefix:
            walk(prefix + "<name>.", extra)
        items = node.get("items")
        if isinstance(items, dict):
            walk(prefix.rstrip(".") + "[].", items)
        for branch in node.get("oneOf", []) + node.get("anyOf", []):
            walk(prefix, branch)

    walk("", top)
    return rows


def experiment_page() -> str:
    from iolab.experiment.schema import experiment_schema

    schema = experiment_schema()
    params = schema["$defs"]["params"]
    out = ["# Experiment YAML", "",
           "Generated from the experiment schema (`experiment.v1.json` with the stack layers' and the",
           "benchmarks' fragments merged in) when the docs are built. A key that is not here is an",
           "error of `iolab validate`, with the nearest valid key suggested.", "",
           "## Keys", ""]
    out += _table(rows_of(schema, schema))
    out += ["", "## Parameters every benchmark takes", "",
            "Keys of `fixed`, `matrix`, `zip` and `exclude`: the stack layers' parameters (storage,",
            "striping, MPI-IO hints) and the scale. Each benchmark's own are on",
            "[the benchmarks' page](benchmarks.md).", ""]
    rows = [row for group in ("common", "scale") for row in rows_of(schema, params[group])]
    rows += [(f"{pattern} (pattern)", s) for group in ("common", "scale")
             for pattern, s in params[group].get("patternProperties", {}).items()]
    out += _table(rows, "parameter")
    return "\n".join(out) + "\n"


def benchmarks_page() -> str:
    from iolab import benchmarks
    from iolab.experiment.schema import experiment_schema

    schema = experiment_schema()
    out = ["# Benchmarks", "",
           "Generated from the benchmark descriptors (`iolab.benchmarks`): each benchmark's",
           "parameters (keys of `fixed`, `matrix`, `zip` in an experiment whose `benchmark` it is)",
           "and the metrics its parsers yield. Where the binaries come from:",
           "[the Spack stack](../benchmarks.md).", ""]
    for name, bench in benchmarks.registry().items():
        doc = (type(bench).__doc__ or "").strip()
        out += [f"## {name}", ""]
        if doc:
            out += [" ".join(doc.split()), ""]
        out += [f"Binaries: {', '.join(_code(b) for b in (bench.binaries or (bench.executable,)))};"
                f" Spack package {_code(bench.spack_package)}.", ""]
        out += _table(rows_of(schema, bench.params_schema), "parameter")
        out += ["", "| metric | unit | better | meaning |", "|---|---|---|---|"]
        out += [f"| {_code(m.name)} | {_cell(m.unit)} | {m.better or ''} | {_cell(m.description)} |"
                for m in bench.metrics]
        out += [""]
    return "\n".join(out)


def evidence_page() -> str:
    from iolab.results.evidence import specs

    out = ["# Evidence", "",
           "Generated from the declarations of the layers and the benchmark descriptors",
           "(`evidence_specs`): each piece of evidence a run's digest keeps per case and",
           "repetition, the unit of its value and the source that measures it. Where a record",
           "lacks what a piece needs, its value is missing and the reason is kept, never 0:",
           "[what evidence is and how it is folded](../analysis.md#evidence-per-case).", "",
           "| evidence | unit | source | kind | meaning |", "|---|---|---|---|---|"]
    out += [f"| {_code(s.name)} | {_cell(s.unit)} | {_code(s.source)} | {s.kind} | {_cell(s.help)} |"
            for s in specs()]
    return "\n".join(out + [""])


def rules_page() -> str:
    from iolab.layers.registry import rules

    out = ["# Rules of thumb", "",
           "Generated from the layers' declarations (`rules()`, `iolab.layers.rule.Rule`): each",
           "rule of thumb `iolab why` checks on a run's cases, where it comes from, its",
           "thresholds with their units, and what must be recorded to check it. A rule is",
           "checked on each ok repetition from what that repetition recorded; where a value it",
           "needs was not recorded, the case cannot be checked, and says what is missing:",
           "[how rules are checked, and what separating the best case means](../analysis.md#rules-of-thumb).",
           ""]
    for rule in rules():
        out += [f"## {_code(rule.name)}", "", f"**{_cell(rule.title)}** ({rule.owner}): "
                f"{_cell(rule.help)}.", "", f"From: {_cell(rule.source)}.", ""]
        if rule.limits:
            out += ["| threshold | value | meaning |", "|---|---|---|"]
            out += [f"| {_code(lim.name)} | {_cell(lim.shown())} | {_cell(lim.what)} |"
                    for lim in rule.limits]
            out += [""]
        out += [f"Needs: {_cell(rule.needs)}.", ""]
    return "\n".join(out)


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def verbs() -> dict[str, tuple[str, argparse.ArgumentParser]]:
    """verb -> (its one-line help, its parser), in the order `iolab --help` lists them."""
    from iolab.cli import build_parser

    sub = _subparsers(build_parser())
    helps = {a.dest: a.help or "" for a in sub._choices_actions}
    return {name: (helps.get(name, ""), parser) for name, parser in sub.choices.items()}


def cli_page() -> str:
    out = ["# Command line", "",
           "Generated from `iolab`'s argument parser. `iolab VERB --help` prints the same.", ""]
    for name, (summary, parser) in verbs().items():
        parser.prog = f"iolab {name}"
        out += [f"## `iolab {name}`", "", _cell(summary) + ".", "", "```text", parser.format_usage().strip(),
                "```", ""]
        for text in (parser.description, parser.epilog):     # as the terminal shows them
            if text:
                out += ["```text", text.strip(), "```", ""]
        rows = []
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            what = ", ".join(action.option_strings) or (action.metavar or action.dest)
            if action.option_strings and action.nargs != 0:
                what += f" {action.metavar or action.dest.upper()}"
            how = action.help % vars(action) if action.help else ""
            if action.choices and not isinstance(action.choices, dict):
                how += f" (one of {', '.join(map(str, action.choices))})"
            if (action.default not in (None, False, [], argparse.SUPPRESS) and action.option_strings
                    and "default" not in how):        # once: where the help gives it, as it says it
                how += f" (default {action.default})"
            rows.append(f"| {_code_cell(what)} | {_cell(how)} |")
        if rows:
            out += ["| argument | meaning |", "|---|---|", *rows, ""]
    return "\n".join(out)


def system_page() -> str:
    from iolab.experiment import site

    out = ["# System config", "",
           "Generated from the schema of a ReFrame system's or partition's `extras['iolab']`",
           "(`site.v1.json`); how to write a system config: [Systems](../systems.md).", "",
           site.reference_table(), ""]
    nested = [(f"{key}.{sub}", spec) for key, top in site.schema()["properties"].items()
              for sub, spec in top.get("properties", {}).items()]
    if nested:
        out += ["## Nested keys", "", *_table(nested), ""]
    return "\n".join(out)


PERF = Path(__file__).resolve().parent.parent / "perf"     # docs/perf/*.json, written by scripts
PERF_FORMAT = 1
PERF_KEYS = ("format", "script", "command", "date", "commit", "machine", "load_average", "tables",
             "notes")


def perf_files(folder: Path = PERF) -> list[tuple[Path, dict]]:
    """The figures files of docs/perf/, each checked: a file a script did not write (another
    layout, a missing key, a table whose rows do not fit its header) stops the build, naming it."""
    out = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path.name}: not a figures file: {exc}") from None
        missing = [k for k in PERF_KEYS if not isinstance(data, dict) or k not in data]
        if missing:
            raise ValueError(f"{path.name}: not a figures file written by a scripts/bench* --record "
                             f"(missing {', '.join(missing)})")
        if data["format"] != PERF_FORMAT:
            raise ValueError(f"{path.name}: figures format {data['format']!r}, this page reads {PERF_FORMAT}")
        for table in data["tables"]:
            bad = [i for i, row in enumerate(table["rows"]) if len(row) != len(table["header"])]
            if bad:
                raise ValueError(f"{path.name}: table {table['title']!r}: row {bad[0] + 1} has "
                                 f"{len(table['rows'][bad[0]])} cells for {len(table['header'])} columns")
        out.append((path, data))
    return out


def performance_page(folder: Path = PERF) -> str:
    out = ["# Performance", "",
           "Generated from the figures files in `docs/perf/`, each written by a bench script run",
           "with `--record FILE` (`scripts/bench`, `scripts/bench-analysis`, `scripts/bench-search`):",
           "every number here is one a script printed, with the command, the commit and the machine",
           "it ran on. Speed goals are ratios against a floor measured in the same run; the",
           "figures are of one shared machine and move with its load. How the scripts measure,",
           "and the analysis verbs at campaign scale (`scripts/bench-analysis --markdown`, 1k to",
           "1M records): [Testing](../testing.md).", ""]
    files = perf_files(folder)
    if not files:
        out += ["No figures are recorded yet.", ""]
    for path, data in files:
        out += [f"## `{data['command']}`", "",
                f"{data['date']}, commit `{data['commit'] or 'unknown'}`, {data['machine']}, load "
                f"average {data['load_average']} at the start (`docs/perf/{path.name}`).", ""]
        out += [f"{_cell(n)}" for n in data["notes"]] + ([""] if data["notes"] else [])
        for table in data["tables"]:
            out += [f"**{_cell(table['title'])}**", "",
                    "| " + " | ".join(_cell(h) or " " for h in table["header"]) + " |",
                    "|" + "---|" * len(table["header"])]
            out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table["rows"]]
            out += [""] + [f"{_cell(n)}" for n in table["notes"]] + ([""] if table["notes"] else [])
    return "\n".join(out)


PAGES = {"experiment-yaml.md": experiment_page, "cli.md": cli_page,
         "benchmarks.md": benchmarks_page, "system-config.md": system_page,
         "performance.md": performance_page, "evidence.md": evidence_page,
         "rules.md": rules_page}


def write(outdir: Path) -> list[Path]:
    """Write the pages into outdir; a page whose text is unchanged is left alone (no rebuild)."""
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, page in PAGES.items():
        path = outdir / name
        text = page()
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        written.append(path)
    return written


def _generate(app) -> None:
    write(Path(app.srcdir) / GENERATED)


def setup(app):
    app.connect("builder-inited", _generate)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python docs/_ext/iolab_reference.py OUTDIR")
    for path in write(Path(sys.argv[1])):
        print(path)
