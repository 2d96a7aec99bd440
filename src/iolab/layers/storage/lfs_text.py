"""What Lustre's `lfs` prints, read: `lfs getstripe` (plain, -d, -y and composite forms), `lfs
getdirstripe` and `lfs df` (lustre/utils/liblustreapi.c, lfs.c). Text in, dicts out; lustre.py
compares them with what was asked.
"""

from __future__ import annotations

import re

_LMV = re.compile(r"lmv_(stripe_count|stripe_offset|hash_type):\s*(\S+)")
_MDT_ROW = re.compile(r"^\s*(?:-\s+l_mdt_idx:\s*(\d+)|(\d+)\s+\[0x)", re.MULTILINE)


def parse_getdirstripe(text: str) -> dict:
    """`lfs getdirstripe [-y] <dir>` -> {dir_stripe_count, dir_stripe_offset, hash_type, mdts}.

    Reads the one-line form (`lmv_stripe_count: 4 lmv_stripe_offset: 0 lmv_hash_type: ...`,
    then an `mdtidx FID` table) and the YAML form (`lmv_objects:` of `- l_mdt_idx: N`).
    Raises ValueError on text that has no lmv_stripe_count."""
    fields = dict(_LMV.findall(text))
    if "stripe_count" not in fields:
        raise ValueError("no lmv_stripe_count: not lfs getdirstripe output")
    try:
        count = int(fields["stripe_count"])
        offset = int(fields["stripe_offset"], 0) if "stripe_offset" in fields else None
    except ValueError:
        raise ValueError(f"lmv_stripe_count {fields['stripe_count']!r} or its offset is not an "
                         "integer") from None
    return {"dir_stripe_count": count, "dir_stripe_offset": offset,
            "hash_type": fields.get("hash_type"),
            "mdts": [int(a or b) for a, b in _MDT_ROW.findall(text)]}


LAYOUT_KEYS = ("stripe_count", "stripe_size", "stripe_offset", "pool")
STRIPE_SIZE_UNIT = 65536  # lfs setstripe -S: a multiple of 64 KiB

# Whitespace after the colon differs between versions: parse `key:\s*value`.
_KV = re.compile(r"^\s*(?:-\s+)?(lcm_[a-z_]+|lcme_[a-z_]+(?:\.[a-z_]+)?|lmm_[a-z_]+):\s*(.*?)\s*$")
_DIR_LINE = re.compile(r"^\s*stripe_count:\s*-?\d+\s+stripe_size:")  # `-d`: one line, no path
_PAIR = re.compile(r"([a-z_]+):\s*(\S+)")
_OST_IDX = re.compile(r"l_ost_idx:\s*(0x[0-9a-fA-F]+|\d+)")  # YAML and composite object lists
_OBDIDX = re.compile(r"^\s*obdidx\s+objid")                   # plain-file object table header
_OBJ_ROW = re.compile(r"^\s*(0x[0-9a-fA-F]+|\d+)\s+(?:\d+|N/A)\s+(?:0x[0-9a-fA-F]+|N/A)\s+\S+")
_NO_STRIPE = re.compile(r"^'?(.*?)'? has no stripe info$")
_SKIP = re.compile(r"^\s*(component\d+|sub_layout|composite_header|components|lmm_objects):\s*$")
_ANY_KEY = re.compile(r"^[a-z][a-z0-9_.]*:(\s|$)")
_OST_LINE = re.compile(r"\[OST:\d+\]")


def _int(value: str, number: int) -> int:
    try:
        return int(value, 16) if value.lower().startswith("0x") else int(value)
    except ValueError:
        raise ValueError(f"line {number}: {value!r} is not an integer") from None


def _record(path: str | None) -> dict:
    return {"path": path, "stripe_count": None, "stripe_size": None, "stripe_offset": None,
            "pool": None, "pattern": None, "osts": [], "_seen": False}


def _component() -> dict:
    return {"id": None, "flags": None, "extent_start": None, "extent_end": None, "stripe_count": None,
            "stripe_size": None, "stripe_offset": None, "pool": None, "pattern": None, "osts": []}


def _set_layout(target: dict, key: str, value: str, number: int) -> None:
    if key in ("stripe_count", "stripe_size", "stripe_offset"):
        target[key] = _int(value, number)
    elif key == "pool":
        target["pool"] = value or None
    elif key == "pattern":
        target["pattern"] = pattern_name(value)


# lov_pattern bits (lustre_user.h): older clients print the number, newer ones the names.
_PATTERN_BITS = ((0x1, "raid0"), (0x100, "mdt"), (0x200, "overstriped"))


def pattern_name(value: str | int | None) -> str | None:
    """`lmm_pattern` (or Darshan's LUSTRE_COMP_STRIPE_PATTERN) as lfs names it: "raid0", "mdt"
    (Data-on-MDT), "raid0,overstriped"; None where no pattern is set or recorded."""
    if value is None or value == "":
        return None
    try:
        bits = value if isinstance(value, int) else int(value, 0)
    except ValueError:
        return value  # type: ignore[return-value]  # a name, as lfs 2.x prints it
    if bits < 0:
        return None  # Darshan: not recorded
    if not bits:
        return None  # a directory default (`-d`) prints 0: no pattern asked for
    return ",".join(name for bit, name in _PATTERN_BITS if bits & bit) or hex(bits)


def _finish(rec: dict) -> dict:
    comps = rec.get("components")
    if comps:
        # As `lfs getstripe -c/-S` do: the file-level values are the last initialized component's.
        inited = [c for c in comps if "init" in (c["flags"] or "").split(",")]
        last = (inited or comps)[-1]
        for key in (*LAYOUT_KEYS, "pattern"):
            rec[key] = last[key]
        rec["osts"] = list(dict.fromkeys(i for c in comps for i in c["osts"]))
    del rec["_seen"]
    return rec


def parse_getstripe(text: str) -> list[dict]:
    """`lfs getstripe` output -> one dict per file or directory, in order.

    Reads the plain form (path, lmm_* lines, obdidx table), the `-d` one-liner, `-y` YAML and the
    composite (PFL/FLR) form. Keys: path (None where lfs prints none: -d, -y), stripe_count,
    stripe_size, stripe_offset, pool (None if unset), osts; composite files also have components
    [{id, flags, extent_start, extent_end (None = EOF), stripe_count, stripe_size, stripe_offset,
    pool, osts}] and take their file-level values from the last initialized component.
    "<path> has no stripe info" gives a record whose values are all None.
    Raises ValueError on text that is not getstripe output.
    """
    read = _Getstripe()
    in_table = False
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line.strip():
            in_table = False
            continue
        if _OBDIDX.match(line):
            if read.rec is None:
                raise ValueError(f"line {number}: object table before any layout")
            in_table = True
            continue
        if in_table and (m := _OBJ_ROW.match(line)):
            read.rec["osts"].append(_int(m.group(1), number))
            continue
        in_table = False
        if m := _NO_STRIPE.match(line):
            read.start(m.group(1))["_seen"] = True
        elif _DIR_LINE.match(line):
            read.directory_line(line, number)
        elif _SKIP.match(line):
            continue
        elif m := _KV.match(line):
            read.field(*m.groups(), number)
        elif m := _OST_IDX.search(line):
            target = read.comp if read.comp is not None else read.rec
            if target is None:
                raise ValueError(f"line {number}: object entry outside a layout")
            target["osts"].append(_int(m.group(1), number))
        elif not line[0].isspace() and not _ANY_KEY.match(line):
            read.start(line)  # a path: lfs prints it unindented before the layout
    if not read.records:
        raise ValueError("no lfs getstripe records in the text")
    for r in read.records:
        if not r["_seen"]:
            raise ValueError(f"{r['path']!r} has no layout after it: not lfs getstripe output "
                             "(single-field queries such as -c print only the value)")
    return [_finish(r) for r in read.records]


class _Getstripe:
    """The records read so far, the one being read and its component being read."""

    def __init__(self):
        self.records: list[dict] = []
        self.rec: dict | None = None
        self.comp: dict | None = None

    def start(self, path: str | None) -> dict:
        self.comp = None
        self.records.append(_record(path))
        self.rec = self.records[-1]
        return self.rec

    def directory_line(self, line: str, number: int) -> None:
        """A directory's layout on one line; in a composite directory template, one per component."""
        if self.comp is not None and line[0].isspace():
            target = self.comp
        else:
            if self.rec is None or self.rec["_seen"]:
                self.start(None)
            target = self.rec
        for key, value in _PAIR.findall(line):
            _set_layout(target, key, value, number)
        self.rec["_seen"] = True

    def field(self, key: str, value: str, number: int) -> None:
        """A `key: value` line: a composite layout's header (lcm_), a component's (lcme_), or a
        layout's field (lmm_), of the file's layout or of the current component."""
        rec = self.rec
        if key.startswith("lcm_"):
            # -y prints no path: a second header means a second file.
            if rec is None or (rec["_seen"] and (rec.get("components") is None or rec["components"])):
                rec = self.start(None)
            rec.setdefault("components", [])
            rec["_seen"] = True
        elif key.startswith("lcme_"):
            self._component_field(key, value, number)
        else:
            name = key.removeprefix("lmm_")
            if rec is not None and rec.get("components") is not None:
                if self.comp is None:
                    raise ValueError(f"line {number}: {key} before the first component")
                _set_layout(self.comp, name, value, number)
                return
            # -y prints no path: a second lmm_stripe_count means a second file.
            if rec is None or (name == "stripe_count" and rec["stripe_count"] is not None):
                rec = self.start(None)
            _set_layout(rec, name, value, number)
            rec["_seen"] = True

    def _component_field(self, key: str, value: str, number: int) -> None:
        rec = self.rec
        if rec is None or rec.get("components") is None:
            raise ValueError(f"line {number}: component field {key} outside a composite layout")
        if key == "lcme_id":
            self.comp = _component()
            rec["components"].append(self.comp)
            self.comp["id"] = _int(value, number) if value != "N/A" else None
        elif self.comp is None:
            raise ValueError(f"line {number}: {key} before lcme_id")
        elif key == "lcme_flags":
            self.comp["flags"] = value
        elif key == "lcme_extent.e_start":
            self.comp["extent_start"] = _int(value, number)
        elif key == "lcme_extent.e_end":
            self.comp["extent_end"] = None if value == "EOF" else _int(value, number)


def parse_lfs_df(text: str, target: str = "OST") -> int:
    """Number of OSTs (or MDTs) in `lfs df` output: the lines tagged [OST:N] ([MDT:N]); inactive
    targets have no tag."""
    tag = _OST_LINE if target == "OST" else re.compile(rf"\[{target}:\d+\]")
    count = sum(1 for line in text.splitlines() if tag.search(line))
    if not count:
        raise ValueError(f"no [{target}:N] lines: not lfs df output")
    return count
