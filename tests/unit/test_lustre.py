"""Lustre: requested striping -> lfs setstripe; lfs getstripe / lfs df text -> applied or not."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from iolab.layers.storage import base as fs_base
from iolab.layers.storage import layer as storage
from iolab.layers.storage import lustre

DATA = Path(__file__).resolve().parents[1] / "data" / "lustre"


def read(name: str) -> str:
    return (DATA / name).read_text()


# --- existing behaviour, unchanged -----------------------------------------------------------

def test_requested_and_setstripe_args():
    req = lustre.requested({"lustre.stripe_count": 4, "lustre.stripe_size": 1048576,
                            "lustre.pool": "flash", "block_size": 1})
    assert req == {"stripe_count": 4, "stripe_size": 1048576, "pool": "flash"}
    assert lustre.setstripe_args(req) == ["lfs", "setstripe", "-c", "4", "-S", "1M", "-p", "flash"]
    assert lustre.setstripe_args({"stripe_size": 65536 * 3})[-1] == "192K"
    assert lustre.setstripe_args({"stripe_size": 4 << 30})[-1] == "4G"


def test_prerun_and_observed(tmp_path):
    assert len(storage.prerun_lines("/scratch/x", {})) == 1
    assert "-i 1" in storage.prerun_lines("/scratch/x", {"lustre.stripe_offset": 1})[1]
    # a job that never reached its detection line laid nothing out: not "not applied" either
    assert storage.observed_layout(lustre.FILE_SYSTEM, tmp_path, {"stripe_count": 2}) == {
        "requested": {"stripe_count": 2}}
    assert storage.observed_layout(lustre.FILE_SYSTEM, tmp_path, {}) == {}
    (tmp_path / lustre.FSTYPE_FILE).write_text("")
    assert storage.observed_layout(lustre.FILE_SYSTEM, tmp_path, {"stripe_count": 2}) == {
        "fs_type": "unknown", "requested": {"stripe_count": 2}, "applied": False,
        "reason": "unknown: no striping"}
    (tmp_path / lustre.FSTYPE_FILE).write_text("lustre\n")
    assert storage.observed_layout(lustre.FILE_SYSTEM, tmp_path, {}) == {"fs_type": "lustre"}
    seen = storage.observed_layout(lustre.FILE_SYSTEM, tmp_path, {"stripe_count": 2})
    assert seen["reason"].endswith("no output")
    (tmp_path / lustre.SETSTRIPE_FILE).write_text("exit=0\n")
    assert storage.observed_layout(lustre.FILE_SYSTEM, tmp_path, {"stripe_count": 2})["applied"] is True


# --- parse_getstripe ------------------------------------------------------------------------

def test_plain_file():
    [f] = lustre.parse_getstripe(read("getstripe_plain.txt"))
    assert f == {"path": "/lustre/scratch/iolab/case-1/ior.dat", "stripe_count": 4,
                 "stripe_size": 1048576, "stripe_offset": 1, "pool": None, "pattern": "raid0",
                 "osts": [1, 2, 3, 0]}
    assert "components" not in f


def test_directory_listing():
    d, f0, f1 = lustre.parse_getstripe(read("getstripe_dir_listing.txt"))
    assert d["path"] == "/lustre/scratch/iolab/case-2"
    assert (d["stripe_count"], d["stripe_size"], d["stripe_offset"], d["osts"]) == (-1, 4194304, -1, [])
    assert f0["path"].endswith("ior.dat.00000000")
    assert (f0["stripe_count"], f0["stripe_offset"], f0["osts"]) == (8, 5, [5, 6, 7, 0, 1, 2, 3, 4])
    assert f1["osts"] == [2, 3, 4, 5, 6, 7, 0, 1]


def test_directory_one_liner():
    assert lustre.parse_getstripe(read("getstripe_d_default.txt")) == [
        {"path": None, "stripe_count": 1, "stripe_size": 1048576, "stripe_offset": -1, "pool": None,
         "pattern": None, "osts": []}]
    [d] = lustre.parse_getstripe(read("getstripe_d_pool.txt"))
    assert (d["stripe_count"], d["stripe_size"], d["pool"]) == (4, 4194304, "flash")


def test_yaml_plain():
    [f] = lustre.parse_getstripe(read("getstripe_yaml.txt"))
    assert f == {"path": None, "stripe_count": 2, "stripe_size": 1048576, "stripe_offset": 3,
                 "pool": "flash", "pattern": "raid0", "osts": [3, 4]}


def test_yaml_without_paths_splits_files():
    text = read("getstripe_yaml.txt") + read("getstripe_yaml.txt").replace("l_ost_idx: 3", "l_ost_idx: 5")
    first, second = lustre.parse_getstripe(text)
    assert first["osts"] == [3, 4] and second["osts"] == [5, 4]


@pytest.mark.parametrize("name", ["getstripe_pfl.txt", "getstripe_pfl_yaml.txt"])
def test_composite(name):
    [f] = lustre.parse_getstripe(read(name))
    c1, c2, c3 = f["components"]
    assert c1 == {"id": 1, "flags": "init", "extent_start": 0, "extent_end": 4194304, "stripe_count": 1,
                  "stripe_size": 1048576, "stripe_offset": 1, "pool": None, "pattern": "raid0", "osts": [1]}
    assert (c2["extent_start"], c2["extent_end"], c2["stripe_count"], c2["osts"]) == (
        4194304, 67108864, 4, [6, 7, 0, 1])
    assert (c3["flags"], c3["extent_end"], c3["stripe_count"], c3["stripe_offset"], c3["osts"]) == (
        "0", None, -1, -1, [])
    # File level: the last initialized component, as lfs getstripe -c / -S report it.
    assert (f["stripe_count"], f["stripe_size"], f["stripe_offset"]) == (4, 1048576, 6)
    assert f["osts"] == [1, 6, 7, 0]
    assert f["path"] == ("/lustre/scratch/iolab/case-4/ior.dat" if name == "getstripe_pfl.txt" else None)


def test_composite_directory_template_uses_last_component():
    text = ("stripe_dir\n  lcm_layout_gen:    0\n  lcm_mirror_count:  1\n  lcm_entry_count:   2\n"
            "    lcme_id:             N/A\n    lcme_mirror_id:      N/A\n    lcme_flags:          0\n"
            "    lcme_extent.e_start: 0\n    lcme_extent.e_end:   1048576\n"
            "      stripe_count:  1       stripe_size:   1048576       pattern:       raid0"
            "       stripe_offset: -1\n\n"
            "    lcme_id:             N/A\n    lcme_mirror_id:      N/A\n    lcme_flags:          0\n"
            "    lcme_extent.e_start: 1048576\n    lcme_extent.e_end:   EOF\n"
            "      stripe_count:  4       stripe_size:   4194304       pattern:       raid0"
            "       stripe_offset: -1       pool:          flash\n\n")
    [d] = lustre.parse_getstripe(text)
    assert [c["id"] for c in d["components"]] == [None, None]
    assert d["components"][0]["stripe_count"] == 1
    assert (d["stripe_count"], d["stripe_size"], d["pool"]) == (4, 4194304, "flash")
    # `lfs getstripe -d a b`: an unindented one-liner after it is the next directory.
    d, plain = lustre.parse_getstripe(text + read("getstripe_d_default.txt"))
    assert len(d["components"]) == 2 and plain["stripe_count"] == 1


def test_other_versions_whitespace_and_hex():
    # 2.16: padded object entries, hex OST indices, YAML components as a list.
    text = ("lcm_layout_gen:    1\nlcm_mirror_count:  1\nlcm_entry_count:   1\ncomponents:\n"
            "  - lcme_id:             1\n    lcme_mirror_id:      0\n    lcme_flags:          init\n"
            "    lcme_extent.e_start: 0\n    lcme_extent.e_end:   EOF\n    sub_layout:\n"
            "      lmm_stripe_count:  2\n      lmm_stripe_size:   1048576\n"
            "      lmm_pattern:       raid0\n      lmm_layout_gen:    0\n      lmm_stripe_offset: 10\n"
            "      lmm_objects:\n"
            "      -   0: { l_ost_idx:  10, l_fid: [0x1000a0000:0x2:0x0] }\n"
            "      -   1: { l_ost_idx: 0xb, l_fid: [0x1000b0000:0x2:0x0] }\n")
    [f] = lustre.parse_getstripe(text)
    assert f["osts"] == [10, 11] and f["stripe_offset"] == 10
    # Older clients: numeric pattern, one space after the colon, hex obdidx column.
    plain = ("/mnt/f\nlmm_stripe_count: 1\nlmm_stripe_size: 65536\nlmm_pattern: 1\n"
             "lmm_stripe_offset: 0\n\tobdidx\t\t objid\t\t objid\t\t group\n"
             "\t   0x0\t             2\t          0x2\t             0\n")
    assert lustre.parse_getstripe(plain)[0]["osts"] == [0]


def test_no_stripe_info_is_a_record_without_values():
    [f] = lustre.parse_getstripe("/lustre/x/empty has no stripe info\n")
    assert f == {"path": "/lustre/x/empty", "stripe_count": None, "stripe_size": None,
                 "stripe_offset": None, "pool": None, "pattern": None, "osts": []}


@pytest.mark.parametrize("text, words", [
    ("", "no lfs getstripe records"),
    ("hello world\n", "no layout"),
    ("4\n", "single-field"),
    ("    lcme_id:             1\n", "outside a composite"),
    ("  lcm_layout_gen:    1\n      lmm_stripe_count:  1\n", "before the first component"),
    ("  lcm_layout_gen:    1\n    lcme_flags:          init\n", "before lcme_id"),
    ("lmm_stripe_count:  four\n", "not an integer"),
    ("\tobdidx\t\t objid\t\t objid\t\t group\n", "before any layout"),
    ("      - l_ost_idx: 1\n", "outside a layout"),
])
def test_not_getstripe_output(text, words):
    with pytest.raises(ValueError, match=words):
        lustre.parse_getstripe(text)


# --- parse_lfs_df / check_request -----------------------------------------------------------

def test_lfs_df_counts_active_osts():
    assert lustre.parse_lfs_df(read("lfs_df.txt")) == 8  # the inactive OST0008 has no [OST:N]


def test_lfs_df_rejects_other_text():
    with pytest.raises(ValueError, match=r"\[OST:N\]"):
        lustre.parse_lfs_df(read("getstripe_plain.txt"))


@pytest.mark.parametrize("req, osts", [
    ({}, 8), ({"stripe_count": 8}, 8), ({"stripe_count": -1}, 8), ({"stripe_count": 0}, 8),
    ({"stripe_count": 64}, None), ({"stripe_size": 1048576}, None), ({"stripe_size": "4MiB"}, 8),
    ({"stripe_size": 0}, 8), ({"stripe_offset": -1}, 8), ({"stripe_offset": 12}, 8),
    ({"pool": "flash"}, 8),
])
def test_check_request_ok(req, osts):
    assert lustre.check_request(req, osts) is None


@pytest.mark.parametrize("req, osts, words", [
    ({"stripe_count": 9}, 8, "more than the 8 OSTs"),
    ({"stripe_count": -2}, 8, "-1 (all OSTs)"),
    ({"stripe_size": 100000}, 8, "multiple of 64 KiB"),
    ({"stripe_size": 1024}, None, "multiple of 64 KiB"),  # lfs would even read 1024 as KiB
    ({"stripe_size": "96KiB"}, None, "multiple of 64 KiB"),
    ({"stripe_offset": -5}, 8, "OST index"),
])
def test_check_request_errors(req, osts, words):
    assert words in lustre.check_request(req, osts)


# --- compare_layout -------------------------------------------------------------------------

PLAIN = lustre.parse_getstripe(read("getstripe_plain.txt"))
LISTING = lustre.parse_getstripe(read("getstripe_dir_listing.txt"))


def test_applied_layout_has_no_entries():
    req = {"stripe_count": 4, "stripe_size": 1048576, "stripe_offset": 1}
    assert lustre.compare_layout(req, PLAIN, 8) == []
    assert lustre.compare_layout(req, PLAIN, None) == []


def test_from_requested_params():
    req = lustre.requested({"lustre.stripe_count": 4, "lustre.stripe_size": 1048576,
                            "lustre.stripe_offset": -1})
    assert lustre.compare_layout(req, PLAIN, 8) == []


@pytest.mark.parametrize("req, key, observed, status", [
    ({"stripe_count": 8}, "stripe_count", 4, "changed"),
    ({"stripe_size": 4194304}, "stripe_size", 1048576, "changed"),
    ({"stripe_size": "4MiB"}, "stripe_size", 1048576, "changed"),
    ({"stripe_offset": 2}, "stripe_offset", 1, "changed"),
    ({"pool": "flash"}, "pool", None, "missing"),
])
def test_each_way_a_request_goes_wrong(req, key, observed, status):
    assert lustre.compare_layout(req, PLAIN, 8) == [
        {"path": "/lustre/scratch/iolab/case-1/ior.dat", "key": key, "requested": req[key],
         "observed": observed, "status": status}]


def test_pool_changed():
    [f] = lustre.parse_getstripe(read("getstripe_yaml.txt"))
    assert lustre.compare_layout({"pool": "flash"}, [f], None) == []
    assert lustre.compare_layout({"pool": "disk"}, [f], None)[0]["status"] == "changed"


def test_defaults_match_anything():
    assert lustre.compare_layout({"stripe_count": 0, "stripe_size": 0, "stripe_offset": -1}, PLAIN, 8) == []


def test_all_osts():
    req = {"stripe_count": -1, "stripe_size": 4194304}
    # The directory keeps -1; its files show the real count.
    assert lustre.compare_layout(req, LISTING, 8) == []
    wrong = lustre.compare_layout(req, LISTING, 9)
    assert [(e["path"].rsplit("/", 1)[-1], e["observed"], e["status"]) for e in wrong] == [
        ("ior.dat.00000000", 8, "changed"), ("ior.dat.00000001", 8, "changed")]
    unknown = lustre.compare_layout(req, LISTING, None)
    assert [(e["key"], e["requested"], e["status"]) for e in unknown] == [
        ("stripe_count", -1, "unverified"), ("stripe_count", -1, "unverified")]


def test_all_osts_on_plain_file():
    assert lustre.compare_layout({"stripe_count": -1}, PLAIN, 4) == []
    assert lustre.compare_layout({"stripe_count": -1}, PLAIN, 8)[0]["status"] == "changed"


def test_several_mismatches_on_one_file():
    req = {"stripe_count": 2, "stripe_size": 65536, "stripe_offset": 0, "pool": "flash"}
    assert [e["key"] for e in lustre.compare_layout(req, PLAIN, 8)] == [
        "stripe_count", "stripe_size", "stripe_offset", "pool"]


def test_no_stripe_info_is_missing():
    files = lustre.parse_getstripe("/lustre/x/f has no stripe info\n")
    assert {e["status"] for e in lustre.compare_layout({"stripe_count": 4, "pool": "p"}, files, 8)} == {
        "missing"}


def test_no_files_is_unverified():
    assert lustre.compare_layout({"stripe_count": 4, "stripe_size": 1048576}, [], 8) == [
        {"path": None, "key": "stripe_count", "requested": 4, "observed": None, "status": "unverified"},
        {"path": None, "key": "stripe_size", "requested": 1048576, "observed": None,
         "status": "unverified"}]
    assert lustre.compare_layout({}, [], 8) == []


def test_composite_file_compared_on_its_last_initialized_component():
    files = lustre.parse_getstripe(read("getstripe_pfl.txt"))
    assert lustre.compare_layout({"stripe_count": 4, "stripe_size": 1048576}, files, 8) == []
    assert lustre.compare_layout({"stripe_count": 1}, files, 8)[0]["observed"] == 4


# --- detect_fstype --------------------------------------------------------------------------

MOUNTS = """\
overlay / overlay rw,relatime 0 0
proc /proc proc rw 0 0
10.0.0.1@o2ib:/scratch /lustre/scratch lustre rw,flock 0 0
tmpfs /lustre/scratch/fast tmpfs rw 0 0
server:/home /home nfs4 rw 0 0
server:/my\\040data /mnt/my\\040data nfs rw 0 0
/dev/sda1 /mnt/disk ext4 rw 0 0
/dev/sdb1 /mnt/disk xfs rw 0 0
"""


@pytest.mark.parametrize("path, fstype", [
    ("/lustre/scratch/iolab/case-1", "lustre"),
    ("/lustre/scratch", "lustre"),
    ("/lustre/scratch/fast/x", "tmpfs"),
    ("/lustre/scratchy", "overlay"),     # a prefix of the name is not a parent
    ("/home/u", "nfs4"),
    ("/mnt/my data/f", "nfs"),            # /proc/mounts escapes spaces as \040
    ("/mnt/disk/f", "xfs"),               # the later mount hides the earlier one
    ("/tmp", "overlay"),
])
def test_fstype_from_mounts(path, fstype):
    assert fs_base.fstype_from_mounts(path, MOUNTS) == fstype


def test_fstype_from_mounts_no_match():
    assert fs_base.fstype_from_mounts("/x", "proc /proc proc rw 0 0\nbad line\n") is None


def test_statfs_magic_matches_stat(tmp_path):
    magic = fs_base._statfs_magic(str(tmp_path))
    assert isinstance(magic, int)
    if shutil.which("stat"):
        out = subprocess.run(["stat", "-f", "-c", "%t", str(tmp_path)], capture_output=True, text=True)
        assert int(out.stdout.strip(), 16) == magic
    assert fs_base._statfs_magic(str(tmp_path / "missing")) is None


def test_detect_fstype_real(tmp_path):
    found = fs_base.detect_fstype(tmp_path)
    magic = fs_base._statfs_magic(str(tmp_path))
    if magic in fs_base.FS_MAGIC:
        assert found == fs_base.FS_MAGIC[magic]
    else:
        assert found == (fs_base.fstype_from_mounts(str(tmp_path.resolve()),
                                                   Path("/proc/mounts").read_text()) or "unknown")


def test_detect_fstype_by_magic(monkeypatch, tmp_path):
    monkeypatch.setattr(fs_base, "_statfs_magic", lambda path: 0x0BD00BD0)
    assert fs_base.detect_fstype(tmp_path) == "lustre"
    monkeypatch.setattr(fs_base, "_statfs_magic", lambda path: 0x47504653)
    assert fs_base.detect_fstype(tmp_path) == "gpfs"
    monkeypatch.setattr(fs_base, "_statfs_magic", lambda path: 0xEF53)
    assert fs_base.detect_fstype(tmp_path) == "ext4"


def test_detect_fstype_falls_back_to_mounts(monkeypatch, tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text(f"srv:/x {tmp_path} nfs rw 0 0\n")
    monkeypatch.setattr(fs_base, "_statfs_magic", lambda path: None)
    # The case directory does not exist yet: its nearest existing parent decides.
    assert fs_base.detect_fstype(tmp_path / "not" / "yet", mounts=str(mounts)) == "nfs"
    monkeypatch.setattr(fs_base, "_statfs_magic", lambda path: 0x12345678)
    assert fs_base.detect_fstype(tmp_path, mounts=str(mounts)) == "nfs"
    assert fs_base.detect_fstype(tmp_path, mounts=str(tmp_path / "none")) == "unknown"


# --- preflight: the OST count, asked once before the run --------------------------------------

def test_preflight_refuses_more_stripes_than_osts(tmp_path):
    """`lfs df` as recorded (8 active OSTs), from a stand-in `lfs` on the jobs' PATH: only what
    the count refuses is refused here, each request once; without lfs it is said, not refused."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "lfs").write_text(f'#!/bin/sh\necho "$*" >> {tmp_path}/calls\ncat {DATA / "lfs_df.txt"}\n')
    (bindir / "lfs").chmod(0o755)
    said = []
    reqs = [{"stripe_count": 8}, {"stripe_count": 9}, {"stripe_count": -1},
            {"components": [{"end": 1 << 20, "stripe_count": 1}, {"end": -1, "stripe_count": 16}]}]
    refused = lustre.FILE_SYSTEM.preflight(reqs, "/lustre/scratch", {"PATH": str(bindir)}, said.append)
    assert [(r.key, r.value) for r in refused] == [
        ("lustre.stripe_count", 9), ("lustre.components", reqs[3]["components"])]
    assert "more than the 8 OSTs" in refused[0].reason and said == []
    assert (tmp_path / "calls").read_text() == "df /lustre/scratch\n"
    assert lustre.FILE_SYSTEM.preflight(reqs, "/lustre/scratch", {"PATH": str(tmp_path)},
                                        said.append) == []
    assert said == ["iolab: lustre.* layouts under /lustre/scratch not checked against its OST "
                    "count before the run: no lfs here; the job's lfs setstripe checks them"]
