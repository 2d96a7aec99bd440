"""Where a case's fresh directory is, and what its file system allows, decided before submission.

Site facts come from the partition's SiteConfig (scratch, burst_buffer, node_local). What only
the live system can tell (the file system under scratch, a CephFS pool, Lustre's OST count) is
asked once per session, before its run is created (preflight); the rest is checked in the job
(layer.prerun_lines).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from ...errors import IolabError
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

    def on(self, fs) -> bool:
        """Whether the case directory is (probably) on this file system (a FileSystem, or a
        type as detect_fstype names it)."""
        if self.job_time:
            return True
        return fs.matches(self.fs_type) if isinstance(fs, fs_base.FileSystem) else self.fs_type == fs


def place(case, site, system: str, *, experiment: str, run_id: str, repetition: int,
          dry_run: bool, require_file_system: str | None = None) -> Storage:
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
    if not (asked or require_file_system):
        return out
    out.fs_type = fstype = fs_base.detect_fstype(base)
    required = next((fs for fs in fs_base.file_systems() if fs.name == require_file_system), None)
    if required and not out.on(required):
        out.unrunnable.append(f"require_file_system: {target} ({base}) is {fstype}, "
                              f"not {required.name}")
    return out


@dataclass
class _Where:
    """One experiment's cases on one storage location of a session."""

    exp: object
    target: str
    base: str
    env: Mapping[str, str]
    cases: list = field(default_factory=list)


def preflight(items: Iterable[tuple], say: Callable[[str], None], locate) -> list[IolabError]:
    """What the live system refuses of a session's cases, asked once per experiment and storage
    location before the session's run is created: each problem names the experiment's file,
    line and key. items: (experiment, case, site facts, the jobs' environment) of each job;
    say(line): what could not be checked here, and why (the session goes on);
    locate(experiment, key, part, value) -> (file, line) (experiment.load.where_set)."""
    groups: dict[tuple, _Where] = {}
    for exp, case, site, env in items:
        target = case.get("storage", "scratch")
        base = site.root(target)
        if base is None:    # a system without it: the case is skipped with the reason (place)
            continue
        base = os.path.expandvars(base)
        where = groups.setdefault((exp.id, target, base), _Where(exp, target, base, env))
        if case not in where.cases:
            where.cases.append(case)
    out: list[IolabError] = []
    for where in groups.values():
        out += _check(where, say, locate)
    return out


def _check(where: _Where, say, locate) -> list[IolabError]:
    exp, base = where.exp, where.base
    required = [fs for fs in fs_base.file_systems()
                if fs.name == exp.require_file_system]
    asked = {fs: [req for case in where.cases if (req := fs.requested(case.params))]
             for fs in fs_base.file_systems()}
    asked = {fs: reqs for fs, reqs in asked.items() if reqs}
    if not (asked or required):
        return []
    if "$" in base:
        say(f"iolab: {exp.id}: {where.target} is {base}, known only in the job: its file system "
            "and layouts are checked there, not before the run")
        return []
    fstype = fs_base.detect_fstype(base)
    out = []
    for fs in required:
        if not fs.matches(fstype):
            # an older YAML's require_lustre: true is where the requirement is written
            key = "require_lustre" if "require_file_system" not in exp.raw else "require_file_system"
            file, line = locate(exp, key, None, None)
            out.append(IolabError(f"{where.target} ({base}) is {fstype}, not {fs.title}: no case "
                                  "can run as asked", file=file, line=line, key=key))
    for fs, reqs in asked.items():
        if not fs.matches(fstype):
            continue        # recorded as not applied, with the reason (layer.observed_layout)
        seen = set()
        for refusal in fs.preflight(reqs, base, where.env, say):
            case = next((c for c in where.cases if c.params.get(refusal.key) == refusal.value),
                        where.cases[0])
            if (refusal.key, repr(refusal.value)) in seen:
                continue
            seen.add((refusal.key, repr(refusal.value)))
            file, line = locate(exp, refusal.key, case.part, refusal.value)
            out.append(IolabError(refusal.reason, file=file, line=line, key=refusal.key))
    return out
