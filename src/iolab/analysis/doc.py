"""Text with structure: the comparison reports as blocks (headings, lines, verdicts, tables) that
print as Markdown for the terminal and as HTML on the published page, from one source."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Block:
    kind: str                           # heading | line | verdict | table
    text: str = ""
    level: int = 0                      # headings: 2 for ##
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)

    def lines(self, shift: int = 0) -> list[str]:
        if self.kind == "heading":
            return [f"{'#' * (self.level + shift)} {self.text}"]
        if self.kind == "table":
            return (["| " + " | ".join(self.header) + " |", "|" + "|".join("---" for _ in self.header) + "|"]
                    + ["| " + " | ".join(row) + " |" for row in self.rows])
        return [self.text]


def heading(text: str, level: int) -> Block:
    return Block("heading", text, level)


def line(text: str = "") -> Block:
    return Block("line", text)


def verdict(text: str) -> Block:
    return Block("verdict", text)


def table(header: list[str], rows: list[list[str]]) -> Block:
    return Block("table", header=header, rows=rows)


def markdown(blocks: list[Block], shift: int = 0) -> str:
    """Markdown, headings `shift` levels deeper (to nest under a page's own headings)."""
    return "\n".join(text for b in blocks for text in b.lines(shift))


def as_dicts(blocks: list[Block]) -> list[dict]:
    """Blocks for a template, blank lines left out."""
    out = []
    for b in blocks:
        if b.kind == "table":
            out.append({"kind": "table", "header": b.header, "rows": b.rows})
        elif b.text.strip():
            out.append({"kind": b.kind, "text": b.text})
    return out
