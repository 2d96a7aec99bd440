"""Where a case's fresh directory is, and what its file system allows, decided before submission.

Site facts come from the partition's SiteConfig (scratch, burst_buffer, node_local); the
checks a file system lets the login node make are made here (require_lustre, a stripe count
above Lustre's OST count), the rest in the job (layer.prerun_lines).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from . import base as fs_base

# What a job-time location looks like where a system has none to show (a dry run's preview).
BURST_BUFFER_PREVIEW = "$DW_JOB_STRIPED"


@dataclass
class Storage:
    target: str                     # scratch | burst_buffer | node_local
    base: str                       # its root, with job-time variables left for the job
    case_dir: str
    fs_type: str | None = None      # as the login node sees it (None: not asked)
    job_time: bool = False          # a job-time location: taken to be the file system asked for
    unrunnable: list[str] = field(default_factory=list)    # reasons the case cannot run here
    failure: str | None = None      # a request the file system refuses (stripes > OSTs)

    def on(self, fs) -> bool:
        """Whether the case directory is (probably) on this file system (a FileSystem, or a
        type as detect_fstype names it)."""
        if self.job_time:
            return True
        return fs.matches(self.fs_type) if isinstance(fs, fs_base.FileSystem) else self.fs_type == fs


def place(case, site, system: str, *, experiment: str, run_id: str, repetition: int,
          require_lustre: bool, dry_run: bool, require_file_system: str | None = None) -> Storage:
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
    asked = fs_base.requests(case.params)
    if "$" in base:
        out.job_time = True
        return out
    if not (asked or require_lustre or require_file_system):
        return out
    out.fs_type = fstype = fs_base.detect_fstype(base)
    if require_lustre and fstype != "lustre":
        out.unrunnable.append(f"require_lustre: {target} ({base}) is {fstype}, not Lustre")
    required = next((fs for fs in fs_base.file_systems() if fs.name == require_file_system), None)
    if required and not out.on(required):
        out.unrunnable.append(f"require_file_system: {target} ({base}) is {fstype}, "
                              f"not {required.name}")
    for fs, req in asked:
        if out.on(fs):
            out.failure = out.failure or fs.check_at(req, base)
    return out
