"""Where a job ran, as its record says: the nodes of its provenance (`$SLURM_JOB_NODELIST` as the
job saw it, else what ReFrame recorded), written as Slurm writes a node list (`node[1-4]`); and
the `--job` table columns that show it."""

from __future__ import annotations

import re

from ..layers.base import ColumnSource

_NUMBERED = re.compile(r"(.*?)(\d+)")


def compact(nodes: list[str]) -> str:
    """["node1", "node2", "node3", "node7"] -> "node[1-3,7]"; zero-padded numbers keep their
    width ("n[01-02]"); a name without a number at its end stands as it is. Each node once,
    in numeric order, as `scontrol show hostlist` writes them."""
    groups: dict[tuple[str, int], set[int]] = {}
    alone: set[str] = set()
    padded: dict[str, set[int]] = {}        # prefix -> the widths of its zero-padded numbers
    split = []
    for name in dict.fromkeys(nodes):
        m = _NUMBERED.fullmatch(name)
        if not m:
            alone.add(name)
            continue
        split.append((m[1], m[2]))
        if len(m[2]) > 1 and m[2].startswith("0"):
            padded.setdefault(m[1], set()).add(len(m[2]))
    for prefix, digits in split:
        width = len(digits) if len(digits) in padded.get(prefix, ()) else 0
        groups.setdefault((prefix, width), set()).add(int(digits))
    out = sorted(alone)
    for (prefix, width), numbers in sorted(groups.items()):
        ranges, run = [], []
        for n in sorted(numbers):
            if run and n != run[-1] + 1:
                ranges.append(run)
                run = []
            run.append(n)
        ranges.append(run)
        text = ",".join(f"{r[0]:0{width}d}" + (f"-{r[-1]:0{width}d}" if len(r) > 1 else "")
                        for r in ranges)
        out.append(f"{prefix}[{text}]" if len(numbers) > 1 else f"{prefix}{text}")
    return ",".join(out)


class JobColumns(ColumnSource):
    """`iolab table --job nodes`: where each repetition ran."""

    name = "job"
    title = "Job"
    text = True
    HELP = {"nodes": "the nodes the job ran on, as its provenance recorded them "
                     "(node[1-4]); where repetitions ran on different nodes, each set with its "
                     "share of them"}

    def column_help(self) -> dict[str, str]:
        return self.HELP

    def column_label(self, name: str) -> str:
        return {"nodes": "Nodes"}.get(name, name)

    def column_text(self, record, name: str) -> tuple[str | None, str | None]:
        nodes = record.provenance.get("nodelist")
        if nodes is None:
            return None, "no node list in its provenance"
        if not isinstance(nodes, list) or not nodes or not all(
                isinstance(n, str) and n.strip() for n in nodes):
            return None, f"its provenance's node list is unreadable ({str(nodes)[:40]!r})"
        return compact([n.strip() for n in nodes]), None


JOB = JobColumns()
