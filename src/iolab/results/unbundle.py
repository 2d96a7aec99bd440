"""`iolab import-bundle`: another site's bundle (bundle.py) checked whole, then its runs stored
under results/<id>/@<site>/<run-id>/, where RUN@SITE names them (lookup.find_run).

Nothing reaches the results directory before every check has passed. The archive is read member
by member as a stream (never extracted by tarfile), each member checked before a byte of it is
written: its name (relative, no '..', under the experiment and a run the content list names), its
kind (a regular file: no link, device, FIFO or directory), once only, listed, within the size
limits, and its bytes against the content list's size and sha256; the stream may not hold more
bytes than the content list declares (a decompression bomb stops there). The members go to a
private directory outside the results, where each run's records then pass what `iolab verify`
checks (notes.checked: the chain line by line and its end against the manifest) and its manifest
must name the bundle's experiment and run. Only then is each run copied to a temporary directory
inside the results root and renamed into place, one rename per run; a failure takes back what
was renamed, so a bundle is stored whole or not at all.

What each check catches: a changed byte, the member's sha256; a record edited and the content
list made to match, the chain (that line); the chain rewritten from there on too, its end
against the manifest's; the manifest's end rewritten too, nothing here but the bundle's own
sha256, which then differs from the one its site printed (the chain is not a signature).
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import json
import os
import re
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import IolabError
from . import notes, state
from .bundle import CONTENTS, FORMAT, LEFT_OUT, sha256_of
from .files import open_regular
from .manifests import read_typed
from .recordcache import write_run_digest
from .runfiles import (MANIFEST, RECORDS, check_experiment_id, check_plain_name, check_site,
                       site_dir)

_CHUNK = 1 << 20
_NAME = re.compile(r"[^\x00-\x1f\x7f\\]{1,1024}")


@dataclass(frozen=True)
class Limits:
    """What a bundle may hold (docs/guarantees.md: Input limits)."""
    member: int = 4 << 30           # one member: records.jsonl's own limit
    total: int = 64 << 30           # all members, uncompressed
    contents: int = 64 << 20        # the content list
    members: int = 1_000_000
    header: int = 64 << 10          # a tar extended header (a long name, pax fields)


class Refused(IolabError):
    """The bundle is refused; nothing was written to the results."""


class _TooMuch(Exception):
    pass


class _HugeHeader(Exception):
    pass


class _Bounded:
    """The archive's bytes as tarfile reads them (decompressed), at most `limit` in all."""

    def __init__(self, f, limit: int):
        self.f, self.limit, self.count = f, limit, 0

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(_CHUNK if n is None or n < 0 else min(n, _CHUNK))
        self.count += len(data)
        if self.count > self.limit:
            raise _TooMuch(self.count)
        return data


def _guarded_info(limits: Limits):
    class Guarded(tarfile.TarInfo):
        """A header whose extension (a pax header, a GNU long name) tarfile would read whole
        into memory is refused above limits.header first."""

        def _proc_member(self, tf):
            if not self.isreg() and self.size > limits.header:
                raise _HugeHeader(self.size)
            return super()._proc_member(tf)
    return Guarded


_KINDS = {tarfile.SYMTYPE: "a symbolic link", tarfile.LNKTYPE: "a hard link",
          tarfile.CHRTYPE: "a character device", tarfile.BLKTYPE: "a block device",
          tarfile.FIFOTYPE: "a FIFO", tarfile.DIRTYPE: "a directory entry",
          tarfile.GNUTYPE_SPARSE: "a sparse file", tarfile.CONTTYPE: "a contiguous file"}


def check_name(name) -> str | None:
    """Why a member's name may not be written under a target directory, or None."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        return "not a plain relative name (empty, too long, or with a control character or '\\')"
    if name.startswith("/"):
        return "an absolute path"
    if any(part in ("", ".", "..") for part in name.split("/")):
        return "a path with '..', '.' or an empty part: it would leave or blur the target"
    return None


@dataclass
class Contents:
    """The content list, checked."""
    experiment: str
    site: str
    runs: dict[str, dict]
    members: dict[str, dict]
    raw: dict


def _refuse(file: Path, member: str | None, reason: str) -> Refused:
    return Refused((f"{member}: " if member else "") + reason, file=str(file),
                   hint="nothing was written to the results")


def parse_contents(data: bytes, file: Path, limits: Limits) -> Contents:
    try:
        raw = json.loads(data)
    except ValueError as exc:
        raise _refuse(file, CONTENTS, f"not JSON ({exc})") from None
    if not isinstance(raw, dict) or raw.get("iolab_bundle") != FORMAT:
        got = raw.get("iolab_bundle") if isinstance(raw, dict) else None
        raise _refuse(file, CONTENTS, f"bundle format {got!r}; this iolab reads {FORMAT}")
    try:
        experiment = check_experiment_id(raw.get("experiment"), "the experiment")
        site = check_site(raw.get("site"))
        runs = {check_plain_name(r.get("run"), "a run id"): r for r in raw["runs"]}
        listed = raw["members"]
        assert isinstance(listed, list) and len(runs) == len(raw["runs"])
        members = {m["name"]: m for m in listed}
        assert all(type(m["size"]) is int and isinstance(m["sha256"], str) for m in listed)
    except (AttributeError, KeyError, TypeError, AssertionError):
        raise _refuse(file, CONTENTS, "not a content list (runs and members with their name, "
                      "size and sha256; run ids once each)") from None
    except IolabError as exc:
        raise _refuse(file, CONTENTS, str(exc)) from None
    if len(members) != len(listed):
        raise _refuse(file, CONTENTS, "a member is listed twice")
    if len(members) > limits.members or sum(m["size"] for m in listed) > limits.total:
        raise _refuse(file, CONTENTS, f"{len(members)} members of {sum(m['size'] for m in listed)} "
                      f"bytes in all, over the limits ({limits.members} members, {limits.total} "
                      "bytes)")
    dirs = set()
    for name, m in members.items():
        why = check_name(name)
        parts = name.split("/")
        if why is None and (len(parts) < 3 or parts[0] != experiment or parts[1] not in runs):
            why = f"not under {experiment}/<a run the content list names>/"
        if why is None and not 0 <= m["size"] <= limits.member:
            why = f"{m['size']} bytes, over the limit of {limits.member} for one member"
        if why:
            raise _refuse(file, name, why)
        dirs.update("/".join(parts[:i]) for i in range(1, len(parts)))
    clash = sorted(dirs & set(members))
    for run in runs:
        for needed in (MANIFEST, RECORDS):
            if f"{experiment}/{run}/{needed}" not in members:
                clash.append(f"{experiment}/{run}/{needed} (missing)")
    if clash:
        raise _refuse(file, clash[0], "a name both a file and a directory, or a run without its "
                      "manifest or records")
    return Contents(experiment, site, runs, members, raw)


def _open_stream(file: Path, limits: Limits):
    fd = open_regular(file, limits.total)
    f = os.fdopen(fd, "rb")
    magic = f.read(2)
    f.seek(0)
    return f, (gzip.GzipFile(fileobj=f, mode="rb") if magic == b"\x1f\x8b" else f)


def unpack(file: Path, into: Path, limits: Limits) -> Contents:
    """Every member checked and written under `into` (a fresh private directory); the content
    list. Refused (naming the member and why) at the first problem."""
    file = Path(file)
    raw_file, stream = _open_stream(file, limits)
    bounded = _Bounded(stream, limits.contents + (64 << 10))
    seen: set[str] = set()
    contents, last = None, None
    try:
        tar = tarfile.open(fileobj=bounded, mode="r|", tarinfo=_guarded_info(limits))
        for info in tar:
            name = last = info.name
            if contents is None:
                if name != CONTENTS or not info.isreg() or info.size > limits.contents:
                    raise _refuse(file, name, f"the first member is not the content list "
                                  f"{CONTENTS}: not an iolab bundle")
                contents = parse_contents(tar.extractfile(info).read(), file, limits)
                declared = sum(m["size"] for m in contents.members.values())
                # headers (a pax one per long name), padding, the end: 3 KiB per member is ample
                bounded.limit = bounded.count + declared + 3072 * (len(contents.members) + 8)
                continue
            why = _member_problem(info, contents, seen, limits)
            if why:
                raise _refuse(file, name, why)
            seen.add(name)
            _write_member(tar, info, contents.members[name], into / name, file)
    except _HugeHeader as exc:
        after = f" after {last}" if last else ""
        raise _refuse(file, None, f"an extended tar header (pax, or a long name){after} of "
                      f"{exc.args[0]} bytes, over the limit of {limits.header}") from None
    except _TooMuch as exc:
        raise _refuse(file, None, f"the archive holds more than its content list declares "
                      f"(over {bounded.limit} bytes read, at {exc.args[0]}): a decompression "
                      "bomb, or members it does not list") from None
    except (tarfile.TarError, EOFError, OSError, gzip.BadGzipFile) as exc:
        if isinstance(exc, IolabError):
            raise
        raise _refuse(file, None, f"not a readable tar archive ({type(exc).__name__}: {exc})") from None
    finally:
        raw_file.close()
    if contents is None:
        raise _refuse(file, None, "an empty archive: not an iolab bundle")
    missing = sorted(set(contents.members) - seen)
    if missing:
        raise _refuse(file, missing[0], f"listed in the content list, missing from the archive "
                      f"({len(missing)} in all)")
    return contents


def _member_problem(info: tarfile.TarInfo, contents: Contents, seen: set, limits) -> str | None:
    name = info.name
    if not info.isreg() or info.type == tarfile.GNUTYPE_SPARSE:
        kind = _KINDS.get(info.type, f"a tar entry of type {info.type!r}")
        target = f" to {info.linkname!r}" if info.issym() or info.islnk() else ""
        return f"{kind}{target}: a bundle holds regular files only"
    why = check_name(name)
    if why:
        return why
    if name in seen or name == CONTENTS:
        return "a second member of this name"
    listed = contents.members.get(name)
    if listed is None:
        return "not in the content list"
    if info.size > limits.member:
        return f"{info.size} bytes, over the limit of {limits.member} for one member"
    if info.size != listed["size"]:
        return f"{info.size} bytes, the content list says {listed['size']}"
    return None


def _write_member(tar, info, listed: dict, target: Path, file: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    source = tar.extractfile(info)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as out:
        for chunk in iter(lambda: source.read(_CHUNK), b""):
            h.update(chunk)
            out.write(chunk)
    if h.hexdigest() != listed["sha256"]:
        raise _refuse(file, info.name, f"changed since it was bundled: sha256 {h.hexdigest()}, "
                      f"the content list says {listed['sha256']}")


# ------------------------------------------------------------------ the runs, checked and stored
def _check_runs(staged: Path, contents: Contents, file: Path, project_root) -> None:
    """Each run as `iolab verify` checks it, its manifest naming the bundle's experiment and the
    run, and its facts as the content list gives them."""
    exp = contents.experiment

    def shown(text: str) -> str:        # a message about the private copy, told of the member
        return text.replace(f"{staged.parent}/", "")

    for run_id, facts in sorted(contents.runs.items()):
        path = staged / run_id
        member = f"{exp}/{run_id}/{MANIFEST}"
        try:
            manifest = read_typed(path)[0]
            whole, found = notes.checked(path, project_root)
        except IolabError as exc:
            raise _refuse(file, None, shown(str(exc))) from None
        claims = manifest.get("experiment")
        if claims != exp:
            raise _refuse(file, member, f"the manifest says experiment {claims!r}; the bundle "
                          f"and the member's directory say {exp!r}")
        if manifest.get("run_id") not in (None, run_id):
            raise _refuse(file, member, f"the manifest says run {manifest.get('run_id')!r}; its "
                          f"directory says {run_id!r}")
        if found:
            bad, first = found[0]
            raise _refuse(file, first.where(f"{exp}/{bad.run_id}/{RECORDS}"),
                          f"{first.reason} ({len(found)} problem(s) in all)")
        run = next(r for r in notes.runs_read(whole) if r.path == path)
        stands = state.of(run)
        got = {"system": manifest.get("system"), "parent": stands.parent,
               "state": stands.state, "records": run.reading.total,
               "chain": run.reading.verdict.state if run.reading.verdict else "unverified"}
        for key, value in got.items():
            if facts.get(key) != value:
                raise _refuse(file, CONTENTS, f"run {run_id}: the content list says {key} "
                              f"{facts.get(key)!r}, the run {value!r}")


def _files(run: Path) -> dict[str, str]:
    return {str(p.relative_to(run)): sha256_of(p)[1] for p in sorted(run.rglob("*"))
            if p.is_file() and not p.is_symlink() and str(p.relative_to(run)) not in LEFT_OUT}


def _differs(there: Path, new: Path) -> str | None:
    """How a run already stored differs from the bundle's copy (None: the same bytes)."""
    have, got = _files(there), _files(new)
    for name in sorted(set(have) | set(got)):
        if have.get(name) != got.get(name):
            what = ("not in the bundle" if name not in got else "not in the stored run"
                    if name not in have else "other bytes")
            return f"{name}: {what}"
    return None


def _fsync_tree(top: Path) -> None:
    for here, _dirs, files in os.walk(top):
        for name in [*files, "."]:
            fd = os.open(Path(here) / name, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def _store(staged: Path, run_ids: list[str], target: Path, root: Path) -> None:
    """Copy the runs into a temporary directory inside the results root, write each one's
    records.digest, then rename each into `target`; on a failure the renamed ones go back, so
    nothing is left."""
    if not run_ids:
        return
    made = [d for d in (target.parent, target) if not d.exists()]
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".iolab-import-", dir=root))
    placed: list[str] = []
    try:
        for run_id in run_ids:
            shutil.copytree(staged / run_id, tmp / run_id)
            try:        # the records folded by case, for tables; without it they read records.jsonl
                write_run_digest(tmp / run_id)
            except (IolabError, ValueError):
                pass
            _fsync_tree(tmp / run_id)
        target.mkdir(parents=True, exist_ok=True)
        for run_id in run_ids:
            os.rename(tmp / run_id, target / run_id)
            placed.append(run_id)
    except BaseException:
        for run_id in placed:
            os.rename(target / run_id, tmp / run_id)
        for d in reversed(made):
            if d.exists() and not any(d.iterdir()):
                d.rmdir()
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@dataclass
class Imported:
    experiment: str
    site: str
    stored: list[str]           # runs stored now
    present: list[str]          # runs already there with the same bytes
    target: Path


@dataclass
class Verified:
    """A bundle checked whole, its members in a private directory (nothing in the results yet):
    what a caller may read before it stores the runs (`iolab reproduce FILE` chooses the
    experiment as run and checks the system first)."""
    file: Path
    contents: Contents
    staged: Path                # <private directory>/<experiment>: one directory per run

    def manifest(self, run_id: str) -> dict:
        return read_typed(self.staged / run_id)[0]

    @functools.cached_property
    def sha256(self) -> str:
        """What identifies the bundle (its site prints it when it writes it)."""
        return sha256_of(self.file)[1]

    def store(self, root: Path, site: str | None = None) -> Imported:
        """The runs stored under root/<id>/@<site>/ (site: the bundle's, unless given). A run
        already there is left as it is when its bytes are the bundle's, and refused when they
        differ."""
        if site is not None:
            check_site(site, "--site")
        site = site or self.contents.site
        target = site_dir(root, self.contents.experiment, site)
        new, same = [], []
        for run_id in sorted(self.contents.runs):
            if not os.path.lexists(target / run_id):
                new.append(run_id)
                continue
            diff = _differs(target / run_id, self.staged / run_id)
            if diff:
                raise Refused(f"run {run_id} is already stored for site {site} with other "
                              f"content ({diff})", file=str(self.file),
                              hint="nothing was written; --site NAME keeps both apart")
            same.append(run_id)
        _store(self.staged, new, target, Path(root))
        return Imported(self.contents.experiment, site, new, same, target)


@contextlib.contextmanager
def verified(file: Path, project_root=None, limits: Limits = Limits()):
    """The bundle checked whole (every member, every run's chain) into a private directory that
    is gone when the block ends: a Verified. Refused at the first problem."""
    file = Path(file)
    with tempfile.TemporaryDirectory(prefix="iolab-bundle-") as tmp:
        contents = unpack(file, Path(tmp), limits)
        staged = Path(tmp) / contents.experiment
        _check_runs(staged, contents, file, project_root)
        yield Verified(file, contents, staged)


def import_bundle(file: Path, root: Path, *, site: str | None = None, project_root=None,
                  limits: Limits = Limits()) -> Imported:
    """Check the bundle whole, then store its runs under root/<id>/@<site>/ (Verified.store)."""
    if site is not None:
        check_site(site, "--site")
    with verified(file, project_root, limits) as bundle:
        return bundle.store(root, site)
