"""Jinja2 rendering (sandboxed, StrictUndefined): per-case input files, shims, report pages."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import IolabError
from .project import project_root

if TYPE_CHECKING:
    import jinja2


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
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment

    # Sandboxed: a template (or a value it prints) cannot reach Python internals.
    env = SandboxedEnvironment(loader=jinja2.FileSystemLoader(path), undefined=jinja2.StrictUndefined,
                               keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
                               finalize=None if document else _one_line)
    env.filters["pystr"] = _pystr
    return env


def render_template(name: str, **context) -> str:
    import jinja2
    from jinja2.exceptions import SecurityError

    document = name.startswith(DOCUMENT_TEMPLATES)
    try:
        return _env(str(templates_dir()), document).get_template(name).render(**context)
    except jinja2.TemplateNotFound:
        raise IolabError(f"template {name!r} not found in {templates_dir()}") from None
    except jinja2.UndefinedError as exc:
        raise IolabError(f"template {name!r}: {exc.message}") from None
    except SecurityError as exc:
        raise IolabError(f"template {name!r}: refused by the sandbox: {exc}") from None
