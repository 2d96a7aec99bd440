"""The runs recorded for `iolab why` (issue 39; tests/data/why, real runs with the Spack-built
stack and Darshan with DXT, 5 repetitions a case, see its README) load through the Run reader
whole: the digest chain verifies, every planned case and repetition is there and ok, every raw
file (the Darshan logs included) is the one the record names, each case's evidence in the
digest (results.evidence.of) is what it was recorded for, and no file holds a path of the
machine that recorded it."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from iolab import stats
from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand
from iolab.layers.darshan import reader
from iolab.results import evidence
from iolab.results.run import load_run

WHY = Path(__file__).resolve().parents[1] / "data" / "why"
MIB = 2**20
REPS = [1, 2, 3, 4, 5]
NODES = {"node1", "node2", "node3", "node4"}


def recorded(exp_id: str):
    """(the run, its manifest, the experiment as kept beside it) of the one run of `exp_id`."""
    (path,) = (WHY / exp_id).iterdir()
    run = load_run(path)
    yaml = WHY / f"{exp_id}.yaml"
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["experiment_yaml"] == yaml.read_text()
    return run, manifest, load_experiment(yaml, profile=manifest["profile"])


def check_whole(exp_id: str, profile: str | None):
    run, manifest, exp = recorded(exp_id)
    records = run.records
    verdict = run.reading.verdict
    assert verdict.state == "verified" and not verdict.problems and verdict.count == len(records)
    assert not run.reading.unreadable
    assert exp.repetitions == 5
    want = sorted((c.case_id, rep) for c in expand(exp) for rep in range(1, exp.repetitions + 1))
    assert sorted((r.case_id, r.repetition) for r in records) == want
    assert all(r.ok and r.value("write_bw") for r in records)
    assert manifest["profile"] == profile and manifest["finished"]["complete"]
    for rec in records:
        raw = rec.to_json()["raw"]
        assert "darshan.log" in raw["files"]
        for name, sha in raw["files"].items():
            body = (run.path / raw["dir"] / name).read_bytes()
            assert hashlib.sha256(body).hexdigest() == sha, f"{raw['dir']}/{name}"
        assert rec.observed.get("darshan")["status"] == "ok"
    return run


def by_param(run, name: str) -> dict:
    """The param's value -> (that case's evidence by name, its write_bw Summary)."""
    every = evidence.of(run)
    out = {}
    for (_part, case_id), ev in every.items():
        recs = sorted((r for r in run.records if r.case_id == case_id), key=lambda r: r.repetition)
        value = recs[0].params[name]
        out[value if not isinstance(value, list) else tuple(value)] = (
            ev, stats.summarize([r.value("write_bw") for r in recs]))
    return out


def values(ev, name: str) -> list:
    series = ev[name]
    assert series.reps == REPS and not series.reasons(), (name, series)
    return series.values


def test_fio_block_size_sweep():
    """16 MiB at 4 KiB, 64 KiB and 1 MiB: Darshan counted 16 MiB / bs writes of bs in every
    repetition, and write_bw at 4 KiB is below both larger sizes beyond noise (Welch)."""
    run = check_whole("why-fio-block-size", None)
    cases = by_param(run, "bs")
    assert set(cases) == {4096, 65536, MIB}
    for bs, (ev, _) in cases.items():
        assert values(ev, "write_ops") == [16 * MIB / bs] * 5
        assert values(ev, "requests") == [16 * MIB / bs] * 5           # fio's own count
        assert values(ev, "mean_write_size") == values(ev, "request_size") == [bs] * 5
        assert values(ev, "bytes_written") == [16 * MIB] * 5
        assert values(ev, "tiny_write_share") == [100.0 if bs == 4096 else 0.0] * 5
        assert ev["write_ops"].source == "darshan" and ev["requests"].source != "darshan"
    for rec in run.records:
        assert rec.observed.get("darshan")["summary"]["dxt"]["posix"]
    small = cases[4096][1]
    for bs in (65536, MIB):
        big = cases[bs][1]
        assert small.mean < big.mean and stats.welch(small, big).p < 0.05, bs


def test_control_differs_by_a_label_only():
    """Two cases that differ by fio's --description: identical counters, and a write_bw
    difference within noise (Welch, and an interval of the difference holding 0)."""
    run = check_whole("why-control", None)
    varied = {json.dumps({k: v for k, v in r.params.items() if k != "extra_args"}, sort_keys=True)
              for r in run.records}
    assert len(varied) == 1
    cases = by_param(run, "extra_args")
    assert set(cases) == {("--description=control-a",), ("--description=control-b",)}
    (a, bw_a), (b, bw_b) = cases.values()
    for name in ("write_ops", "requests", "bytes_written", "mean_write_size", "tiny_write_share",
                 "small_write_share", "unaligned_share"):
        assert values(a, name) == values(b, name) and len(set(values(a, name))) == 1, name
    assert stats.welch(bw_a, bw_b).p > 0.05
    _, low, high = stats.difference_ci(bw_a, bw_b)
    assert low < 0 < high


def test_cephfs_stripe_count_sweep():
    """Stripe count N cut the 8 MiB file into N objects in every repetition; the OSDs reached
    (rados ls, ceph osd map) rose with the count, 1 -> 1.6 -> 2.6 of 4 on average."""
    run = check_whole("why-cephfs-stripe-count", None)
    cases = by_param(run, "cephfs.stripe_count")
    assert set(cases) == {1, 2, 4}
    osds = {}
    for count, (ev, _) in cases.items():
        assert values(ev, "objects_written") == [count] * 5
        reached = values(ev, "osds_with_data")
        assert all(1 <= n <= count for n in reached)
        osds[count] = sum(reached) / 5
        assert ev["osds_with_data"].source != "darshan"
    assert osds == {1: 1.0, 2: 1.6, 4: 2.6}
    for rec in run.records:
        ceph = rec.observed.get("cephfs")
        assert ceph["applied"] and ceph["verified"]
        (spread,) = ceph["spread"]["files"]
        assert spread["objects"] == spread["mapped"] == rec.params["cephfs.stripe_count"]
        assert sum(spread["bytes_per_osd"].values()) == 8 * MIB


def hosts_that_wrote(rec, run) -> set:
    """The hosts whose ranks issued POSIX writes, from the job's DXT records."""
    raw = reader.read_raw(run.path / rec.to_json()["raw"]["dir"] / "darshan.log")
    return {seg["hostname"] for seg in raw["dxt"]["DXT_POSIX"] if seg["write_count"]}


def test_cephfs_collective_aggregators_on_four_nodes():
    """cb_nodes 1 and 4 on 4 nodes: the aggregators in effect (ROMIO) and those that wrote
    (Darshan's DXT) are 1 and 4 in every repetition, and so are the hosts that wrote, as the
    recorded summary keeps them (evidence hosts_that_wrote) and as the raw DXT records say."""
    run = check_whole("cephfs-collective", "cluster")
    cases = by_param(run, "mpiio.cb_nodes")
    assert set(cases) == {1, 4}
    for cb, (ev, _) in cases.items():
        assert values(ev, "aggregators_in_effect") == values(ev, "aggregators_that_wrote") == [cb] * 5
        assert values(ev, "hosts_that_wrote") == [cb] * 5
        assert ev["hosts_that_wrote"].source == "darshan"
    for rec in run.records:
        cb = rec.params["mpiio.cb_nodes"]
        assert rec.observed.effective("mpiio.cb_nodes") == cb
        agg = rec.observed.get("darshan")["aggregators"]
        assert agg["observed"] == cb and agg["verdict"] == "matches"
        assert "(DXT)" in agg["evidence"]
        assert hosts_that_wrote(rec, run) == ({"node1"} if cb == 1 else NODES)
        kept = rec.observed.get("darshan")["summary"]["hosts"]["write"]
        assert set(kept["names"]) == hosts_that_wrote(rec, run) and kept["hosts"] == cb


# What a recorded path may be: the throwaway directory the runs were made in, the fallback file
# iolab names beside it, and the system's own (fio, the shell, ROMIO's default hints file, the
# mounts Darshan lists). A path under a home directory, a checkout or a cache is none of these.
# The mounts include those of a second cluster and CephFS that were up on the machine under
# scripts/cluster-local's and ceph-local's default names (README: neutral paths).
NEUTRAL = re.compile(
    r"/tmp/iolab-why(/[\w.+-]*)*"
    r"|/tmp/iolab-[\w-]+-records\.unsaved-\d+\.jsonl|/tmp"
    r"|/usr/bin/fio|/bin/bash|/dev/null|/dev|/etc/romio-hints"
    r"|/run/netns(/ih2-\w+|/iolab-(hub|node\d+))?|/tmp/iolab-ceph/mnt|/sys/fs/cgroup/unified|/")
# A path starts at a top-level directory of a Unix system; base64 in the digest is no path.
PATH = re.compile(
    rb"(?<![\w.~+/-])/(?:tmp|usr|bin|sbin|lib|lib64|etc|dev|home|root|work|opt|var|srv|mnt|media"
    rb"|run|sys|proc|snap|nix|scratch|gpfs|lustre|data)(?![\w.-])(?:/[\w.+-]*)*")
MACHINE = re.compile(rb"/work/|/root/|/home/|\.cache/|\.venv")


def test_no_file_holds_a_path_of_the_recording_machine():
    """Every file's bytes, and each Darshan log's decompressed executable, mounts and file
    names, hold only neutral paths (README: how they were made)."""
    # README.md is left out: it quotes the pattern it was checked with
    files = sorted(p for p in WHY.rglob("*") if p.is_file() and p.name != "README.md")
    assert len(files) == 736
    bad = []
    for path in files:
        body = path.read_bytes()
        texts = [body]
        if path.name == "darshan.log":
            raw = reader.read_raw(path)
            texts.append(json.dumps([raw["job"], raw["mounts"], raw["names"]]).encode())
        for text in texts:
            bad += [(path, m.group()) for m in MACHINE.finditer(text)]
            bad += [(path, m.group()) for m in PATH.finditer(text)
                    if not NEUTRAL.fullmatch(m.group().decode())]
    assert not bad, bad[:10]
    assert max(p.stat().st_size for p in files if p.name != "records.jsonl") < 100_000


@pytest.mark.parametrize("text", [b"/root/.cache/iolab/spack/envs/x/view/bin/ior",
                                  b" /home/someone/iolab/.venv/bin/python", b"/work/h9/results",
                                  b"/opt/stack/lib/libdarshan.so", b'"/tmp/other/scratch"',
                                  b"/tmp/iolab-ceph/ceph.conf", b"/run/netns/iolab-nodes/x"])
def test_the_path_check_catches_a_machine_path(text):
    found = [m.group().decode() for m in PATH.finditer(text)]
    assert any(not NEUTRAL.fullmatch(p) for p in found)
