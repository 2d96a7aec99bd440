"""The shipped ReFrame configurations load and validate against ReFrame's own schema."""

from __future__ import annotations

from pathlib import Path

import pytest
from reframe.core.config import load_config

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "reframe" / "config").glob("*.py"))
SITE_CONFIGS = [p for p in CONFIGS if p.name != "common.py"]


@pytest.mark.parametrize("path", SITE_CONFIGS, ids=lambda p: p.name)
def test_config_validates(path):
    site = load_config(str(path))
    site.validate()
    systems = [s for s in site["systems"] if s["name"] != "generic"]
    assert systems
    for system in systems:
        for part in system["partitions"]:
            assert "iolab" in part["features"], "iolab tests select partitions by this feature"
            assert part.get("max_jobs") == 1, "cases of one experiment must never overlap"
            extras = part["extras"]["iolab"]
            assert extras["scratch"] and extras["mpi_flavour"]


def test_configs_are_not_test_files():
    # `-c reframe/ -R` imports every .py that ReFrame's validator takes for a test file.
    import ast

    from reframe.frontend.loader import RegressionCheckValidator

    for path in CONFIGS:
        validator = RegressionCheckValidator()
        validator.visit(ast.parse(path.read_text()))
        assert not validator.valid, path
