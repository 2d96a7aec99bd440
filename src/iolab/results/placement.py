"""Where a job ran, as its record says: the nodes of its provenance (`$SLURM_JOB_NODELIST` as the
job saw it, else what ReFrame recorded), written as Slurm writes a node list (`node[1-4]`); and
the `--job` table columns that show it."""

from __future__ import annotations

from ..layers.base import ColumnSource

def compact(nodes: list[str]) -> str:
    """["node1", "node2", "node3", "node7"] -> "node[1-3,7]", as Slurm writes a node list
    (ReFrame's nodelist_abbrev: each node once, zero-padded numbers keep their width)."""
    from reframe.utility import nodelist_abbrev

    return nodelist_abbrev(list(dict.fromkeys(nodes)))


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
