"""iolab command line: argument parsing and printing only; the logic lives in the modules.

One module per verb (its arguments, its examples, its handler: `add_parser` and `run`), what
they share in common.py, the parser and main() in app.py. A new verb is a module here, listed in
app.VERBS."""

from .app import EXAMPLES, build_parser, main

__all__ = ["EXAMPLES", "build_parser", "main"]
