"""Where a case's fresh directory is, and what its file system allows, decided before submission.

Site facts come from the partition's SiteConfig (scratch, burst_buffer, node_local); the
Lustre checks that can be made from the login node are made here (require_lustre, a stripe
count above the OST count), the rest in the job (lustre.prerun_lines).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field

from . import lustre

# What a job-time location looks like where a system has none to show (a dry run's preview).
BURST_BUFFER_PREVIEW = "$DW_JOB_STRIPED"


@dataclass
class Storage:
    target: str                     # scratch | burst_buffer | node_local
    base: str                       # its root, with job-time variables left for the job
    case_dir: str
    on_lustre: bool = False         # (probably) on Lustre: job-time paths count as yes
    unrunnable: list[str] = field(default_factory=list)    # reasons the case cannot run here
    failure: str | None = None      # a request the file system refuses (stripes > OSTs)


def place(case, site, system: str, *, experiment: str, run_id: str, repetition: int,
          require_lustre: bool, dry_run: bool) -> Storage:
    target = case.get("storage", "scratch")
    base = site.root(target)
    unrunnable = []
    if base is None and target == "burst_buffer":
        base = BURST_BUFFER_PREVIEW   # the job as it would be on a DataWarp system
        if not dry_run:
            unrunnable.append(f"storage {target!r}: system {system} declares no burst buffer "
                              f"(extras['iolab']['burst_buffer'])")
    # Variables known here expand now; job-time ones ($DW_JOB_STRIPED) expand in the job.
    base = os.path.expandvars(base)
    out = Storage(target, base, f"{base}/{experiment}/{run_id}/{case.case_id}-r{repetition}",
                  unrunnable=unrunnable)
    req = case.striping
    if "$" in base:
        out.on_lustre = True
        return out
    if not (req or require_lustre):
        return out
    fstype = lustre.detect_fstype(base)
    out.on_lustre = fstype == "lustre"
    if require_lustre and fstype != "lustre":
        out.unrunnable.append(f"require_lustre: {target} ({base}) is {fstype}, not Lustre")
    if req and out.on_lustre and shutil.which("lfs"):
        df = subprocess.run(["lfs", "df", base], capture_output=True, text=True, timeout=60)
        try:
            osts = lustre.parse_lfs_df(df.stdout)
        except ValueError:
            return out
        out.failure = lustre.check_request(req, osts)
    return out
