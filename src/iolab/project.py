"""Where the checkout is that iolab runs from (templates/, experiments/, reframe/, results/)."""

from __future__ import annotations

import os
from pathlib import Path


def project_root() -> Path:
    """The checkout iolab runs from (templates/, experiments/, reframe/, results/)."""
    env = os.environ.get("IOLAB_ROOT")
    if env:
        return Path(env).resolve()
    return Path(__file__).resolve().parents[2]
