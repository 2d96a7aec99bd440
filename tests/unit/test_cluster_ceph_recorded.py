"""The recorded 4-node collective MPI-IO write on CephFS (tests/data/cephfs-collective): its
records say what its outputs say. The nodes from $SLURM_JOB_NODELIST, the aggregators from
ROMIO's printed hints, the layout from getfattr and the OSDs from `ceph osd map` are read
again with iolab's parsers and compared with each record; the client counters of the same runs
show the writers on the aggregators' nodes only."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from reframe.utility import nodelist_expand

from iolab.layers.mpiio import hints as mpiio
from iolab.layers.storage import cephfs

DATA = Path(__file__).resolve().parents[1] / "data" / "cephfs-collective"
LAYOUT = {"stripe_unit": 1 << 20, "stripe_count": 4, "object_size": 4 << 20}
WITNESSES = ("iolab-cephfs-files.txt", "iolab-cephfs-spread.txt", "iolab-cephfs-setlayout.txt",
             "iolab-fstype.txt", "iolab-nodes.txt")


def _record(name: str) -> dict:
    return json.loads((DATA / f"record-{name}.json").read_text())


@pytest.mark.parametrize("name, asked", [("cb1", 1), ("cb4", 4)])
def test_the_record_says_what_the_outputs_say(name, asked, tmp_path):
    rec = _record(name)
    assert rec["status"] == "ok" and rec["flags"] == [] and rec["profile"] == "cluster"
    assert rec["provenance"]["system"] == "localcluster-ceph:compute"
    assert rec["params"]["mpiio.cb_nodes"] == asked and rec["params"]["scale.nodes"] == 4
    # the nodes: the job's own $SLURM_JOB_NODELIST, and IOR's count
    nodes = list(nodelist_expand((DATA / f"{name}-iolab-nodes.txt").read_text().strip()))
    assert rec["provenance"]["nodelist"] == nodes == ["node1", "node2", "node3", "node4"]
    assert rec["observed"]["benchmark"]["nodes"] == 4
    # the aggregators: ROMIO's table for the data file, one rank per node up to cb_nodes
    effective = mpiio.effective_hints((DATA / f"ior-stdout-{name}.txt").read_text(), "openmpi-romio")
    assert rec["observed"]["mpiio_hints"]["effective"] == effective
    ranks = [int(r) for r in effective["romio_aggregator_list"].split()]
    assert effective["cb_nodes"] == str(asked) and ranks == [2 * k for k in range(asked)]
    # the layout and the spread: the job's witness files, read again
    for witness in WITNESSES:
        shutil.copyfile(DATA / f"{name}-{witness}", tmp_path / witness)
    seen = cephfs.observe(tmp_path, LAYOUT, {})
    recorded = rec["observed"]["cephfs"]
    for key in ("applied", "files", "layout", "spread", "mismatches"):
        assert recorded[key] == seen[key], key
    assert recorded["fs_type"] == (DATA / f"{name}-iolab-fstype.txt").read_text().strip() == "fuse.ceph-fuse"
    (written,) = seen["files"]
    assert written["size"] == 32 << 20 and written["layout"]["pool"] == "cephfs_data"
    (spread,) = seen["spread"]["files"]
    assert spread["objects"] == spread["mapped"] == 8
    assert re.match(r"stripe count 4 reached [1-4] OSD\(s\)", seen["spread"]["note"])


def test_only_the_aggregators_nodes_wrote_to_the_osds():
    """cb_nodes 1: node1's client alone sent writes; cb_nodes 4: every node's, in every
    repetition (client-writes.txt, the clients' objecter counters around each case)."""
    ids = {_record(name)["case_id"]: name for name in ("cb1", "cb4")}
    seen: dict[str, list[list[str]]] = {"cb1": [], "cb4": []}
    for line in (DATA / "client-writes.txt").read_text().splitlines():
        if line.startswith("#"):
            continue
        _rep, case, *counts = line.split()
        ops = {c.split(":")[0]: int(c.split(":")[1].split("/")[0]) for c in counts}
        seen[ids[case]].append(sorted(n for n, k in ops.items() if k > 0))
    assert seen["cb1"] == [["node1"]] * 4
    assert seen["cb4"] == [["node1", "node2", "node3", "node4"]] * 4
