"""CephFS layouts: requested `cephfs.*` -> the case directory's `ceph.dir.layout`; observed layout
<- `getfattr -n ceph.file.layout` of the data files (the client's witness) and the OSDs their
objects are on (`rados ls` + `ceph osd map`, the server's witness).

A file inherits its directory's layout when it is created. Its stripe_count objects are filled
round-robin in stripe_unit pieces, object_size bytes each, and each object lands on an OSD by hash
(CRUSH): a stripe count is how many objects are written in parallel, not a number of OSDs, so a
count of 4 reaching 2 OSDs is how Ceph places data, recorded as such and not as a failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from ... import shell
from ...units import format_size
from ..base import EvidenceSpec, NotRecorded, all_missing, gather
from .base import (FSTYPE_FILE, FileSystem, Refusal, failed_setting, mount_of, one_setting, settle,
                   unlaid)

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


def _ceph_json(args: list[str], env: Mapping[str, str]):
    """(what `ceph ARGS -f json` printed, decoded; None) or (None, why it gave nothing): the
    cluster the jobs' environment names (CEPH_CONF), asked from here."""
    ceph = shutil.which("ceph", path=env.get("PATH"))
    if not ceph:
        return None, "no ceph CLI here"
    conf = ["-c", env["CEPH_CONF"]] if env.get("CEPH_CONF") else []
    try:
        done = subprocess.run([ceph, *conf, "--connect-timeout", "10", *args, "-f", "json"],
                              capture_output=True, text=True, timeout=CEPH_TIMEOUT, env=dict(env))
    except subprocess.TimeoutExpired:
        return None, f"`ceph {' '.join(args)}` did not answer in {CEPH_TIMEOUT} s"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"`ceph {' '.join(args)}` failed: {last[:200]}"
    try:
        return json.loads(done.stdout), None
    except ValueError:
        return None, f"`ceph {' '.join(args)}` printed no JSON"


def mounted_fs_name(base: str, mounts: str = "/proc/mounts") -> str | None:
    """The CephFS name a kernel mount under `base` names (fs=, mds_namespace=, or the device
    syntax user@fsid.NAME=/path); None for ceph-fuse, which does not say."""
    try:
        fields = mount_of(str(Path(base).resolve()), Path(mounts).read_text())
    except OSError:
        return None
    if not fields or fields[2] != "ceph" or len(fields) < 4:
        return None
    options = dict(o.partition("=")[::2] for o in fields[3].split(","))
    named = re.match(r"^[^@]*@[^.]*\.([^=]+)=", fields[0])
    return options.get("fs") or options.get("mds_namespace") or (named.group(1) if named else None)


def data_pools_at(base: str, env: Mapping[str, str]) -> tuple[dict | None, str | None]:
    """({name, data_pools, pools}) of the file system under `base` from its cluster (`ceph fs
    ls`, `ceph osd pool ls`), or (None, why the cluster cannot tell)."""
    systems, why = _ceph_json(["fs", "ls"], env)
    if why:
        return None, why
    if not isinstance(systems, list) or not systems:
        return None, "`ceph fs ls` lists no file system"
    name = mounted_fs_name(base)
    mine = [fs for fs in systems if fs.get("name") == name] if name else systems
    if len(mine) != 1:
        return None, (f"the cluster has {len(systems)} file systems "
                      f"({', '.join(str(fs.get('name')) for fs in systems)}) and the mount does not "
                      "say which is under it")
    pools, why = _ceph_json(["osd", "pool", "ls"], env)
    return {"name": mine[0].get("name"), "data_pools": list(mine[0].get("data_pools") or []),
            "pools": pools if isinstance(pools, list) else None}, None


def probe_pool(base: str, pool: str) -> tuple[bool | None, str]:
    """Whether the CephFS under `base` takes `pool` as a directory's layout pool, asked the way
    the job will (setfattr ceph.dir.layout.pool) on a probe directory made and removed here:
    (True, ""), (False, setfattr's words), or (None, why it could not be asked)."""
    if not shutil.which("setfattr"):
        return None, "no setfattr here"
    parent = Path(base)
    while not parent.is_dir() and parent != parent.parent:
        parent = parent.parent
    try:
        probe = tempfile.mkdtemp(prefix=".iolab-preflight-", dir=parent)
    except OSError as exc:
        return None, f"cannot make a probe directory in {parent}: {exc.strerror}"
    try:
        done = subprocess.run(["setfattr", "-n", "ceph.dir.layout.pool", "-v", pool, probe],
                              capture_output=True, text=True, timeout=CEPH_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, f"setfattr did not answer in {CEPH_TIMEOUT} s"
    finally:
        with contextlib.suppress(OSError):
            os.rmdir(probe)
    if done.returncode == 0:
        return True, ""
    said = " ".join(done.stderr.split()).replace(probe, "a probe directory")
    # EINVAL is the MDS's answer to a pool that is not a data pool; anything else says nothing
    return (False if "Invalid argument" in said else None), said[:200] or f"exit {done.returncode}"


def check_pools(pools: list[str], base: str, env: Mapping[str, str],
                say: Callable[[str], None]) -> dict[str, str]:
    """pool -> why the CephFS under `base` cannot lay a directory out in it: asked of the
    cluster, else of the mount with a probe directory; what neither can tell is said, not
    refused."""
    known, why = data_pools_at(base, env)
    if known is not None:
        data, listed = known["data_pools"], known["pools"]
        out = {}
        for pool in pools:
            if pool in data:
                continue
            what = ("" if listed is None else ": no such pool in its cluster" if pool not in listed
                    else f": add it with `ceph fs add_data_pool {known['name']} {pool}`")
            out[pool] = (f"pool {pool!r} is not a data pool of the CephFS under {base}{what} "
                         f"(data pools: {', '.join(data) or 'none'})")
        return out
    out = {}
    for pool in pools:
        ok, said = probe_pool(base, pool)
        if ok is False:
            out[pool] = (f"pool {pool!r} is not a data pool of the CephFS under {base}: a "
                         f"directory there refuses it ({said}; the cluster could not list its "
                         f"pools: {why})")
        elif ok is None:
            say(f"iolab: cephfs.pool {pool!r} not checked before the run: the cluster cannot "
                f"tell ({why}) and the mount cannot either ({said}); the job sets it, and a "
                "refusal stops it there")
    return out


def _mapped(spread: dict) -> list[dict]:
    """The spread's files, every object of each mapped to its OSD (else NotRecorded)."""
    if not spread.get("files"):
        raise NotRecorded(spread.get("reason") or "no data file was mapped to its OSDs")
    capped = [f["capped"] for f in spread["files"] if "capped" in f]
    if capped:
        raise NotRecorded(f"a lower bound only: {capped[0]} (iolab maps at most {MAX_OBJECTS})")
    return spread["files"]


def _objects_per_osd(spread: dict) -> dict[str, int]:
    total: dict[str, int] = {}
    for f in _mapped(spread):
        for osd, n in f["objects_per_osd"].items():
            total[osd] = total.get(osd, 0) + n
    return total


def _balance(amounts) -> float:
    """The fullest OSD's amount over the mean of the OSDs with data (1: even)."""
    held = [a for a in amounts if a > 0]
    if not held:
        raise NotRecorded("no OSD holds data of the files")
    return max(held) * len(held) / sum(held)


def _bytes_per_osd(spread: dict) -> dict:
    _mapped(spread)
    if "bytes_per_osd" not in spread:
        raise NotRecorded("the spread counted objects, not bytes (no rados stat in this record)")
    if "bytes_partial" in spread:
        raise NotRecorded(f"bytes of some objects only: {spread['bytes_partial']}")
    return spread["bytes_per_osd"]


def _objects(spread: dict) -> int:
    files = _mapped(spread)
    if any(f["objects"] is None for f in files):
        raise NotRecorded("rados ls listed no objects of a data file")
    return sum(f["objects"] for f in files)


def _fullest_share(spread: dict) -> float:
    nbytes = _bytes_per_osd(spread).values()
    return 100.0 * max(nbytes) / sum(nbytes) if sum(nbytes) else _balance(())


# Where the data files' objects are, as the servers say (rados ls, ceph osd map, rados stat)
EVIDENCE = tuple(EvidenceSpec(name, unit, "cephfs", text, kind, read) for name, unit, text, kind, read in (
    ("osds_with_data", "OSDs", "OSDs that hold objects of the data files", "count",
     lambda sp: len({osd for f in _mapped(sp) for osd in f["osds"]})),
    ("objects_written", "objects", "objects of the data files (rados ls)", "count", _objects),
    ("objects_per_osd_balance", "ratio", "the fullest OSD's objects over the mean of the OSDs "
     "with data (1: even)", "ratio", lambda sp: _balance(_objects_per_osd(sp).values())),
    ("bytes_per_osd_balance", "ratio", "the fullest OSD's bytes over the mean of the OSDs with "
     "data (1: even)", "ratio", lambda sp: _balance(_bytes_per_osd(sp).values())),
    ("fullest_osd_share", "%", "share of the data files' bytes on the fullest OSD", "share",
     _fullest_share),
))


def _stripe_unit(files: list) -> int:
    return one_setting([(f.get("layout") or {}).get("stripe_unit") for f in files], "stripe unit",
                       "getfattr", "getfattr printed no layout of a data file")


# What the files' layouts say (getfattr -n ceph.file.layout)
LAYOUT_EVIDENCE = (EvidenceSpec("stripe_unit_in_effect", "B", "cephfs", "the data files' stripe "
                                "unit, as their layouts say (getfattr)", "bytes", _stripe_unit),)
SPECS = EVIDENCE + LAYOUT_EVIDENCE


class CephFS(FileSystem):
    name = "cephfs"
    title = "CephFS"
    fstypes = FSTYPES
    prefix = "cephfs."
    observed_key = "cephfs"
    schema_file = "cephfs.json"

    def check(self, req: dict) -> str | None:
        return check_request(req)

    def preflight(self, reqs: list[dict], base: str, env: Mapping[str, str],
                  say: Callable[[str], None]) -> list[Refusal]:
        """Each requested pool against the data pools of the file system under `base`."""
        pools = list(dict.fromkeys(req["pool"] for req in reqs if "pool" in req))
        refused = check_pools(pools, base, env, say) if pools else {}
        return [Refusal(f"{self.prefix}pool", pool, why) for pool, why in refused.items()]

    # the job lines and the reading of their witnesses are this module's functions
    prerun = staticmethod(prerun_lines)
    postrun = staticmethod(postrun_lines)
    observe = staticmethod(observe)
    effective = staticmethod(effective)

    def reports_effective(self, key: str) -> bool:
        return key in FIELDS

    evidence_specs = SPECS
    unit_key = "stripe_unit"
    unit_evidence = "stripe_unit_in_effect"

    def evidence(self, lay: dict) -> list:
        why = unlaid(self, lay)
        if why:
            return all_missing(SPECS, why)
        return gather(EVIDENCE, lay.get("spread") or {}, "the CephFS spread") + gather(
            LAYOUT_EVIDENCE, lay.get("files") or [], "the CephFS layouts")

    def system_facts(self, lay: dict) -> dict[str, object]:
        if unlaid(self, lay):
            return {}
        asked = lay.get("requested") or {}
        out: dict[str, object] = {f"default {k}": v for k, v in (lay.get("layout") or {}).items()
                                  if k in FIELDS and k not in asked}
        # every OSD of the cluster is listed there, 0 where the files have no object
        osds = (lay.get("spread") or {}).get("bytes_per_osd")
        if isinstance(osds, dict) and osds:
            out["OSDs"] = len(osds)
        return out

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
