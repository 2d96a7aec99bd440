"""One error type for bad input: it names the file, line and key, and never shows a traceback."""

from __future__ import annotations


class IolabError(Exception):
    """A user-facing error. The CLI prints it and exits 2."""

    exit_code = 2

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 key: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.key = key
        self.hint = hint

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = str(self.file)
            if self.line:
                where += f":{self.line}"
            where += ": "
        key = f"{self.key}: " if self.key else ""
        text = f"{where}{key}{self.message}"
        if self.hint:
            text += f" ({self.hint})"
        return text


class ParseError(IolabError):
    """A benchmark output is missing, truncated or reports a failure. The case fails."""

    exit_code = 1
