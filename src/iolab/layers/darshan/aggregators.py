"""Shared files and the ranks that wrote them: the aggregators a collective write really used.

What Darshan lets us see. At shutdown Darshan reduces the record of a file that *every* rank
opened to one record with rank -1 (unless DARSHAN_DISABLE_SHARED_REDUCTION=1), so the counters
alone no longer say which ranks wrote. In order of preference:
  1. DXT (DXT_POSIX / DXT_MPIIO) keeps one record per rank that did I/O: when its write count
     equals the counters' write count, the ranks with write segments are exactly the writers;
  2. per-rank records (reduction disabled, or a file that not every rank opened);
  3. for a rank -1 record of a write-only file: a bytes variance of ~0 means every rank wrote
     the same amount (writers = nprocs); the fastest and slowest ranks' bytes bound the count.
Otherwise the count is "unknown", with bounds where some are known.

At the POSIX layer a writer is whoever called write(): with collective buffering, the
aggregators; but also rank 0 writing a header (HDF5 metadata), which is not an aggregator.

A writer count alone can agree with cb_nodes by coincidence: ROMIO's automatic mode skips
collective buffering for some patterns, and then every rank writes its own data. So whether
aggregation happened is judged from evidence (aggregation()): independent MPI-IO calls; fewer
POSIX writers than MPI-IO writers; or, with DXT, each rank's POSIX writes being exactly its own
MPI-IO requests (no data moved between ranks).
"""

from __future__ import annotations

from collections import defaultdict

# Darshan accumulates the variance in doubles; equal per-rank byte counts may leave ~1e-16 noise.
EQUAL_BYTES_REL_TOL = 1e-6
WRITES = {
    "POSIX": ("POSIX_WRITES",),
    "MPI-IO": ("MPIIO_INDEP_WRITES", "MPIIO_COLL_WRITES", "MPIIO_SPLIT_WRITES", "MPIIO_NB_WRITES"),
}
PREFIX = {"POSIX": "POSIX_", "MPI-IO": "MPIIO_"}
MAX_HOSTS = 64                          # host names a summary keeps (the count is whole)
HOW_TO_SEE = ("run with DXT (DARSHAN_MOD_ENABLE=DXT_POSIX,DXT_MPIIO) or "
              "DARSHAN_DISABLE_SHARED_REDUCTION=1 to count the writer ranks")


def writes(record: dict, module: str) -> int:
    return sum(max(record["counters"].get(k, 0), 0) for k in WRITES[module])


def writer_ranks(records: list[dict], dxt: list[dict] | None, nprocs: int, module: str) -> dict:
    """How many distinct ranks issued `module` writes to one file.

    records: the file's counter records of `module` ("POSIX" or "MPI-IO"); dxt: the file's DXT
    records of the same layer, or None when the log has no DXT for it.
    {"writer_ranks": int | "unknown", "source": "counters" | "dxt" | "per_rank_records" |
    "rank_variance" | "fastest_slowest" | None, "bounds": [lo, hi] and "why" when unknown}.
    """
    total = sum(writes(r, module) for r in records)
    if total == 0:
        return {"writer_ranks": 0, "source": "counters"}
    lower = 0
    if dxt is not None:
        ranks = {d["rank"] for d in dxt if d["write_count"] > 0}
        if sum(d["write_count"] for d in dxt) == total:
            return {"writer_ranks": len(ranks), "source": "dxt"}
        lower = len(ranks)  # DXT stopped tracing (memory limit) or traced only some files
    shared = [r for r in records if r["rank"] == -1]
    if not shared:
        return {"writer_ranks": len({r["rank"] for r in records if writes(r, module) > 0}),
                "source": "per_rank_records"}
    c, f, p = shared[0]["counters"], shared[0]["fcounters"], PREFIX[module]
    written, read = c.get(f"{p}BYTES_WRITTEN", 0), c.get(f"{p}BYTES_READ", 0)
    lo, hi = max(lower, 1), nprocs
    if read == 0 and written > 0 and nprocs > 0:
        # Without reads, "bytes moved" per rank is bytes written.
        mean = written / nprocs
        variance = f.get(f"{p}F_VARIANCE_RANK_BYTES", 0.0)  # -1 would be "not tracked"
        if 0 <= variance <= (EQUAL_BYTES_REL_TOL * mean) ** 2:
            return {"writer_ranks": nprocs, "source": "rank_variance"}
        known = {c.get(f"{p}FASTEST_RANK", 0): c.get(f"{p}FASTEST_RANK_BYTES", 0),
                 c.get(f"{p}SLOWEST_RANK", 0): c.get(f"{p}SLOWEST_RANK_BYTES", 0)}
        lo = max(lo, sum(1 for b in known.values() if b > 0))
        hi = nprocs - sum(1 for b in known.values() if b == 0)
        if lo == hi:
            return {"writer_ranks": lo, "source": "fastest_slowest"}
    return {"writer_ranks": "unknown", "source": None, "bounds": [lo, hi],
            "why": f"Darshan reduced the file to one shared record (rank -1); {HOW_TO_SEE}"}


def hosts(records: list[dict], dxt: list[dict] | None) -> dict:
    """How many distinct hosts' ranks issued POSIX writes and reads to the application's files,
    from DXT: each DXT record names its rank's host. As writer_ranks does per file, the count is
    exact only where DXT traced every request the counters saw; without DXT, nothing else in
    the log says which host a rank ran on.

    records: the application's POSIX counter records; dxt: their DXT_POSIX records, or None when
    the log has none. {"write"|"read": {"hosts": int | None, "names": [...] (at most 64), "why":
    str | None}}.
    """
    out = {}
    for op, counter in (("write", "POSIX_WRITES"), ("read", "POSIX_READS")):
        total = sum(max(r["counters"].get(counter, 0), 0) for r in records)
        if total == 0:
            out[op] = {"hosts": 0, "names": [], "why": None}
            continue
        if dxt is None:
            out[op] = {"hosts": None, "names": [], "why": "the log has no DXT: nothing else in it "
                       "says which host a rank ran on (darshan: {dxt: true})"}
            continue
        names = sorted({d["hostname"] for d in dxt if d[f"{op}_count"] > 0})
        traced = sum(d[f"{op}_count"] for d in dxt)
        why = None if traced == total else (
            f"DXT traced {traced} of the {total} POSIX {op}s (it stops at its memory limit): "
            f"at least {len(names)} host(s)")
        out[op] = {"hosts": None if why else len(names), "names": names[:MAX_HOSTS], "why": why}
    return out


def _by_id(records) -> dict:
    out = defaultdict(list)
    for r in records:
        out[r["id"]].append(r)
    return out


def is_written(entry: dict) -> bool:
    return entry["bytes_written"] > 0 or entry.get("mpiio_bytes_written", 0) > 0


def _bytes_written(records: list[dict], module: str) -> int:
    return sum(max(r["counters"].get(f"{PREFIX[module]}BYTES_WRITTEN", 0), 0) for r in records)


def shared_files(records: dict, dxt: dict, names: dict, nprocs: int) -> list[dict]:
    """Files that more than one rank opened, with their writers, largest writes first.

    records: {"POSIX": [...], "MPI-IO": [...]} application records; dxt: {"DXT_POSIX": [...],
    "DXT_MPIIO": [...]} (a key is absent when the log has no such module).
    Entries: {"path", "bytes_written" (POSIX; MPI-IO's for a file POSIX never saw),
    "writer_ranks" (POSIX writers), "writer_ranks_source", ["writer_ranks_bounds", "why"],
    ["mpiio_bytes_written", "mpiio_writer_ranks"]}.
    """
    if nprocs < 2:
        return []  # one process: Darshan still writes rank -1 records, but nothing is shared
    posix, mpiio = _by_id(records.get("POSIX", [])), _by_id(records.get("MPI-IO", []))
    dxt_posix = _by_id(dxt["DXT_POSIX"]) if "DXT_POSIX" in dxt else None
    dxt_mpiio = _by_id(dxt["DXT_MPIIO"]) if "DXT_MPIIO" in dxt else None
    out = []
    for rid in sorted(set(posix) | set(mpiio)):
        ranks = {r["rank"] for r in posix.get(rid, []) + mpiio.get(rid, [])}
        if -1 not in ranks and len(ranks) < 2:
            continue
        layer = "POSIX" if rid in posix else "MPI-IO"
        recs = posix[rid] if layer == "POSIX" else mpiio[rid]
        trace = dxt_posix if layer == "POSIX" else dxt_mpiio
        who = writer_ranks(recs, None if trace is None else trace.get(rid, []), nprocs, layer)
        entry = {"path": names.get(rid, f"<record {rid}>"), "bytes_written": _bytes_written(recs, layer),
                 "writer_ranks": who["writer_ranks"], "writer_ranks_source": who["source"]}
        if rid in mpiio and layer == "POSIX":
            trace = None if dxt_mpiio is None else dxt_mpiio.get(rid, [])
            entry["mpiio_bytes_written"] = _bytes_written(mpiio[rid], "MPI-IO")
            entry["mpiio_writer_ranks"] = writer_ranks(mpiio[rid], trace, nprocs, "MPI-IO")["writer_ranks"]
            if who["writer_ranks"] == 0 and entry["mpiio_bytes_written"] > 0:
                who = {"writer_ranks": "unknown", "source": None, "bounds": [1, nprocs],
                       "why": f"Darshan's POSIX module saw no writes although MPI-IO wrote "
                              f"{entry['mpiio_bytes_written']} bytes (writes outside its wrappers)"}
                entry.update(writer_ranks="unknown", writer_ranks_source=None)
        if who["writer_ranks"] == "unknown":
            entry.update(writer_ranks_bounds=who["bounds"], why=who["why"])
        entry["rank_times"] = rank_times(recs) if layer == "POSIX" else None
        if rid in mpiio:
            entry["aggregation"] = aggregation(
                mpiio[rid], None if dxt_posix is None else dxt_posix.get(rid, []),
                None if dxt_mpiio is None else dxt_mpiio.get(rid, []), entry)
        out.append(entry)
    out.sort(key=lambda e: (-max(e["bytes_written"], e.get("mpiio_bytes_written", 0)), e["path"]))
    return out


def rank_times(records: list[dict]) -> dict:
    """The I/O time (read, write and metadata) of a shared file's fastest and slowest rank, and
    of all its ranks together, in seconds: from the shared record's own counters where Darshan
    reduced the file to one (rank -1), else from the ranks' records. {"fastest_s", "slowest_s",
    "total_s"}."""
    def spent(f: dict) -> float:
        return sum(max(f.get(f"POSIX_F_{k}_TIME", 0.0), 0.0) for k in ("READ", "WRITE", "META"))

    shared = [r for r in records if r["rank"] == -1]
    if shared:
        f = shared[0]["fcounters"]
        return {"fastest_s": max(f.get("POSIX_F_FASTEST_RANK_TIME", 0.0), 0.0),
                "slowest_s": max(f.get("POSIX_F_SLOWEST_RANK_TIME", 0.0), 0.0), "total_s": spent(f)}
    times = [spent(r["fcounters"]) for r in records]
    return {"fastest_s": min(times), "slowest_s": max(times), "total_s": sum(times)}


def aggregation(mpiio: list[dict], dxt_posix: list[dict] | None, dxt_mpiio: list[dict] | None,
                entry: dict) -> dict:
    """Did collective buffering move this file's data between ranks? {"happened": bool | None,
    "evidence": str}."""
    coll = sum(max(r["counters"].get(k, 0), 0) for r in mpiio
               for k in ("MPIIO_COLL_WRITES", "MPIIO_SPLIT_WRITES"))
    indep = sum(max(r["counters"].get(k, 0), 0) for r in mpiio
                for k in ("MPIIO_INDEP_WRITES", "MPIIO_NB_WRITES"))
    if coll == 0 and indep > 0:
        return {"happened": False, "evidence": f"the MPI-IO writes were independent ({indep} calls)"}
    if coll == 0:
        return {"happened": None, "evidence": "no MPI-IO writes"}
    if dxt_posix is not None and dxt_mpiio is not None:
        posix = {d["rank"]: d["write_lengths"] for d in dxt_posix if d["write_count"] > 0}
        calls = {d["rank"]: d["write_lengths"] for d in dxt_mpiio if d["write_count"] > 0}
        if posix and len(posix) < len(calls):
            return {"happened": True, "evidence": f"{len(posix)} of the {len(calls)} ranks that called "
                    "MPI-IO writes issued the POSIX writes (DXT)"}
        if posix and posix == calls:
            return {"happened": False, "evidence": f"each of the {len(calls)} ranks wrote exactly its own "
                    "MPI-IO requests at the POSIX layer (DXT): collective calls, no collective buffering"}
        if posix:
            return {"happened": True, "evidence": "the POSIX writes are not the ranks' own MPI-IO requests "
                    "(DXT): data moved between ranks"}
    writers, callers = entry.get("writer_ranks"), entry.get("mpiio_writer_ranks")
    if isinstance(writers, int) and isinstance(callers, int) and 0 < writers < callers:
        return {"happened": True, "evidence": f"{writers} POSIX writer rank(s) for {callers} MPI-IO "
                "writer ranks"}
    return {"happened": None, "evidence": "collective MPI-IO writes; whether data moved between ranks "
            "needs DXT (darshan: {dxt: true})"}


def observed(shared: list[dict]) -> dict:
    """The aggregator count the shared files show: the most writer ranks over written shared files,
    and whether aggregation happened at all.

    {"observed": int | None, "written_shared_files": n, "unknown_files": n, "reason": str | None,
    "aggregation": True | False | None, "evidence": str | None}.
    """
    written = [f for f in shared if is_written(f)]
    unknown = [f for f in written if f["writer_ranks"] == "unknown"]
    out = {"observed": None, "written_shared_files": len(written), "unknown_files": len(unknown),
           "reason": None, "aggregation": None, "evidence": None}
    verdicts = [f["aggregation"] for f in written if "aggregation" in f]
    decided = [v for v in verdicts if v["happened"] is not None]
    if decided:
        # one file written without aggregation is enough to say it did not happen for the case
        first = next((v for v in decided if v["happened"] is False), decided[0])
        out.update(aggregation=first["happened"], evidence=first["evidence"])
    elif verdicts:
        out["evidence"] = verdicts[0]["evidence"]
    if not written:
        out["reason"] = "no shared file was written"
    elif unknown:
        lo = max(f["writer_ranks_bounds"][0] for f in unknown)
        hi = max(f["writer_ranks_bounds"][1] for f in unknown)
        out["reason"] = (f"writer ranks of {len(unknown)} shared file(s) not observable "
                         f"(between {lo} and {hi}): {unknown[0]['why']}")
    else:
        out["observed"] = max(f["writer_ranks"] for f in written)
    return out


def observed_aggregators(summary: dict, requested_cb_nodes: int | None,
                         effective_cb_nodes: int | None = None) -> dict:
    """Requested cb_nodes against the writer ranks the shared files show, and the evidence that
    aggregation happened; and against the cb_nodes the MPI library says it used, when it says.

    {"requested": int | None, "observed": int | None, "aggregation": bool | None,
    "evidence": str | None, "verdict": "matches" | "differs" | "no aggregation happened" |
    "not observable", "differs": bool, "reason": str | None, "files": [{"path", "writer_ranks"}],
    "effective": int | None, "romio": "agrees" | "differs" | None}.
    A writer count equal to cb_nodes is no match when the ranks wrote their own data: the
    verdict is then "no aggregation happened" (and differs is True). Without a requested
    cb_nodes, the effective one is what the writers are compared with. Where the writers differ
    from the request but agree with the library (ROMIO lowered cb_nodes), the reason says so.
    """
    ok = summary.get("status") == "ok"
    agg = summary.get("aggregators") or {}
    reason = agg.get("reason") if ok else summary.get("reason", "unreadable")
    got = agg.get("observed") if ok else None
    happened = agg.get("aggregation") if ok else None
    expected = requested_cb_nodes if requested_cb_nodes is not None else effective_cb_nodes
    if got is None:
        verdict = "not observable"
    elif happened is False:
        verdict = "no aggregation happened"
    elif expected is None:
        verdict = "not observable" if happened is None else "matches"
    else:
        verdict = "differs" if got != expected else "matches"
    romio = None
    if effective_cb_nodes is not None and got is not None and happened is not False:
        romio = "agrees" if got == effective_cb_nodes else "differs"
    writers = f"{got} rank{'' if got == 1 else 's'} wrote"
    if verdict == "differs" and romio == "agrees" and requested_cb_nodes is not None:
        reason = (f"the MPI library used cb_nodes {effective_cb_nodes}, not the {requested_cb_nodes} "
                  f"asked (its effective hints), and {writers}: as the library said")
    elif romio == "differs":
        reason = f"{writers}, but the MPI library says cb_nodes {effective_cb_nodes}"
    return {"requested": requested_cb_nodes, "observed": got, "aggregation": happened,
            "evidence": agg.get("evidence") if ok else None, "verdict": verdict,
            "differs": expected is not None and verdict in ("differs", "no aggregation happened"),
            "reason": reason, "effective": effective_cb_nodes, "romio": romio,
            "files": [{"path": f["path"], "writer_ranks": f["writer_ranks"]}
                      for f in summary.get("shared_files") or [] if is_written(f)]}
