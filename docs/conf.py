"""Sphinx configuration: the Markdown pages of docs/ read by MyST; the reference pages generated
from the code at build time (_ext/iolab_reference.py). Built by scripts/build-docs."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

project = "iolab"
author = "the iolab developers"
copyright = "2026, the iolab developers"
release = version = "0.1.0"
extensions = ["myst_parser", "iolab_reference"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext"]
# `[text](page.md#a-heading)` resolves to the heading, as on GitHub; a missing one is a warning
# (an error under scripts/build-docs)
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
# Furo: maintained, and its content column is wide enough for long command output and tables
html_theme = "furo"
html_title = "iolab"
# The docs are built offline: no intersphinx, no remote images.
