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


def test_the_cluster_on_cephfs_is_the_cluster_with_scratch_and_ceph_conf_of_the_cephfs():
    """localcluster-ceph: localcluster's partition (srun, ROMIO, the bridge's network, its
    profiles) with scratch on the CephFS mount of every node and CEPH_CONF for the witnesses.
    Loaded in a process of its own: a config file is imported once per process."""
    import json
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2] / "reframe" / "config"
    show = ("import json, sys\nfrom reframe.core.config import load_config\n"
            "site = load_config(sys.argv[1])\n"
            "print(json.dumps([s for s in site['systems'] if s['name'] != 'generic']))")
    env = {k: v for k, v in os.environ.items() if k not in ("IOLAB_CEPH_MOUNT", "CEPH_CONF")}
    env["IOLAB_CEPH_STATE"] = "/ceph-state"

    def systems(name: str) -> list:
        out = subprocess.run([sys.executable, "-c", show, str(root / name)], capture_output=True,
                             text=True, env=env, timeout=120, check=True)
        return json.loads(out.stdout.splitlines()[-1])

    (ceph,) = systems("localcluster-ceph.py")
    cluster = systems("localcluster.py")[0]
    assert ceph["name"] == "localcluster-ceph"
    (part,), (base,) = ceph["partitions"], cluster["partitions"]
    extras, base_extras = part["extras"]["iolab"], base["extras"]["iolab"]
    assert extras["scratch"] == "/ceph-state/mnt/iolab-scratch"
    assert ["CEPH_CONF", "/ceph-state/ceph.conf"] in part["env_vars"]
    assert [v for v in part["env_vars"] if v[0] != "CEPH_CONF"] == base["env_vars"]
    assert {k: v for k, v in extras.items() if k != "scratch"} == \
        {k: v for k, v in base_extras.items() if k != "scratch"}
    assert (part["scheduler"], part["launcher"], part["access"]) == ("slurm", "srun", ["--partition=compute"])


def test_the_clusters_srun_jobs_take_real_pmix_barriers_and_tcp_on_the_bridge():
    """localcluster and localcluster-ceph: the srun partitions' jobs run every PMIx fence through
    Slurm's ring algorithm (SLURM_PMIX_FENCE=ring): with Slurm 22.05's default, the tree for a
    fence without data, the barrier ending MPI_Init released ranks before all had reached it, and
    an early message killed a rank still in MPI_Init (docs/systems.md). Open MPI's TCP transports
    stay on the bridge's network. Loaded in a process of its own, like the test above."""
    import json
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2] / "reframe" / "config"
    show = ("import json, sys\nfrom reframe.core.config import load_config\n"
            "site = load_config(sys.argv[1])\n"
            "print(json.dumps({s['name'] + ':' + p['name']: [p['launcher'], p['env_vars']]"
            " for s in site['systems'] if s['name'] != 'generic' for p in s['partitions']}))")
    env = {k: v for k, v in os.environ.items() if k != "IOLAB_CLUSTER_NET"}
    found = {}
    for config in ("localcluster.py", "localcluster-ceph.py"):
        out = subprocess.run([sys.executable, "-c", show, str(root / config)], capture_output=True,
                             text=True, env=env, timeout=120, check=True)
        found.update(json.loads(out.stdout.splitlines()[-1]))
    assert sorted(found) == ["localcluster-ceph:compute", "localcluster-mpirun:compute",
                             "localcluster:compute"]
    for name, (launcher, env_vars) in found.items():
        job_env = dict(env_vars)
        assert job_env["OMPI_MCA_btl"] == "self,vader,tcp", name
        assert job_env["OMPI_MCA_btl_tcp_if_include"] == "169.254.77.0/24", name
        assert job_env["OMPI_MCA_oob_tcp_if_include"] == "169.254.77.0/24", name
        if launcher == "srun":
            assert job_env["SLURM_MPI_TYPE"] == "pmix" and job_env["SLURM_PMIX_FENCE"] == "ring", name
        else:
            assert "SLURM_PMIX_FENCE" not in job_env, name         # mpirun: Open MPI's own PMIx server
