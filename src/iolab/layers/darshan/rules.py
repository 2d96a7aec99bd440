"""Drishti's triggers as rules of thumb (layers/rule.py) on a case's Darshan evidence: small
requests, misaligned requests, no collective writes to a shared file, stragglers on a shared
file, and metadata time.

The thresholds are Drishti's own, read from its source (hpc-io/drishti-io at 4493988, 2025-08-11):
`thresholds` in drishti/includes/config.py, set against the counters as
drishti/handlers/handle_darshan.py computes them and drishti/includes/module.py compares them.
Where the summary iolab keeps cannot give Drishti's exact quantity, the rule says which it uses
instead (metadata time: a share, where Drishti counts ranks over 30 s).
"""

from __future__ import annotations

from ..rule import Clear, Finding, Limit, Rule
from .findings import THRESHOLDS

DRISHTI = "Drishti (hpc-io/drishti-io at 4493988), drishti/includes/config.py `thresholds`"
NEEDS = "Darshan's counters of the case: run with darshan: {enabled: true}"
MIB = 1 << 20


def _small(op: str):
    plural = f"{op}s"

    def test(v, rule):
        calls = v(f"{op}_ops")
        if not calls:
            return Clear(f"no POSIX {plural}")
        share = v(f"small_{op}_share")
        small = round(share * calls / 100)
        what = f"{share:.3g}% of {calls:.0f} POSIX {plural} are under 1 MiB ({small} requests)"
        if share > rule.limit("share") and small > rule.limit("requests"):
            return Finding(what)
        return Clear(what)
    return test


def _misaligned(v, rule):
    if not v("write_ops") + v("read_ops"):
        return Clear("no POSIX reads or writes")
    share = v("unaligned_share")
    what = f"{share:.3g}% of POSIX requests are not aligned to the file alignment"
    return Finding(what) if share > rule.limit("share") else Clear(what)


def _no_collective(v, rule):
    if not v("shared_files_written"):
        return Clear("no shared file was written")
    coll, indep = v("collective_writes"), v("independent_writes")
    if coll:
        return Clear(f"{coll:.0f} of the {coll + indep:.0f} MPI-IO writes were collective")
    what = f"none of the {indep:.0f} MPI-IO writes to a shared file was collective"
    return Finding(what) if indep > rule.limit("writes") else Clear(
        f"{what}, but {indep:.0f} is not over Drishti's {rule.limit('writes'):.0f}")


def _stragglers(v, rule):
    if not v("shared_files_written"):
        return Clear("no shared file was written")
    share = v("rank_time_imbalance")
    what = (f"the slowest rank spent {share:.3g}% of the shared file's I/O time (all ranks') more "
            "than the fastest")
    return Finding(what) if share > rule.limit("share") else Clear(what)


def _metadata(v, rule):
    share = v("meta_time_share")
    what = f"metadata took {share:.3g}% of the POSIX I/O time"
    return Finding(what) if share >= rule.limit("share") else Clear(what)


RULES = (
    *(Rule(f"small_{op}s", f"small {op}s", f"{DRISHTI}: small_bytes, small_requests, "
           f"small_requests_absolute; module.py check_small_operation (insight {insight})",
           (Limit("share", 10.0, "%", f"share of POSIX {op}s under 1 MiB, above it"),
            Limit("requests", 1000, "requests", f"and more small {op}s than this")),
           NEEDS, f"many POSIX {op}s under 1 MiB: each costs a round trip of its own (1 MiB is "
           "Lustre's default stripe and RPC size)", _small(op))
      for op, insight in (("write", "P06"), ("read", "P05"))),
    Rule("misaligned_requests", "misaligned requests", f"{DRISHTI}: misaligned_requests; "
         "module.py check_misaligned (insight P08)",
         (Limit("share", 10.0, "%", "share of POSIX requests whose offset is not a multiple of "
                "the file alignment Darshan read (the file system's block size), above it"),),
         NEEDS, "requests that start off the file system's alignment: a request may span two "
         "blocks or stripes", _misaligned),
    Rule("no_collective_writes", "no collective writes to a shared file", f"{DRISHTI}: "
         "collective_operations_absolute; handle_darshan.py and module.py "
         "check_mpi_collective_write_operation (insight M03)",
         (Limit("writes", 1000, "calls", "independent MPI-IO writes, above it, and no collective "
                "one"),),
         NEEDS, "a shared file written through MPI-IO with independent calls only: collective "
         "buffering cannot gather the ranks' pieces into large requests", _no_collective),
    Rule("rank_stragglers", "slow ranks on a shared file", f"{DRISHTI}: imbalance_stragglers; "
         "handle_darshan.py (POSIX_F_SLOWEST_RANK_TIME - POSIX_F_FASTEST_RANK_TIME over the "
         "file's read, write and metadata time), module.py check_shared_time_imbalance (P19)",
         (Limit("share", 15.0, "%", "slowest minus fastest rank's time over all ranks' time on "
                "the largest written shared file, above it"),),
         NEEDS + " (records from before per-rank times were kept cannot be checked)",
         "one rank's I/O on a shared file takes much longer than another's, so the rest wait "
         "for it. Drishti divides the gap by every rank's time together, so on many ranks only "
         "a large gap counts; with collective buffering the aggregators do the POSIX I/O, and "
         "a gap is by design", _stragglers),
    Rule("metadata_time", "metadata time", "iolab's Darshan findings (layers/darshan/findings.py "
         "Thresholds.meta_time_pct); Drishti's metadata_time_rank (insight P17) counts ranks "
         "whose POSIX metadata time is over 30 s, which needs per-rank metadata times iolab's "
         "summary does not keep",
         (Limit("share", THRESHOLDS.meta_time_pct, "%", "metadata share of POSIX I/O time, at "
                "least"),),
         NEEDS, "opens, stats, seeks and closes take a large share of the POSIX time: the "
         "metadata server, not the data path, sets the pace", _metadata),
)
