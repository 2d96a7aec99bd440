"""Reading a run's manifest: parsed once per process while its bytes stay the same, a campaign's
without its plan (most of its bytes) until the plan is asked for, and typed (record.Manifest).

The manifest of a ReFrame run lists what was planned before anything ran (`planned`: one
{part, case_id, repetition} per job) and, once, when the run ends, gains `finished`:
{complete, reason, ended, counts}. A run with `planned` and no `finished` was killed (or is
still running).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from . import cache
from ..errors import IolabError
from .files import MAX_MANIFEST_BYTES, read_regular
from .record import Manifest
from .runfiles import MANIFEST


def read_manifest(run_path: Path) -> dict:
    path = Path(run_path) / MANIFEST
    return _parse_manifest(path, _manifest_bytes(path))


def _manifest_bytes(path: Path) -> bytes:
    return read_regular(path, MAX_MANIFEST_BYTES, within=path.parent, missing="not a results run")


def _parse_manifest(path: Path, data: bytes) -> dict:
    try:
        manifest = json.loads(data.decode("utf-8"))
    except ValueError as exc:
        raise IolabError(f"unreadable manifest: {exc}", file=str(path)) from None
    if not isinstance(manifest, dict):
        raise IolabError("unreadable manifest: not a JSON object", file=str(path))
    return manifest


# path -> (sha256 of its bytes, the manifest, the file's identity, whether it is whole)
_SHARED_MANIFESTS: dict[Path, tuple[str, dict, tuple | None, bool]] = {}
PLANNED = "planned"


def _identity(path: Path) -> tuple | None:
    """A regular file's inode, size and times (None: not one): unchanged, its bytes are too."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def read_manifest_shared(run_path: Path, whole: bool = True) -> dict:
    """read_manifest for readers: parsed once per process while the file's bytes stay the same
    (a campaign's plan makes a manifest megabytes, and finding a run reads every run's), and
    read again only when its inode, size or times changed. The dict is shared: never change it.

    whole=False: a campaign's manifest may come without its plan (`planned`, most of its bytes,
    which most readers never look at); manifest_whole() says whether it did."""
    path = Path(run_path) / MANIFEST
    ident = _identity(path)
    known = _SHARED_MANIFESTS.get(path)
    if known is not None and ident is not None and known[2] == ident and (known[3] or not whole):
        return known[1]
    data = _manifest_bytes(path)
    sha = hashlib.sha256(data).hexdigest()
    if known is not None and known[0] == sha and (known[3] or not whole):
        manifest, is_whole = known[1], known[3]
    elif len(data) < cache.MIN_BYTES:
        manifest, is_whole = _parse_manifest(path, data), True
    elif whole:                                 # a campaign's plan: parsed once per bytes
        manifest, is_whole = cache.memo(path, "manifest", f"{len(data)}-{sha}",
                                        lambda: _parse_manifest(path, data), dict), True
    else:
        got = cache.memo(path, "manifest-head", f"{len(data)}-{sha}",
                         lambda: _head(_parse_manifest(path, data)), tuple)
        if not (len(got) == 2 and type(got[0]) is dict and type(got[1]) is bool):
            got = _head(_parse_manifest(path, data))       # an entry of another shape: a miss
        manifest, is_whole = got
    # the identity taken before reading: a write during the read shows as a change next time
    _SHARED_MANIFESTS[path] = (sha, manifest, ident, is_whole)
    return manifest


def _head(manifest: dict) -> tuple[dict, bool]:
    """A manifest without its plan, and whether that is all of it (it had none)."""
    return {k: v for k, v in manifest.items() if k != PLANNED}, PLANNED not in manifest


def manifest_whole(run_path: Path) -> bool:
    """Whether the manifest read_manifest_shared last gave of a run was all of it."""
    known = _SHARED_MANIFESTS.get(Path(run_path) / MANIFEST)
    return known is None or known[3]


def manifest_sha(run_path: Path) -> str | None:
    """The sha256 of the manifest bytes read_manifest_shared last read of a run, if any."""
    known = _SHARED_MANIFESTS.get(Path(run_path) / MANIFEST)
    return known[0] if known else None




_TYPED: dict[Path, tuple[dict, Manifest]] = {}


def read_typed(path: Path) -> tuple[dict, Manifest]:
    """A run's manifest as parsed (shared: never change it; a campaign's without its plan, see
    whole_manifest) and typed (its plan read when first asked for), once per process while its
    bytes stay the same (finding a chain reads every run's manifest)."""
    data = read_manifest_shared(path, whole=False)
    known = _TYPED.get(Path(path))
    if known is None or known[0] is not data:
        typed = Manifest.from_json(data)
        if not manifest_whole(path):
            sha = manifest_sha(path)
            typed.plan_later(lambda m: _plan_of(m, path, sha))
        known = _TYPED[Path(path)] = (data, typed)
    return known


def whole_manifest(path: Path, sha: str | None) -> dict:
    """A run's manifest with its plan, of the bytes whose sha256 its head was read from."""
    data = read_manifest_shared(path)
    if sha is not None and manifest_sha(path) != sha:
        raise IolabError(f"{Path(path) / MANIFEST} changed while it was read",
                         hint="read the run again")
    return data


def _plan_of(manifest: Manifest, path: Path, sha: str | None):
    whole = Manifest.from_json(whole_manifest(path, sha))
    if PLANNED in whole.extra:        # not a list: kept as it was, like from_json does
        manifest.extra[PLANNED] = whole.extra[PLANNED]
    return whole.planned
