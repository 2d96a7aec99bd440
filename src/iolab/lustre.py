"""Lustre striping: requested parameters -> `lfs setstripe`; observed layout <- the case directory.

Where the case directory is not on Lustre, striping is recorded as not applied, with the reason.
"""

from __future__ import annotations

import shlex
from pathlib import Path

FSTYPE_FILE = "iolab-fstype.txt"
SETSTRIPE_FILE = "iolab-setstripe.txt"
KEYS = ("lustre.stripe_count", "lustre.stripe_size", "lustre.stripe_offset", "lustre.pool")


def requested(params: dict) -> dict:
    return {k.removeprefix("lustre."): params[k] for k in KEYS if k in params}


def setstripe_args(req: dict) -> list[str]:
    args = ["lfs", "setstripe"]
    if "stripe_count" in req:
        args += ["-c", str(req["stripe_count"])]
    if "stripe_size" in req:
        args += ["-S", str(req["stripe_size"])]
    if "stripe_offset" in req:
        args += ["-i", str(req["stripe_offset"])]
    if "pool" in req:
        args += ["-p", req["pool"]]
    return args


def prerun_lines(case_dir: str, req: dict) -> list[str]:
    """Shell lines run in the job, on the compute node, after the case directory exists."""
    d = shlex.quote(case_dir)
    # findmnt names ext4 as such; stat -f (statfs magic) is the fallback and knows lustre.
    lines = [f"{{ findmnt -n -o FSTYPE -T {d} 2>/dev/null || stat -f -c %T {d}; }} > {FSTYPE_FILE}"]
    if req:
        cmd = " ".join(shlex.quote(a) for a in setstripe_args(req)) + f" {d}"
        lines.append(f"if [ \"$(cat {FSTYPE_FILE})\" = lustre ]; then {cmd} > {SETSTRIPE_FILE} 2>&1; "
                     f"echo \"exit=$?\" >> {SETSTRIPE_FILE}; fi")
    return lines


def observed(stage: Path, req: dict) -> dict:
    """What the job saw: the file-system type, and whether the requested striping was applied."""
    try:
        fstype = (stage / FSTYPE_FILE).read_text().strip() or "unknown"
    except OSError:
        fstype = "unknown"
    out: dict = {"fs_type": fstype}
    if not req:
        return out
    out["requested"] = req
    if fstype != "lustre":
        out.update(applied=False, reason=f"{fstype}: no striping")
        return out
    try:
        log = (stage / SETSTRIPE_FILE).read_text()
    except OSError:
        log = ""
    last = log.strip().splitlines()[-1] if log.strip() else ""
    if last == "exit=0":
        out.update(applied=True, verified=False)
    else:
        out.update(applied=False, reason=f"lfs setstripe failed: {log.strip()[-200:] or 'no output'}")
    return out
