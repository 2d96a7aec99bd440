"""What a run recorded of its system (results/sitefacts.py, the layers' system_facts) and how two
runs' facts read side by side (analysis/sites.differences), on real recorded runs: CephFS
layouts from ceph-fuse, ROMIO's printed hints, the real lfs's formatting of Lustre layouts."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from iolab.analysis.sites import differences
from iolab.layers import registry
from iolab.layers.storage import lustre
from iolab.layers.storage.cephfs import FIELDS
from iolab.layers.storage.layer import observed_layout
from iolab.results import sitefacts
from iolab.results.record import Observed
from iolab.results.run import load_run
from iolab.results.sitefacts import Fact

DATA = Path(__file__).resolve().parents[1] / "data"
NOSUCHPOOL = DATA / "cephfs" / "runs" / "cephfs-nosuchpool" / "20261128T185054Z-777c7d"
FIRST_FIO = DATA / "tutorial" / "first-fio" / "20261128T184854Z-282d86"


def _records(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def _facts(observed: dict) -> dict[str, str]:
    return {f.key: f.value for f in registry.system_facts(Observed.from_json(observed))}


def test_cephfs_defaults_are_the_layout_fields_no_case_asked_for():
    """grid-cephfs-local (81 records on ceph-fuse): each asked for unit, count and object size;
    the pool the files got is the file system's default, and the file system is the mount's."""
    for rec in _records(DATA / "grids" / "cephfs-local" / "records.jsonl.gz"):
        lay = rec["observed"]["cephfs"]
        unasked = {k: v for k, v in lay["layout"].items() if k in FIELDS and k not in lay["requested"]}
        assert unasked == {"pool": "cephfs_data"}
        assert _facts(rec["observed"]) == {
            "file system (scratch)": lay["fs_type"],
            **{f"CephFS default {k}": str(v) for k, v in unasked.items()}}


def test_cephfs_counts_the_osds_where_the_spread_lists_every_one():
    ok, failed = sorted(_records(NOSUCHPOOL / "records.jsonl"), key=lambda r: r["status"] != "ok")
    osds = ok["observed"]["cephfs"]["spread"]["bytes_per_osd"]
    assert _facts(ok["observed"])["CephFS OSDs"] == str(len(osds)) == "4"
    # a layout that was not applied (no such pool) says nothing of the defaults
    assert not [k for k in _facts(failed["observed"]) if k.startswith("CephFS")]


def test_romio_defaults_are_the_hints_in_effect_no_case_requested():
    recs = _records(DATA / "grids" / "romio-local" / "records.jsonl")
    assert recs
    for rec in recs:
        hints = rec["observed"]["mpiio_hints"]
        want = {f"MPI-IO {k}": v for k, v in hints["effective"].items() if k not in hints["requested"]}
        assert "MPI-IO cb_nodes" not in want and "MPI-IO romio_cb_write" in want
        got = {k: v for k, v in _facts(rec["observed"]).items() if k.startswith("MPI-IO")}
        assert got == want


def test_lustre_defaults_and_ost_count_from_the_real_lfs_formatting(tmp_path):
    """A stripe count asked for: the stripe size and pool the file got are Lustre's defaults."""
    plain = (DATA / "lustre" / "getstripe_plain.txt").read_text()
    path, body = plain.split("\n", 1)
    (tmp_path / lustre.FSTYPE_FILE).write_text("lustre\n")
    (tmp_path / lustre.SETSTRIPE_FILE).write_text("exit=0\n")
    shutil.copy(DATA / "lustre" / "lfs_df.txt", tmp_path / lustre.LFSDF_FILE)
    (tmp_path / lustre.GETSTRIPE_FILE).write_text(
        f"### {Path(path).parent}\nstripe_count:  4 stripe_size:   1048576 pattern:       raid0 "
        f"stripe_offset: -1\n\n### {path}\n{body}")
    [data] = lustre.parse_getstripe(plain)
    lay = observed_layout(lustre.FILE_SYSTEM, tmp_path, {"stripe_count": data["stripe_count"]})
    assert lay["applied"] is True
    facts = _facts({"lustre": lay, "storage": {"target": "scratch"}})
    osts = lustre.parse_lfs_df((DATA / "lustre" / "lfs_df.txt").read_text())
    assert facts == {"file system (scratch)": "lustre", "Lustre OSTs": str(osts),
                     "Lustre default stripe_size": str(data["stripe_size"])}
    assert osts == 8        # OST0008 is inactive


def test_a_recorded_run_s_facts_come_from_its_manifest_and_records():
    run = load_run(FIRST_FIO)
    facts = sitefacts.by_key(sitefacts.of(run))
    manifest = json.loads((FIRST_FIO / "manifest.json").read_text())
    extras = manifest["system_extras"]
    assert facts["system"].value == manifest["system"]
    assert facts["mpi_flavour"].value == extras["mpi_flavour"]
    assert facts["scratch"].value == extras["scratch"]
    assert facts["darshan.enabled"].value == str(extras["darshan"]["enabled"]).lower()
    assert facts["MPI runtime"].value == "openmpi"
    assert facts["ReFrame"].value == manifest["reframe"]
    recs = _records(FIRST_FIO / "records.jsonl")
    assert facts["fio version"].value == " / ".join(sorted({r["provenance"]["binary"]["version"]
                                                            for r in recs if r["status"] == "ok"}))
    nodes = {n for r in recs for n in r["provenance"].get("nodelist") or ()}
    assert facts["nodes the jobs ran on"].value == str(len(nodes))
    assert facts["file system (scratch)"].value == recs[0]["observed"]["lustre"]["fs_type"]
    assert not [k for k in facts if k.startswith("package ")], "no spack.lock in this run"


def test_differences_say_not_recorded_and_group_what_one_run_lacks():
    def f(group, key, value):
        return Fact(group, key, value)
    a = [f("system", "system", "local:default"), f("MPI", "MPI runtime", "openmpi"),
         f("stack", "spack.lock sha256", "1ecd64cf2064")]
    b = [f("system", "system", "local-romio:default"), f("MPI", "MPI runtime", "openmpi"),
         f("hints", "MPI-IO cb_nodes", "1"), f("hints", "MPI-IO cb_buffer_size", "16777216"),
         f("code", "ReFrame", "4.10.4")]
    assert differences(a, b) == [
        "system: local:default vs local-romio:default",
        "spack.lock sha256: 1ecd64cf2064 vs not recorded",
        "hints: not recorded vs cb_nodes 1, cb_buffer_size 16777216",
        "ReFrame: not recorded vs 4.10.4"]
    assert differences(b, a) == [
        "system: local-romio:default vs local:default",
        "hints: cb_nodes 1, cb_buffer_size 16777216 vs not recorded",
        "ReFrame: 4.10.4 vs not recorded",
        "spack.lock sha256: not recorded vs 1ecd64cf2064"]
    assert differences(a, list(a)) == []


def test_another_site_s_manifest_of_any_json_gives_facts_as_text(tmp_path):
    """A bundle's manifest and lock are another site's JSON: values of other types are shown as
    text, and a lock's malformed parts are left out, never a traceback."""
    run = tmp_path / "first-fio" / FIRST_FIO.name
    shutil.copytree(FIRST_FIO, run)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest.update(system=5, iolab=3, git=7, reframe=[1], host={"cpus": "x", "mem_total_kib": "y"},
                    system_extras={"mpi_flavour": "nope", "stack": 5, "gone": None})
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / "spack.lock").write_text(json.dumps({"concrete_specs": {
        "a": {"name": "openmpi", "version": 5}, "b": [], "c": {"name": "ior", "dependencies": [
            {"name": "openmpi", "parameters": {"virtuals": "mpi"}}, 3]}}}))
    facts = {f.key: f.value for f in sitefacts.of(load_run(run))}
    assert {k: facts[k] for k in ("system", "iolab", "ReFrame", "host CPUs", "host memory",
                                  "mpi_flavour", "stack", "gone", "package openmpi", "package ior")} == {
        "system": "5", "iolab": "3 (commit 7)", "ReFrame": "[1]", "host CPUs": "x",
        "host memory": "y", "mpi_flavour": "nope", "stack": "5", "gone": "null",
        "package openmpi": "5", "package ior": "null"}
    # no MPI runtime for a flavour iolab does not know, no MPI library from a malformed `virtuals`
    assert "MPI runtime" not in facts and "MPI library (spack.lock)" not in facts
