"""What every file system module of the storage layer is, and how the job and the login node
tell which file system a case directory is on.

A file system module (lustre.py; one module per file system) defines FILE_SYSTEM, a FileSystem
that owns the parameters under its prefix (`lustre.*`): how a request is checked (alone, then
once per session against the live file system: preflight), the job lines that apply it where the
case directory is of its type, and how its witnesses are read back. On any other file system the
request is recorded as not applied, with the reason (layer.py).
"""

from __future__ import annotations

import ctypes
import importlib
import os
import pkgutil
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ... import shell

FSTYPE_FILE = "iolab-fstype.txt"
NOT_FILE_SYSTEMS = ("base", "layer", "place")  # the modules of this package that are none


def detect_line(case_dir: str) -> str:
    """The job's line that notes the case directory's file-system type in FSTYPE_FILE."""
    d = shell.path_word(case_dir, "case directory")
    # findmnt names ext4 as such; stat -f (statfs magic) is the fallback and knows lustre.
    return f"{{ findmnt -n -o FSTYPE -T {d} 2>/dev/null || stat -f -c %T {d}; }} > {FSTYPE_FILE}"


def read_fstype(stage: Path) -> str | None:
    """The type the job's detection line noted; None where the job never got to it (it never
    ran, or stopped before it), "unknown" where it noted nothing."""
    try:
        return (stage / FSTYPE_FILE).read_text().strip() or "unknown"
    except OSError:
        return None


@dataclass(frozen=True)
class Refusal:
    """A parameter the live file system cannot apply as asked, found before the run."""

    key: str            # the parameter, with its prefix ("cephfs.pool")
    value: object       # the value asked for
    reason: str


class FileSystem:
    """A file system that can lay out a case directory as asked."""

    name = ""                   # as the job's detection names it ("lustre")
    title = ""                  # as messages name it ("Lustre", "CephFS")
    fstypes: tuple[str, ...] = ()  # the detected types that are its own, where not only `name`
    prefix = ""                 # its parameters ("lustre.")
    observed_key = ""           # its part of a record's `observed`
    schema_file = ""            # its parameters' schema, next to its module ("lustre.json")

    def matches(self, fstype: str | None) -> bool:
        """Whether a detected type (findmnt's, or the login node's detect_fstype) is this one:
        a FUSE client is named `fuse.<program>` (`fuse.ceph-fuse`), not after its file system."""
        return fstype is not None and fstype in (self.fstypes or (self.name,))

    def requested(self, params: dict) -> dict:
        """Its parameters of a case, without the prefix."""
        return {k.removeprefix(self.prefix): v for k, v in params.items() if k.startswith(self.prefix)}

    def check(self, req: dict) -> str | None:
        """Why the request cannot be made on any such file system."""
        return None

    def preflight(self, reqs: list[dict], base: str, env: Mapping[str, str],
                  say: Callable[[str], None]) -> list[Refusal]:
        """What only the live file system under `base` (of this type) can tell of the requests a
        session makes there, asked once before its run is created (place.preflight): the values
        it cannot apply. `env`: the jobs' environment (a cluster's config); `say(line)`: what
        could not be checked, and why."""
        return []

    def prerun(self, case_dir: str, req: dict, stop_on_failure: bool) -> list[str]:
        return []

    def postrun(self, case_dir: str, req: dict) -> list[str]:
        return []

    def observe(self, stage: Path, req: dict, out: dict) -> dict:
        """`out` (fs_type, requested) completed from the job's witnesses: applied, verified,
        reason, what the layout was."""
        return out

    def special_value(self, key: str, value) -> str | None:
        """How a value of its parameter `key` (without the prefix) reads where it is no count."""
        return None

    def reports_effective(self, key: str) -> bool:
        """Whether tables show, beside its parameter `key` (without the prefix), the value the
        witnesses found."""
        return False

    def effective(self, lay: dict, key: str):
        """The value in effect of `key` (without the prefix) in its part of a record."""
        return None

    def columns(self, lay: dict) -> dict[str, tuple[float, str]]:
        """Table columns (name -> value, unit) its witnesses give in its part of a record (the
        storage layer's COLUMNS); a value it has not got is left out."""
        return {}

    def derived_columns(self) -> dict:
        """Report columns (name -> layers.base.DerivedColumn) that speak of its layouts."""
        return {}

    # (layers.base.EvidenceSpec) what its server-side witnesses say of where the data went
    evidence_specs: tuple = ()
    # the bytes each target takes in turn, as its parameter (without the prefix) asks for it
    # and as a piece of its evidence says it was applied (storage/rules.py: transfers that are
    # not a multiple of it); "" where it has none
    unit_key = ""
    unit_evidence = ""

    def evidence(self, lay: dict) -> list:
        """Each of its evidence_specs from its part of a record (lay: {} where the record has
        none): values, or not recorded with why."""
        return []

    def system_facts(self, lay: dict) -> dict[str, object]:
        """What its witnesses of a laid-out case say of the file system itself, by name: the
        layout fields a data file got that the case did not ask for (the defaults of the file
        system or of its directory), and its number of targets where that was read."""
        return {}

    def keeps_files(self, req: dict) -> bool:
        """Whether the benchmark must leave its files for the witnesses to read."""
        return bool(req)


def unlaid(fs: FileSystem, lay: dict) -> str | None:
    """Why a file system's witnesses say nothing of a record (None: they may)."""
    if not lay.get("requested"):
        return f"no {fs.title} layout was requested: its witnesses are read only for one"
    if lay.get("applied") is False:
        return f"{fs.title} layout not applied: {lay.get('reason') or 'no reason recorded'}"
    return None


def one_setting(values: list, what: str, witness: str, missing: str):
    """The one value of a layout setting the data files share, as `witness` printed them (a
    piece of evidence): NotRecorded where it showed none, a file without it (`missing` says
    why), or files that differ."""
    from ..base import NotRecorded

    found = set(values)
    if not found:
        raise NotRecorded(f"{witness} showed no data file")
    if None in found:
        raise NotRecorded(missing)
    if len(found) > 1:
        raise NotRecorded(f"the data files' {what}s differ: {sorted(found)}")
    return found.pop()


def failed_setting(stage: Path, log_file: str, what: str) -> str | None:
    """Why the job's layout command failed, from its log (its output, then `exit=N`); None
    when it ended with exit=0."""
    try:
        log = (stage / log_file).read_text()
    except OSError:
        log = ""
    last = log.strip().splitlines()[-1] if log.strip() else ""
    return None if last == "exit=0" else f"{what} failed: {log.strip()[-200:] or 'no output'}"


def settle(out: dict, problems: list[dict]) -> dict:
    """`out` with the differences between request and witnesses ({key, requested, observed,
    status}) and the verdict: applied unless one changed; verified unless one is unverified."""
    out.update(mismatches=[p for p in problems if p["status"] != "unverified"],
               unverified=[p for p in problems if p["status"] == "unverified"])
    if out["mismatches"]:
        first = out["mismatches"][0]
        out.update(applied=False, verified=True,
                   reason=(f"{first['key']} requested {first['requested']}, got {first['observed']} "
                           f"({len(out['mismatches'])} difference(s))"))
    else:
        out.update(applied=True, verified=not out["unverified"])
    return out


@cache
def file_systems() -> tuple[FileSystem, ...]:
    """Every module of this package that defines FILE_SYSTEM, by name."""
    out = []
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]),
                       key=lambda m: m.name):
        if info.name in NOT_FILE_SYSTEMS:
            continue
        module = importlib.import_module(f"{__package__}.{info.name}")
        if isinstance(getattr(module, "FILE_SYSTEM", None), FileSystem):
            out.append(module.FILE_SYSTEM)
    return tuple(out)


def requests(params: dict) -> list[tuple[FileSystem, dict]]:
    """The layouts a case asks for, one per file system whose parameters it names."""
    return [(fs, req) for fs in file_systems() if (req := fs.requested(params))]



# --- File-system type, before submission (`iolab plan`) ---

# statfs f_type values (linux/magic.h; LL_SUPER_MAGIC from lustre_user.h, GPFS from its headers).
FS_MAGIC = {
    0x0BD00BD0: "lustre", 0xEF53: "ext4", 0x01021994: "tmpfs", 0x58465342: "xfs", 0x6969: "nfs",
    0x47504653: "gpfs", 0x794C7630: "overlay", 0x9123683E: "btrfs", 0x2FC12FC1: "zfs",
    0x19830326: "beegfs", 0x00C36400: "ceph", 0x65735546: "fuse", 0xAAD7AAEA: "panfs",
    0x858458F6: "ramfs", 0x73717368: "squashfs",
}


def _statfs_magic(path: str) -> int | None:
    """statfs(2) f_type: os.statvfs has no f_type, so ask libc directly."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    # struct statfs is 120 bytes on 64-bit Linux, with f_type (a native word) first.
    buf = ctypes.create_string_buffer(256)
    if libc.statfs(os.fsencode(path), buf) != 0:
        return None
    return ctypes.c_long.from_buffer(buf).value & 0xFFFFFFFF


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mount_of(path: str, mounts: str) -> list[str] | None:
    """The /proc/mounts fields (source, point, type, options...) of the longest mount point
    containing `path`, from the table's text."""
    best, found = -1, None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = _unescape(fields[1])
        # >=: a later mount on the same point hides the earlier one.
        if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) >= best:
            best, found = len(point), fields
    return found


def fstype_from_mounts(path: str, mounts: str) -> str | None:
    """The type of the longest mount point containing `path`, from /proc/mounts text."""
    fields = mount_of(path, mounts)
    return fields[2] if fields else None


def detect_fstype(path, mounts: str = "/proc/mounts") -> str:
    """"lustre", "ext4", "nfs", ... for `path` (or its nearest existing parent); "unknown" if unsure."""
    target = Path(path).resolve()
    while not target.exists() and target != target.parent:
        target = target.parent
    magic = _statfs_magic(str(target))
    if magic in FS_MAGIC and FS_MAGIC[magic] != "fuse":
        return FS_MAGIC[magic]
    try:
        table = Path(mounts).read_text()
    except OSError:
        table = ""
    # FUSE's magic names no file system: the mount table says which (fuse.ceph-fuse)
    return fstype_from_mounts(str(target), table) or FS_MAGIC.get(magic, "unknown")
