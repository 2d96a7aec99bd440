"""`iolab bundle`: an experiment's runs as one archive another site can check and import
(unbundle.py reads it back).

A bundle is a tar (gzip'd when its name says .tar.gz or .tgz) whose first member is the content
list, CONTENTS: the bundle's format, the experiment, the site, each run's facts (system, state,
chain) and the size and sha256 of every other member. The members are each run's files as the
run directory holds them, under <experiment>/<run-id>/: manifest.json (the experiment as run,
its profile and order, the system's facts), records.jsonl (chained, the Darshan summaries in
its records), spack.lock when the stack was Spack's, and with raw=True the raw outputs under
cases/. records.digest is left out: it is derived, and a reader trusts its body when its head
matches the records, so the importing iolab writes it anew from the records it verified.

Same runs, same bytes: members sorted by name, every time, owner and mode fixed, and gzip
without a name or a time. The tar's bytes depend on nothing else; the gzip'd bytes also on
the zlib that compressed them, so a .tar is what to compare across machines.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import IolabError
from ..units import format_bytes_human
from . import notes, state
from .chain import chain_paths
from .files import oserror_text
from .lock import LOCK
from .lookup import find_run
from .manifests import read_typed
from .runfiles import DIGEST, MANIFEST, RECORDS, check_site, site_of

FORMAT = 1
CONTENTS = "iolab-bundle.json"
SUFFIXES = (".tar", ".tar.gz", ".tgz")
# a run's files a bundle never carries: a writer's lock, and the derived digest (see above)
LEFT_OUT = (LOCK, DIGEST)
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Member:
    name: str           # in the archive: <experiment>/<run-id>/<path in the run>
    path: Path          # on disk
    size: int
    sha256: str


@dataclass
class Plan:
    """What a bundle will hold, checked: its content list and its members, in archive order."""
    contents: dict
    members: list[Member]

    @property
    def size(self) -> int:
        return sum(m.size for m in self.members)

    def describe(self) -> str:
        runs = self.contents["runs"]
        return (f"bundle of {self.contents['experiment']} from site {self.contents['site']}: "
                f"{len(runs)} run(s), {len(self.members)} file(s), {format_bytes_human(self.size)} "
                "before compression" + (" (with raw outputs)" if self.contents["raw"] else ""))


def sha256_of(path: Path) -> tuple[int, str]:
    h, size = hashlib.sha256(), 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()


def _files(run: Path, raw: bool) -> list[Path]:
    """A run's files to carry, relative to it: the top level's regular files, and with `raw`
    every regular file below. A link, a device or a FIFO is refused: a bundle carries no link."""
    out = []
    for top, dirs, files in os.walk(run, followlinks=False):
        here = Path(top)
        if here == run and not raw:
            dirs[:] = []
        for name in sorted(dirs + files):
            path = here / name
            mode = os.lstat(path).st_mode
            if stat.S_ISDIR(mode):
                continue
            if not stat.S_ISREG(mode):
                raise IolabError(f"{path}: not a regular file (a link, a FIFO or a device); a "
                                 "bundle carries regular files only")
            rel = path.relative_to(run)
            if str(rel) not in LEFT_OUT:
                out.append(rel)
    return sorted(out, key=str)


def _runs(root: Path, experiment_id: str, runs: list[str]) -> list[Path]:
    """The runs named (default: the latest), each with its whole chain of continuations."""
    out: list[Path] = []
    for name in runs or [None]:
        path = find_run(root, experiment_id, name, include_imported=True)
        if site_of(path):
            raise IolabError(f"run {path.name} is site {site_of(path)!r}'s, imported from "
                             "its bundle: bundle runs where they were made, or send that bundle")
        out += [p for p in chain_paths(path) if p not in out]
    return sorted(out, key=lambda p: p.name)


def _run_facts(path: Path, experiment_id: str, project_root, allow_incomplete: bool) -> dict:
    """A run's facts for the content list, once it passes what `iolab verify` checks; an
    incomplete or unverified run (written before the chain) only when allowed."""
    whole, found = notes.checked(path, project_root)
    if found:
        bad, first = found[0]
        raise IolabError(f"{first.where(bad.path / RECORDS)}: {first.reason}",
                         hint=f"`iolab verify {experiment_id} {bad.run_id}` lists "
                              f"{len(found)} problem(s); a bundle never carries a run that fails it")
    run = next(r for r in notes.runs_read(whole) if r.path == path)
    manifest = read_typed(path)[0]
    if manifest.get("experiment") != experiment_id:
        raise IolabError(f"{path / MANIFEST}: the manifest says experiment "
                         f"{manifest.get('experiment')!r}, its directory {experiment_id!r}")
    stands = state.of(run)
    if stands.writer is not None and not stands.writer_gone:
        raise IolabError(f"run {path.name} is still being written ({stands.describe()})")
    if run.reading.unsaved:
        raise IolabError(f"run {path.name} has records not merged yet: "
                         f"{', '.join(run.reading.unsaved)}", hint=f"merge them into {RECORDS}")
    chain = run.reading.verdict.state if run.reading.verdict else "unverified"
    facts = {"run": path.name, "parent": stands.parent, "system": manifest.get("system"),
             "state": stands.state, "described": stands.describe(), "chain": chain,
             "records": run.reading.total}
    if not allow_incomplete and (not stands.complete or chain == "unverified"):
        why = (f"it is {stands.describe()}" if not stands.complete else
               "its records carry no digest chain (written before it existed)")
        raise IolabError(f"run {path.name}: {why}",
                         hint="--allow-incomplete bundles it, saying so in the content list")
    return facts


def plan(root: Path, experiment_id: str, runs: list[str], *, raw: bool = False,
         site: str | None = None, allow_incomplete: bool = False, project_root=None) -> Plan:
    """The bundle of `runs` of `experiment_id` under the results root, checked; nothing written."""
    paths = _runs(root, experiment_id, runs)
    facts = [_run_facts(p, experiment_id, project_root, allow_incomplete) for p in paths]
    systems = sorted({str(f["system"] or "").split(":")[0] for f in facts})
    if site is None:
        if len(systems) != 1 or not systems[0]:
            raise IolabError(f"the runs were made on {len(systems)} systems "
                             f"({', '.join(s or 'none recorded' for s in systems)}): which site "
                             "is it?", hint="name it with --site NAME")
        site = systems[0]
    check_site(site, "--site")
    members = []
    for path in paths:
        for rel in _files(path, raw):
            size, sha = sha256_of(path / rel)
            members.append(Member(f"{experiment_id}/{path.name}/{rel.as_posix()}", path / rel,
                                  size, sha))
    contents = {"iolab_bundle": FORMAT, "experiment": experiment_id, "site": site, "raw": raw,
                "runs": facts,
                "members": [{"name": m.name, "size": m.size, "sha256": m.sha256} for m in members]}
    return Plan(contents, members)


def contents_bytes(contents: dict) -> bytes:
    return (json.dumps(contents, indent=1, sort_keys=True) + "\n").encode()


def tar_info(name: str, size: int) -> tarfile.TarInfo:
    """A member's header with nothing of the machine in it: same name and size, same bytes."""
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode, info.type = size, 0, 0o644, tarfile.REGTYPE
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


class _Hashing:
    """A member's file read for the archive, its sha256 checked against the plan's at the end
    (a file changed since it was planned is refused, not carried)."""

    def __init__(self, member: Member):
        self.member, self.f, self.h = member, open(member.path, "rb"), hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.h.update(data)
        return data

    def check(self) -> None:
        self.f.close()
        if self.h.hexdigest() != self.member.sha256:
            raise IolabError(f"{self.member.path}: changed while it was bundled")


def check_out(out: Path) -> None:
    """Refuse, before any work, a bundle name of another kind or a file already there."""
    if not Path(out).name.endswith(SUFFIXES):
        raise IolabError(f"--out {out}: a bundle's name ends in {', '.join(SUFFIXES)}")
    if os.path.lexists(out):
        raise IolabError(f"{out} exists: a bundle never replaces a file")


def write(plan_: Plan, out: Path) -> str:
    """Write the bundle to `out`, a new file (never replaced); its sha256."""
    out = Path(out)
    check_out(out)
    try:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
    except FileExistsError:
        raise IolabError(f"{out} exists: a bundle never replaces a file") from None
    except OSError as exc:
        raise IolabError(f"{out}: cannot write: {oserror_text(exc)}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            _write_tar(plan_, f, compress=not out.name.endswith(".tar"))
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        out.unlink(missing_ok=True)
        raise
    return sha256_of(out)[1]


def _write_tar(plan_: Plan, f, compress: bool) -> None:
    stream = gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0, compresslevel=9) \
        if compress else f
    try:
        with tarfile.open(fileobj=stream, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            head = contents_bytes(plan_.contents)
            tar.addfile(tar_info(CONTENTS, len(head)), io.BytesIO(head))
            for member in plan_.members:
                source = _Hashing(member)
                tar.addfile(tar_info(member.name, member.size), source)
                source.check()
    finally:
        if compress:
            stream.close()

