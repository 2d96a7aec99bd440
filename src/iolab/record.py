"""The result format: what one record of a case and repetition says, and what follows from it.

Every requested-vs-applied difference of a record is said in words by `flags` (the record's
`flags` field, footnotes in tables), computed here from its `observed` part.
"""

from __future__ import annotations


def flags(observed: dict) -> list[str]:
    """Every difference between what was requested and what was applied, in words."""
    out = []
    if observed.get("replayed"):
        out.append(f"replayed by a test stand-in: not a measurement ({observed['replayed']})")
    lay = observed.get("lustre") or {}
    if lay.get("requested") and lay.get("applied") is False:
        out.append(f"striping not applied: {lay.get('reason', 'unknown reason')}")
    elif lay.get("requested") and lay.get("verified") is False:
        out.append("striping unverified: " + ", ".join(
            f"{u['key']}={u['requested']}" for u in lay.get("unverified", [])) if lay.get("unverified")
            else "striping unverified")
    hints = observed.get("mpiio_hints") or {}
    dar = observed.get("darshan") or {}
    for m in dar.get("lustre_witness") or []:
        if m["status"] == "changed":
            out.append(f"Darshan saw {m['key']} {m['observed']} on {m['path']} "
                       f"(requested {m['requested']})")
    if dar.get("status") in ("unreadable", "no log"):
        out.append(f"Darshan log {dar['status']}: {dar.get('reason')}")
    for c in hints.get("comparison", []):
        if c["status"] == "changed":
            out.append(f"hint {c['key']}: requested {c['requested']}, effective {c['effective']}")
        elif c["status"] == "missing":
            out.append(f"hint {c['key']}: requested {c['requested']}, not in effect (ignored)")
        elif c["status"] == "not applied":
            out.append(f"hint {c['key']} not applied: {c['reason']}")
    if hints and hints.get("requested") and hints.get("effective") is None:
        out.append(f"hints unverified under {hints['flavour']}")
    return out
