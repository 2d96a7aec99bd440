"""`iolab table --mpiio cb_nodes,aggregator_ranks`: ROMIO's aggregators as the MPI library says
it applied them, with what was asked where that differs.

Records hold what the library printed (`observed.mpiio_hints.effective`: cb_nodes, and ROMIO's
`romio_aggregator_list`, the ranks that aggregate) beside the request and their comparison. Which
host each rank ran on is not recorded (the launcher's placement is not), so the aggregators are
shown as ranks; `--job nodes` shows the job's nodes.
"""

from __future__ import annotations

HELP = {
    "cb_nodes": "the cb_nodes the MPI library says it used (ROMIO's printed hints); where it is "
                "not what was asked, the request beside it, not applied",
    "aggregator_ranks": "the ranks ROMIO made aggregators (romio_aggregator_list), as it printed "
                        "them",
}
LABELS = {"cb_nodes": "cb_nodes (applied)", "aggregator_ranks": "Aggregator Ranks (ROMIO)"}
# the printed hint each column reads
HINT = {"cb_nodes": "cb_nodes", "aggregator_ranks": "romio_aggregator_list"}


def column_text(hints, name: str) -> tuple[str | None, str | None]:
    """(text, None), or (None, why) where the record cannot say. `hints`: the record's
    `observed.mpiio_hints`; none: the case gave the MPI library no hints to apply ("-")."""
    if not hints:
        return "-", None
    if not isinstance(hints, dict):
        return None, "its observed MPI-IO hints are unreadable"
    effective = hints.get("effective")
    flavour = hints.get("flavour") or "the MPI library"
    if effective is None:
        return None, f"unverified: {flavour} printed no hints"
    hint = HINT[name]
    if not isinstance(effective, dict) or not isinstance(effective.get(hint, ""), str):
        return None, "its observed MPI-IO hints are unreadable"
    if hint not in effective:
        return None, f"{flavour} printed no {hint}"
    text = " ".join(effective[hint].split())
    if name != "cb_nodes":
        return text, None
    for c in hints.get("comparison") or ():
        if isinstance(c, dict) and c.get("key") == "cb_nodes" and c.get("status") != "applied":
            return f"{text} (asked {c.get('requested')}: not applied)", None
    return text, None
