"""Comparing output with the files in tests/golden/expected/ (IOLAB_UPDATE_GOLDEN=1 rewrites them)."""

from __future__ import annotations

import os
from pathlib import Path

EXPECTED = Path(__file__).parent / "expected"
UPDATE = os.environ.get("IOLAB_UPDATE_GOLDEN") == "1"


def check_golden(name: str, text: str) -> None:
    path = EXPECTED / name
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"{path} missing: run with IOLAB_UPDATE_GOLDEN=1"
    assert text == path.read_text()
