"""What `iolab darshan` shows: the summary and findings of any Darshan logs (production jobs'
too), or of the Darshan data a run recorded per case and repetition, with a job-summary page
per log on request; and the stored logs of a results run."""

from __future__ import annotations

import gzip
import shutil
import tempfile
from pathlib import Path

from ...errors import IolabError
from ...units import format_bytes_human
from .findings import findings
from .page import html_report
from .preload import LOG, OBSERVED
from .summary import summarize

LOG_NAMES = (LOG, LOG + ".gz")
MAX_LOG_BYTES = 4 << 30     # a case's stored Darshan log (DXT traces make them large)


def of_logs(targets: list[str], out_dir: Path | None, warn) -> tuple[list[dict], int]:
    """Every log shown; one that cannot be read is said through `warn` (one line) and makes the
    status 1."""
    shown = []
    status = 0
    for target in targets:
        summary = summarize(target)
        found = findings(summary, {}) if summary["status"] == "ok" else []
        shown.append({"log": target, "summary": summary, "findings": found})
        if summary["status"] != "ok":
            warn(f"iolab: error: {target}: {summary['status']}: {summary.get('reason')}")
            status = 1
        elif out_dir:
            shown[-1]["html"] = str(html_report(target, out_dir))
    return shown, status


def of_run(run, case: str | None, out_dir: Path | None, services) -> list[dict]:
    """The Darshan data of a run's records (results.run.Run; of the cases `case` names, a case
    id or a prefix, as services.names_case(given, recorded) says)."""
    names_case = services.names_case
    recs = [r for r in run.records if r.observed.get(OBSERVED)
            and (case is None or names_case(case, r.case_id))]
    if not recs:
        raise IolabError(f"run {run.run_id} has no Darshan data"
                         + (f" for case {case}" if case else ""),
                         hint="enable it with darshan: {enabled: true} or IOLAB_DARSHAN=1")
    with tempfile.TemporaryDirectory(prefix="iolab-darshan-") as scratch:   # gunzipped logs
        work = Path(scratch)
        shown = []
        for rec in recs:
            dar = rec.observed.get(OBSERVED)
            item = {"case_id": rec.case_id, "repetition": rec.repetition,
                    "summary": dar.get("summary") or {"status": dar["status"], "reason": dar.get("reason")},
                    "findings": dar.get("findings", []), "aggregators": dar.get("aggregators")}
            log = stored_log(services.raw_file, run, rec) if out_dir else None  # only for a page
            if log is not None and dar.get("status") == "ok":
                item["html"] = str(html_report(readable_copy(log, work),
                                               out_dir / f"{rec.case_id}-rep{rec.repetition}"))
            shown.append(item)
    return shown


def render(shown: list[dict]) -> list[str]:
    """Each log or record as text, and where its job-summary page is."""
    out = []
    for item in shown:
        title = item.get("log") or f"case {item['case_id']} rep {item['repetition']}"
        out.append(render_one(title, item["summary"], item["findings"], item.get("aggregators")))
        if item.get("html"):
            out.append(f"   job summary: {item['html']}")
    return out


def render_one(title: str, summary: dict, found: list[dict], aggregators: dict | None = None) -> str:
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


def stored_log(raw_file, run, record) -> Path | None:
    """The Darshan log stored with a record of a run (results.run.Run), if any: a regular file
    inside the run (a FIFO or a device in its place is refused, never read; raw_file: results.run's,
    lent by the CLI)."""
    return raw_file(run, record, LOG_NAMES, MAX_LOG_BYTES)


def readable_copy(log: Path, workdir: Path) -> Path:
    """A stored log as PyDarshan can read it (gunzipped into workdir when compressed)."""
    if log.suffix != ".gz":
        return log
    out = workdir / log.stem
    with gzip.open(log, "rb") as fin, open(out, "wb") as fout:
        shutil.copyfileobj(fin, fout)
    return out

