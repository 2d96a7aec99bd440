"""Request sizes: Darshan's size histograms, and the share of requests under a cutoff.

Darshan counts each request in one of ten bins whose upper edges are inclusive
(darshan-runtime/lib/darshan-common.h, DARSHAN_BUCKET_INC): "100K_1M" holds 102401..1048576 bytes,
so a 1 MiB request lands in the same bin as a 200 KiB one. A cutoff that falls inside a bin
(1 MiB, 64 KiB) cannot be read off the histogram alone. In order of preference:
  1. DXT segments, when DXT traced every request of the files (exact sizes);
  2. the histogram, when the bin holding the cutoff is empty;
  3. the record's four most common access sizes (POSIX_ACCESS1..4, reads and writes together),
     when they account for every request in that bin;
  4. otherwise a range: pct is None and pct_range says what is certain.
"""

from __future__ import annotations

# (Darshan's bin name, smallest size, largest size in bytes; None = no limit)
SIZE_BINS = (
    ("0_100", 0, 100), ("100_1K", 101, 1024), ("1K_10K", 1025, 10240), ("10K_100K", 10241, 102400),
    ("100K_1M", 102401, 1048576), ("1M_4M", 1048577, 4194304), ("4M_10M", 4194305, 10485760),
    ("10M_100M", 10485761, 104857600), ("100M_1G", 104857601, 1073741824), ("1G_PLUS", 1073741825, None),
)
OPS = ("write", "read")


def histogram(records: list[dict], prefix: str, op: str) -> dict:
    """{bin: count} summed over records; prefix "POSIX_SIZE_" or "MPIIO_SIZE_" ("_AGG" for MPI-IO)."""
    agg = "_AGG" if prefix.startswith(("MPIIO", "H5D", "PNETCDF")) else ""
    keys = [(name, f"{prefix}{op.upper()}{agg}_{name}") for name, _, _ in SIZE_BINS]
    return {name: sum(max(r["counters"].get(key, 0), 0) for r in records) for name, key in keys}


def _straddling(cutoff: int):
    for name, lo, hi in SIZE_BINS:
        if lo < cutoff and (hi is None or cutoff <= hi):
            return name, lo, hi
    return None


def _from_dxt(dxt: list[dict], op: str, cutoff: int) -> tuple[int, int]:
    pairs = [pair for rec in dxt for pair in rec[f"{op}_lengths"]]
    return sum(n for length, n in pairs if length < cutoff), sum(n for _, n in pairs)


def _resolve_bin(records: list[dict], op: str, cutoff: int, bin_: tuple) -> tuple[int, int]:
    """(requests of `op` in the straddling bin known to be under the cutoff, requests unresolved)."""
    name, lo, hi = bin_
    other = "read" if op == "write" else "write"
    below_total = unresolved = 0
    for rec in records:
        c = rec["counters"]
        mine = c.get(f"POSIX_SIZE_{op.upper()}_{name}", 0)
        if mine <= 0:
            continue
        theirs = max(c.get(f"POSIX_SIZE_{other.upper()}_{name}", 0), 0)
        common = [(c.get(f"POSIX_ACCESS{i}_ACCESS", 0), c.get(f"POSIX_ACCESS{i}_COUNT", 0))
                  for i in range(1, 5)]
        common = [(size, n) for size, n in common if n > 0 and lo <= size and (hi is None or size <= hi)]
        # Darshan's common counts never over-count, so if they add up to the bin, they are the bin.
        if sum(n for _, n in common) != mine + theirs:
            unresolved += mine
            continue
        below = sum(n for size, n in common if size < cutoff)
        if below == 0:
            continue
        if below == mine + theirs:
            below_total += mine
        elif theirs == 0:
            below_total += below
        else:
            unresolved += mine  # sizes on both sides of the cutoff, shared with the other direction
    return below_total, unresolved


def share_below(records: list[dict], dxt: list[dict] | None, op: str, cutoff: int) -> dict:
    """POSIX `op` requests smaller than `cutoff` bytes.

    {"cutoff_bytes", "requests", "count" (None if uncertain), "pct" (None if no requests or
    uncertain), "pct_range": [lo, hi] (None if no requests), "method": "dxt" | "histogram" |
    "common_sizes" | "bounds"}.
    """
    hist = histogram(records, "POSIX_SIZE_", op)
    total = sum(hist.values())
    out = {"cutoff_bytes": cutoff, "requests": total, "count": None, "pct": None, "pct_range": None,
           "method": None}
    if total == 0:
        return out
    if dxt is not None:
        below, traced = _from_dxt(dxt, op, cutoff)
        if traced == total:
            pct = 100.0 * below / total
            return {**out, "count": below, "pct": pct, "pct_range": [pct, pct], "method": "dxt"}
    sure = sum(hist[name] for name, _, hi in SIZE_BINS if hi is not None and hi < cutoff)
    bin_ = _straddling(cutoff)
    method = "histogram"
    below, unresolved = sure, 0
    if bin_ and hist[bin_[0]]:
        extra, unresolved = _resolve_bin(records, op, cutoff, bin_)
        below += extra
        method = "common_sizes" if not unresolved else "bounds"
    lo, hi = 100.0 * below / total, 100.0 * (below + unresolved) / total
    if unresolved:
        return {**out, "pct_range": [lo, hi], "method": method}
    return {**out, "count": below, "pct": lo, "pct_range": [lo, lo], "method": method}
