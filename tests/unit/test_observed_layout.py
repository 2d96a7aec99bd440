"""Requested vs observed Lustre layout, from the files a job leaves in its stage directory.

The job runs `lfs df` and `lfs getstripe` (see lustre.postrun_lines); these tests lay down
those files from the getstripe samples and check every way a request can go wrong.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from iolab.layers.storage import lustre
from iolab.layers.storage.layer import observed_layout
from iolab.results.record import Observed

DATA = Path(__file__).resolve().parents[1] / "data" / "lustre"
YAML_FILE = (DATA / "getstripe_yaml.txt").read_text()      # count 2, size 1M, offset 3, pool flash
DIR_POOL = (DATA / "getstripe_d_pool.txt").read_text()


def observed(stage, req):
    """What the storage layer records of a Lustre request."""
    return observed_layout(lustre.FILE_SYSTEM, stage, req)


def describe_flags(observed: dict) -> list[str]:
    return Observed.from_json(observed).flags()


def stage_for(tmp_path, *, fstype="lustre", setstripe="exit=0", files=(YAML_FILE,), df=True):
    (tmp_path / lustre.FSTYPE_FILE).write_text(fstype + "\n")
    if setstripe is not None:
        (tmp_path / lustre.SETSTRIPE_FILE).write_text(setstripe + "\n")
    if df:
        (tmp_path / lustre.LFSDF_FILE).write_text((DATA / "lfs_df.txt").read_text())
    text = f"### /lustre/scratch/case\n{DIR_POOL}"
    for i, body in enumerate(files):
        text += f"### /lustre/scratch/case/testfile.{i:08d}\n{body}"
    (tmp_path / lustre.GETSTRIPE_FILE).write_text(text)
    return tmp_path


def test_applied_when_every_file_matches(tmp_path):
    req = {"stripe_count": 2, "stripe_size": 1048576, "pool": "flash"}
    obs = observed(stage_for(tmp_path, files=[YAML_FILE, YAML_FILE]), req)
    assert obs["applied"] is True and obs["verified"] is True
    assert obs["ost_count"] == 8 and obs["mismatches"] == []
    assert [f["path"] for f in obs["files"]] == ["/lustre/scratch/case",
                                                 "/lustre/scratch/case/testfile.00000000",
                                                 "/lustre/scratch/case/testfile.00000001"]
    assert obs["files"][1]["osts"] == [3, 4]
    assert describe_flags({"lustre": obs}) == []


@pytest.mark.parametrize("req,key", [
    ({"stripe_count": 4}, "stripe_count"),          # count changed (e.g. a quota or a full OST)
    ({"stripe_size": 4194304}, "stripe_size"),      # size changed
    ({"pool": "capacity"}, "pool"),                 # pool not used
    ({"stripe_offset": 0}, "stripe_offset"),        # started on another OST
])
def test_each_difference_is_a_mismatch(tmp_path, req, key):
    obs = observed(stage_for(tmp_path), req)
    assert obs["applied"] is False and obs["verified"] is True
    assert [m["key"] for m in obs["mismatches"]] == [key]
    assert obs["reason"].startswith(f"{key} requested {req[key]}, got ")
    assert describe_flags({"lustre": obs})[0].startswith("striping not applied: " + key)


def test_all_osts_needs_the_ost_count(tmp_path):
    # -1 means every OST: 8 in lfs_df.txt, but the file has 2 stripes
    obs = observed(stage_for(tmp_path), {"stripe_count": -1})
    assert obs["applied"] is False and obs["mismatches"][0]["observed"] == 2
    # without lfs df there is nothing to compare -1 with: unverified, never "applied"
    nodf = tmp_path / "nodf"
    nodf.mkdir()
    obs = observed(stage_for(nodf, df=False), {"stripe_count": -1})
    assert obs["applied"] is True and obs["verified"] is False and obs["unverified"]
    assert describe_flags({"lustre": obs}) == ["striping unverified: stripe_count=-1"]


def test_no_files_written_is_unverified(tmp_path):
    obs = observed(stage_for(tmp_path, files=()), {"stripe_count": 2})
    assert obs["verified"] is False and obs["unverified"][0]["key"] == "stripe_count"


def test_setstripe_failure_is_not_applied(tmp_path):
    log = "lfs setstripe: setstripe error for '/lustre/x': stripe count 200 > max 8\nexit=22"
    obs = observed(stage_for(tmp_path, setstripe=log), {"stripe_count": 200})
    assert obs["applied"] is False and "lfs setstripe failed" in obs["reason"]
    assert "exit=22" in obs["reason"]


def test_not_lustre_is_not_applied(tmp_path):
    obs = observed(stage_for(tmp_path, fstype="ext4", setstripe=None), {"stripe_count": 4})
    assert obs == {"fs_type": "ext4", "requested": {"stripe_count": 4}, "applied": False,
                   "reason": "ext4: no striping"}
    assert describe_flags({"lustre": obs}) == ["striping not applied: ext4: no striping"]


def test_postrun_lines_collect_before_cleanup(tmp_path):
    """The generated shell really writes `### path` sections (lfs replaced by a recording echo)."""
    case = tmp_path / "case dir"
    case.mkdir()
    (case / "testfile.00000000").write_text("x")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "lfs").write_text("#!/bin/sh\necho \"lfs $*\"\n")
    (bin_dir / "lfs").chmod(0o755)
    (tmp_path / lustre.FSTYPE_FILE).write_text("lustre\n")
    script = "\n".join(lustre.postrun_lines(str(case)))
    subprocess.run(["bash", "-c", f"export PATH={bin_dir}:$PATH; {script}"], cwd=tmp_path, check=True)
    out = (tmp_path / lustre.GETSTRIPE_FILE).read_text().splitlines()
    assert out == [f"### {case}", f"lfs getstripe -d {case}",
                   f"### {case}/testfile.00000000", f"lfs getstripe -y {case}/testfile.00000000"]
    assert (tmp_path / lustre.LFSDF_FILE).read_text() == f"lfs df {case}\n"


def test_a_hint_the_file_system_makes_meaningless_is_flagged_with_its_reason():
    hints = {"flavour": "openmpi-romio", "requested": {"striping_unit": "1048576"},
             "effective": {"striping_unit": "1048576"},
             "comparison": [{"key": "striping_unit", "requested": "1048576", "effective": "1048576",
                             "status": "not applied", "reason": "ext4: no striping (only ROMIO's "
                             "lustre/pvfs2/orangefs driver reads striping_unit)"}]}
    assert describe_flags({"mpiio_hints": hints}) == [
        "hint striping_unit not applied: ext4: no striping (only ROMIO's lustre/pvfs2/orangefs driver "
        "reads striping_unit)"]
