"""Findings: short statements a summary backs with numbers, e.g. "87% of write requests are under
64KiB". Each rule is a plain function (summary, requested, thresholds) -> list of findings
{"rule", "text", "numbers"}; every threshold they use is in Thresholds, here at the top.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...units import format_bytes_human, format_size
from .aggregators import is_written, observed_aggregators

KIB, MIB = 1024, 1024 * 1024


@dataclass(frozen=True)
class Thresholds:
    # What counts as a small request. 1 MiB: Lustre's default stripe size and RPC size, below
    # which each request costs a round trip of its own. summarize() also reports the share of
    # requests under tiny_request_bytes (64 KiB, the smallest stripe size lfs accepts).
    small_request_bytes: int = 1 * MIB
    tiny_request_bytes: int = 64 * KIB
    small_requests_pct: float = 50.0    # report when at least this % of requests is small
    tiny_requests_pct: float = 20.0     # ... or tiny (reported instead: the stronger statement)
    meta_time_pct: float = 30.0         # metadata share of POSIX I/O time
    # Many small files: KAUST's warning (a file's open and close cost a metadata server round
    # trip each, whatever its size). At least this many files, holding on average fewer bytes
    # than small_request_bytes each.
    many_files: int = 100
    unaligned_pct: float = 10.0         # POSIX requests not aligned to the file alignment
    independent_pct: float = 50.0       # collective requested, yet this % of MPI-IO ops independent


THRESHOLDS = Thresholds()


def _finding(rule: str, text: str, **numbers) -> dict:
    return {"rule": rule, "text": text, "numbers": numbers}


def _pct(value: float) -> str:
    return f"{value:.0f}%" if value >= 1 or value == 0 else f"{value:.1g}%"


def small_requests(s: dict, req: dict, t: Thresholds) -> list[dict]:
    """Most POSIX requests are smaller than the tiny (else the small) cutoff."""
    out = []
    for op in ("write", "read"):
        sizes = s["request_sizes"][op]
        for kind, limit in (("tiny", t.tiny_requests_pct), ("small", t.small_requests_pct)):
            share = sizes[kind]
            if share["pct_range"] is None or share["pct_range"][0] < limit:
                continue
            lo = share["pct_range"][0]
            exact = share["pct"] is not None
            out.append(_finding(
                "small_requests",
                f"{'' if exact else 'at least '}{_pct(lo)} of {op} requests are under "
                f"{format_size(share['cutoff_bytes'])}",
                op=op, pct=share["pct"], pct_range=share["pct_range"], count=share["count"],
                requests=share["requests"], cutoff_bytes=share["cutoff_bytes"], threshold_pct=limit,
                method=share["method"]))
            break
    return out


def collective_not_used(s: dict, req: dict, t: Thresholds) -> list[dict]:
    """Collective I/O was requested, but the MPI-IO calls were independent (or absent)."""
    if not req.get("collective"):
        return []
    mpiio = s.get("mpiio")
    if mpiio is None:
        if str(req.get("api", "")).upper() in ("MPIIO", "HDF5", "NCMPI", "PNETCDF"):
            return [_finding("collective_not_used",
                             f"collective I/O was requested ({req['api']}) but the log has no MPI-IO "
                             "records (Darshan's MPI-IO module off, or no MPI-IO calls)", api=req["api"])]
        return []
    out = []
    for op, plural in (("write", "writes"), ("read", "reads")):
        indep = mpiio[f"indep_{plural}"] + mpiio[f"nb_{plural}"]
        total = indep + mpiio[f"coll_{plural}"] + mpiio[f"split_{plural}"]
        if total and 100.0 * indep / total >= t.independent_pct:
            pct = 100.0 * indep / total
            out.append(_finding(
                "collective_not_used",
                f"MPI-IO {plural} were independent although collective was requested: "
                f"{indep} of {total} ({_pct(pct)})",
                op=op, independent=indep, total=total, pct=pct, threshold_pct=t.independent_pct))
    return out


def no_aggregation(s: dict, req: dict, t: Thresholds) -> list[dict]:
    """Aggregation was asked for, but the ranks wrote their own data: the evidence says so (DXT,
    independent calls), or every rank wrote a shared file."""
    nprocs = s["nprocs"]
    cb = req.get("cb_nodes")
    if nprocs < 2 or not (req.get("collective") or (cb is not None and cb < nprocs)):
        return []
    agg = observed_aggregators(s, cb)
    if agg["verdict"] == "no aggregation happened":
        return [_finding("no_aggregation", f"no aggregation happened: {agg['evidence']}",
                         nprocs=nprocs, cb_nodes=cb, evidence=agg["evidence"], observed=agg["observed"])]
    files = [f for f in s["shared_files"] if is_written(f) and f["writer_ranks"] == nprocs]
    if not files or agg["aggregation"] is True:
        return []
    what = files[0]["path"] if len(files) == 1 else f"{len(files)} shared files"
    return [_finding("no_aggregation", f"all {nprocs} ranks wrote {what}: no aggregation",
                     nprocs=nprocs, files=[f["path"] for f in files], cb_nodes=cb,
                     source=files[0]["writer_ranks_source"])]


def aggregators_differ(s: dict, req: dict, t: Thresholds) -> list[dict]:
    """The ranks that wrote the shared files are not the cb_nodes requested."""
    if req.get("cb_nodes") is None:
        return []
    agg = observed_aggregators(s, req["cb_nodes"])
    if agg["verdict"] != "differs":
        return []
    return [_finding("aggregators_differ",
                     f"{agg['observed']} rank(s) wrote the shared file(s), cb_nodes={agg['requested']} "
                     "was requested", requested=agg["requested"], observed=agg["observed"])]


def metadata_time(s: dict, req: dict, t: Thresholds) -> list[dict]:
    """Metadata (open, stat, seek, close, ...) takes a large share of POSIX time; the open and
    stat counts say how many calls it took."""
    posix = s["modules"].get("POSIX")
    if not posix:
        return []
    total = posix["meta_time_s"] + posix["io_time_s"]
    if total <= 0 or 100.0 * posix["meta_time_s"] / total < t.meta_time_pct:
        return []
    pct = 100.0 * posix["meta_time_s"] / total
    counts = {k: posix[k] for k in ("opens", "stats") if k in posix}
    text = f"{_pct(pct)} of POSIX I/O time is metadata"
    if counts:
        calls = " and ".join(f"{n} {k}" for k, n in counts.items())
        text += (f": {calls} took {posix['meta_time_s']:.3g} s, reads and writes "
                 f"{posix['io_time_s']:.3g} s (summed over ranks)")
    return [_finding("metadata_time", text, pct=pct, meta_time_s=posix["meta_time_s"],
                     io_time_s=posix["io_time_s"], threshold_pct=t.meta_time_pct, **counts)]


def many_small_files(s: dict, req: dict, t: Thresholds) -> list[dict]:
    """Many files, each small: every one costs its opens and closes on the metadata server."""
    posix = s["modules"].get("POSIX")
    if not posix or posix.get("files", 0) < t.many_files:
        return []
    files = posix["files"]
    moved = max(posix.get("bytes_written", 0), posix.get("bytes_read", 0))
    per_file = moved / files
    if per_file >= t.small_request_bytes:
        return []
    text = (f"{files} files of {format_bytes_human(per_file)} on average "
            f"(under {format_size(t.small_request_bytes)})")
    if "opens" in posix:
        text += f": {posix['opens']} opens, {posix['opens'] / files:.3g} per file"
    return [_finding("many_small_files", text, files=files, mean_file_bytes=per_file,
                     opens=posix.get("opens"), cutoff_bytes=t.small_request_bytes,
                     threshold_files=t.many_files)]


def unaligned(s: dict, req: dict, t: Thresholds) -> list[dict]:
    """Many POSIX requests do not start on the file alignment (file-system block or stripe)."""
    u = s["unaligned"]
    if u["file_not_aligned_pct"] is None or u["file_not_aligned_pct"] < t.unaligned_pct:
        return []
    align = "/".join(format_size(a) for a in u["file_alignment_bytes"]) or "file"
    return [_finding("unaligned", f"{_pct(u['file_not_aligned_pct'])} of POSIX requests are not "
                     f"aligned to the {align} file alignment",
                     pct=u["file_not_aligned_pct"], not_aligned=u["file_not_aligned"],
                     requests=u["requests"], alignment_bytes=u["file_alignment_bytes"],
                     threshold_pct=t.unaligned_pct)]


def incomplete_log(s: dict, req: dict, t: Thresholds) -> list[dict]:
    """Darshan ran out of memory for a module: its counts miss records."""
    if not s["partial_modules"]:
        return []
    mods = ", ".join(s["partial_modules"])
    return [_finding("incomplete_log", f"Darshan ran out of record memory for {mods}: counts are "
                     "incomplete (raise DARSHAN_MODMEM)", modules=list(s["partial_modules"]))]


RULES = (small_requests, collective_not_used, no_aggregation, aggregators_differ, metadata_time,
         many_small_files, unaligned, incomplete_log)


def findings(summary: dict, requested: dict | None = None, thresholds: Thresholds = THRESHOLDS) -> list[dict]:
    """Evidence-backed findings for one summary, in RULES order; [] for an unreadable log.

    requested: what the case asked for, keys optional: {"collective": bool, "cb_nodes": int | None,
    "api": "POSIX" | "MPIIO" | "HDF5" | "NCMPI" | ...}.
    """
    if summary.get("status") != "ok":
        return []
    req = requested or {}
    return [f for rule in RULES for f in rule(summary, req, thresholds)]
