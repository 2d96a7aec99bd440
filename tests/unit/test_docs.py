"""The docs: the reference pages are generated from the code and miss no schema key, verb or option;
the Sphinx build (scripts/build-docs) fails on any warning, a broken link among them; and every
relative link of README.md and docs/*.md reaches a file and, where it names one, a heading."""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iolab import benchmarks
from iolab.cli import build_parser
from iolab.experiment import site
from iolab.experiment.schema import experiment_schema

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"

_spec = importlib.util.spec_from_file_location("iolab_reference", DOCS / "_ext" / "iolab_reference.py")
reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)


def entries(text: str) -> set[str]:
    """The keys a generated page has a row for: the first cell of each table row, unquoted."""
    return {m.group(1) for m in re.finditer(r"^\| `+ ?([^`|]+?) ?`+ \|", text, re.M)}


def missing(text: str, keys) -> set[str]:
    """Keys with no row: a row's key is the key itself or a dotted path ending in it."""
    have = entries(text)
    ends = {k.rsplit(".", 1)[-1] for k in have} | have
    return {k for k in keys if k not in have and k not in ends}


def schema_keys(node, out: set[str] | None = None) -> set[str]:
    """Every property name anywhere in a JSON schema (independently of the generator's walk)."""
    out = set() if out is None else out
    if isinstance(node, dict):
        if isinstance(node.get("properties"), dict):
            out.update(node["properties"])
        for value in node.values():
            schema_keys(value, out)
    elif isinstance(node, list):
        for value in node:
            schema_keys(value, out)
    return out


def section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def test_every_experiment_key_has_an_entry():
    schema = experiment_schema()
    params = schema["$defs"]["params"]
    bench_only = {k for name in benchmarks.registry() for k in params[name]["properties"]}
    keys = schema_keys({k: v for k, v in schema.items()}) - bench_only
    page = reference.experiment_page()
    assert not missing(page, keys), f"experiment keys without an entry: {sorted(missing(page, keys))}"
    for group in ("common", "scale"):
        for pattern in params[group].get("patternProperties", {}):
            assert f"`{pattern} (pattern)`" in page


def test_every_benchmark_parameter_has_an_entry_in_its_section():
    page = reference.benchmarks_page()
    for name, bench in benchmarks.registry().items():
        text = section(page, name)
        keys = set(experiment_schema()["$defs"]["params"][name]["properties"])
        assert not missing(text, keys), f"{name}: no entry for {sorted(missing(text, keys))}"
        assert not missing(text, {m.name for m in bench.metrics})


def test_every_verb_and_option_has_an_entry():
    page = reference.cli_page()
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert sub.choices, "the parser has no verbs"
    for verb, parser in sub.choices.items():
        text = section(page, f"`iolab {verb}`")
        for action in parser._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert re.search(rf"`{re.escape(option)}[ ,`]", text), f"iolab {verb} {option}"


def test_every_argument_of_every_verb_has_one_line_of_help():
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    bare = [f"iolab {verb} {'/'.join(a.option_strings) or a.metavar or a.dest}"
            for verb, parser in sub.choices.items() for a in parser._actions
            if not isinstance(a, argparse._HelpAction) and not (a.help or "").strip()]
    assert not bare, f"arguments without help: {bare}"


def cells(row: str) -> list[str]:
    """A Markdown table row's cells, split where a pipe is not escaped (inside backticks too)."""
    return re.split(r"(?<!\\)\|", row.strip())[1:-1]


@pytest.mark.parametrize("name", sorted(reference.PAGES))
def test_every_table_row_has_its_header_s_columns(name):
    rows, header = [], None
    for line in reference.PAGES[name]().splitlines() + [""]:
        if line.startswith("|"):
            header = header or len(cells(line))
            rows.append(line)
            assert len(cells(line)) == header, f"{name}: {line}"
        else:
            header = None
    assert rows
    assert cells("| `iolab plan YAML\\|ID` | x |") == [" `iolab plan YAML\\|ID` ", " x "]


def test_a_default_is_given_once():
    for line in reference.cli_page().splitlines():
        assert line.count("(default") <= 1, line
    plan = section(reference.cli_page(), "`iolab plan`")
    assert "(default 5; above 0, at most 100) |" in plan


def test_every_system_config_key_has_an_entry():
    page = reference.system_page()
    keys = schema_keys(site.schema())
    assert site.reference_table() in page
    assert not missing(page, keys), sorted(missing(page, keys))


def test_the_coverage_check_sees_a_missing_row():
    """Each check above can fail: a page with one row taken out is missing exactly that key."""
    page = reference.experiment_page()
    row = next(line for line in page.splitlines() if line.startswith("| `job.time_limit`"))
    assert missing(page.replace(row + "\n", ""), {"time_limit", "exclusive"}) == {"time_limit"}
    cli = reference.cli_page()
    assert "## `iolab plan`" in cli
    with pytest.raises(ValueError):
        section(cli.replace("## `iolab plan`", "## plan"), "`iolab plan`")


def build(src: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sphinx", "-q", "-W", "--keep-going", "-b", "html",
                           str(src), str(out)], capture_output=True, text=True, timeout=300)


def test_the_docs_build_with_warnings_as_errors(tmp_path):
    """scripts/build-docs as CI runs it: exit 0, every page of the toctree written, the reference
    pages among them."""
    assert importlib.util.find_spec("sphinx") and importlib.util.find_spec("myst_parser"), \
        "Sphinx and MyST are not installed: pip install -e '.[docs]' (scripts/setup does)"
    out = subprocess.run([str(REPO / "scripts" / "build-docs"), str(tmp_path / "html")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    for page in ("index", "reference/cli", "reference/experiment-yaml",
                 "reference/benchmarks", "reference/system-config", "reference/performance"):
        assert (tmp_path / "html" / f"{page}.html").is_file(), page
    html = (tmp_path / "html" / "reference" / "cli.html").read_text()
    assert "iolab validate" in html and "iolab publish" in html
    # a maintained theme with a wide content column, and a footer that names the project
    index = (tmp_path / "html" / "index.html").read_text()
    assert "furo" in index and "Copyright &#169; 2026, the iolab developers" in index
    assert "&#169;. |" not in index and "©. |" not in index


def test_a_broken_link_fails_the_build(tmp_path):
    src = tmp_path / "docs"
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns("_build", "reference"))
    page = src / "architecture.md"
    page.write_text(page.read_text() + "\nSee [the rules](systems.md#no-such-heading).\n")
    out = build(src, tmp_path / "html")
    assert out.returncode != 0
    assert "no-such-heading" in out.stderr


def test_the_readme_is_one_screen_or_two_with_the_test_command_near_the_top():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) < 200
    assert any(line.startswith("python -m pytest tests") for line in lines[:40])


# -- relative links of the Markdown pages (README.md is not part of the Sphinx build) ------------

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """A heading's anchor as GitHub (and MyST's myst_heading_anchors) make it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def broken_links(page: Path, root: Path = REPO) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    bad = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue                                  # a URL: not checked offline
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if path and not dest.is_relative_to(root.resolve()):
            bad.append(f"{target}: outside the repository")
        elif not dest.exists() and not (path.startswith("reference/") and dest.name in reference.PAGES):
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and dest.exists() and anchor not in anchors(dest):
            bad.append(f"{target}: no heading with anchor #{anchor}")
    return bad


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted(p for p in DOCS.glob("*.md"))]


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_reach_a_file_and_heading(page):
    assert not broken_links(page)


def test_the_link_check_sees_a_broken_link(tmp_path):
    shutil.copy(DOCS / "systems.md", tmp_path)
    page = tmp_path / "here.md"
    page.write_text("# Here\n\n[a](systems.md) [b](nowhere.md) [c](systems.md#nope) [d](#here) [e](#gone)"
                    " [f](../../outside.md)\n")
    assert broken_links(page, root=tmp_path) == [
        "nowhere.md: no such file", "systems.md#nope: no heading with anchor #nope",
        "#gone: no heading with anchor #gone", "../../outside.md: outside the repository"]


def test_the_readme_names_every_shipped_experiment():
    """README's "Experiments shipped" lists exactly the experiments/ YAMLs (it had missed three)."""
    text = (REPO / "README.md").read_text().split("## Experiments shipped", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([a-z0-9][a-z0-9-]*)`", text)) - {"full", "local", "ceph", "cluster"}
    named = {n for n in named if not n.startswith("scripts")}
    assert named == {p.stem for p in (REPO / "experiments").glob("*.yaml")}
