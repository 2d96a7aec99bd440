"""The shipped ReFrame configurations load and validate against ReFrame's own schema."""

from __future__ import annotations

from pathlib import Path

import pytest
from reframe.core.config import load_config

from iolab.experiment.site import load as load_site

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
            # the typed loader takes every key as written, with no default in its place
            typed = load_site(extras, file=path.name)
            assert typed.raw == extras and typed.scratch == extras["scratch"]
            assert typed.mpi_flavour == extras["mpi_flavour"]


def test_configs_are_not_test_files():
    # `-c reframe/ -R` imports every .py that ReFrame's validator takes for a test file.
    import ast

    from reframe.frontend.loader import RegressionCheckValidator

    for path in CONFIGS:
        validator = RegressionCheckValidator()
        validator.visit(ast.parse(path.read_text()))
        assert not validator.valid, path


def _profiles_of(config: str, system: str) -> list:
    site = load_config(str(Path(__file__).resolve().parents[2] / "reframe" / "config" / config))
    found = [s for s in site["systems"] if s["name"] == system]
    assert found, system
    return [p["extras"]["iolab"].get("profile") for p in found[0]["partitions"]]


@pytest.mark.parametrize("system", ["localcluster", "localcluster-mpirun"])
def test_the_cluster_runs_cluster_profiles_else_local_ones(system):
    from iolab.experiment.load import load_experiment
    from iolab.rfm.register import system_profile

    root = Path(__file__).resolve().parents[2] / "experiments"
    choices = _profiles_of("localcluster.py", system)
    picked = {name: system_profile(choices, load_experiment(root / f"{name}.yaml").profiles)
              for name in ("cp2k-aggregators", "csc-btio-hints", "kaust-stripe-count", "quickstart")}
    assert picked == {"cp2k-aggregators": "cluster", "csc-btio-hints": "cluster",
                      "kaust-stripe-count": "local", "quickstart": "local"}
    # a one-node system never picks the cluster profile
    one_node = _profiles_of("localslurm.py", "localslurm")
    assert system_profile(one_node, ["full", "local", "cluster"]) == "local"


def test_partitions_that_disagree_on_the_profile_choose_none():
    from iolab.rfm.register import system_profile

    assert system_profile(["local", ["cluster", "local"]], ["local", "cluster"]) is None
    assert system_profile([["cluster", "local"], ["cluster", "local"]], ["local"]) == "local"
    assert system_profile([None, "full"], ["full"]) == "full"
