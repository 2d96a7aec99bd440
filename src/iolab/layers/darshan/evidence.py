"""What a case's Darshan summary says that may explain its result (issue 39): bytes and calls,
request sizes, alignment, metadata time, collective against independent MPI-IO, the ranks and
hosts that wrote, the fastest and slowest rank on a shared file. Read from the summary a record
holds (summary.py), never from the log again; what the summary does not keep (sequential
counts, DXT timings), or an older summary did not, is
declared all the same and given as not recorded, with why, so a reader learns how to get it.
"""

from __future__ import annotations

from ..base import EvidenceSpec, NotRecorded, all_missing, gather
from .columns import _meta_pct
from .preload import OBSERVED

SOURCE = OBSERVED
NO_MPIIO = "the log has no MPI-IO records (no MPI-IO calls, or Darshan's MPI-IO module was off)"
NOT_KEPT = "the Darshan summary iolab records keeps no {what}"


def _posix(s: dict) -> dict:
    posix = s["modules"].get("POSIX")
    if posix is None:
        raise NotRecorded("Darshan saw no POSIX I/O to the application's files")
    return posix


def _field(name: str):
    return lambda s: _posix(s)[name]


def _mean_size(op: str):
    def read(s: dict):
        posix = _posix(s)
        calls = posix[f"{op}s"]
        if not calls:
            raise NotRecorded(f"no POSIX {op}s")
        return posix[f"bytes_{'written' if op == 'write' else 'read'}"] / calls
    return read


def _share(op: str, kind: str):
    def read(s: dict):
        share = s["request_sizes"][op][kind]
        if not share["requests"]:
            raise NotRecorded(f"no POSIX {op}s")
        if share["pct"] is None:
            lo, hi = share["pct_range"]
            raise NotRecorded(f"uncertain: between {lo:.3g}% and {hi:.3g}% (a size bin of Darshan's "
                              "histogram holds the cutoff; DXT makes it exact)")
        return share["pct"]
    return read


def _unaligned(s: dict):
    u = s["unaligned"]
    if not u["requests"]:
        raise NotRecorded("no POSIX reads or writes")
    return u["file_not_aligned_pct"]


def _meta_share(s: dict):
    _posix(s)
    value = _meta_pct(s)
    if value is None:
        raise NotRecorded("no POSIX time was measured")
    return value


def _mpiio(s: dict) -> dict:
    if s["mpiio"] is None:
        raise NotRecorded(NO_MPIIO)
    return s["mpiio"]


def _mpiio_writes(kinds: tuple[str, ...]):
    return lambda s: sum(_mpiio(s)[f"{k}_writes"] for k in kinds)


def _collective_share(s: dict):
    m = _mpiio(s)
    coll = m["coll_writes"] + m["split_writes"]
    total = coll + m["indep_writes"] + m["nb_writes"]
    if not total:
        raise NotRecorded("no MPI-IO writes")
    return 100.0 * coll / total


def _writers(s: dict):
    agg = s["aggregators"]
    if agg["observed"] is None:
        raise NotRecorded(agg["reason"] or "no shared file's writer ranks are known")
    return agg["observed"]


def _rank_times(s: dict) -> dict:
    """The per-rank times of the largest written shared file (summary's shared_files[0])."""
    files = s["shared_files"]
    if not files:
        raise NotRecorded("no shared file was written")
    if "rank_times" not in files[0]:
        raise NotRecorded("this record's Darshan summary was made before iolab kept per-rank times")
    if files[0]["rank_times"] is None:
        raise NotRecorded("Darshan's POSIX module never saw the largest shared file (MPI-IO's only)")
    return files[0]["rank_times"]


def _rank_time(which: str):
    return lambda s: _rank_times(s)[f"{which}_s"]


def _rank_spread(s: dict):
    t = _rank_times(s)
    if not t["fastest_s"]:
        raise NotRecorded("the fastest rank spent no time on the shared file")
    return t["slowest_s"] / t["fastest_s"]


def _rank_imbalance(s: dict):
    t = _rank_times(s)
    if not t["total_s"]:
        raise NotRecorded("no time was spent on the shared file")
    return 100.0 * (t["slowest_s"] - t["fastest_s"]) / t["total_s"]


def _hosts(op: str):
    def read(s: dict):
        if "hosts" not in s:
            raise NotRecorded("this record's Darshan summary was made before iolab kept the hosts "
                              "DXT names")
        got = s["hosts"][op]
        if got["hosts"] is None:
            raise NotRecorded(got["why"])
        return got["hosts"]
    return read


def _not_kept(what: str):
    def read(s: dict):
        raise NotRecorded(NOT_KEPT.format(what=what))
    return read


def _spec(name, unit, help, kind, read) -> EvidenceSpec:
    return EvidenceSpec(name, unit, SOURCE, help, kind, read)


SPECS = (
    _spec("bytes_written", "B", "bytes written through POSIX to the application's files", "bytes",
          _field("bytes_written")),
    _spec("bytes_read", "B", "bytes read through POSIX from the application's files", "bytes",
          _field("bytes_read")),
    _spec("write_ops", "count", "POSIX write calls", "count", _field("writes")),
    _spec("read_ops", "count", "POSIX read calls", "count", _field("reads")),
    _spec("mean_write_size", "B", "bytes written per POSIX write call", "bytes", _mean_size("write")),
    _spec("mean_read_size", "B", "bytes read per POSIX read call", "bytes", _mean_size("read")),
    _spec("small_write_share", "%", "POSIX writes under 1 MiB (Darshan's histogram, DXT where "
          "traced)", "share", _share("write", "small")),
    _spec("small_read_share", "%", "POSIX reads under 1 MiB", "share", _share("read", "small")),
    _spec("tiny_write_share", "%", "POSIX writes under 64 KiB", "share", _share("write", "tiny")),
    _spec("unaligned_share", "%", "POSIX requests not aligned to the file alignment", "share",
          _unaligned),
    _spec("write_time", "s", "POSIX write time, summed over ranks", "time", _field("write_time_s")),
    _spec("meta_time", "s", "POSIX metadata time (open, stat, seek...), summed over ranks", "time",
          _field("meta_time_s")),
    _spec("meta_time_share", "%", "metadata share of POSIX I/O time", "time_share", _meta_share),
    _spec("collective_writes", "count", "collective MPI-IO write calls (split included)", "count",
          _mpiio_writes(("coll", "split"))),
    _spec("independent_writes", "count", "independent MPI-IO write calls (nonblocking included)",
          "count", _mpiio_writes(("indep", "nb"))),
    _spec("collective_write_share", "%", "collective share of the MPI-IO write calls", "share",
          _collective_share),
    _spec("aggregators_that_wrote", "ranks", "most ranks that wrote one shared file (DXT, per-rank "
          "records or the shared record's bounds)", "count", _writers),
    _spec("hosts_that_wrote", "hosts", "distinct hosts whose ranks issued POSIX writes (DXT)",
          "count", _hosts("write")),
    _spec("hosts_that_read", "hosts", "distinct hosts whose ranks issued POSIX reads (DXT)",
          "count", _hosts("read")),
    _spec("shared_files_written", "count", "written files that more than one rank opened", "count",
          lambda s: s["shared_files_written"]),
    _spec("fastest_rank_time", "s", "I/O time (read, write, metadata) of the fastest rank on the "
          "largest written shared file", "time", _rank_time("fastest")),
    _spec("slowest_rank_time", "s", "the same of its slowest rank", "job_time", _rank_time("slowest")),
    _spec("rank_time_spread", "ratio", "slowest over fastest rank's I/O time on that file", "ratio",
          _rank_spread),
    _spec("rank_time_imbalance", "%", "slowest minus fastest rank's I/O time over all its ranks' "
          "(Drishti's stragglers measure)", "share", _rank_imbalance),
    _spec("sequential_write_share", "%", "POSIX writes after the previous one's offset", "share",
          _not_kept("sequential or consecutive counts")),
    _spec("consecutive_write_share", "%", "POSIX writes right where the previous one ended",
          "share", _not_kept("sequential or consecutive counts")),
    _spec("rank_time_overlap", "%", "time the ranks' writes overlap (DXT)", "share",
          _not_kept("DXT segment times")),
)


def evidence(observed) -> list:
    """Every spec's evidence from the record's Darshan part."""
    dar = observed.get(OBSERVED)
    if not isinstance(dar, dict) or not dar:
        return all_missing(SPECS, "Darshan was not enabled")
    status = dar.get("status")
    if status == "not available":
        return all_missing(SPECS, f"Darshan requested but not run: {dar.get('reason')}")
    if status != "ok":
        return all_missing(SPECS, f"Darshan log {status or 'of unknown status'}: "
                                  f"{dar.get('reason') or 'no reason recorded'}")
    summary = dar.get("summary")
    if not isinstance(summary, dict) or summary.get("status") != "ok":
        return all_missing(SPECS, "the Darshan part holds no readable summary")
    return gather(SPECS, summary, "the Darshan summary")
