"""Where a run was made: the git state of the checkout, the host, the clock, file digests, and
the manifest that records them with the experiment as run."""

from __future__ import annotations

import datetime as dt
import getpass
import hashlib
import json
import os
import platform
import socket
import subprocess
from pathlib import Path

from .. import __version__
from .record import SCHEMA
from .runfiles import inside


def utcnow() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")



def git_state(root: Path, used=()) -> dict:
    """The commit, and whether the tree differs from it: a change to a tracked file, or a file the
    run used (`used`: its experiment YAML, shim, system config) that git does not track at all."""
    def git(*args):
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=20)
    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return {"git": None, "dirty": None}
        status = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!results")
        untracked = []
        ours = [str(Path(u).resolve()) for u in used if inside(Path(u), root)]
        if ours:
            listed = git("ls-files", "--others", "--exclude-standard", "--", *ours)
            untracked = sorted(line for line in listed.stdout.splitlines() if line)
        out = {"git": head.stdout.strip(), "dirty": bool(status.stdout.strip() or untracked)}
        if untracked:
            out["untracked"] = untracked
        return out
    except (OSError, subprocess.SubprocessError):
        return {"git": None, "dirty": None}


def host_info() -> dict:
    info = {"hostname": socket.gethostname(), "platform": platform.platform(),
            "python": platform.python_version(), "cpus": os.cpu_count(), "user": _user()}
    try:
        with open("/proc/meminfo") as f:
            info["mem_total_kib"] = int(f.readline().split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return info


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no passwd entry in some containers
        return str(os.getuid())


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

def base_manifest(exp, *, origin: str, system: str | None = None, shim_text: str | None = None,
                  extra: dict | None = None) -> dict:
    root = exp.root
    manifest = {
        "schema": SCHEMA,
        "experiment": exp.id,
        "experiment_sha256": exp.sha256,
        "experiment_yaml": exp.text,
        "profile": exp.profile,
        "origin": origin,
        "created": utcnow(),
        "iolab": __version__,
        "host": host_info(),
        "system": system,
        "shim": shim_text,
        **git_state(root, [exp.path]),
    }
    lock = root / "spack.lock"
    if lock.is_file():
        manifest["spack_lock"] = json.loads(lock.read_text())
        manifest["spack_lock_sha256"] = sha256_file(lock)
    if extra:
        manifest.update(extra)
    return manifest
