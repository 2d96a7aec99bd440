"""Jinja2 rendering (StrictUndefined): ReFrame test shims and per-case input files."""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path

import jinja2
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment

from .errors import IolabError

SHIM_TEMPLATE = "reframe/shim.py.j2"
_SHA_RE = re.compile(r"^IOLAB_YAML_SHA256 = \"([0-9a-f]{64})\"$", re.MULTILINE)


def project_root() -> Path:
    """The checkout iolab runs from (templates/, experiments/, reframe/, results/)."""
    env = os.environ.get("IOLAB_ROOT")
    if env:
        return Path(env).resolve()
    return Path(__file__).resolve().parents[2]


def templates_dir() -> Path:
    return Path(os.environ.get("IOLAB_TEMPLATES", project_root() / "templates"))


# Templates whose output is a document for people (Markdown, HTML with autoescape on); every
# other template feeds a program (a job input, a hints file, a shim) and gets the strict checks.
DOCUMENT_TEMPLATES = ("report/",)


def _one_line(value):
    """Every value printed into an input file: one line, no control characters. A newline in a
    KEY=VALUE file would add a key of the value's choosing."""
    text = "" if value is None else str(value)
    if any(ord(c) < 0x20 or ord(c) == 0x7f for c in text):
        raise IolabError(f"template value {text[:60]!r} contains a newline or control character; "
                         "input files take one value per line")
    return value


def _pystr(value) -> str:
    """A Python string literal (JSON's escapes are Python's): for the generated shims."""
    return json.dumps(str(value))


@functools.cache
def _env(path: str, document: bool) -> jinja2.Environment:
    # Sandboxed: a template (or a value it prints) cannot reach Python internals.
    env = SandboxedEnvironment(loader=jinja2.FileSystemLoader(path), undefined=jinja2.StrictUndefined,
                               keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
                               finalize=None if document else _one_line)
    env.filters["pystr"] = _pystr
    return env


def render_template(name: str, **context) -> str:
    document = name.startswith(DOCUMENT_TEMPLATES)
    try:
        return _env(str(templates_dir()), document).get_template(name).render(**context)
    except jinja2.TemplateNotFound:
        raise IolabError(f"template {name!r} not found in {templates_dir()}") from None
    except jinja2.UndefinedError as exc:
        raise IolabError(f"template {name!r}: {exc.message}") from None
    except SecurityError as exc:
        raise IolabError(f"template {name!r}: refused by the sandbox: {exc}") from None


def class_name(experiment_id: str) -> str:
    return experiment_id.replace("-", "_")


def shim_path(generated_dir: Path, experiment_id: str) -> Path:
    return generated_dir / f"{class_name(experiment_id)}.py"


def render_shim(yaml_path: Path, experiment_id: str, sha256: str, generated_dir: Path) -> str:
    rel = os.path.relpath(yaml_path.resolve(), generated_dir.resolve())
    return render_template(SHIM_TEMPLATE, experiment_id=experiment_id, yaml_relpath=rel,
                           sha256=sha256, class_name=class_name(experiment_id))


def shim_sha(path: Path) -> str | None:
    try:
        m = _SHA_RE.search(path.read_text())
    except OSError:
        return None
    return m.group(1) if m else None


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def sync_shims(experiments_dir: Path, generated_dir: Path, check_only: bool = False) -> list[str]:
    """Write a shim for every experiment whose shim is missing or stale; drop orphans.

    Returns a line per change. With check_only, changes nothing and reports what would change.
    """
    from .load import load_experiment

    changes = []
    generated_dir.mkdir(parents=True, exist_ok=True)
    wanted = set()
    for yaml_path in sorted(experiments_dir.glob("*.yaml")):
        exp = load_experiment(yaml_path)
        target = shim_path(generated_dir, exp.id)
        wanted.add(target.name)
        current = shim_sha(target)
        if current == exp.sha256:
            continue
        what = "new" if current is None else "stale"
        changes.append(f"{what}: {target} (from {yaml_path})")
        if not check_only:
            write_atomic(target, render_shim(yaml_path, exp.id, exp.sha256, generated_dir))
    for orphan in sorted(generated_dir.glob("*.py")):
        if orphan.name not in wanted and orphan.name != "__init__.py" and shim_sha(orphan):
            changes.append(f"orphan: {orphan} (its YAML is gone)")
            if not check_only:
                orphan.unlink()
    return changes
