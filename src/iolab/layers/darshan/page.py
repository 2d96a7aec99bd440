"""PyDarshan's own job summary page (`python -m darshan summary LOG --output F`) for one log."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from ...errors import IolabError
from .reader import INSTALL_HINT, TIMEOUT_S, Unreadable, crash_reason, explain, reader_errors, run_child


def page_name(log_path: str | os.PathLike) -> str:
    """PyDarshan's default name: <log name without .darshan>_report.html."""
    return f"{Path(log_path).name.removesuffix('.darshan')}_report.html"


def html_report(log_path: str | os.PathLike, out_dir: str | os.PathLike,
                timeout_s: float = TIMEOUT_S) -> Path:
    """Write the job summary page for `log_path` into `out_dir`; return its path.

    Raises IolabError when PyDarshan is missing, crashes, or reports errors reading the log
    (then it may have drawn a page from part of the records: none is left behind).
    """
    log = Path(log_path)
    if not log.is_file():
        raise IolabError("no such Darshan log", file=str(log))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / page_name(log)
    # Written under a temporary name in out_dir, then renamed: a failed run leaves no page.
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".iolab-darshan-") as work:
        tmp = Path(work) / target.name
        argv = [sys.executable, "-m", "darshan", "summary", str(log.resolve()), "--output", str(tmp)]
        try:
            proc = run_child(argv, timeout_s=timeout_s, cwd=work)
        except Unreadable as exc:
            raise IolabError(f"PyDarshan summary: {exc}", file=str(log)) from None
        if "No module named darshan" in proc.stderr:
            raise IolabError("PyDarshan is not installed", file=str(log), hint=INSTALL_HINT)
        errors = reader_errors(proc.stderr)
        if proc.returncode != 0:
            raise IolabError(f"PyDarshan summary failed: {crash_reason(proc.returncode, proc.stderr)}",
                             file=str(log))
        if errors:
            raise IolabError(f"PyDarshan summary read the log with errors: {explain(errors)}", file=str(log))
        if not tmp.is_file():
            raise IolabError("PyDarshan summary wrote no page", file=str(log))
        os.replace(tmp, target)
    return target
