"""The CephFS file system of the storage layer: requests typed and refused at load, the job lines
run by bash, and the witnesses recorded on a real CephFS (tests/data/cephfs/README.md) read back."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from iolab.errors import IolabError
from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand
from iolab.layers.registry import get
from iolab.layers.storage import base, cephfs
from iolab.layers.storage.layer import observed_layout

DATA = Path(__file__).resolve().parents[1] / "data" / "cephfs"
KIB, MIB = 1024, 1024 * 1024
CEPHFS = cephfs.FILE_SYSTEM


def load(tmp_path, fixed: str):
    (tmp_path / "experiments").mkdir(exist_ok=True)
    path = tmp_path / "experiments" / "t.yaml"
    path.write_text(f"id: t\ndescription: x\nbenchmark: fio\nfixed:\n{fixed}")
    return load_experiment(path)


def test_sizes_are_typed_at_load(tmp_path):
    exp = load(tmp_path, "  cephfs.stripe_unit: 64KiB\n  cephfs.stripe_count: 4\n"
                        "  cephfs.object_size: 1MiB\n  cephfs.pool: cephfs_data\n")
    (case,) = expand(exp)
    assert CEPHFS.requested(case.params) == {"stripe_unit": 64 * KIB, "stripe_count": 4,
                                             "object_size": MIB, "pool": "cephfs_data"}


@pytest.mark.parametrize("fixed, message", [
    ("  cephfs.stripe_count: -1\n", r"t.yaml:5: fixed.cephfs.stripe_count"),
    ("  cephfs.stripe_count: 0\n", r"t.yaml:5: fixed.cephfs.stripe_count"),
    ("  cephfs.stripe_unit: 100000\n", r"t.yaml:5: fixed.cephfs.stripe_unit"),
    ("  cephfs.object_size: 1000KiB\n", r"t.yaml:5: fixed.cephfs.object_size"),
    ("  cephfs.pool: 'a pool'\n", r"t.yaml:5: fixed.cephfs.pool"),
    ("  cephfs.stripe_unit: 3MiB\n  cephfs.object_size: 4MiB\n",
     r"cephfs.object_size 4MiB is not a multiple of cephfs.stripe_unit 3MiB"),
])
def test_invalid_layouts_are_refused_at_load_with_the_reason(tmp_path, fixed, message):
    with pytest.raises(IolabError, match=message):
        expand(load(tmp_path, fixed))


@pytest.mark.parametrize("req, problem", [
    ({"stripe_count": -1}, "Ceph stores -1 as 4294967295"),
    ({"stripe_count": 0}, "give a count from 1"),
    ({"stripe_unit": 100000}, "multiple of 64 KiB"),
    ({"object_size": 3 * 65536 + 1}, "multiple of 64 KiB"),
    ({"stripe_unit": 3 * MIB, "object_size": 4 * MIB}, "the unit must divide the object size"),
    ({"stripe_unit": 64 * KIB, "stripe_count": 4, "object_size": MIB}, None),
    ({"stripe_unit": 4 * MIB, "object_size": 4 * MIB}, None),
])
def test_check_request(req, problem):
    got = cephfs.check_request(req)
    assert (got is None) if problem is None else (problem in got)


# --- the job lines -------------------------------------------------------------------------

def test_the_detected_types_are_its_own():
    assert CEPHFS.matches("fuse.ceph-fuse") and CEPHFS.matches("ceph")
    assert not CEPHFS.matches("fuse") and not CEPHFS.matches("cephfs") and not CEPHFS.matches(None)
    lustre = get("storage")._owner("lustre.stripe_count")
    assert lustre.matches("lustre") and not lustre.matches("fuse.ceph-fuse")


def test_one_xattr_sets_every_field_in_field_order():
    assert cephfs.layout_value({"pool": "p", "object_size": MIB, "stripe_unit": 64 * KIB}) == \
        "stripe_unit=65536 object_size=1048576 pool=p"


def run_lines(stage: Path, fstype: str, lines: list[str]) -> subprocess.CompletedProcess:
    (stage / base.FSTYPE_FILE).write_text(fstype + "\n")
    return subprocess.run(["bash", "-c", "\n".join(lines)], cwd=stage, capture_output=True,
                          text=True, timeout=60)


@pytest.fixture
def fake_setfattr(tmp_path, monkeypatch):
    """A setfattr that notes its argv, one per line (and refuses when asked to)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "setfattr").write_text(
        '#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done >> "$SETFATTR_LOG"\n'
        '[ -z "$SETFATTR_FAIL" ] || { echo "setfattr: $5: Invalid argument" >&2; exit 1; }\n')
    (bindir / "setfattr").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{Path('/usr/bin')}:{Path('/bin')}")
    monkeypatch.setenv("SETFATTR_LOG", str(tmp_path / "argv"))
    return tmp_path / "argv"


def test_prerun_passes_the_layout_and_a_hostile_path_as_single_words(tmp_path, fake_setfattr):
    stage = tmp_path / "stage"
    stage.mkdir()
    case = tmp_path / "case $(touch PWNED) 'q'"
    case.mkdir()
    req = {"stripe_unit": 64 * KIB, "stripe_count": 2}
    r = run_lines(stage, "fuse.ceph-fuse", [*cephfs.prerun_lines(str(case), req), "echo ran"])
    assert r.returncode == 0 and "ran" in r.stdout
    assert fake_setfattr.read_text().splitlines() == [
        "-n", "ceph.dir.layout", "-v", "stripe_unit=65536 stripe_count=2", str(case)]
    assert (stage / cephfs.SETLAYOUT_FILE).read_text() == "exit=0\n"
    assert not list(tmp_path.rglob("PWNED"))


def test_a_refused_layout_stops_the_job_unless_verify_warns(tmp_path, fake_setfattr, monkeypatch):
    monkeypatch.setenv("SETFATTR_FAIL", "1")
    stage = tmp_path / "stage"
    stage.mkdir()
    r = run_lines(stage, "fuse.ceph-fuse",
                  [*cephfs.prerun_lines(str(tmp_path), {"stripe_unit": 8 * MIB}), "echo ran"])
    assert r.returncode == 3 and "ran" not in r.stdout
    assert (stage / "iolab-job-error.txt").read_text().startswith(
        "setfattr ceph.dir.layout failed: setfattr: ")
    r = run_lines(stage, "fuse.ceph-fuse", [*cephfs.prerun_lines(
        str(tmp_path), {"stripe_unit": 8 * MIB}, stop_on_failure=False), "echo ran"])
    assert r.returncode == 0 and "ran" in r.stdout
    assert (stage / cephfs.SETLAYOUT_FILE).read_text().endswith("exit=1\n")


def test_nothing_runs_off_cephfs(tmp_path, fake_setfattr):
    stage = tmp_path / "stage"
    stage.mkdir()
    req = {"stripe_count": 2}
    lines = [*cephfs.prerun_lines(str(tmp_path), req), *cephfs.postrun_lines(str(tmp_path), req)]
    for fstype in ("ext4", "fuse", "lustre"):
        assert run_lines(stage, fstype, lines).returncode == 0
    assert not fake_setfattr.exists()
    assert sorted(p.name for p in stage.iterdir()) == [base.FSTYPE_FILE]


@pytest.mark.skipif(not shutil.which("getfattr"), reason="getfattr (Debian's attr) is not installed")
def test_postrun_without_the_server_cli_records_why_and_never_fails(tmp_path, monkeypatch):
    """On a directory that is no CephFS, getfattr finds no ceph.file.layout: the witnesses say
    so, the line exits 0, and the files stay unverified rather than applied."""
    monkeypatch.delenv("CEPH_CONF", raising=False)
    stage, case = tmp_path / "stage", tmp_path / "case"
    stage.mkdir()
    case.mkdir()
    (case / "data.0").write_bytes(b"x" * 100)
    (case / "subdir").mkdir()
    r = run_lines(stage, "fuse.ceph-fuse", cephfs.postrun_lines(str(case)))
    assert r.returncode == 0
    files = cephfs.parse_files((stage / cephfs.FILES_FILE).read_text())
    assert [(f["path"], f["size"]) for f in files] == [("data.0", 100)]
    assert "layout" not in files[0] and files[0]["error"]
    assert (stage / cephfs.SPREAD_FILE).read_text().startswith("no server-side witness")
    (stage / cephfs.SETLAYOUT_FILE).write_text("exit=0\n")
    out = observed_layout(CEPHFS, stage, {"stripe_count": 2})
    assert out["applied"] is True and out["verified"] is False
    assert out["spread"]["reason"].startswith("no server-side witness")


# --- recorded witnesses ----------------------------------------------------------------------

def test_parse_a_recorded_getfattr():
    (f,) = cephfs.parse_files((DATA / "count4-unit64k-obj1m" / cephfs.FILES_FILE).read_text())
    assert f == {"path": "data", "inode": 1099511628283, "size": 4 * MIB,
                 "layout": {"stripe_unit": 65536, "stripe_count": 4, "object_size": MIB,
                            "pool": "cephfs_data"}}
    assert cephfs.parse_layout('ceph.file.layout="stripe_unit=4194304 stripe_count=1 '
                               'object_size=4194304 pool=cephfs_data"')["stripe_unit"] == 4 * MIB
    with pytest.raises(ValueError):
        cephfs.parse_layout("getfattr: f: No such attribute")


def test_parse_a_recorded_osd_map():
    line = (DATA / "count4-unit64k-obj1m" / cephfs.SPREAD_FILE).read_text().splitlines()[2]
    assert cephfs.parse_osd_map(line) == {"object": "100000001fb.00000000", "pg": "3.3",
                                          "up": [0], "primary": 0}
    assert cephfs.parse_osd_map("osdmap e9 pool 'p' (2) object 'x.1' -> pg 2.1 (2.1) -> "
                                "up ([3,1,0], p3) acting ([3,1,0], p3)")["up"] == [3, 1, 0]
    with pytest.raises(ValueError):
        cephfs.parse_osd_map("Error ENOENT: pool nopool does not exist")


def test_the_recorded_objects_are_named_after_the_inode():
    spread = cephfs.parse_spread((DATA / "count4-unit64k-obj1m" / cephfs.SPREAD_FILE).read_text())
    (f,) = spread["files"]
    assert int(f["inode_hex"], 16) == 1099511628283
    assert (f["objects"], f["mapped"], f["objects_per_osd"]) == (4, 4, {"0": 1, "1": 1, "3": 2})
    assert spread["osds"] == [0, 1, 3]


def observe_recorded(name: str, req: dict, tmp_path) -> dict:
    stage = tmp_path / name
    shutil.copytree(DATA / name, stage)
    return observed_layout(CEPHFS, stage, req)


def test_observed_applied_with_the_spread_and_what_it_means(tmp_path):
    req = {"stripe_unit": 64 * KIB, "stripe_count": 4, "object_size": MIB}
    out = observe_recorded("count4-unit64k-obj1m", req, tmp_path)
    assert out["fs_type"] == "fuse.ceph-fuse"
    assert (out["applied"], out["verified"], out["mismatches"]) == (True, True, [])
    assert out["layout"] == {**req, "pool": "cephfs_data"}
    assert out["spread"]["osd_count"] == 3
    assert out["spread"]["note"].startswith("stripe count 4 reached 3 OSD(s); CephFS places")
    layer = get("storage")
    observed = {"cephfs": out}
    assert layer.flags(observed) == []          # fewer OSDs than the count: no flag
    assert layer.effective_shown(observed, "cephfs.stripe_count") == 4
    assert layer.reports_effective("cephfs.stripe_unit")
    assert not layer.reports_effective("lustre.stripe_count")


def test_observed_two_files_each_compared(tmp_path):
    out = observe_recorded("count2-unit1m-two-files", {"stripe_unit": MIB, "stripe_count": 2}, tmp_path)
    assert out["applied"] is True and [f["path"] for f in out["files"]] == ["a", "b"]
    assert [(f["path"], f["osds"]) for f in out["spread"]["files"]] == [("a", [1, 3]), ("b", [3])]
    # the same witnesses against another request: a difference, named with the file
    out = observe_recorded("count2-unit1m-two-files", {"stripe_count": 4}, tmp_path / "again")
    assert out["applied"] is False and out["mismatches"][0] == {
        "path": "a", "key": "stripe_count", "requested": 4, "observed": 2, "status": "changed"}
    assert get("storage").flags({"cephfs": out}) == [
        "striping not applied: stripe_count requested 4, got 2 (2 difference(s))"]
    assert get("storage").failing({"cephfs": out}, type("V", (), {"layout": "fail"})())


def test_observed_refused(tmp_path):
    out = observe_recorded("refused-unit8m", {"stripe_unit": 8 * MIB}, tmp_path)
    assert out["applied"] is False
    assert out["reason"] == ("setfattr ceph.dir.layout failed: setfattr: "
                             "/mnt/cephfs/record/refused-unit8m: Invalid argument\nexit=1")
    assert get("storage").effective_shown({"cephfs": out}, "cephfs.stripe_unit") == "not applied"


def test_off_cephfs_the_request_is_not_applied(tmp_path):
    (tmp_path / base.FSTYPE_FILE).write_text("ext4\n")
    out = observed_layout(CEPHFS, tmp_path, {"stripe_count": 2})
    assert out == {"fs_type": "ext4", "requested": {"stripe_count": 2}, "applied": False,
                   "reason": "ext4: no striping"}


def test_a_fuse_mount_is_named_by_the_mount_table(tmp_path, monkeypatch):
    mounts = tmp_path / "mounts"
    mounts.write_text(f"ceph-fuse {tmp_path} fuse.ceph-fuse rw 0 0\n")
    monkeypatch.setattr(base, "_statfs_magic", lambda path: 0x65735546)
    assert base.detect_fstype(tmp_path, mounts=str(mounts)) == "fuse.ceph-fuse"
    assert base.detect_fstype(tmp_path, mounts=str(tmp_path / "none")) == "fuse"


# --- require_file_system and the table's columns ---------------------------------------------

def test_require_file_system_skips_cases_elsewhere_with_the_reason(tmp_path, monkeypatch):
    from iolab.experiment import site
    from iolab.layers.storage import place

    exp = load(tmp_path, "  cephfs.stripe_count: 2\n")
    (case,) = expand(exp)
    root = site.load({"scratch": str(tmp_path / "scratch")})

    def where(required):
        return place.place(case, root, "sys:part", experiment="e", run_id="r", repetition=1,
                           dry_run=False, require_file_system=required)

    fstype = base.detect_fstype(tmp_path)
    assert where("cephfs").unrunnable == [
        f"require_file_system: scratch ({tmp_path}/scratch) is {fstype}, not cephfs"]
    assert where(None).unrunnable == []
    monkeypatch.setattr(base, "detect_fstype", lambda path: "fuse.ceph-fuse")
    assert where("cephfs").unrunnable == [] and where("cephfs").on(CEPHFS)


PREFLIGHT = """\
id: t
description: x
benchmark: fio
require_file_system: cephfs
fixed: {cephfs.stripe_count: 2}
matrix:
  cephfs.pool:
    - cephfs_data
    - nosuchpool
profiles:
  ceph:
    matrix:
      cephfs.pool: [cephfs_data,
                    ost9]
"""


def _preflight(tmp_path, text, scratch, profile=None, env=None):
    from iolab.experiment import site
    from iolab.experiment.load import where_set
    from iolab.layers.registry import preflight      # as the session asks: every layer's

    (tmp_path / "experiments").mkdir(exist_ok=True)
    path = tmp_path / "experiments" / "t.yaml"
    path.write_text(text)
    exp = load_experiment(path, profile)
    said = []
    facts = site.load({"scratch": scratch})
    problems = preflight([(exp, case, facts, env or {}) for case in expand(exp)], said.append,
                         where_set)
    return [str(p) for p in problems], said


def test_scratch_off_the_required_file_system_is_refused_before_the_run(tmp_path, monkeypatch):
    """Once per experiment and location, naming the experiment's line; its pools are not asked
    about where no CephFS is (the job records them as not applied)."""
    monkeypatch.chdir(tmp_path)
    fstype = base.detect_fstype(tmp_path)
    problems, said = _preflight(tmp_path, PREFLIGHT, str(tmp_path / "scratch"))
    assert problems == [f"experiments/t.yaml:4: require_file_system: scratch ({tmp_path}/scratch) "
                        f"is {fstype}, not CephFS: no case can run as asked"]
    assert said == []
    problems, _ = _preflight(tmp_path, PREFLIGHT.replace("require_file_system: cephfs\n", ""),
                             str(tmp_path / "scratch"))
    assert problems == []
    # a location known only in the job: said, not checked
    problems, said = _preflight(tmp_path, PREFLIGHT, "$DW_JOB_STRIPED")
    assert problems == [] and said == [
        "iolab: t: scratch is $DW_JOB_STRIPED, known only in the job: its file system and "
        "layouts are checked there, not before the run"]


def test_a_refused_pool_names_the_line_of_its_value(tmp_path, monkeypatch):
    """The line of the refused value, in the profile that set it where one did."""
    monkeypatch.chdir(tmp_path)
    _ceph_standin(tmp_path, monkeypatch)
    monkeypatch.setattr(base, "detect_fstype", lambda path: "fuse.ceph-fuse")
    env = {"PATH": f"{tmp_path}/bin:/usr/bin:/bin"}
    problems, _ = _preflight(tmp_path, PREFLIGHT, "/m/scratch", env=env)
    assert problems == ["experiments/t.yaml:9: cephfs.pool: pool 'nosuchpool' is not a data pool "
                        "of the CephFS under /m/scratch: no such pool in its cluster (data pools: "
                        "cephfs_data, ost1)"]
    problems, _ = _preflight(tmp_path, PREFLIGHT, "/m/scratch", profile="ceph", env=env)
    assert [p.split(": pool")[0] for p in problems] == ["experiments/t.yaml:14: cephfs.pool"]


def test_require_file_system_names_a_known_one(tmp_path):
    (tmp_path / "experiments").mkdir()
    path = tmp_path / "experiments" / "t.yaml"
    path.write_text("id: t\ndescription: x\nbenchmark: fio\nrequire_file_system: cephs\n")
    with pytest.raises(IolabError, match=r"t.yaml:4: .*no file system 'cephs' \(known: cephfs, lustre\)"):
        load_experiment(path)
    path.write_text("id: t\ndescription: x\nbenchmark: fio\nrequire_file_system: cephfs\n")
    assert load_experiment(path).require_file_system == "cephfs"


def test_the_table_columns_come_from_the_server_side_witness(tmp_path):
    layer = get("storage")
    out = observe_recorded("count2-unit1m-two-files", {"stripe_unit": MIB, "stripe_count": 2}, tmp_path)
    assert layer.column_values({"cephfs": out}, ["osds", "objects"]) == [
        ("osds", 2.0, "OSDs"), ("objects", 4.0, "objects")]
    assert layer.column_values({"cephfs": {"spread": {"reason": "no server-side witness"}}},
                               ["osds"]) == []     # missing stays missing, never 0
    with pytest.raises(IolabError, match="unknown storage column 'osd'"):
        layer.parse_columns("osds, osd")


def _ceph_standin(tmp_path, monkeypatch) -> Path:
    """A `ceph` on PATH that prints what the real one printed (fs-ls.json, recorded) for
    `fs ls`, and the cluster's pool list for `osd pool ls`; each call noted in `calls`."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "ceph").write_text(
        f'#!/bin/sh\necho "$*" >> {tmp_path}/calls\n'
        f'case "$*" in *"osd pool ls"*) echo \'["cephfs_metadata","cephfs_data","ost1","spare"]\';; '
        f'*) cat {DATA / "fs-ls.json"};; esac\n')
    (bindir / "ceph").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    return tmp_path / "calls"


def test_a_pool_the_file_system_lacks_is_refused_before_the_run(tmp_path, monkeypatch):
    """Each pool against the data pools `ceph fs ls` gives (asked once for all of them): one the
    cluster lacks, one it has that the file system does not use; none asked, nothing run."""
    calls = _ceph_standin(tmp_path, monkeypatch)
    said = []
    env = {"PATH": f"{tmp_path}/bin:/usr/bin:/bin", "CEPH_CONF": str(tmp_path / "ceph.conf")}
    refused = CEPHFS.preflight([{"pool": "ost1"}, {"pool": "nopool"}, {"pool": "spare"},
                                {"pool": "nopool", "stripe_count": 2}, {"stripe_count": 2}],
                               "/m/scratch", env, said.append)
    assert [(r.key, r.value, r.reason) for r in refused] == [
        ("cephfs.pool", "nopool", "pool 'nopool' is not a data pool of the CephFS under /m/scratch: "
                                  "no such pool in its cluster (data pools: cephfs_data, ost1)"),
        ("cephfs.pool", "spare", "pool 'spare' is not a data pool of the CephFS under /m/scratch: "
                                 "add it with `ceph fs add_data_pool cephfs spare` (data pools: "
                                 "cephfs_data, ost1)")]
    assert said == [] and calls.read_text().count("fs ls") == 1
    assert f"-c {tmp_path}/ceph.conf" in calls.read_text()
    calls.unlink()
    assert CEPHFS.preflight([{"stripe_count": 2}], "/m/scratch", env, said.append) == []
    assert not calls.exists()


def test_a_pool_not_checked_is_said_not_refused(tmp_path):
    """No cluster to ask (no ceph CLI on the jobs' PATH) and a directory that takes no CephFS
    layout (this scratch is no CephFS): the pool is not refused, and the line says why."""
    said = []
    assert cephfs.check_pools(["nopool"], str(tmp_path), {"PATH": str(tmp_path)}, said.append) == {}
    (line,) = said
    assert line.startswith("iolab: cephfs.pool 'nopool' not checked before the run: the cluster "
                           "cannot tell (no ceph CLI here) and the mount cannot either (")
    assert list(tmp_path.iterdir()) == []       # the probe directory is gone


def test_the_file_system_a_kernel_mount_names(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text("10.0.0.1:6789:/ /mnt/a ceph rw,name=admin,fs=second 0 0\n"
                      "10.0.0.1:6789:/ /mnt/b ceph rw,name=admin,mds_namespace=third 0 0\n"
                      "admin@5f3c-11.fourth=/ /mnt/c ceph rw,name=admin 0 0\n"
                      "ceph-fuse /mnt/d fuse.ceph-fuse rw,allow_other 0 0\n")
    assert [cephfs.mounted_fs_name(f"/mnt/{m}/scratch", str(mounts)) for m in "abcd"] == [
        "second", "third", "fourth", None]


# --- bytes per OSD (rados stat of each object, recorded) -------------------------------------

def test_bytes_per_osd_from_the_recorded_object_sizes(tmp_path):
    """10 MiB at stripe count 4, 1 MiB units, 4 MiB objects: objects of 3, 3, 2 and 2 MiB (units
    go round-robin), on osd.3, osd.0, osd.0 and osd.3; osd.1 and osd.2 got none of it."""
    req = {"stripe_unit": MIB, "stripe_count": 4, "object_size": 4 * MIB}
    out = observe_recorded("count4-unit1m-sized", req, tmp_path)
    spread = out["spread"]
    (f,) = spread["files"]
    assert (f["objects"], f["mapped"], f["sized"]) == (4, 4, 4)
    assert f["bytes_per_osd"] == {"3": 5 * MIB, "0": 5 * MIB}
    assert spread["cluster_osds"] == [0, 1, 2, 3]
    assert spread["bytes_per_osd"] == {"0": 5 * MIB, "1": 0, "2": 0, "3": 5 * MIB}
    assert sum(spread["bytes_per_osd"].values()) == out["files"][0]["size"] == 10 * MIB
    assert "bytes_partial" not in spread
    layer = get("storage")
    assert layer.column_values({"cephfs": out}, ["osds", "bytes_per_osd"]) == [
        ("osds", 2.0, "OSDs"), ("bytes_per_osd.osd.0", 5.0, "MiB"), ("bytes_per_osd.osd.1", 0.0, "MiB"),
        ("bytes_per_osd.osd.2", 0.0, "MiB"), ("bytes_per_osd.osd.3", 5.0, "MiB")]


def test_a_pinned_pool_puts_every_byte_on_its_osd(tmp_path):
    """Pool ost1 (one OSD's): both files' bytes on osd.1, including the one written without
    fsync (the job lines sync each file before asking the server)."""
    req = {"stripe_unit": MIB, "stripe_count": 4, "object_size": MIB, "pool": "ost1"}
    out = observe_recorded("pinned-ost1-two-files", req, tmp_path)
    assert out["applied"] is True
    assert [(f["path"], f["bytes_per_osd"]) for f in out["spread"]["files"]] == [
        ("a", {"1": 6 * MIB}), ("b", {"1": 3 * 64 * KIB})]
    assert out["spread"]["bytes_per_osd"] == {"0": 0, "1": 6 * MIB + 3 * 64 * KIB, "2": 0, "3": 0}


def test_bytes_per_osd_is_not_shown_where_some_bytes_were_not_witnessed(tmp_path):
    """Fewer objects sized than listed, or data files left unmapped: what was seen stays in the
    record with why it is short, and the table shows no bytes column rather than a low one."""
    text = (DATA / "count4-unit1m-sized" / cephfs.SPREAD_FILE).read_text()
    lines = text.splitlines()
    stat = next(i for i, line in enumerate(lines) if line.startswith("cephfs_data/"))
    shutil.copytree(DATA / "count4-unit1m-sized", tmp_path / "stage")
    (tmp_path / "stage" / cephfs.SPREAD_FILE).write_text(
        "\n".join(lines[:stat] + ["error stat-ing cephfs_data/x: (2) No such file or directory"]
                  + lines[stat + 1:]) + "\n")
    req = {"stripe_unit": MIB, "stripe_count": 4, "object_size": 4 * MIB}
    out = observed_layout(CEPHFS, tmp_path / "stage", req)
    assert out["spread"]["bytes_partial"] == "data: 3 of 4 objects sized"
    assert out["spread"]["bytes_per_osd"] == {"0": 5 * MIB, "1": 0, "2": 0, "3": 2 * MIB}
    names = [n for n, *_ in get("storage").column_values({"cephfs": out}, ["osds", "bytes_per_osd"])]
    assert names == ["osds"]
    # a recording from before sizes were asked for has no bytes at all, and says nothing false
    old = observe_recorded("count4-unit64k-obj1m", {"stripe_count": 4}, tmp_path / "old")
    assert "bytes_per_osd" not in old["spread"] and "cluster_osds" not in old["spread"]
    assert get("storage").column_values({"cephfs": old}, ["bytes_per_osd"]) == []


def test_parse_rados_stat():
    assert cephfs.parse_rados_stat("ost1/100000001fb.00000000 mtime 2026-11-26T18:52:01.000000+0000, "
                                   "size 196608") == ("100000001fb.00000000", 196608)
    with pytest.raises(ValueError):
        cephfs.parse_rados_stat(" error stat-ing cephfs_data/x: (2) No such file or directory")


def test_the_table_shows_a_column_per_osd(tmp_path):
    from iolab.analysis.columns import layer_metric_names, with_layer_columns
    from iolab.parsers import Metric
    from iolab.results.record import Observed, Record

    out = observe_recorded("count4-unit1m-sized",
                           {"stripe_unit": MIB, "stripe_count": 4, "object_size": 4 * MIB}, tmp_path)
    rec = Record(experiment="e", case_id="c", benchmark="fio", status="ok", repetition=1, params={},
                 metrics=[Metric("write_bw", 1.0, "MiB/s", "fio-json")],
                 observed=Observed.from_json({"cephfs": out}))
    layer = get("storage")
    (got,) = with_layer_columns([rec], layer, ["bytes_per_osd", "objects"])
    assert layer_metric_names([got], layer, ["bytes_per_osd", "objects"]) == [
        "storage.bytes_per_osd.osd.0", "storage.bytes_per_osd.osd.1", "storage.bytes_per_osd.osd.2",
        "storage.bytes_per_osd.osd.3", "storage.objects"]


def test_storage_columns_are_named_in_words():
    from iolab.analysis.report import metric_label

    assert metric_label("storage.osds") == "OSDs with data"
    assert metric_label("storage.objects") == "Objects"
    assert metric_label("storage.bytes_per_osd.osd.2") == "Data on osd.2"
    assert metric_label("darshan.small_write_pct") == "Darshan small_write_pct"


# --- a case that never ran: no setting applied or not (tests/data/cephfs/runs/README.md) ------

NEVER_RAN = DATA / "runs"


def _never_ran_run():
    from iolab.results.run import load_run

    (path,) = (NEVER_RAN / "cephfs-nosuchpool").iterdir()
    return load_run(path)


def test_a_case_that_never_ran_has_no_striping_footnote(monkeypatch, capsys):
    """The recorded run's nosuchpool case failed in ReFrame's setup, before its job existed, and
    its record says 'striping not applied: unknown: no striping': the table shows the failure
    and its reason, and no setting of a job that never ran."""
    from iolab.cli import main

    failed = next(r for r in _never_ran_run().records if r.status == "failed")
    assert failed.flags == ["striping not applied: unknown: no striping"]   # as recorded
    assert failed.notes() == []
    monkeypatch.setenv("IOLAB_RESULTS", str(NEVER_RAN))
    assert main(["table", "cephfs-nosuchpool"]) == 0
    out = capsys.readouterr().out
    assert "| nosuchpool | - | - | - | - | 0 | 1 failed¹ |" in out, out
    assert "striping not applied" not in out and "†" not in out.split("Mean ±")[0]
    assert "¹ failed: cephfs.pool 'nosuchpool' is not a data pool" in out
    assert main(["runs", "cephfs-nosuchpool"]) == 0
    assert "flagged" not in capsys.readouterr().out


def test_a_case_that_measured_keeps_its_not_applied_footnote():
    """The same rule from the other side: the run's measured case, its layout made 'not applied'
    as an ext4 scratch would have it, keeps the flag, ok or failed by its verify policy."""
    import dataclasses

    from iolab.results.record import Observed

    ok = next(r for r in _never_ran_run().records if r.ok)
    assert ok.metrics and ok.notes() == []
    seen = ok.observed.to_json()
    seen["cephfs"] = {"fs_type": "ext4", "requested": seen["cephfs"]["requested"],
                      "applied": False, "reason": "ext4: no striping"}
    observed = Observed.from_json(seen)
    for status in ("ok", "failed"):
        rec = dataclasses.replace(ok, status=status, observed=observed, flags=observed.flags())
        assert rec.notes() == ["striping not applied: ext4: no striping"]
    # failed with no values (its job stopped before the benchmark): the failure is its note
    stopped = dataclasses.replace(ok, status="failed", metrics=[], observed=observed,
                                  flags=observed.flags())
    assert stopped.notes() == []


def test_a_job_that_never_started_records_no_layout_verdict():
    """The failed case's stage as recorded (its job script was never written, so no detection
    line ran): the storage layer says what was asked and nothing of what was applied."""
    from types import SimpleNamespace

    run = _never_ran_run()
    failed = next(r for r in run.records if r.status == "failed")
    stage = run.path / failed.raw["dir"]
    assert not (stage / base.FSTYPE_FILE).exists()
    seen = get("storage").observe_files(SimpleNamespace(params=failed.params), stage)
    assert seen == {"cephfs": {"requested": CEPHFS.requested(failed.params)}}
    assert get("storage").flags(seen) == [] and get("storage").not_applied(seen, "cephfs.pool") is None
