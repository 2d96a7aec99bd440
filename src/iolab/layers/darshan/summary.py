"""One Darshan log -> one JSON-serialisable summary of the case's I/O (summarize).

Only the application's files count. Darshan also records files the MPI library and the shell
streams touch; those are left out of every total (and counted under "excluded"), because they
would distort what the benchmark did: Open MPI's ompio opens `<file>.locktest.<rank>` at every
MPI_File_open (sharedfp/lockedfile probes file locking) and keeps shared-file-pointer segments
`*_cid-*.sm` in its session directory (/tmp/ompi.<host>.<uid>/); their 40-byte writes would make
a 512 KiB-transfer run look like one with small writes. iolab's own files are left out the same
way (own_files): the hints files ROMIO reads, input decks and configs, and the summaries the
benchmark writes for iolab; ROMIO reading iolab-romio-hints.txt is not the case's I/O.
"""

from __future__ import annotations

import os
import re

from ..storage.lustre import MAX_FILES
from . import aggregators, layouts, sizes
from .findings import THRESHOLDS, Thresholds
from .reader import TIMEOUT_S, Unreadable, read_raw

MODULES = ("POSIX", "MPI-IO", "STDIO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR")
FILE_MODULES = ("POSIX", "MPI-IO", "STDIO", "H5F", "PNETCDF_FILE")  # H5D, PNETCDF_VAR: datasets

EXCLUDE = (
    ("std_stream", re.compile(r"^<(STDIN|STDOUT|STDERR)>$")),
    ("openmpi_session_dir", re.compile(r"(^|/)ompi\.[^/]+/")),
    ("ompio_locktest", re.compile(r"\.locktest\.\d+$")),
)

# Per module: summary field -> the counters summed over records ("_s" fields: fcounters, seconds).
# A module without a field's counters has no such field.
MODULE_FIELDS = {
    "POSIX": {
        "bytes_read": ("POSIX_BYTES_READ",), "bytes_written": ("POSIX_BYTES_WRITTEN",),
        "reads": ("POSIX_READS",), "writes": ("POSIX_WRITES",), "opens": ("POSIX_OPENS",),
        "seeks": ("POSIX_SEEKS",), "stats": ("POSIX_STATS",), "fsyncs": ("POSIX_FSYNCS", "POSIX_FDSYNCS"),
        "read_time_s": ("POSIX_F_READ_TIME",), "write_time_s": ("POSIX_F_WRITE_TIME",),
        "meta_time_s": ("POSIX_F_META_TIME",)},
    "MPI-IO": {
        "bytes_read": ("MPIIO_BYTES_READ",), "bytes_written": ("MPIIO_BYTES_WRITTEN",),
        "reads": ("MPIIO_INDEP_READS", "MPIIO_COLL_READS", "MPIIO_SPLIT_READS", "MPIIO_NB_READS"),
        "writes": aggregators.WRITES["MPI-IO"], "opens": ("MPIIO_INDEP_OPENS", "MPIIO_COLL_OPENS"),
        "syncs": ("MPIIO_SYNCS",), "read_time_s": ("MPIIO_F_READ_TIME",),
        "write_time_s": ("MPIIO_F_WRITE_TIME",), "meta_time_s": ("MPIIO_F_META_TIME",)},
    "STDIO": {
        "bytes_read": ("STDIO_BYTES_READ",), "bytes_written": ("STDIO_BYTES_WRITTEN",),
        "reads": ("STDIO_READS",), "writes": ("STDIO_WRITES",), "opens": ("STDIO_OPENS", "STDIO_FDOPENS"),
        "seeks": ("STDIO_SEEKS",), "flushes": ("STDIO_FLUSHES",), "read_time_s": ("STDIO_F_READ_TIME",),
        "write_time_s": ("STDIO_F_WRITE_TIME",), "meta_time_s": ("STDIO_F_META_TIME",)},
    "H5F": {"opens": ("H5F_OPENS",), "flushes": ("H5F_FLUSHES",), "meta_time_s": ("H5F_F_META_TIME",)},
    "H5D": {
        "bytes_read": ("H5D_BYTES_READ",), "bytes_written": ("H5D_BYTES_WRITTEN",), "reads": ("H5D_READS",),
        "writes": ("H5D_WRITES",), "opens": ("H5D_OPENS",), "flushes": ("H5D_FLUSHES",),
        "read_time_s": ("H5D_F_READ_TIME",), "write_time_s": ("H5D_F_WRITE_TIME",),
        "meta_time_s": ("H5D_F_META_TIME",)},
    "PNETCDF_FILE": {
        "bytes_read": ("PNETCDF_FILE_BYTES_READ",), "bytes_written": ("PNETCDF_FILE_BYTES_WRITTEN",),
        "opens": ("PNETCDF_FILE_CREATES", "PNETCDF_FILE_OPENS"), "syncs": ("PNETCDF_FILE_SYNCS",),
        "meta_time_s": ("PNETCDF_FILE_F_META_TIME",), "wait_time_s": ("PNETCDF_FILE_F_WAIT_TIME",)},
    "PNETCDF_VAR": {
        "bytes_read": ("PNETCDF_VAR_BYTES_READ",), "bytes_written": ("PNETCDF_VAR_BYTES_WRITTEN",),
        "reads": ("PNETCDF_VAR_INDEP_READS", "PNETCDF_VAR_COLL_READS", "PNETCDF_VAR_NB_READS"),
        "writes": ("PNETCDF_VAR_INDEP_WRITES", "PNETCDF_VAR_COLL_WRITES", "PNETCDF_VAR_NB_WRITES"),
        "opens": ("PNETCDF_VAR_OPENS",), "read_time_s": ("PNETCDF_VAR_F_READ_TIME",),
        "write_time_s": ("PNETCDF_VAR_F_WRITE_TIME",), "meta_time_s": ("PNETCDF_VAR_F_META_TIME",)},
}
MPIIO_FIELDS = {  # summary["mpiio"] key -> MPI-IO counter
    **{f"{kind}_{op}": f"MPIIO_{kind.upper()}_{op.upper()}"
       for kind in ("coll", "indep", "split", "nb") for op in ("writes", "reads")},
    "coll_opens": "MPIIO_COLL_OPENS", "indep_opens": "MPIIO_INDEP_OPENS", "syncs": "MPIIO_SYNCS",
    "set_views": "MPIIO_VIEWS", "hint_calls": "MPIIO_HINTS",
    "bytes_written": "MPIIO_BYTES_WRITTEN", "bytes_read": "MPIIO_BYTES_READ",
}


def excluded_reason(path: str) -> str | None:
    for reason, pattern in EXCLUDE:
        if pattern.search(path):
            return reason
    return None


def _sum(records: list[dict], keys) -> int | float:
    """Sum over records; Darshan writes -1 for a counter it could not track, which is skipped."""
    total = 0
    for r in records:
        for key in keys:
            value = r["counters"].get(key, 0) or r["fcounters"].get(key, 0)  # sparse: absent is 0
            if value > 0:
                total += value
    return total


def module_totals(module: str, records: list[dict]) -> dict:
    fields = MODULE_FIELDS[module]
    out = {"records": len(records), "files": len({r["id"] for r in records})}
    out.update({name: _sum(records, keys) for name, keys in fields.items()})
    if "read_time_s" in out:
        out["io_time_s"] = out["read_time_s"] + out["write_time_s"]  # summed over ranks
    return out


def _pct(part: float, whole: float) -> float | None:
    return 100.0 * part / whole if whole else None


def unaligned(posix: list[dict]) -> dict:
    requests = _sum(posix, ("POSIX_READS", "POSIX_WRITES"))
    file_na, mem_na = _sum(posix, ("POSIX_FILE_NOT_ALIGNED",)), _sum(posix, ("POSIX_MEM_NOT_ALIGNED",))
    return {"requests": requests, "file_not_aligned": file_na, "mem_not_aligned": mem_na,
            "file_not_aligned_pct": _pct(file_na, requests), "mem_not_aligned_pct": _pct(mem_na, requests),
            "file_alignment_bytes": _distinct(posix, "POSIX_FILE_ALIGNMENT"),
            "mem_alignment_bytes": _distinct(posix, "POSIX_MEM_ALIGNMENT")}


def _distinct(records: list[dict], counter: str) -> list[int]:
    return sorted({v for r in records if (v := r["counters"].get(counter, 0)) > 0})


def mpiio_summary(records: list[dict]) -> dict:
    out = {key: _sum(records, (counter,)) for key, counter in MPIIO_FIELDS.items()}
    out.update(write_time_s=_sum(records, ("MPIIO_F_WRITE_TIME",)),
               read_time_s=_sum(records, ("MPIIO_F_READ_TIME",)),
               meta_time_s=_sum(records, ("MPIIO_F_META_TIME",)),
               access_sizes={op: sizes.histogram(records, "MPIIO_SIZE_", op) for op in sizes.OPS})
    return out


def _mount_type(path: str, mounts: list) -> str | None:
    best = max((m for m in mounts if path == m[0] or path.startswith(m[0].rstrip("/") + "/")),
               key=lambda m: len(m[0]), default=None)
    return best[1] if best else None


def _warnings(raw: dict) -> list[str]:
    out = []
    wrote = raw["job"]["metadata"].get("lib_ver")
    util = raw["reader"]["darshan_util"]
    if wrote and wrote != util:
        out.append(f"log written by darshan-runtime {wrote}, read with darshan-util {util}: "
                   "keep PyDarshan at the runtime's release")
    unread = [m for m, info in raw["modules"].items() if not info["read"]]
    if unread:
        out.append(f"modules not summarised: {', '.join(unread)}")
    return out


def _own(path: str, own_files: frozenset) -> bool:
    return bool(own_files) and (path in own_files or os.path.realpath(path) in own_files)


def build(raw: dict, log: str, thresholds: Thresholds = THRESHOLDS, own_files=()) -> dict:
    """The summary for read_raw()'s output (see summarize for the shape)."""
    own = frozenset(own_files) | frozenset(os.path.realpath(f) for f in own_files)
    names = {int(k): v for k, v in raw["names"].items()}
    nprocs = raw["job"]["nprocs"]
    app: dict = {}
    skipped: dict = {}
    for mod in MODULES:
        if mod not in raw["records"]:
            continue
        app[mod] = []
        for r in raw["records"][mod]:
            path = names.get(r["id"], "")
            reason = excluded_reason(path) or ("iolab_file" if _own(path, own) else None)
            if reason:
                skipped.setdefault(reason, []).append(r)
            else:
                app[mod].append(r)
    app_ids = {r["id"] for m in FILE_MODULES for r in app.get(m, [])}
    dxt = {mod: [d for d in recs if d["id"] in app_ids] for mod, recs in raw["dxt"].items()}
    posix = app.get("POSIX", [])
    dxt_posix = dxt.get("DXT_POSIX")

    requests = {"small_bytes": thresholds.small_request_bytes, "tiny_bytes": thresholds.tiny_request_bytes}
    for op in sizes.OPS:
        requests[op] = {kind: sizes.share_below(posix, dxt_posix, op, cutoff) for kind, cutoff in
                        (("small", thresholds.small_request_bytes), ("tiny", thresholds.tiny_request_bytes))}

    shared = aggregators.shared_files({m: app.get(m, []) for m in ("POSIX", "MPI-IO")}, dxt, names, nprocs)
    written_shared = [f for f in shared if aggregators.is_written(f)]
    lustre, lustre_totals = layouts.layouts([r for r in raw["lustre"] if r["id"] in app_ids], names)
    excluded_records = [r for recs in skipped.values() for r in recs]
    fs_types: dict = {}
    for rid in app_ids:
        kind = _mount_type(names.get(rid, ""), raw["mounts"]) or "unknown"
        fs_types[kind] = fs_types.get(kind, 0) + 1

    return {
        "status": "ok",
        "log": log,
        "darshan_version": raw["job"]["metadata"].get("lib_ver"),
        "log_format": raw["job"]["log_ver"],
        "reader": raw["reader"],
        "nprocs": nprocs,
        "jobid": raw["job"]["jobid"],
        "runtime_s": raw["job"]["run_time"],
        "exe": raw["job"]["exe"],
        # Hints Darshan used to write its own log (DARSHAN_LOGHINTS), not the application's.
        "darshan_log_hints": raw["job"]["metadata"].get("h"),
        "modules": {mod: module_totals(mod, recs) for mod, recs in app.items()},
        "log_modules": raw["modules"],
        "partial_modules": sorted(m for m, info in raw["modules"].items() if info["partial"]),
        "dxt": {"posix": "DXT_POSIX" in raw["dxt"], "mpiio": "DXT_MPIIO" in raw["dxt"]},
        "access_sizes": {op: sizes.histogram(posix, "POSIX_SIZE_", op) for op in sizes.OPS},
        "request_sizes": requests,
        "small_write_pct": requests["write"]["small"]["pct"],
        "small_read_pct": requests["read"]["small"]["pct"],
        "tiny_write_pct": requests["write"]["tiny"]["pct"],
        "tiny_read_pct": requests["read"]["tiny"]["pct"],
        "unaligned": unaligned(posix),
        "mpiio": mpiio_summary(app["MPI-IO"]) if "MPI-IO" in app else None,
        "files": len(app_ids),
        "file_systems": fs_types,
        "excluded": {"files": len({r["id"] for r in excluded_records}),
                     "bytes_written": _sum(excluded_records, ("POSIX_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN")),
                     "bytes_read": _sum(excluded_records, ("POSIX_BYTES_READ", "STDIO_BYTES_READ")),
                     "by_reason": {k: len({r["id"] for r in v}) for k, v in sorted(skipped.items())}},
        "shared_files": written_shared[:MAX_FILES],
        "shared_files_written": len(written_shared),
        "shared_files_read_only": len(shared) - len(written_shared),
        "aggregators": aggregators.observed(shared),
        "hosts": aggregators.hosts(posix, dxt_posix),
        "lustre": lustre,
        "lustre_totals": lustre_totals,
        "warnings": _warnings(raw),
    }


def summarize(log_path: str | os.PathLike, thresholds: Thresholds = THRESHOLDS,
              timeout_s: float = TIMEOUT_S, own_files=()) -> dict:
    """Summarise one Darshan log. Never raises for a bad log; raises IolabError without PyDarshan.
    own_files: absolute paths of iolab's own files, left out like the MPI library's (EXCLUDE).

    Unreadable (missing, empty, truncated, corrupt, written by a newer Darshan, reader crash):
        {"status": "unreadable", "log", "reason"}
    Readable, totals over the application's files only (see EXCLUDE):
        {"status": "ok", "log", "darshan_version" (runtime that wrote it), "log_format",
         "reader": {"pydarshan", "darshan_util"}, "nprocs", "jobid", "runtime_s", "exe",
         "darshan_log_hints",
         "modules": {MOD: {"records", "files", "bytes_read", "bytes_written", "reads", "writes",
                           "opens", "seeks"/"stats"/"fsyncs"/"flushes"/"syncs" where the module has
                           them, "read_time_s", "write_time_s", "io_time_s" (read+write),
                           "meta_time_s"}}  (times summed over ranks),
         "log_modules": {MOD: {"version", "partial", "records", "read"}}, "partial_modules": [...],
         "dxt": {"posix": bool, "mpiio": bool},
         "access_sizes": {"write"|"read": {Darshan bin "0_100".."1G_PLUS": POSIX requests}},
         "request_sizes": {"small_bytes", "tiny_bytes", "write"|"read": {"small"|"tiny":
                           sizes.share_below(...)}},
         "small_write_pct", "small_read_pct", "tiny_write_pct", "tiny_read_pct": % or None,
         "unaligned": {"requests", "file_not_aligned", "mem_not_aligned", "file_not_aligned_pct",
                       "mem_not_aligned_pct", "file_alignment_bytes", "mem_alignment_bytes"},
         "mpiio": None | {"coll_writes", "indep_writes", "split_writes", "nb_writes", (same for
                  reads), "coll_opens", "indep_opens", "syncs", "set_views", "hint_calls",
                  "bytes_written", "bytes_read", "write_time_s", "read_time_s", "meta_time_s",
                  "access_sizes": {"write"|"read": {bin: MPI-IO calls}}},
         "files": N, "file_systems": {fs type: files},
         "excluded": {"files", "bytes_written", "bytes_read", "by_reason": {reason: files}},
         "shared_files": [{"path", "bytes_written", "writer_ranks": N | "unknown",
                           "writer_ranks_source", ["writer_ranks_bounds", "why"],
                           ["mpiio_writer_ranks"], "rank_times": {"fastest_s", "slowest_s",
                           "total_s"} (None: a file POSIX never saw)}]
                          (written ones, largest first, at most 64),
         "shared_files_written", "shared_files_read_only",
         "aggregators": {"observed", "written_shared_files", "unknown_files", "reason"},
         "hosts": {"write"|"read": {"hosts": N | None, "names": [...], "why"}}  (from DXT),
         "lustre": [{"path", "stripe_count", "stripe_size", "stripe_offset", "pool", "osts",
                     "components": N, "layout_components": [...]}]  (at most 64, by path),
         "lustre_totals": {"files", "layouts": [{"stripe_count", "stripe_size", "pool", "files"}],
                           "osts"},
         "warnings": [...]}
    """
    log = str(log_path)
    try:
        raw = read_raw(log_path, timeout_s=timeout_s)
    except Unreadable as exc:
        return {"status": "unreadable", "log": log, "reason": str(exc)}
    return build(raw, log, thresholds, own_files)
