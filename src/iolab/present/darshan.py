"""What `iolab darshan` shows: the summary and findings of any Darshan logs (production jobs'
too), or of the Darshan data a run recorded per case and repetition, with a job-summary page
per log on request."""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..errors import IolabError
from ..layers import darshan
from . import darshan_logs as view
from ..results.run import Run
from ..results.upgrade import names_case


def of_logs(targets: list[str], out_dir: Path | None, warn) -> tuple[list[dict], int]:
    """Every log shown; one that cannot be read is said through `warn` (one line) and makes the
    status 1."""
    shown = []
    status = 0
    for target in targets:
        summary = darshan.summarize(target)
        found = darshan.findings(summary, {}) if summary["status"] == "ok" else []
        shown.append({"log": target, "summary": summary, "findings": found})
        if summary["status"] != "ok":
            warn(f"iolab: error: {target}: {summary['status']}: {summary.get('reason')}")
            status = 1
        elif out_dir:
            shown[-1]["html"] = str(darshan.html_report(target, out_dir))
    return shown, status


def of_run(run: Run, case: str | None, out_dir: Path | None) -> list[dict]:
    """The Darshan data of a run's records (of the cases `case` names, a case id or a prefix)."""
    recs = [r for r in run.records if r.observed.get("darshan")
            and (case is None or names_case(case, r.case_id))]
    if not recs:
        raise IolabError(f"run {run.run_id} has no Darshan data"
                         + (f" for case {case}" if case else ""),
                         hint="enable it with darshan: {enabled: true} or IOLAB_DARSHAN=1")
    with tempfile.TemporaryDirectory(prefix="iolab-darshan-") as scratch:   # gunzipped logs
        work = Path(scratch)
        shown = []
        for rec in recs:
            dar = rec.observed.get("darshan")
            item = {"case_id": rec.case_id, "repetition": rec.repetition,
                    "summary": dar.get("summary") or {"status": dar["status"], "reason": dar.get("reason")},
                    "findings": dar.get("findings", []), "aggregators": dar.get("aggregators")}
            log = view.stored_log(run, rec) if out_dir else None     # read only for a page
            if log is not None and dar.get("status") == "ok":
                item["html"] = str(darshan.html_report(view.readable_copy(log, work),
                                                       out_dir / f"{rec.case_id}-rep{rec.repetition}"))
            shown.append(item)
    return shown


def render(shown: list[dict]) -> list[str]:
    """Each log or record as text, and where its job-summary page is."""
    out = []
    for item in shown:
        title = item.get("log") or f"case {item['case_id']} rep {item['repetition']}"
        out.append(view.render(title, item["summary"], item["findings"], item.get("aggregators")))
        if item.get("html"):
            out.append(f"   job summary: {item['html']}")
    return out
