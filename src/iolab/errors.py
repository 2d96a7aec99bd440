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


class IolabErrors(IolabError):
    """Several problems found at once (every schema error of a file): one line each, in order.

    It reads as its first error where one is expected (file, line, key, message)."""

    SHOWN = 50   # more lines than this only bury the first ones

    def __init__(self, errors: list[IolabError]):
        first = errors[0]
        super().__init__(first.message, file=first.file, line=first.line, key=first.key,
                         hint=first.hint)
        self.errors = list(errors)

    def __str__(self) -> str:
        lines = [str(e) for e in self.errors[:self.SHOWN]]
        if len(self.errors) > self.SHOWN:
            lines.append(f"... and {len(self.errors) - self.SHOWN} more problems")
        return "\n".join(lines)
