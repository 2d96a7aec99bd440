"""Text views of Darshan summaries for `iolab darshan`, and the stored logs of a results run."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from ..units import format_bytes_human

LOG_NAMES = ("darshan.log", "darshan.log.gz")


def render(title: str, summary: dict, found: list[dict], aggregators: dict | None = None) -> str:
    lines = [f"== {title}"]
    if summary.get("status") != "ok":
        lines.append(f"   unreadable: {summary.get('reason')}")
        return "\n".join(lines)
    lines.append(f"   Darshan {summary.get('darshan_version')} · {summary.get('nprocs')} processes · "
                 f"{summary.get('runtime_s', 0):.2f} s · {summary.get('files')} files")
    for mod, m in (summary.get("modules") or {}).items():
        lines.append(f"   {mod:13} written {format_bytes_human(m.get('bytes_written') or 0):>10}  "
                     f"read {format_bytes_human(m.get('bytes_read') or 0):>10}  "
                     f"I/O {m.get('io_time_s', 0):.3f} s  meta {m.get('meta_time_s', 0):.3f} s")
    mpiio = summary.get("mpiio")
    if mpiio:
        lines.append(f"   MPI-IO writes: {mpiio.get('coll_writes')} collective, "
                     f"{mpiio.get('indep_writes')} independent")
    if aggregators and aggregators.get("observed") is not None:
        verdict = aggregators.get("verdict")
        lines.append(f"   aggregators: {aggregators['observed']} ranks wrote the shared file "
                     f"(requested cb_nodes: {aggregators.get('requested')})"
                     + (f": {verdict}" if verdict else ""))
    for f in found:
        lines.append(f"   * {f['text']}")
    if not found:
        lines.append("   (no findings)")
    return "\n".join(lines)


def stored_log(run, record) -> Path | None:
    """The Darshan log stored with a record of a run (results.run.Run), if any: a regular file
    inside the run (a FIFO or a device in its place is refused, never read)."""
    from ..results.files import MAX_DARSHAN_LOG_BYTES
    from ..results.run import raw_file

    return raw_file(run, record, LOG_NAMES, MAX_DARSHAN_LOG_BYTES)


def readable_copy(log: Path, workdir: Path) -> Path:
    """A stored log as PyDarshan can read it (gunzipped into workdir when compressed)."""
    if log.suffix != ".gz":
        return log
    out = workdir / log.stem
    with gzip.open(log, "rb") as fin, open(out, "wb") as fout:
        shutil.copyfileobj(fin, fout)
    return out

