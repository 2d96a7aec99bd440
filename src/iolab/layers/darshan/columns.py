"""Table columns from summaries, as asked for with `--darshan small_write_pct,agg_ranks,...`.

COLUMNS is the one list of names: each has a unit and reads one number from a summary. A value
the log cannot give (no MPI-IO module, an uncertain share, an unreadable log) is None, never 0.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import NamedTuple

from ...errors import IolabError


class Column(NamedTuple):
    unit: str
    help: str
    get: Callable[[dict], object]


def _module(mod: str, field: str) -> Callable[[dict], object]:
    return lambda s: (s["modules"].get(mod) or {}).get(field)


def _mpiio(field: str) -> Callable[[dict], object]:
    return lambda s: (s["mpiio"] or {}).get(field)


def _meta_pct(s: dict) -> float | None:
    posix = s["modules"].get("POSIX")
    if not posix or not posix["meta_time_s"] + posix["io_time_s"]:
        return None
    return 100.0 * posix["meta_time_s"] / (posix["meta_time_s"] + posix["io_time_s"])


def _one_layout(key: str) -> Callable[[dict], object]:
    """The application files' stripe setting, when they all share one; else None."""
    def get(s: dict):
        values = {lay[key] for lay in s["lustre_totals"]["layouts"]}
        return values.pop() if len(values) == 1 else None
    return get


COLUMNS: dict[str, Column] = {
    "small_write_pct": Column("%", "POSIX write requests under the small cutoff (1 MiB)",
                              lambda s: s["small_write_pct"]),
    "small_read_pct": Column("%", "POSIX read requests under the small cutoff (1 MiB)",
                             lambda s: s["small_read_pct"]),
    "tiny_write_pct": Column("%", "POSIX write requests under the tiny cutoff (64 KiB)",
                             lambda s: s["tiny_write_pct"]),
    "tiny_read_pct": Column("%", "POSIX read requests under the tiny cutoff (64 KiB)",
                            lambda s: s["tiny_read_pct"]),
    "agg_ranks": Column("ranks", "observed aggregators: most ranks writing one shared file",
                        lambda s: s["aggregators"]["observed"]),
    "posix_write_time": Column("s", "POSIX write time, summed over ranks", _module("POSIX", "write_time_s")),
    "posix_read_time": Column("s", "POSIX read time, summed over ranks", _module("POSIX", "read_time_s")),
    "posix_meta_time": Column("s", "POSIX metadata time, summed over ranks", _module("POSIX", "meta_time_s")),
    "posix_bytes_written": Column("B", "bytes written through POSIX", _module("POSIX", "bytes_written")),
    "posix_bytes_read": Column("B", "bytes read through POSIX", _module("POSIX", "bytes_read")),
    "posix_writes": Column("count", "POSIX write calls", _module("POSIX", "writes")),
    "posix_reads": Column("count", "POSIX read calls", _module("POSIX", "reads")),
    "posix_opens": Column("count", "POSIX opens", _module("POSIX", "opens")),
    "posix_seeks": Column("count", "POSIX seeks", _module("POSIX", "seeks")),
    "posix_stats": Column("count", "POSIX stats", _module("POSIX", "stats")),
    "meta_time_pct": Column("%", "metadata share of POSIX I/O time", _meta_pct),
    "unaligned_pct": Column("%", "POSIX requests not aligned to the file alignment",
                            lambda s: s["unaligned"]["file_not_aligned_pct"]),
    "mpiio_coll_writes": Column("count", "collective MPI-IO writes", _mpiio("coll_writes")),
    "mpiio_indep_writes": Column("count", "independent MPI-IO writes", _mpiio("indep_writes")),
    "mpiio_coll_reads": Column("count", "collective MPI-IO reads", _mpiio("coll_reads")),
    "mpiio_indep_reads": Column("count", "independent MPI-IO reads", _mpiio("indep_reads")),
    "mpiio_bytes_written": Column("B", "bytes written through MPI-IO", _mpiio("bytes_written")),
    "mpiio_write_time": Column("s", "MPI-IO write time, summed over ranks", _mpiio("write_time_s")),
    "files": Column("count", "application files (MPI internals and std streams excluded)",
                    lambda s: s["files"]),
    "shared_files": Column("count", "written files that more than one rank opened",
                           lambda s: s["shared_files_written"]),
    "stripe_count": Column("OSTs", "Lustre stripe count (Darshan), if all files share one",
                           _one_layout("stripe_count")),
    "stripe_size": Column("B", "Lustre stripe size (Darshan), if all files share one",
                          _one_layout("stripe_size")),
    "runtime": Column("s", "job run time Darshan measured", lambda s: s["runtime_s"]),
}


def _unknown(name: str) -> IolabError:
    close = difflib.get_close_matches(name, COLUMNS, n=3)
    hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(COLUMNS)}"
    return IolabError(f"unknown Darshan column {name!r}", key="--darshan", hint=hint)


def parse_columns(spec: str) -> list[str]:
    """"small_write_pct, agg_ranks" -> ["small_write_pct", "agg_ranks"]; IolabError on a bad name."""
    names = [n.strip() for n in spec.split(",") if n.strip()]
    for name in names:
        if name not in COLUMNS:
            raise _unknown(name)
    return names


def column(summary: dict, name: str):
    """The value of column `name` (unit: COLUMNS[name].unit) for one summary, or None."""
    if name not in COLUMNS:
        raise _unknown(name)
    if summary.get("status") != "ok":
        return None
    return COLUMNS[name].get(summary)
