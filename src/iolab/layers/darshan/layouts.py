"""Lustre layouts from Darshan's LUSTRE module, in the shape lustre.parse_getstripe returns.

So that the layout Darshan saw at open time can be a second witness next to `lfs getstripe`
(iolab.layers.storage.lustre.compare_layout). Darshan (darshan-runtime/lib/darshan-lustre.c) records only the
components of a composite layout that are instantiated (LCME_FL_INIT) and marks unused slots
with stripe size -1. It records no stripe offset: like lfs, we take the first OST of a
component's object list. Logs from Darshan before 3.4.6 (LUSTRE v1) have no flags or extents (-1).
"""

from __future__ import annotations

from ..storage.lfs_text import pattern_name
from ..storage.lustre import MAX_FILES

# lcme_flags bits and the names lfs prints (lustre/include/uapi/linux/lustre/lustre_user.h).
LCME_FLAGS = ((0x1, "stale"), (0x2, "prefrd"), (0x4, "prefwr"), (0x8, "offline"), (0x10, "init"),
              (0x20, "nosync"), (0x40, "extension"))
GETSTRIPE_KEYS = ("path", "stripe_count", "stripe_size", "stripe_offset", "pool", "pattern", "osts")


def _flags(value: int) -> str | None:
    if value is None or value <= 0:
        return None  # 0: a plain (non-composite) layout; -1: not recorded (LUSTRE v1)
    return ",".join(name for bit, name in LCME_FLAGS if value & bit) or hex(value)


def component(comp: dict) -> dict | None:
    """One Darshan component -> parse_getstripe's component dict; None for an unused slot."""
    c = comp["counters"]
    size = c.get("LUSTRE_COMP_STRIPE_SIZE", 0)
    if size < 0:
        return None
    osts = [int(o) for o in comp["osts"]]
    end = c.get("LUSTRE_COMP_EXT_END", -1)
    return {"id": None, "flags": _flags(c.get("LUSTRE_COMP_FLAGS")),
            "extent_start": max(c.get("LUSTRE_COMP_EXT_START", 0), 0),
            "extent_end": None if end < 0 else end,  # -1 is EOF (or unrecorded)
            "stripe_count": c.get("LUSTRE_COMP_STRIPE_COUNT", 0), "stripe_size": size,
            "stripe_offset": osts[0] if osts and osts[0] >= 0 else None,
            "pool": comp.get("pool") or None,
            # lov_pattern bits: mdt for a Data-on-MDT component, raid0,overstriped for -C
            "pattern": pattern_name(c.get("LUSTRE_COMP_STRIPE_PATTERN")), "osts": osts}


def file_layout(path: str, comps: list[dict]) -> dict:
    """The file-level view, as lfs getstripe -c/-S give it: the last instantiated component."""
    parts = [p for p in (component(c) for c in comps) if p is not None]
    out = {"path": path, "stripe_count": None, "stripe_size": None, "stripe_offset": None, "pool": None,
           "pattern": None, "osts": [], "components": len(parts), "layout_components": parts}
    if parts:
        last = parts[-1]
        out.update({k: last[k] for k in ("stripe_count", "stripe_size", "stripe_offset", "pool",
                                         "pattern")})
        out["osts"] = list(dict.fromkeys(o for p in parts for o in p["osts"]))
    return out


def layouts(records: list[dict], names: dict) -> tuple[list[dict], dict]:
    """Application LUSTRE records -> (up to MAX_FILES layouts by path, totals over all files).

    Totals: {"files", "layouts": [{"stripe_count", "stripe_size", "pool", "files"}], "osts": [...]}.
    """
    seen: dict = {}
    for rec in records:  # one layout per file, whichever rank recorded it
        seen.setdefault(rec["id"], rec)
    files = sorted((file_layout(names.get(rid, f"<record {rid}>"), rec["components"])
                    for rid, rec in seen.items()), key=lambda f: f["path"])
    kinds: dict = {}
    for f in files:
        key = (f["stripe_count"], f["stripe_size"], f["pool"])
        kinds[key] = kinds.get(key, 0) + 1
    totals = {"files": len(files),
              "layouts": [{"stripe_count": k[0], "stripe_size": k[1], "pool": k[2], "files": n}
                          for k, n in sorted(kinds.items(), key=lambda kv: -kv[1])],
              "osts": sorted({o for f in files for o in f["osts"] if o >= 0})}
    return files[:MAX_FILES], totals


def lustre_layouts(summary: dict) -> list[dict]:
    """summarize()'s "lustre" entries in parse_getstripe's shape: path, stripe_count, stripe_size,
    stripe_offset, pool, osts, and for a composite (PFL) layout its "components" list.
    Feed them to iolab.layers.storage.lustre.compare_layout(requested, layouts, ost_count)."""
    out = []
    for f in summary.get("lustre") or []:
        layout = {k: f[k] for k in GETSTRIPE_KEYS}
        layout["osts"] = list(f["osts"])
        comps = f.get("layout_components") or []
        if any("init" in (c["flags"] or "").split(",") for c in comps):
            layout["components"] = [dict(c) for c in comps]
        out.append(layout)
    return out
