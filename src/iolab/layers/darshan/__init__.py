"""Darshan logs -> per-case summaries, observed aggregators, Lustre layouts and findings.

    summary = summarize(log)                  # {"status": "ok", ...} | {"status": "unreadable", "reason"}
    observed_aggregators(summary, cb_nodes)   # {"requested", "observed", "differs", ...}
    lustre_layouts(summary)                   # parse_getstripe's shape, for lustre.compare_layout
    findings(summary, {"collective": True, "cb_nodes": 2, "api": "MPIIO"})
    column(summary, "small_write_pct")        # COLUMNS: names and units for tables
    html_report(log, out_dir)                 # PyDarshan's job summary page

PyDarshan reads the logs, in a child process (reader.py says why). Keep it at the release of the
darshan-runtime that wrote them: libdarshan-util reads older log formats, not newer ones.
Layout: reader/_read (the child), sizes, aggregators, layouts, summary, findings, columns, page.
"""

from .aggregators import observed_aggregators
from .columns import COLUMNS, column, parse_columns
from .findings import RULES, THRESHOLDS, Thresholds, findings
from .layouts import lustre_layouts
from .page import html_report
from .summary import summarize

__all__ = ["COLUMNS", "RULES", "THRESHOLDS", "Thresholds", "column", "findings", "html_report",
           "lustre_layouts", "observed_aggregators", "parse_columns", "summarize"]
