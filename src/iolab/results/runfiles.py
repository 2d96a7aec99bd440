"""Where runs live and what a run directory holds by name: shared by the results store and the
cache (which must never be put inside either), without one importing the other."""

from __future__ import annotations

import os
from pathlib import Path

RECORDS = "records.jsonl"
MANIFEST = "manifest.json"


def results_root(project_root: Path) -> Path:
    return Path(os.environ.get("IOLAB_RESULTS", project_root / "results"))
