"""Versioned results: results/<id>/<run-id>/{manifest.json, records.jsonl, cases/...}.

Nothing here overwrites: a run directory is created exclusively, records are appended one line
per write, raw outputs go to fresh per-case directories.

The manifest of a ReFrame run lists what was planned before anything ran (`planned`: one
{part, case_id, repetition} per job) and, once, when the run ends, gains `finished`:
{complete, reason, ended, counts}. A run with `planned` and no `finished` was killed (or is
still running). Every planned job ends with one record whose status is one of STATUSES.
"""

from __future__ import annotations

import datetime as dt
import getpass
import gzip
import hashlib
import json
import os
import platform
import secrets
import shutil
import socket
import subprocess
import time
from pathlib import Path

from . import __version__
from .errors import IolabError

RECORD_SCHEMA = 1
# ok: measured; failed: ran (or tried to) and did not give a valid result, with a reason;
# skipped: not run, with a reason; aborted: interrupted (SIGINT/SIGTERM) before it finished.
STATUSES = ("ok", "failed", "skipped", "aborted")
RECORDS = "records.jsonl"
COMPRESS_OVER = 1 << 20
MANIFEST = "manifest.json"


def utcnow() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_id(seed: str = "") -> str:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    short = hashlib.sha256(f"{seed}{secrets.token_hex(8)}".encode()).hexdigest()[:6]
    return f"{stamp}-{short}"


def results_root(project_root: Path) -> Path:
    return Path(os.environ.get("IOLAB_RESULTS", project_root / "results"))


def git_state(root: Path) -> dict:
    def git(*args):
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=20)
    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return {"git": None, "dirty": None}
        status = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!results")
        return {"git": head.stdout.strip(), "dirty": bool(status.stdout.strip())}
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


class RunDir:
    def __init__(self, path: Path):
        self.path = path

    @property
    def run_id(self) -> str:
        return self.path.name

    @classmethod
    def create(cls, root: Path, experiment_id: str, run_id: str, manifest: dict) -> RunDir:
        parent = root / experiment_id
        parent.mkdir(parents=True, exist_ok=True)
        path = parent / run_id
        try:
            path.mkdir()
        except FileExistsError:
            raise IolabError(f"results run {path} already exists; runs are never overwritten") from None
        run = cls(path)
        manifest = {**manifest, "created_unix": time.time()}
        _write_new(path / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        (path / RECORDS).touch()
        return run

    def append(self, record: dict) -> None:
        line = json.dumps(record, sort_keys=True, allow_nan=False) + "\n"
        fd = os.open(self.path / RECORDS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def store_raw(self, case_id: str, repetition: int, files: list[Path],
                  compress: set[str] = frozenset()) -> dict:
        """Copy a case's raw outputs into cases/<case_id>/rep<N>/ (a new directory). Files named
        in `compress` are gzipped when larger than COMPRESS_OVER bytes."""
        rel = Path("cases") / case_id / f"rep{repetition}"
        dest = self.path / rel
        dest.mkdir(parents=True, exist_ok=False)
        stored = {}
        for src in files:
            if not src.is_file():
                continue
            name = src.name
            if name in compress and src.stat().st_size > COMPRESS_OVER:
                name += ".gz"
                with open(src, "rb") as fin, gzip.open(dest / name, "wb") as fout:
                    shutil.copyfileobj(fin, fout)
            else:
                shutil.copyfile(src, dest / name)
            os.chmod(dest / name, 0o444)  # results are never edited in place
            stored[name] = sha256_file(dest / name)
        return {"dir": str(rel), "files": stored}

    def manifest(self) -> dict:
        return json.loads((self.path / MANIFEST).read_text())

    def finish(self, finished: dict) -> None:
        """Once, at the end of the run: the manifest gains `finished` (atomic replace, so a
        reader sees the old manifest or the new one, never half of either)."""
        manifest = self.manifest()
        if "finished" in manifest:
            raise IolabError(f"run {self.run_id} is already finished; its manifest is not rewritten")
        manifest["finished"] = finished
        text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
        tmp = self.path / f".{MANIFEST}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path / MANIFEST)
        _fsync_dir(self.path)

    def records(self) -> list[dict]:
        return load_records(self.path)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_new(path: Path, text: str) -> None:
    """Write a file that must not exist yet, atomically."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text)
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise IolabError(f"{path} already exists; results are never overwritten") from None
    finally:
        tmp.unlink()


def load_records(run_path: Path) -> list[dict]:
    records = []
    path = run_path / RECORDS
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        raise IolabError(f"{path} not found: not a results run") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            raise IolabError(f"corrupt record: {line[:60]!r}", file=str(path), line=n) from None
    return records


def list_runs(root: Path, experiment_id: str) -> list[Path]:
    """Oldest first. Run ids sort by second; the manifest's clock orders runs within a second."""
    base = root / experiment_id
    if not base.is_dir():
        return []

    def when(path: Path):
        try:
            return (json.loads((path / MANIFEST).read_text()).get("created_unix", 0), path.name)
        except (OSError, ValueError):
            return (0, path.name)
    return sorted((p for p in base.iterdir() if (p / MANIFEST).is_file()), key=when)


def find_run(root: Path, experiment_id: str, run: str | None) -> Path:
    runs = list_runs(root, experiment_id)
    if not runs:
        raise IolabError(f"no results for experiment {experiment_id!r} under {root}",
                         hint="run it with reframe first, or `iolab import`")
    if run in (None, "latest"):
        return runs[-1]
    matches = [p for p in runs if p.name == run or p.name.startswith(run) or p.name.endswith(run)]
    if len(matches) != 1:
        known = ", ".join(p.name for p in runs[-5:])
        what = "no run" if not matches else "several runs"
        raise IolabError(f"{what} matching {run!r} for {experiment_id!r}", hint=f"recent runs: {known}")
    return matches[0]


def base_manifest(exp, *, origin: str, system: str | None = None, shim_text: str | None = None,
                  extra: dict | None = None) -> dict:
    root = exp.root
    manifest = {
        "schema": RECORD_SCHEMA,
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
        **git_state(root),
    }
    lock = root / "spack.lock"
    if lock.is_file():
        manifest["spack_lock"] = json.loads(lock.read_text())
        manifest["spack_lock_sha256"] = sha256_file(lock)
    if extra:
        manifest.update(extra)
    return manifest
