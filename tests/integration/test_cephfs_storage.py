"""CephFS layouts through the whole pipeline: `experiments/cephfs-striping.yaml` run by
`reframe -r` on the `localceph` system with the real fio, on the CephFS that is up here
(scripts/ceph-local up; IOLAB_CEPH_STATE, IOLAB_CEPH_MOUNT and CEPH_CONF name another one).

Every record must show the layout applied from getfattr, and the OSDs its objects reached from
the server; the object count must be the one the layout predicts for the file's size. Where no
CephFS is up the test skips with the reason; IOLAB_REQUIRE_CEPH=1 makes that a failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand
from iolab.layers.storage import cephfs
from iolab.layers.storage.base import detect_fstype as base_fstype

from .conftest import REPO, STACK_REQUIRED, have, iolab, make_project, only_run, records, reframe

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


def ceph_env(rfm_env: dict, pinned: bool = False, ior: bool = False) -> dict:
    """The job environment for localceph with the `ceph` profile, or a skip with the reason
    (a failure under IOLAB_REQUIRE_CEPH=1, unless only IOR is missing; under IOLAB_REQUIRE_STACK=1
    a missing IOR fails too)."""
    why = _why_not()
    if why is None and ior and not have("ior"):
        why = ("IOR is not installed (its test stand-in replays recorded outputs and writes no "
               "file to lay out)")
    env = {**rfm_env, "IOLAB_PROFILE": "ceph", "IOLAB_CEPH_MOUNT": str(MOUNT), "CEPH_CONF": str(CONF)}
    if why is None and pinned and "ost1" not in _pinned_pools(env):
        why = "the CephFS has no pinned pools: scripts/ceph-local up --pinned-pools"
    if why:
        if REQUIRED and not why.startswith("IOR is not installed"):
            pytest.fail(f"IOLAB_REQUIRE_CEPH=1 but: {why}")
        if STACK_REQUIRED and why.startswith("IOR is not installed"):
            pytest.fail(f"IOLAB_REQUIRE_STACK=1 but: {why}")
        pytest.skip(why)
    return env


@contextlib.contextmanager
def run_records(env: dict, experiment: str, tmp_path: Path):
    """`reframe -r` of one experiment on localceph; yields its run's records, then removes the
    run's scratch from the CephFS (memstore OSDs hold it in memory)."""
    out = reframe(["-r", "-n", experiment.replace("-", "_")], env, config="reframe/config/localceph.py")
    run = None
    try:
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
        run = only_run(tmp_path / "results", experiment)
        yield records(run)
    finally:
        if run is not None:
            shutil.rmtree(MOUNT / "iolab-scratch" / experiment / run.name, ignore_errors=True)


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
    env = ceph_env(rfm_env)
    with run_records(env, "cephfs-striping", tmp_path) as recs:
        cases = expand(load_experiment(REPO / "experiments" / "cephfs-striping.yaml", "ceph"))
        assert len(recs) == len(cases) == 9
        osd_ids = _osd_ids(env)
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
            check_bytes(seen, osd_ids)
        # one object mapped again here, independently of the job
        first = recs[0]["observed"]["cephfs"]["spread"]["files"][0]
        obj = f"{first['inode_hex']}.00000000"
        mapped = json.loads(subprocess.run(["ceph", "osd", "map", first["pool"], obj, "-f", "json"],
                                           capture_output=True, text=True, env=env, timeout=60,
                                           check=True).stdout)
        assert str(mapped["up_primary"]) in first["objects_per_osd"]
        # the table: requested, applied, and the OSDs that got data
        table = iolab(["table", "cephfs-striping", "--storage", "osds,bytes_per_osd"], env)
        assert table.returncode == 0, table.stderr
        assert "| Stripe Count | Stripe Count (effective) |" in table.stdout
        assert "OSDs with data" in table.stdout
        for osd in sorted(osd_ids):
            assert f"Data on osd.{osd} " in table.stdout


def check_bytes(seen: dict, osd_ids: set[int]) -> None:
    """The server's bytes per OSD: one entry per OSD of the cluster, summing to the data files'
    sizes (every file mapped and every object sized), non-zero exactly on the OSDs that hold
    objects."""
    spread = seen["spread"]
    assert "bytes_partial" not in spread, spread
    assert {int(k) for k in spread["bytes_per_osd"]} == osd_ids == set(spread["cluster_osds"])
    assert sum(spread["bytes_per_osd"].values()) == sum(f["size"] for f in seen["files"])
    assert {int(k) for k, v in spread["bytes_per_osd"].items() if v} == set(spread["osds"])
    for f in spread["files"]:
        assert f["sized"] == f["objects"] == f["mapped"], f


def _osd_ids(env: dict) -> set[int]:
    return {int(i) for i in subprocess.run(["ceph", "osd", "ls"], capture_output=True, text=True,
                                           env=env, timeout=60, check=True).stdout.split()}


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
    env = ceph_env(rfm_env, pinned=True)
    with run_records(env, "cephfs-pinned-pool", tmp_path) as recs:
        by_pool = {rec["params"]["cephfs.pool"]: rec for rec in recs}
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
        for rec in by_pool.values():
            check_bytes(rec["observed"]["cephfs"], _osd_ids(env))
        assert {k: v for k, v in by_pool["ost1"]["observed"]["cephfs"]["spread"]["bytes_per_osd"].items()
                if v} == {"1": 16 << 20}


def test_the_archer_ceph_profile_with_the_real_ior(rfm_env, tmp_path):
    """archer-fpp-vs-ssf's `ceph` profile (its lustre.* axes dropped, cephfs.* ones in their
    place) through `reframe -r` on localceph with the real IOR: every case applied as asked, the
    bytes of every file on the server, and the pinned file-per-process case all on osd.1."""
    env = ceph_env(rfm_env, pinned=True, ior=True)
    with run_records(env, "archer-fpp-vs-ssf", tmp_path) as recs:
        assert len(recs) == len(expand(load_experiment(
            REPO / "experiments" / "archer-fpp-vs-ssf.yaml", "ceph"))) == 15
        osd_ids = _osd_ids(env)
        for rec in recs:
            assert rec["status"] == "ok", rec.get("error")
            assert rec["provenance"]["binary"]["name"] == "ior" and "replayed" not in rec["observed"]
            assert not any(k.startswith("lustre.") for k in rec["params"])
            seen = rec["observed"]["cephfs"]
            assert (seen["applied"], seen["verified"]) == (True, True), seen
            fpp = rec["params"]["file_per_process"]
            assert len(seen["files"]) == (4 if fpp else 1)
            assert sum(f["size"] for f in seen["files"]) == (64 if fpp else 16) << 20
            check_bytes(seen, osd_ids)
        pinned = [r for r in recs if r["params"].get("cephfs.pool") == "ost1"]
        assert len(pinned) == 3
        for rec in pinned:
            assert {k: v for k, v in rec["observed"]["cephfs"]["spread"]["bytes_per_osd"].items()
                    if v} == {"1": 64 << 20}


NOPOOL = """\
id: cephfs-nopool
description: one pool the file system has, one it lacks
benchmark: fio
require_file_system: cephfs
fixed: {rw: write, bs: 1MiB, size: 4MiB, numjobs: 1, ioengine: psync}
matrix:
  cephfs.pool:
    - cephfs_data
    - nosuchpool
repetitions: 1
"""


def _refused(env: dict, tmp_path: Path, text: str = NOPOOL) -> tuple[subprocess.CompletedProcess, Path]:
    """`reframe -r` of `text` on localceph from a throwaway project; its scratch on the CephFS."""
    root = make_project(tmp_path, {"cephfs-nopool": text})
    out = reframe(["-r", "-n", "cephfs_nopool"], env, cwd=root,
                  config=str(root / "reframe" / "config" / "localceph.py"))
    return out, root


def test_a_pool_the_cephfs_lacks_is_refused_before_the_run(rfm_env, tmp_path):
    """Issue 36 item 11: `cephfs.pool: nosuchpool` was caught in ReFrame's setup, after the run
    was created, and its row footnoted 'striping not applied'. Now the session asks the cluster
    once before it creates anything, and refuses with the experiment's line: no run, no record,
    no case directory, and no job of the good pool either."""
    env = ceph_env(rfm_env)
    out, root = _refused(env, tmp_path)
    text = out.stdout + out.stderr
    assert out.returncode != 0, text[-3000:]
    assert (f"experiments/cephfs-nopool.yaml:9: cephfs.pool: pool 'nosuchpool' is not a data pool "
            f"of the CephFS under {MOUNT}/iolab-scratch: no such pool in its cluster (data pools: "
            "cephfs_data") in text, text[-3000:]
    assert "iolab: not started, no run created" in text
    assert not (tmp_path / "results").exists()
    assert not (MOUNT / "iolab-scratch" / "cephfs-nopool").exists()
    assert "Traceback" not in text and "FAILURE INFO" not in text


def test_the_probe_directory_asks_the_mount_when_the_cluster_cannot(rfm_env, tmp_path):
    """Where no `ceph` CLI reaches the cluster, a probe directory under scratch is asked the way
    the job would ask (setfattr ceph.dir.layout.pool): the mount refuses the pool it lacks and
    takes the one it has, and the probe is removed."""
    env = ceph_env(rfm_env)
    said: list[str] = []
    cut = {"PATH": str(tmp_path)}      # no ceph CLI on the jobs' PATH
    refused = cephfs.check_pools(["cephfs_data", "nosuchpool"], str(MOUNT), cut, said.append)
    assert list(refused) == ["nosuchpool"], refused
    assert refused["nosuchpool"].startswith(
        f"pool 'nosuchpool' is not a data pool of the CephFS under {MOUNT}: a directory there "
        "refuses it (setfattr: a probe directory: Invalid argument; the cluster could not list "
        "its pools: no ceph CLI here)"), refused
    assert said == []
    assert not [p for p in MOUNT.iterdir() if p.name.startswith(".iolab-preflight-")]
    # with the CLI, the same answer from the cluster itself
    assert list(cephfs.check_pools(["cephfs_data", "nosuchpool"], str(MOUNT), env, said.append)) == [
        "nosuchpool"]


def test_scratch_off_cephfs_is_refused_before_the_run(rfm_env, tmp_path):
    """`require_file_system: cephfs` with localceph's mount absent: refused before the run with
    the experiment's line, where it used to create a run of skipped cases. Needs no CephFS."""
    env = {**rfm_env, "IOLAB_PROFILE": "ceph", "IOLAB_CEPH_MOUNT": str(tmp_path / "no-mount"),
           "CEPH_CONF": str(tmp_path / "no-ceph.conf")}
    out, _root = _refused(env, tmp_path)
    text = out.stdout + out.stderr
    assert out.returncode != 0, text[-3000:]
    fstype = base_fstype(tmp_path)
    assert (f"experiments/cephfs-nopool.yaml:4: require_file_system: scratch "
            f"({tmp_path}/no-mount/iolab-scratch) is {fstype}, not CephFS: no case can run as "
            "asked") in text, text[-3000:]
    assert "nosuchpool" not in text     # off CephFS its pools are not asked about
    assert not (tmp_path / "results").exists()
