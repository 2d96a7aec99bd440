"""Shared fixtures: the recorded benchmark outputs and experiment samples under tests/data."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
DATA = TESTS / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(scope="session")
def ior_dir() -> Path:
    """Real IOR 4.0.0 outputs (copied from the shared fixtures, names kept)."""
    return DATA / "ior"


@pytest.fixture(scope="session")
def fio_dir() -> Path:
    """Real fio 3.33 JSON output."""
    return DATA / "fio"


@pytest.fixture(scope="session")
def bad_dir() -> Path:
    """Experiments that must be rejected; each id equals its file stem."""
    return DATA / "experiments" / "bad"


@pytest.fixture(scope="session")
def good_dir() -> Path:
    return DATA / "experiments" / "good"


@pytest.fixture
def write_experiment(tmp_path):
    """Write YAML text to tmp_path/<name>.yaml (dedented) and return the path."""

    def write(name: str, text: str) -> Path:
        path = tmp_path / f"{name}.yaml"
        path.write_text(textwrap.dedent(text).lstrip("\n"))
        return path

    return write


@pytest.fixture
def src_layout_templates(monkeypatch):
    """Render from the checkout's templates/ (the src layout), whatever the caller's environment."""
    monkeypatch.delenv("IOLAB_ROOT", raising=False)
    monkeypatch.delenv("IOLAB_TEMPLATES", raising=False)


@pytest.fixture(autouse=True)
def records_cache(tmp_path_factory, monkeypatch):
    """The decoded-records cache (recordcache) of a test's runs goes to the test's temp dir,
    never the user's ~/.cache (and its subprocesses inherit the variable)."""
    where = tmp_path_factory.mktemp("records-cache")
    monkeypatch.setenv("IOLAB_CACHE", str(where))
    return where
