"""A collective MPI-IO write of one shared file by 4 nodes on CephFS: the cluster of
`scripts/cluster-local` with the CephFS of `scripts/ceph-local up --cluster` mounted in every node,
through `reframe -r` on `localcluster-ceph` (reframe/config/localcluster-ceph.py).

`experiments/cephfs-collective.yaml` runs with the real IOR where it is on PATH, else with the
IOR stand-in, which replays the real run recorded on this cluster and CephFS and is flagged as no
measurement. Either way the node list is Slurm's, the layout applied is getfattr's of the file in
the case directory, and the spread is the server's. Beside it, a real shared-file write by what is
installed: fio on every node, each into its own region of one file, and iolab's CephFS witnesses
read from the job's first node, the way the job runs them; and a real collective MPI-IO write by
a small test program (tests/tools/mpiio_shared_write.c, built with mpicc) through ROMIO with
iolab's hints file. Each node's client counters say which nodes wrote: the aggregators' nodes.

The cluster and CephFS are the ones the environment names (IOLAB_CLUSTER_STATE,
IOLAB_CEPH_STATE, IOLAB_CEPH_MOUNT, CEPH_CONF; CI's defaults otherwise). Where either is not up
the tests skip with the reason; with IOLAB_REQUIRE_CLUSTER=1 and IOLAB_REQUIRE_CEPH=1 (CI, once
both came up) that is a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand
from iolab.layers.mpiio import hints as mpiio
from iolab.layers.storage import cephfs
from iolab.layers.storage.base import FSTYPE_FILE

from .conftest import REPO, check_replay_flag, have, records, reframe
from .test_cephfs_storage import objects_of

CLUSTER_STATE = Path(os.environ.get("IOLAB_CLUSTER_STATE", "/tmp/iolab-cluster"))
CEPH_STATE = Path(os.environ.get("IOLAB_CEPH_STATE", "/tmp/iolab-ceph"))
MOUNT = Path(os.environ.get("IOLAB_CEPH_MOUNT", CEPH_STATE / "mnt"))
CONF = Path(os.environ.get("CEPH_CONF", CEPH_STATE / "ceph.conf"))
SLURM_CONF = CLUSTER_STATE / "etc" / "slurm.conf"
REQUIRED = (os.environ.get("IOLAB_REQUIRE_CLUSTER") == "1"
            and os.environ.get("IOLAB_REQUIRE_CEPH") == "1")
NODES = 4
MiB = 1 << 20
LAYOUT = {"stripe_unit": MiB, "stripe_count": 4, "object_size": 4 * MiB}

pytestmark = pytest.mark.integration


def _nodes() -> int | None:
    try:
        return int((CLUSTER_STATE / "nodes").read_text())
    except (OSError, ValueError):
        return None


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "the cluster and its CephFS need root"
    missing = [b for b in ("srun", "fio", "findmnt", "setfattr", "getfattr", "ceph", "rados")
               if not have(b)]
    if missing:
        return f"not installed: {' '.join(missing)}"
    if _nodes() is None or not SLURM_CONF.is_file():
        return (f"no scripts/cluster-local is up with state {CLUSTER_STATE}: "
                "scripts/cluster-local up --nodes 4")
    try:
        states = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], capture_output=True, text=True,
                                timeout=60, env={**os.environ, "SLURM_CONF": str(SLURM_CONF)})
    except subprocess.TimeoutExpired:
        states = None
    usable = [line for line in (states.stdout if states else "").splitlines()
              if line.split()[-1] in ("idle", "mix", "alloc")]
    if len(usable) < NODES:
        return (f"the cluster of {CLUSTER_STATE} has {len(usable)} usable nodes (sinfo), the write "
                f"needs {NODES}: scripts/cluster-local up --nodes 4")
    if not CONF.is_file():
        return f"no Ceph config at {CONF}: scripts/ceph-local up --cluster"
    seen = subprocess.run(["srun", "-N", str(NODES), "--ntasks-per-node=1", "findmnt", "-n", "-o",
                           "FSTYPE", "--mountpoint", str(MOUNT)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "SLURM_CONF": str(SLURM_CONF)})
    if sorted(seen.stdout.split()) != [cephfs.FSTYPES[0]] * NODES:
        return (f"the CephFS is not mounted at {MOUNT} in every node ({seen.stdout.split()} "
                f"{seen.stderr.strip()[:200]}): scripts/ceph-local up --cluster")
    return None


@pytest.fixture(scope="module")
def cluster_ceph():
    why = _why_not()
    if why:
        if REQUIRED:
            pytest.fail(f"IOLAB_REQUIRE_CLUSTER=1 and IOLAB_REQUIRE_CEPH=1 but: {why}")
        pytest.skip(why)
    env = {**os.environ, "SLURM_CONF": str(SLURM_CONF), "CEPH_CONF": str(CONF)}
    osds = {int(i) for i in subprocess.run(["ceph", "osd", "ls"], capture_output=True, text=True,
                                           env=env, timeout=60, check=True).stdout.split()}
    return env, osds


def client_writes(env: dict) -> dict[str, int]:
    """Node -> the OSD write operations its ceph-fuse client has sent so far (objecter op_w, from
    the admin socket `scripts/ceph-local up --cluster` gives each node's client)."""
    out = {}
    for k in range(1, NODES + 1):
        sock = CEPH_STATE / "run" / f"fuse.node{k}.asok"
        dump = subprocess.run(["ceph", "--admin-daemon", str(sock), "perf", "dump", "objecter"],
                              capture_output=True, text=True, env=env, timeout=60, check=True)
        out[f"node{k}"] = json.loads(dump.stdout)["objecter"]["op_w"]
    return out


def writers(before: dict[str, int], after: dict[str, int]) -> list[str]:
    return sorted(n for n in after if after[n] > before[n])


def test_a_collective_write_by_four_nodes_records_nodes_aggregators_and_spread(cluster_ceph, rfm_env,
                                                                                tmp_path):
    env, osds = cluster_ceph
    # the system's own choice of profile (cluster), its CephFS and its cluster
    run_env = {**{k: v for k, v in rfm_env.items() if k != "IOLAB_PROFILE"},
               "IOLAB_CEPH_STATE": str(CEPH_STATE), "IOLAB_CEPH_MOUNT": str(MOUNT),
               "CEPH_CONF": str(CONF), "IOLAB_CLUSTER_STATE": str(CLUSTER_STATE)}
    cases = expand(load_experiment(REPO / "experiments" / "cephfs-collective.yaml", "cluster"))
    assert sorted(c.params["mpiio.cb_nodes"] for c in cases) == [1, 4]
    recs, wrote = [], {}
    try:
        # one case per ReFrame session, so that each node's client counters belong to one case
        for case in cases:
            before = client_writes(env)
            out = reframe(["-r", "-n", f"cephfs_collective%case={case.case_id}"], run_env,
                          config="reframe/config/localcluster-ceph.py")
            assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
            wrote[case.case_id] = writers(before, client_writes(env))
        runs = sorted(p for p in (tmp_path / "results" / "cephfs-collective").iterdir() if p.is_dir())
        recs = [rec for run in runs for rec in records(run)]
        assert len(recs) == 2
        for rec in recs:
            assert rec["status"] == "ok", rec.get("error")
            assert rec["provenance"]["system"] == "localcluster-ceph:compute"
            assert rec["profile"] == "cluster"
            check_replay_flag(rec, tmp_path)
            real = rec["observed"].get("replayed") is None
            asked = rec["params"]["mpiio.cb_nodes"]
            # the nodes: Slurm's node list of the job, and IOR's own count (replayed or not)
            nodelist = rec["provenance"]["nodelist"]
            assert sorted(nodelist) == [f"node{k}" for k in range(1, NODES + 1)], nodelist
            assert rec["observed"]["benchmark"]["nodes"] == NODES
            # the aggregators ROMIO printed: one per node under its default *:1, ranks 2 per node
            hints = rec["observed"]["mpiio_hints"]
            effective = hints["effective"]
            assert effective["cb_nodes"] == str(asked) and effective["cb_config_list"] == "*:1"
            assert effective["romio_cb_write"] == "enable"
            ranks = [int(r) for r in effective["romio_aggregator_list"].split()]
            assert len(ranks) == asked and len({r // 2 for r in ranks}) == asked, ranks
            assert [c for c in hints["comparison"] if c["status"] != "applied"] == []
            # the layout: getfattr of what was written in the case directory, on CephFS
            seen = rec["observed"]["cephfs"]
            assert seen["fs_type"] in cephfs.FSTYPES
            assert (seen["applied"], seen["verified"], seen["mismatches"]) == (True, True, []), seen
            assert seen["requested"] == LAYOUT and seen["layout"]["pool"] == "cephfs_data"
            # the server: every object of the file mapped to an OSD of this cluster
            (spread,) = seen["spread"]["files"]
            assert spread["objects"] == spread["mapped"] >= 1
            assert set(spread["osds"]) <= osds and sum(spread["objects_per_osd"].values()) == spread["mapped"]
            assert seen["spread"]["note"].startswith(f"stripe count 4 reached {len(spread['osds'])} OSD(s)")
            if real:
                # IOR's one shared file, 8 ranks x 4 MiB, in the objects the layout predicts; only
                # the nodes of ROMIO's aggregators sent writes to the OSDs
                (written,) = seen["files"]
                assert written["path"] == "testfile" and written["size"] == 32 * MiB
                assert spread["objects"] == objects_of(32 * MiB, LAYOUT) == 8
                assert wrote[rec["case_id"]] == sorted(nodelist[r // 2] for r in ranks), wrote
                assert rec["flags"] == []
            else:
                # the stand-in wrote no data, at most its marker file from the job's first node
                assert set(wrote[rec["case_id"]]) <= {"node1"}, wrote
    finally:
        for run in (tmp_path / "results" / "cephfs-collective").glob("*"):
            shutil.rmtree(MOUNT / "iolab-scratch" / "cephfs-collective" / run.name, ignore_errors=True)


def test_four_nodes_write_one_shared_file_and_the_witnesses_show_it(cluster_ceph, tmp_path):
    """fio on each of 4 nodes writes its own 8 MiB of one 32 MiB file in a 4-way laid-out
    directory; iolab's job lines lay the directory out and read the witnesses on the first node,
    as in a job; the file holds every node's bytes in place and every node's client wrote."""
    env, osds = cluster_ceph
    case_dir = MOUNT / "iolab-scratch" / f"shared-file-test-{os.getpid()}"
    stage = tmp_path / "stage"
    stage.mkdir()
    case_dir.mkdir(parents=True)
    first = ["srun", "-N", "1", "-w", "node1", "--chdir", str(stage), "bash", "-c"]
    try:
        lines = [f"findmnt -n -o FSTYPE -T {case_dir} > {FSTYPE_FILE}",
                 *cephfs.prerun_lines(str(case_dir), LAYOUT)]
        pre = subprocess.run([*first, "\n".join(lines)], capture_output=True, text=True, env=env,
                             timeout=120)
        assert pre.returncode == 0, pre.stderr
        # The file exists at its full size before the writers start: fio 3.33 reopens a file
        # shorter than its offset + size with O_TRUNC, which wipes what other nodes have written
        # (seen once: node2's 8 MiB read back as zeros; by hand, a 12 MiB file lost its data to a
        # writer of 8-16 MiB). A file as long as every region is left as it is.
        with open(case_dir / "shared", "wb") as f:
            f.truncate(32 * MiB)
        before = client_writes(env)
        fio = ("fio --name=node$SLURM_PROCID --filename=shared --rw=write --bs=1M --size=8M "
               "--offset=$((SLURM_PROCID * 8))M --ioengine=psync --end_fsync=1 --fallocate=none "
               "--buffer_pattern=0x0$((SLURM_PROCID + 1)) --output-format=json "
               f"--output={stage}/fio-$SLURM_PROCID.json && hostname")
        job = subprocess.run(["srun", "-N", str(NODES), "--ntasks-per-node=1", "--chdir", str(case_dir),
                              "bash", "-c", fio], capture_output=True, text=True, env=env, timeout=300)
        assert job.returncode == 0, job.stderr
        assert sorted(job.stdout.split()) == [f"node{k}" for k in range(1, NODES + 1)]
        assert writers(before, client_writes(env)) == [f"node{k}" for k in range(1, NODES + 1)]
        for rank in range(NODES):
            (done,) = json.loads((stage / f"fio-{rank}.json").read_text())["jobs"]
            assert done["error"] == 0 and done["write"]["io_bytes"] == 8 * MiB
        data = (case_dir / "shared").read_bytes()      # read back on this host, a fifth client
        assert len(data) == 32 * MiB
        assert [set(data[r * 8 * MiB:(r + 1) * 8 * MiB]) for r in range(NODES)] == [{1}, {2}, {3}, {4}]
        post = subprocess.run([*first, "\n".join(cephfs.postrun_lines(str(case_dir), LAYOUT))],
                              capture_output=True, text=True, env=env, timeout=300)
        assert post.returncode == 0, post.stderr
        seen = cephfs.observe(stage, LAYOUT, {})
        assert (seen["applied"], seen["verified"], seen["mismatches"]) == (True, True, []), seen
        (written,) = seen["files"]
        assert written["size"] == 32 * MiB and {k: written["layout"][k] for k in LAYOUT} == LAYOUT
        (spread,) = seen["spread"]["files"]
        assert spread["objects"] == spread["mapped"] == objects_of(32 * MiB, LAYOUT) == 8
        assert set(spread["osds"]) <= osds and spread["osds"] == seen["spread"]["osds"]
        # one object mapped again from the host, independently of the job's witness
        obj = f"{spread['inode_hex']}.00000007"
        mapped = json.loads(subprocess.run(["ceph", "osd", "map", "cephfs_data", obj, "-f", "json"],
                                           capture_output=True, text=True, env=env, timeout=60,
                                           check=True).stdout)
        assert str(mapped["up_primary"]) in spread["objects_per_osd"]
    finally:
        shutil.rmtree(case_dir, ignore_errors=True)


def _bridge_net() -> str:
    """The cluster's link-local network, from its slurm.conf (slurmctld listens on its .254)."""
    conf = SLURM_CONF.read_text()
    found = re.search(r"^SlurmctldHost=.*\((169\.254\.\d+)\.254\)$", conf, re.M)
    assert found, f"no SlurmctldHost address in {SLURM_CONF}"
    return f"{found.group(1)}.0/24"


@pytest.fixture(scope="module")
def shared_write(cluster_ceph, tmp_path_factory) -> Path:
    """tests/tools/mpiio_shared_write.c, compiled with mpicc: one MPI_File_write_at_all per rank."""
    if not have("mpicc"):
        why = "no mpicc to build the MPI-IO test program (Debian package libopenmpi-dev)"
        if REQUIRED:
            pytest.fail(why)
        pytest.skip(why)
    binary = tmp_path_factory.mktemp("mpiio") / "mpiio_shared_write"
    built = subprocess.run(["mpicc", "-O2", "-Wall", "-o", str(binary),
                            str(REPO / "tests" / "tools" / "mpiio_shared_write.c")],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    return binary


@pytest.mark.parametrize("cb_nodes", [1, 4])
def test_romios_aggregators_are_the_nodes_whose_clients_write(cluster_ceph, shared_write, tmp_path,
                                                              cb_nodes):
    """A real collective MPI-IO write without IOR: 2 ranks on each of 4 nodes write their 4 MiB of
    one file in one MPI_File_write_at_all through ROMIO, with iolab's ROMIO_HINTS file. iolab reads
    the aggregators from ROMIO's printed hints, and the clients that sent writes to the OSDs are
    exactly the aggregators' nodes."""
    env, _osds = cluster_ceph
    requested = {"cb_nodes": str(cb_nodes), "romio_cb_write": "enable"}
    hints = tmp_path / "romio-hints.txt"
    hints.write_text(mpiio.romio_hints_file(requested))
    net = _bridge_net()
    job_env = {**env, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
               "OMPI_MCA_btl": "self,vader,tcp", "OMPI_MCA_btl_tcp_if_include": net,
               "OMPI_MCA_oob_tcp_if_include": net, "OMPI_MCA_io": "romio321",
               "ROMIO_HINTS": str(hints), "ROMIO_PRINT_HINTS": "1", "SLURM_KILL_BAD_EXIT": "1",
               # a real barrier at the end of MPI_Init, as the cluster's configs ask (docs/systems.md)
               "SLURM_PMIX_FENCE": "ring"}
    case_dir = MOUNT / "iolab-scratch" / f"mpiio-test-{os.getpid()}-{cb_nodes}"
    case_dir.mkdir(parents=True)
    try:
        subprocess.run(["setfattr", "-n", "ceph.dir.layout", "-v", cephfs.layout_value(LAYOUT),
                        str(case_dir)], check=True, timeout=60)
        command = ["srun", "--mpi=pmix", "-N", str(NODES), "--ntasks-per-node=2", "--time=2",
                   str(shared_write), str(case_dir / "shared"), "4"]
        before = client_writes(env)
        job = subprocess.run(command, capture_output=True, text=True, env=job_env, timeout=300)
        assert job.returncode == 0, job.stderr[-3000:]
        wrote = writers(before, client_writes(env))
        effective = mpiio.effective_hints(job.stdout, "openmpi-romio")
        assert [c["status"] for c in mpiio.compare_hints(requested, effective)] == ["applied", "applied"]
        assert effective["cb_config_list"] == "*:1"
        ranks = [int(r) for r in effective["romio_aggregator_list"].split()]
        # srun's block distribution: ranks 2k and 2k+1 on node k+1
        assert wrote == sorted({f"node{r // 2 + 1}" for r in ranks}), (wrote, ranks)
        assert len(wrote) == cb_nodes
        data = (case_dir / "shared").read_bytes()          # read back on this host
        assert len(data) == 32 * MiB
        assert [set(data[r * 4 * MiB:(r + 1) * 4 * MiB]) for r in range(8)] == [{97 + r} for r in range(8)]
    finally:
        shutil.rmtree(case_dir, ignore_errors=True)
