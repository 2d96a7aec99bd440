"""CephFS layouts through the whole pipeline: `experiments/cephfs-striping.yaml` run by
`reframe -r` on the `localceph` system with the real fio, on the CephFS that is up here
(scripts/ceph-local up; IOLAB_CEPH_STATE, IOLAB_CEPH_MOUNT and CEPH_CONF name another one).

Every record must show the layout applied from getfattr, and the OSDs its objects reached from
the server; the object count must be the one the layout predicts for the file's size. Where no
CephFS is up the test skips with the reason; IOLAB_REQUIRE_CEPH=1 makes that a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand
from iolab.layers.storage import cephfs

from .conftest import REPO, have, iolab, only_run, records, reframe

STATE = Path(os.environ.get("IOLAB_CEPH_STATE", "/tmp/iolab-ceph"))
MOUNT = Path(os.environ.get("IOLAB_CEPH_MOUNT", STATE / "mnt"))
CONF = Path(os.environ.get("CEPH_CONF", STATE / "ceph.conf"))
REQUIRED = os.environ.get("IOLAB_REQUIRE_CEPH") == "1"

pytestmark = pytest.mark.integration


def _why_not() -> str | None:
    missing = [b for b in ("fio", "mpirun", "findmnt", "setfattr", "getfattr", "ceph", "rados")
               if not have(b)]
    if missing:
        return f"not installed: {' '.join(missing)}"
    found = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "--mountpoint", str(MOUNT)],
                           capture_output=True, text=True).stdout.strip()
    if found not in cephfs.FSTYPES:
        return (f"no CephFS mounted at {MOUNT} ({found or 'not a mount point'}): "
                "scripts/ceph-local up, or IOLAB_CEPH_STATE/IOLAB_CEPH_MOUNT naming another")
    if not CONF.is_file():
        return f"no Ceph config at {CONF} (CEPH_CONF)"
    return None


def objects_of(size: int, layout: dict) -> int:
    """How many objects a file of `size` bytes has under a layout (Ceph's file striping: unit
    b of the file goes to object (b // count // units per object) * count + b % count)."""
    unit, count, per_object = (layout["stripe_unit"], layout["stripe_count"],
                               layout["object_size"] // layout["stripe_unit"])
    return len({(b // count // per_object) * count + b % count for b in range(-(-size // unit))})


def test_objects_of_follows_ceph_striping():
    mib = 1 << 20
    assert objects_of(8 * mib, {"stripe_unit": 64 << 10, "stripe_count": 4, "object_size": 4 * mib}) == 4
    assert objects_of(8 * mib, {"stripe_unit": 4 * mib, "stripe_count": 4, "object_size": 4 * mib}) == 2
    assert objects_of(8 * mib, {"stripe_unit": mib, "stripe_count": 1, "object_size": 4 * mib}) == 2
    assert objects_of(4 * mib, {"stripe_unit": 65536, "stripe_count": 4, "object_size": mib}) == 4


def test_the_demonstration_on_cephfs_records_layouts_and_placement(rfm_env, tmp_path):
    why = _why_not()
    if why:
        if REQUIRED:
            pytest.fail(f"IOLAB_REQUIRE_CEPH=1 but: {why}")
        pytest.skip(why)
    env = {**rfm_env, "IOLAB_PROFILE": "ceph", "IOLAB_CEPH_MOUNT": str(MOUNT), "CEPH_CONF": str(CONF)}
    out = reframe(["-r", "-n", "cephfs_striping"], env, config="reframe/config/localceph.py")
    run = None
    try:
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
        run = only_run(tmp_path / "results", "cephfs-striping")
        recs = records(run)
        cases = expand(load_experiment(REPO / "experiments" / "cephfs-striping.yaml", "ceph"))
        assert len(recs) == len(cases) == 9
        osd_ids = {int(i) for i in subprocess.run(["ceph", "osd", "ls"], capture_output=True, text=True,
                                                  env=env, timeout=60, check=True).stdout.split()}
        for rec in recs:
            assert rec["status"] == "ok", rec.get("error")
            assert rec["provenance"]["system"] == "localceph:default"
            seen = rec["observed"]["cephfs"]
            asked = {k.removeprefix("cephfs."): v for k, v in rec["params"].items()
                     if k.startswith("cephfs.")}
            assert seen["fs_type"] in cephfs.FSTYPES and seen["requested"] == asked
            # the client's witness: getfattr of the file fio wrote
            assert (seen["applied"], seen["verified"], seen["mismatches"]) == (True, True, []), seen
            (written,) = seen["files"]
            assert written["size"] == 8 << 20
            assert {k: written["layout"][k] for k in asked} == asked
            # the server's witness: the file's objects, each mapped to an OSD of this cluster
            (spread,) = seen["spread"]["files"]
            assert int(spread["inode_hex"], 16) == written["inode"]
            assert spread["objects"] == spread["mapped"] == objects_of(written["size"], written["layout"])
            assert sum(spread["objects_per_osd"].values()) == spread["mapped"]
            assert set(spread["osds"]) <= osd_ids and spread["osds"]
            assert seen["spread"]["note"].startswith(
                f"stripe count {asked['stripe_count']} reached {len(spread['osds'])} OSD(s)")
            assert rec["flags"] == []       # fewer OSDs than the stripe count is no flag
        # one object mapped again here, independently of the job
        first = recs[0]["observed"]["cephfs"]["spread"]["files"][0]
        obj = f"{first['inode_hex']}.00000000"
        mapped = json.loads(subprocess.run(["ceph", "osd", "map", first["pool"], obj, "-f", "json"],
                                           capture_output=True, text=True, env=env, timeout=60,
                                           check=True).stdout)
        assert str(mapped["up_primary"]) in first["objects_per_osd"]
        # the table: requested, applied, and the OSDs that got data
        table = iolab(["table", "cephfs-striping", "--storage", "osds"], env)
        assert table.returncode == 0, table.stderr
        assert "| Stripe Count | Stripe Count (effective) |" in table.stdout
        assert "Storage osds" in table.stdout
    finally:
        if run is not None:
            shutil.rmtree(MOUNT / "iolab-scratch" / "cephfs-striping" / run.name, ignore_errors=True)


def _pinned_pools(env: dict) -> set[str]:
    """The data pools of the file system that `ceph-local up --pinned-pools` made (ost0, ost1...)."""
    out = subprocess.run(["ceph", "fs", "ls", "-f", "json"], capture_output=True, text=True, env=env,
                         timeout=60)
    pools = {p for fs in (json.loads(out.stdout) if out.returncode == 0 else [])
             for p in fs.get("data_pools", [])}
    return {p for p in pools if p.startswith("ost")}


def test_a_pinned_pool_puts_every_object_on_its_osd(rfm_env, tmp_path):
    """cephfs.pool: ost1 (a pool whose CRUSH rule picks only osd.1): the server shows every object
    of the file on osd.1; the default pool of the same case is recorded as it spread."""
    why = _why_not()
    env = {**rfm_env, "IOLAB_PROFILE": "ceph", "IOLAB_CEPH_MOUNT": str(MOUNT), "CEPH_CONF": str(CONF)}
    if why is None and "ost1" not in _pinned_pools(env):
        why = "the CephFS has no pinned pools: scripts/ceph-local up --pinned-pools"
    if why:
        if REQUIRED:
            pytest.fail(f"IOLAB_REQUIRE_CEPH=1 but: {why}")
        pytest.skip(why)
    out = reframe(["-r", "-n", "cephfs_pinned_pool"], env, config="reframe/config/localceph.py")
    run = None
    try:
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
        run = only_run(tmp_path / "results", "cephfs-pinned-pool")
        by_pool = {rec["params"]["cephfs.pool"]: rec for rec in records(run)}
        assert set(by_pool) == {"cephfs_data", "ost1"}
        for pool, rec in by_pool.items():
            assert rec["status"] == "ok", rec.get("error")
            seen = rec["observed"]["cephfs"]
            (written,) = seen["files"]
            assert written["layout"]["pool"] == pool and seen["applied"] is True, seen
            (spread,) = seen["spread"]["files"]
            assert spread["pool"] == pool and spread["objects"] == spread["mapped"] == 16, spread
        pinned = by_pool["ost1"]["observed"]["cephfs"]["spread"]["files"][0]
        assert pinned["objects_per_osd"] == {"1": 16}, pinned
    finally:
        if run is not None:
            shutil.rmtree(MOUNT / "iolab-scratch" / "cephfs-pinned-pool" / run.name, ignore_errors=True)
