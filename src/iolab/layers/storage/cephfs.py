"""CephFS layouts: requested `cephfs.*` -> the case directory's `ceph.dir.layout`; observed layout
<- `getfattr -n ceph.file.layout` of the data files (the client's witness) and the OSDs their
objects are on (`rados ls` + `ceph osd map`, the server's witness).

A file inherits its directory's layout when it is created. Its stripe_count objects are filled
round-robin in stripe_unit pieces, object_size bytes each, and each object lands on an OSD by hash
(CRUSH): a stripe count is how many objects are written in parallel, not a number of OSDs, so a
count of 4 reaching 2 OSDs is how Ceph places data, recorded as such and not as a failure.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from ... import shell
from ...units import format_size
from .base import FSTYPE_FILE, FileSystem, failed_setting, settle

SETLAYOUT_FILE = "iolab-cephfs-setlayout.txt"
FILES_FILE = "iolab-cephfs-files.txt"
SPREAD_FILE = "iolab-cephfs-spread.txt"
MAX_FILES = 64          # files whose layout getfattr reads
SPREAD_FILES = 4        # of those, files whose objects are mapped to OSDs
MAX_OBJECTS = 32        # objects mapped per file: each `ceph osd map` is a ~0.2 s CLI start
CEPH_TIMEOUT = 30       # seconds for one rados/ceph command: a lost monitor must not hang the job
FIELDS = ("stripe_unit", "stripe_count", "object_size", "pool")
SIZE_FIELDS = ("stripe_unit", "object_size")
MIB = 1 << 20
UNIT = 65536            # the stripe unit's granularity (CEPH_MIN_STRIPE_UNIT)
STORED_MINUS_ONE = 4294967295   # what Ceph stores for a stripe count of -1
# findmnt's types: ceph-fuse's FUSE mount, and the kernel client
FSTYPES = ("fuse.ceph-fuse", "ceph")
PLACEMENT = ("CephFS places each object on an OSD by hash: a stripe count is the number of "
             "objects written in parallel, not of OSDs, so fewer OSDs than the count is no failure")


def check_request(req: dict) -> str | None:
    """Why Ceph would refuse this layout (`setfattr: Invalid argument`), or, for a stripe count
    of -1, quietly store 4294967295."""
    count = req.get("stripe_count")
    if count is not None and (isinstance(count, bool) or int(count) < 1):
        return (f"cephfs.stripe_count {count}: give a count from 1 (Ceph stores -1 as "
                f"{STORED_MINUS_ONE} and refuses 0)")
    unit, size = req.get("stripe_unit"), req.get("object_size")
    if unit is not None and (unit <= 0 or unit % UNIT):
        return f"cephfs.stripe_unit {unit} must be a positive multiple of 64 KiB ({UNIT} bytes)"
    if size is not None and (size <= 0 or size % UNIT):
        return f"cephfs.object_size {size} must be a positive multiple of 64 KiB ({UNIT} bytes)"
    if unit is not None and size is not None and size % unit:
        return (f"cephfs.object_size {_size(size)} is not a multiple of cephfs.stripe_unit "
                f"{_size(unit)}: the unit must divide the object size")
    return None


def _size(nbytes: int) -> str:
    return format_size(nbytes)


def layout_value(req: dict) -> str:
    """The value of `ceph.dir.layout` that sets every requested field at once.

    One xattr, not one per field: each field is checked against the directory's current layout,
    so field by field the order matters (an 8 MiB unit alone is refused over the default 4 MiB
    objects, a 1 MiB object size alone over a 4 MiB unit); all at once, only the result counts."""
    return " ".join(f"{k}={req[k]}" for k in FIELDS if k in req)


def _on_cephfs(body: str) -> str:
    """`body` run only where the job's detection line found the case directory on CephFS."""
    types = "|".join(shell.word(t) for t in FSTYPES)
    return f"case \"$(cat {FSTYPE_FILE})\" in {types}) {body};; esac"


def prerun_lines(case_dir: str, req: dict, stop_on_failure: bool = True) -> list[str]:
    """On CephFS: lay the (empty) case directory out; a refusal stops the job before the
    benchmark (its reason in SETLAYOUT_FILE), unless the experiment only warns about layouts."""
    if not req:
        return []
    d = shell.path_word(case_dir, "case directory")
    cmd = shell.join(["setfattr", "-n", "ceph.dir.layout", "-v", layout_value(req)],
                     "setfattr argument")
    stop = (f"; if [ $iolab_cl -ne 0 ]; then "
            f"{shell.stop_job('setfattr ceph.dir.layout failed', SETLAYOUT_FILE)}; fi"
            ) if stop_on_failure else ""
    return [_on_cephfs(f"{cmd} {d} > {SETLAYOUT_FILE} 2>&1; iolab_cl=$?; "
                       f"echo \"exit=$iolab_cl\" >> {SETLAYOUT_FILE}{stop}")]


def postrun_lines(case_dir: str, req: dict | None = None) -> list[str]:
    """After the benchmark, before cleanup, on CephFS: for up to MAX_FILES data files of the case
    directory, `### <name> inode=<n> size=<bytes>` and getfattr's layout; for up to SPREAD_FILES
    of them, where the ceph and rados CLIs and CEPH_CONF are there, the file's objects (named
    `<inode hex>.<index>`), and `ceph osd map` and `rados stat` (its size) of up to MAX_OBJECTS of
    them, after the OSDs of the cluster (`ceph osd ls`). Each of those files is synced first, so
    that what the client still holds has reached the OSDs. Nothing here can fail the benchmark: a
    witness that is missing is recorded as missing."""
    d = shell.path_word(case_dir, "case directory")
    files = (f"ls -1 {d} | head -n {MAX_FILES} | while IFS= read -r f; do "
             f"[ -f {d}/\"$f\" ] || continue; echo \"$f\"; done")
    layouts = (f"{{ {files} | while IFS= read -r f; do "
               f"printf '### %s inode=%s size=%s\\n' \"$f\" \"$(stat -c %i {d}/\"$f\")\" "
               f"\"$(stat -c %s {d}/\"$f\")\"; "
               f"getfattr -n ceph.file.layout --only-values {d}/\"$f\" < /dev/null; echo; done; }} "
               f"> {FILES_FILE} 2>&1")
    t = f"timeout {CEPH_TIMEOUT}"
    spread = (f"{{ printf 'cluster_osds=%s\\n' \"$({t} ceph osd ls < /dev/null | tr '\\n' ' ')\"; "
              f"{files} | head -n {SPREAD_FILES} | while IFS= read -r f; do "
              f"{t} sync {d}/\"$f\" < /dev/null; "
              f"hex=$(printf '%x' \"$(stat -c %i {d}/\"$f\")\"); "
              f"pool=$(getfattr -n ceph.file.layout.pool --only-values {d}/\"$f\" 2>/dev/null "
              f"< /dev/null); "
              f"printf '### %s inode_hex=%s pool=%s\\n' \"$f\" \"$hex\" \"$pool\"; "
              f"objs=$({t} rados -p \"$pool\" ls < /dev/null | grep \"^$hex\\.\" | sort); "
              f"printf 'objects=%s\\n' \"$(printf '%s' \"$objs\" | grep -c .)\"; "
              f"printf '%s\\n' \"$objs\" | grep . | head -n {MAX_OBJECTS} | while read -r o; do "
              f"{t} ceph osd map \"$pool\" \"$o\" < /dev/null; "
              f"{t} rados -p \"$pool\" stat \"$o\" < /dev/null; done; done; }} > {SPREAD_FILE} 2>&1")
    no_cli = (f"echo 'no server-side witness: the ceph and rados CLIs and CEPH_CONF are not all "
              f"in the job environment' > {SPREAD_FILE}")
    return [_on_cephfs(
        f"{layouts}; if command -v ceph > /dev/null && command -v rados > /dev/null && "
        f"[ -n \"${{CEPH_CONF:-}}\" ]; then {spread}; else {no_cli}; fi")]


# --- witnesses ---------------------------------------------------------------------------

_HEADER = re.compile(r"^### (.*) inode=(\d*) size=(\d*)$")
_LAYOUT = re.compile(r"(stripe_unit|stripe_count|object_size|pool)=(\S+)")
_SPREAD_HEADER = re.compile(r"^### (.*) inode_hex=([0-9a-f]*) pool=(\S*)$")
_RADOS_STAT = re.compile(r"^[^/\s]+/(\S+) mtime .*, size (\d+)$")
_CLUSTER_OSDS = re.compile(r"^cluster_osds=([0-9 ]*)$")
_OSD_MAP = re.compile(r"object '([^']+)' -> pg (\S+) \(([^)]*)\) -> up \(\[([0-9,\s]*)\], p(-?\d+)\)")


def parse_layout(text: str) -> dict:
    """`stripe_unit=1048576 stripe_count=4 object_size=4194304 pool=cephfs_data` (getfattr's
    value of ceph.file.layout or ceph.dir.layout, quoted or not) -> typed fields.
    Raises ValueError on text with no stripe_unit."""
    fields = dict(_LAYOUT.findall(text.strip().strip('"')))
    if "stripe_unit" not in fields:
        raise ValueError(f"not a ceph layout: {text.strip()[:80]!r}")
    out: dict = {}
    for key, value in fields.items():
        value = value.strip('"')
        out[key] = value if key == "pool" else int(value)
    return out


def parse_files(text: str) -> list[dict]:
    """FILES_FILE -> [{path, inode, size, layout} or {path, inode, size, error}]."""
    out: list[dict] = []
    for line in text.splitlines():
        if m := _HEADER.match(line):
            out.append({"path": m.group(1), "inode": int(m.group(2)) if m.group(2) else None,
                        "size": int(m.group(3)) if m.group(3) else None})
        elif out and line.strip() and "layout" not in out[-1]:
            try:
                out[-1]["layout"] = parse_layout(line)
                out[-1].pop("error", None)
            except ValueError:
                out[-1].setdefault("error", line.strip()[:200])
    for f in out:
        if "layout" not in f:
            f.setdefault("error", "getfattr printed no layout")
    return out


def parse_osd_map(text: str) -> dict:
    """One line of `ceph osd map POOL OBJECT` -> {object, pg, up, primary}.
    Raises ValueError on any other text."""
    m = _OSD_MAP.search(text)
    if not m:
        raise ValueError(f"not ceph osd map output: {text.strip()[:80]!r}")
    up = [int(x) for x in m.group(4).replace(" ", "").split(",") if x]
    return {"object": m.group(1), "pg": m.group(3), "up": up, "primary": int(m.group(5))}


def parse_rados_stat(text: str) -> tuple[str, int]:
    """One line of `rados -p POOL stat OBJECT` -> (object, size in bytes).
    Raises ValueError on any other text."""
    m = _RADOS_STAT.match(text.strip())
    if not m:
        raise ValueError(f"not rados stat output: {text.strip()[:80]!r}")
    return m.group(1), int(m.group(2))


def parse_spread(text: str) -> dict:
    """SPREAD_FILE -> {files: [{path, inode_hex, pool, objects, mapped, osds, objects_per_osd,
    sized, bytes_per_osd}], osds, cluster_osds, bytes_per_osd, reason}; reason where there was no
    server-side witness at all. An object's bytes (its size, `rados stat`) count on every OSD of
    its up set (each holds a copy); its object count on the primary only."""
    files: list[dict] = []
    other: list[str] = []
    cluster: list[int] | None = None
    up_of: dict[str, list[int]] = {}
    for line in text.splitlines():
        if m := _SPREAD_HEADER.match(line):
            files.append({"path": m.group(1), "inode_hex": m.group(2), "pool": m.group(3) or None,
                          "objects": None, "mapped": 0, "objects_per_osd": {}, "sized": 0,
                          "bytes_per_osd": {}, "errors": []})
        elif not files and (m := _CLUSTER_OSDS.match(line.strip())):
            cluster = sorted(int(x) for x in m.group(1).split()) or None
        elif not files:
            if line.strip():
                other.append(line.strip())
        elif line.startswith("objects="):
            files[-1]["objects"] = int(line.split("=", 1)[1] or 0)
        elif line.strip():
            cur = files[-1]
            try:
                name, size = parse_rados_stat(line)
            except ValueError:
                pass
            else:
                if name in up_of:       # sized only where its OSDs are known
                    cur["sized"] += 1
                    for osd in up_of.pop(name):
                        cur["bytes_per_osd"][str(osd)] = cur["bytes_per_osd"].get(str(osd), 0) + size
                continue
            try:
                mapped = parse_osd_map(line)
            except ValueError:
                if len(cur["errors"]) < 3:
                    cur["errors"].append(line.strip()[:200])
                continue
            if not mapped["object"].startswith(cur["inode_hex"] + "."):
                continue
            up_of[mapped["object"]] = mapped["up"]
            cur["mapped"] += 1
            for osd in mapped["up"][:1]:    # the primary holds the data (pools of one copy here)
                key = str(osd)
                cur["objects_per_osd"][key] = cur["objects_per_osd"].get(key, 0) + 1
    for f in files:
        f["osds"] = sorted(int(k) for k in f["objects_per_osd"])
        if not f["errors"]:
            del f["errors"]
        if not f["sized"]:      # no size witnessed (an older recording, or rados stat failed)
            del f["sized"], f["bytes_per_osd"]
    out: dict = {"files": files, "osds": sorted({o for f in files for o in f["osds"]})}
    if cluster:
        out["cluster_osds"] = cluster
    sized = [f for f in files if "bytes_per_osd" in f]
    if sized:
        total: dict[str, int] = {str(o): 0 for o in cluster or ()}
        for f in sized:
            for osd, nbytes in f["bytes_per_osd"].items():
                total[osd] = total.get(osd, 0) + nbytes
        out["bytes_per_osd"] = dict(sorted(total.items(), key=lambda kv: int(kv[0])))
    if not files:
        out["reason"] = " ".join(other)[:200] or "no data file to map"
    return out


def observe(stage: Path, req: dict, out: dict) -> dict:
    """On CephFS: whether setfattr ran, then each data file's layout against the request, and
    the OSDs its objects reached."""
    failed = failed_setting(stage, SETLAYOUT_FILE, "setfattr ceph.dir.layout")
    if failed:
        out.update(applied=False, reason=failed)
        return out
    try:
        files = parse_files((stage / FILES_FILE).read_text())
    except OSError:
        files = []
    good = [f for f in files if "layout" in f]
    problems = compare(req, good)
    out["files"] = files[:16]
    settle(out, problems)
    if good:
        out["layout"] = good[0]["layout"]
    out["spread"] = _spread(stage, good)
    return out


def compare(req: dict, files: list[dict]) -> list[dict]:
    """The requested fields against each file's getfattr layout: {path, key, requested,
    observed, status} (changed, or unverified where no data file was read)."""
    if not files:
        return [{"path": None, "key": k, "requested": req[k], "observed": None,
                 "status": "unverified"} for k in FIELDS if k in req]
    return [{"path": f["path"], "key": k, "requested": req[k], "observed": f["layout"].get(k),
             "status": "changed"}
            for f in files for k in FIELDS if k in req and f["layout"].get(k) != req[k]]


def _spread(stage: Path, files: list[dict]) -> dict:
    """The server-side spread, with what a reader needs to weigh it: how many objects were
    mapped of those listed, and what a stripe count means here."""
    try:
        spread = parse_spread((stage / SPREAD_FILE).read_text())
    except OSError:
        return {"reason": "no server-side witness file"}
    count = next((f["layout"].get("stripe_count") for f in files), None)
    for f in spread["files"]:
        if f["objects"] is not None and f["mapped"] < f["objects"]:
            f["capped"] = f"{f['mapped']} of {f['objects']} objects mapped"
    if spread["files"]:
        spread["osd_count"] = len(spread["osds"])
        exact = all("capped" not in f for f in spread["files"])
        spread["note"] = (f"stripe count {count} reached {'' if exact else 'at least '}"
                          f"{len(spread['osds'])} OSD(s); {PLACEMENT}")
    if "bytes_per_osd" in spread:
        short = _bytes_short(spread, len(files))
        if short:
            spread["bytes_partial"] = short
    return spread


def _bytes_short(spread: dict, data_files: int) -> str | None:
    """Why bytes_per_osd counts less than every byte of the case's data files, if it does."""
    mapped = spread["files"]
    if data_files > len(mapped):
        return f"{len(mapped)} of {data_files} data files mapped"
    for f in mapped:
        if f.get("sized", 0) < (f["objects"] or 0):
            return f"{f['path']}: {f.get('sized', 0)} of {f['objects']} objects sized"
    return None


def effective(lay: dict, key: str):
    """The applied value of a field (getfattr of the data files), typed like the request; a
    tuple where files differ; None where no file was read."""
    values = []
    for f in lay.get("files") or []:
        value = (f.get("layout") or {}).get(key)
        if value is not None and value not in values:
            values.append(value)
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


@cache
def data_pools(conf: str) -> frozenset[str]:
    """The data pools of every file system of the cluster `conf` names (`ceph fs ls`), asked
    once per process; empty where the CLI is absent or the cluster does not answer."""
    import json
    import shutil
    import subprocess

    if not shutil.which("ceph"):
        return frozenset()
    try:
        done = subprocess.run(["ceph", "-c", conf, "--connect-timeout", "10", "fs", "ls", "-f",
                               "json"], capture_output=True, text=True, timeout=CEPH_TIMEOUT)
        return frozenset(p for fs in json.loads(done.stdout) for p in fs.get("data_pools", []))
    except (subprocess.TimeoutExpired, ValueError, TypeError, AttributeError):
        return frozenset()


class CephFS(FileSystem):
    name = "cephfs"
    title = "CephFS"
    fstypes = FSTYPES
    prefix = "cephfs."
    observed_key = "cephfs"
    schema_file = "cephfs.json"

    def check(self, req: dict) -> str | None:
        return check_request(req)

    def check_at(self, req: dict, base: str) -> str | None:
        """A pool that is not a data pool of the file system, asked with `ceph fs ls` where the
        CLI and a config are reachable from here."""
        import os

        if "pool" not in req or not os.environ.get("CEPH_CONF"):
            return None
        pools = data_pools(os.environ["CEPH_CONF"])
        if pools and req["pool"] not in pools:
            return (f"cephfs.pool {req['pool']!r} is not a data pool of this CephFS "
                    f"({', '.join(sorted(pools))}); add it with `ceph fs add_data_pool`")
        return None

    # the job lines and the reading of their witnesses are this module's functions
    prerun = staticmethod(prerun_lines)
    postrun = staticmethod(postrun_lines)
    observe = staticmethod(observe)
    effective = staticmethod(effective)

    def reports_effective(self, key: str) -> bool:
        return key in FIELDS

    def columns(self, lay: dict) -> dict[str, tuple[float, str]]:
        spread = lay.get("spread") or {}
        if not spread.get("files"):
            return {}
        out = {"osds": (float(len(spread["osds"])), "OSDs"),
               "objects": (float(sum(f["objects"] or 0 for f in spread["files"])), "objects")}
        if "bytes_per_osd" in spread and "bytes_partial" not in spread:
            # every OSD of the cluster, 0 where none of the files' objects is: a column each
            for osd, nbytes in spread["bytes_per_osd"].items():
                out[f"bytes_per_osd.osd.{osd}"] = (nbytes / MIB, "MiB")
        return out


FILE_SYSTEM = CephFS()
