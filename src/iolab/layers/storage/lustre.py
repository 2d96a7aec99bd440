"""Lustre striping: requested parameters -> `lfs setstripe`; observed layout <- the case directory.

Where the case directory is not on Lustre, striping is recorded as not applied, with the reason.
A layout counts as applied only when `lfs getstripe` on the written files shows it.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from ... import shell
from ...units import parse_size, size_arg
from ..base import DerivedColumn, EvidenceSpec, NotRecorded, all_missing, gather
from .base import FSTYPE_FILE, FileSystem, Refusal, failed_setting, one_setting, settle, unlaid
from .lfs_text import (LAYOUT_KEYS, STRIPE_SIZE_UNIT, parse_getdirstripe, parse_getstripe,
                       parse_lfs_df)

SETSTRIPE_FILE = "iolab-setstripe.txt"
GETSTRIPE_FILE = "iolab-getstripe.txt"
GETDIRSTRIPE_FILE = "iolab-getdirstripe.txt"
LFSDF_FILE = "iolab-lfsdf.txt"
MAX_FILES = 64  # enough to see the layout; a 12288-rank file-per-process run would take minutes
DIR_KEYS = ("dir_stripe_count",)  # lfs setdirstripe: the directory over MDTs, not the files' layout
ALL_OSTS = -1    # stripe_count -1: stripe over every OST of the file system
KEPT_FILES = 16        # lfs getstripe entries kept of the data files (after the directory's)


def all_osts(key: str, value) -> bool:
    """Whether a stripe count (`lustre.stripe_count` or `stripe_count`) means every OST."""
    return (key.removeprefix("lustre.") == "stripe_count" and value == ALL_OSTS
            and not isinstance(value, bool))


def requested(params: dict) -> dict:
    """The Lustre layout a case asks for (lustre.* without the prefix)."""
    return FILE_SYSTEM.requested(params)


def setdirstripe_args(req: dict, default: bool = False) -> list[str]:
    """`lfs setdirstripe -c N`: the case directory (made again, empty) striped over N MDTs; with
    default, `-D -c N`: the directories a benchmark makes in it (mdtest's tree) striped alike,
    for a striped directory's subdirectories are otherwise each on one MDT."""
    return ["lfs", "setdirstripe", *(["-D"] if default else []), "-c", str(req["dir_stripe_count"])]


def file_layout(req: dict) -> dict:
    """The part of a request that `lfs setstripe` sets (everything but the directory's MDTs)."""
    return {k: v for k, v in req.items() if k not in DIR_KEYS}


def setstripe_args(req: dict) -> list[str]:
    args = ["lfs", "setstripe"]
    for comp in req.get("components", []):
        # a progressive file layout: each -E opens a component up to that offset
        end = comp["end"]
        args += ["-E", "-1" if end == -1 else _lfs_size(end)]
        if comp.get("layout") == "mdt":
            args += ["-L", "mdt"]  # Data-on-MDT: the stripe size is the component's end
        args += _stripe_args(comp)
    args += _stripe_args(req)
    if "stripe_offset" in req:
        args += ["-i", str(req["stripe_offset"])]
    if "osts" in req:
        args += ["-o", ",".join(str(i) for i in req["osts"])]
    if "pool" in req:
        args += ["-p", req["pool"]]
    return args


def _stripe_args(part: dict) -> list[str]:
    """-c (or -C, overstriping) and -S of a layout or of one component."""
    args = []
    if "stripe_count" in part:
        args += ["-c", str(part["stripe_count"])]
    if "overstripe_count" in part:
        args += ["-C", str(part["overstripe_count"])]
    if "stripe_size" in part:
        args += ["-S", _lfs_size(part["stripe_size"])]
    return args


def _lfs_size(nbytes: int) -> str:
    return size_arg(nbytes, upper=True)


def prerun_lines(case_dir: str, req: dict, stop_on_failure: bool = True) -> list[str]:
    """Shell lines run in the job, on the compute node, once the case directory exists and its
    file-system type is noted (base.detect_line): on Lustre, lay it out as asked.

    A failed `lfs setstripe` stops the job before the benchmark (its reason in SETSTRIPE_FILE),
    unless the experiment only warns about layouts (stop_on_failure False)."""
    d = shell.path_word(case_dir, "case directory")
    lines = []
    if req:
        cmd = ""
        if file_layout(req):
            cmd = shell.join(setstripe_args(file_layout(req)), "lfs setstripe argument") + f" {d}"
        if "dir_stripe_count" in req:
            # setdirstripe makes the directory: the one mkdir made is still empty, so it goes
            # first; a directory with anything in it stops the job here, with why
            dirstripe = " && ".join(
                [f"rmdir {d}", *(shell.join(setdirstripe_args(req, default), "lfs setdirstripe argument")
                                 + f" {d}" for default in (False, True))])
            cmd = f"{{ {dirstripe}{' && ' + cmd if cmd else ''}; }}"
        stop = (f"; if [ $iolab_ss -ne 0 ]; then "
                f"{shell.stop_job(_what(req) + ' failed', SETSTRIPE_FILE)}; fi") if stop_on_failure else ""
        lines.append(f"if [ \"$(cat {FSTYPE_FILE})\" = lustre ]; then {cmd} > {SETSTRIPE_FILE} 2>&1; "
                     f"iolab_ss=$?; echo \"exit=$iolab_ss\" >> {SETSTRIPE_FILE}{stop}; fi")
    return lines


def _what(req: dict) -> str:
    """The lfs commands of a request, for the line that says which failed."""
    return "lfs setdirstripe/setstripe" if set(DIR_KEYS) & req.keys() else "lfs setstripe"


def postrun_lines(case_dir: str, req: dict | None = None) -> list[str]:
    """After the benchmark, before cleanup: the OST count and the layout of the directory and of
    (up to MAX_FILES of) the files the benchmark wrote, as `### <path>` sections; and, where the
    directory was striped over MDTs, `lfs getdirstripe -y` of it."""
    d = shell.path_word(case_dir, "case directory")
    collect = (f"{{ lfs df {d}; }} > {LFSDF_FILE} 2>&1; "
               f"{{ printf '### %s\\n' {d}; lfs getstripe -d {d}; "
               f"ls -1 {d} | head -n {MAX_FILES} | while read -r f; do "
               f"printf '### %s/%s\\n' {d} \"$f\"; lfs getstripe -y {d}/\"$f\"; done; }} "
               f"> {GETSTRIPE_FILE} 2>&1")
    if req and "dir_stripe_count" in req:
        collect += f"; lfs getdirstripe -y {d} > {GETDIRSTRIPE_FILE} 2>&1"
    return [f"if [ \"$(cat {FSTYPE_FILE})\" = lustre ]; then {collect}; fi"]


def parse_sections(text: str) -> list[dict]:
    """The `### <path>` sections postrun_lines writes -> one layout per path."""
    out = []
    for chunk in re.split(r"^### ", text, flags=re.MULTILINE):
        if not chunk.strip():
            continue
        path, _, body = chunk.partition("\n")
        try:
            layouts = parse_getstripe(body)
        except ValueError as exc:
            out.append({"path": path.strip(), "error": str(exc)})
            continue
        for layout in layouts:
            layout["path"] = layout.get("path") or path.strip()
            out.append(layout)
    return out


def observe(stage: Path, req: dict, out: dict) -> dict:
    """On Lustre: whether `lfs setstripe` ran, then the layout `lfs getstripe` shows."""
    failed = failed_setting(stage, SETSTRIPE_FILE, _what(req))
    if failed:
        out.update(applied=False, reason=failed)
        return out
    return _verify_layout(stage, req, out)


def _verify_layout(stage: Path, req: dict, out: dict) -> dict:
    """Compare `lfs getstripe` of the directory and the files with the request."""
    ost_count = None
    try:
        ost_count = parse_lfs_df((stage / LFSDF_FILE).read_text())
    except (OSError, ValueError):
        pass
    try:
        layouts = parse_sections((stage / GETSTRIPE_FILE).read_text())
    except OSError:
        layouts = []
    good = [lay for lay in layouts if "error" not in lay]
    files = [lay for lay in good if lay.get("path") != layouts[0].get("path")] if good else []
    problems = compare_layout(file_layout(req), files, ost_count)
    if "dir_stripe_count" in req:
        out["directory"], found = _dir_observed(stage, req)
        problems += found
    out.update(ost_count=ost_count, files=[_short(lay) for lay in good[:1 + KEPT_FILES]])
    return settle(out, problems)


def _dir_observed(stage: Path, req: dict) -> tuple[dict | None, list[dict]]:
    """`lfs getdirstripe -y` of the case directory against lustre.dir_stripe_count."""
    want = req["dir_stripe_count"]
    try:
        lmv = parse_getdirstripe((stage / GETDIRSTRIPE_FILE).read_text())
    except (OSError, ValueError):
        return None, [{"path": None, "key": "dir_stripe_count", "requested": want, "observed": None,
                       "status": "unverified"}]
    try:
        mdt_count = parse_lfs_df((stage / LFSDF_FILE).read_text(), "MDT")
    except (OSError, ValueError):
        mdt_count = None
    return lmv, compare_dirstripe(want, lmv, mdt_count)


def compare_dirstripe(want: int, lmv: dict, mdt_count: int | None) -> list[dict]:
    """A requested MDT stripe count against parse_getdirstripe's record; -1 (all MDTs) needs the
    MDT count of `lfs df` to be vouched for."""
    got = lmv["dir_stripe_count"]
    if want == ALL_OSTS:
        if mdt_count is None:
            status = "unverified"
        else:
            status = None if got == mdt_count else "changed"
    else:
        status = None if got == want else "changed"
    return [{"path": None, "key": "dir_stripe_count", "requested": want, "observed": got,
             "status": status}] if status else []


def _short(layout: dict) -> dict:
    return {k: layout.get(k) for k in ("path", "stripe_count", "stripe_size", "stripe_offset",
                                       "pool", "pattern", "osts")}


def _as_int(key: str, value) -> int:
    return parse_size(value) if key == "stripe_size" and isinstance(value, str) else int(value)


def check_request(req: dict, ost_count: int | None) -> str | None:
    """Why `lfs setstripe` would refuse or quietly change this request, found before submission."""
    if req.get("components") and ({"stripe_count", "overstripe_count", "stripe_size", "osts"}
                                  & req.keys()):
        return ("give either lustre.components (a progressive layout) or lustre.stripe_count/"
                "overstripe_count/stripe_size/osts, not both")
    for i, comp in enumerate(req.get("components", [])):
        problem = _check_component(i, comp, ost_count)
        if problem:
            return f"lustre.components[{i}]: {problem}"
    ends = [c["end"] for c in req.get("components", [])]
    if ends and (ends[-1] != -1 or -1 in ends[:-1] or ends[:-1] != sorted(ends[:-1])):
        return "lustre.components: ends must grow, and only the last one may be -1 (end of file)"
    if "stripe_count" in req and "overstripe_count" in req:
        return "give either lustre.stripe_count (-c) or lustre.overstripe_count (-C), not both"
    if "osts" in req:
        count = req.get("stripe_count", req.get("overstripe_count"))
        if count not in (None, 0) and _as_int("stripe_count", count) != len(req["osts"]):
            # lfs: "stripe_count(4) != nr_tgts(2)"
            return (f"lustre.osts names {len(req['osts'])} OST(s) but the stripe count is {count}: "
                    "leave the count out or make them agree")
        if "stripe_offset" in req:
            return "give either lustre.stripe_offset (-i) or lustre.osts (-o), not both"
    if "stripe_count" in req:
        count = _as_int("stripe_count", req["stripe_count"])
        if count < -1:
            return f"lustre.stripe_count {count}: use -1 (all OSTs), 0 (default) or a positive count"
        if ost_count is not None and count > ost_count:
            return (f"lustre.stripe_count {count} is more than the {ost_count} OSTs of this file "
                    "system (-1 stripes over all of them)")
    if "stripe_size" in req:
        size = _as_int("stripe_size", req["stripe_size"])
        if size < 0 or size % STRIPE_SIZE_UNIT:
            return f"lustre.stripe_size {size} must be a multiple of 64 KiB ({STRIPE_SIZE_UNIT} bytes)"
    if "stripe_offset" in req and _as_int("stripe_offset", req["stripe_offset"]) < -1:
        # No upper bound here: OST indices may have gaps, so the count does not bound them.
        return f"lustre.stripe_offset {req['stripe_offset']}: use -1 (MDS chooses) or an OST index"
    return None


def _check_component(index: int, comp: dict, ost_count: int | None) -> str | None:
    """One component as lfs setstripe's parser checks it (lfs.c, 2.16)."""
    if "stripe_count" in comp and "overstripe_count" in comp:
        return "give either stripe_count (-c) or overstripe_count (-C), not both"
    if comp.get("layout") == "mdt":
        # lfs: a DoM component must be the first, takes no -c/-S (its stripe size is its end)
        if index:
            return "layout mdt (Data-on-MDT) must be the first component"
        if {"stripe_count", "overstripe_count", "stripe_size"} & comp.keys():
            return "layout mdt (Data-on-MDT) takes no stripe_count, overstripe_count or stripe_size"
        if comp["end"] == -1:
            return "layout mdt (Data-on-MDT) needs an end: the rest of the file goes to the OSTs"
        return None
    problem = check_request({k: comp[k] for k in ("stripe_count", "stripe_size") if k in comp},
                            ost_count)
    if problem:
        return problem.removeprefix("lustre.")
    size = comp.get("stripe_size")
    if size and comp["end"] != -1 and comp["end"] % _as_int("stripe_size", size):
        # lfs: "The component end must be aligned by the stripe size"
        return f"end {comp['end']} is not a multiple of the component's stripe_size {size}"
    return None


def _layout_status(key: str, want, got, ost_count: int | None) -> str | None:
    if got is None:
        return "missing"
    if key == "pool":
        return None if got == want else "changed"
    want = _as_int(key, want)
    if want == -1 and key == "stripe_offset":
        return None  # -1: the MDS chooses, any start is right
    if want == 0 and key in ("stripe_count", "stripe_size"):
        return None  # 0: the file-system default, whatever it is
    if all_osts(key, want):
        if got == ALL_OSTS:
            return None  # a directory default keeps -1; its files show the real count
        if ost_count is None:
            return "unverified"
        want = ost_count
    return None if got == want else "changed"


def _compare_components(want: list[dict], layout: dict, ost_count: int | None) -> list[dict]:
    """A requested progressive layout against a file's components, one by one."""
    got = layout.get("components") or []
    path = layout.get("path")
    if len(got) != len(want):
        return [{"path": path, "key": "components", "requested": len(want), "observed": len(got),
                 "status": "changed"}]
    out = []
    for i, (w, g) in enumerate(zip(want, got)):
        end = g.get("extent_end")
        if (w["end"] == -1) != (end is None) or (w["end"] != -1 and end != w["end"]):
            out.append({"path": path, "key": f"components[{i}].end", "requested": w["end"],
                        "observed": -1 if end is None else end, "status": "changed"})
        if w.get("layout") == "mdt":
            w = {**w, "pattern": "mdt"}  # Data-on-MDT: lfs prints pattern mdt, count 0
        for entry in _compare_plain(w, g, ost_count):
            out.append({**entry, "key": f"components[{i}].{entry['key']}"})
    return out


def _wanted_pattern(want: dict) -> str | None:
    """The lmm_pattern lfs getstripe shows for this request, where it says something."""
    if "pattern" in want:
        return want["pattern"]
    if "overstripe_count" in want or len(set(want.get("osts", []))) < len(want.get("osts", [])):
        return "raid0,overstriped"  # -C, or an OST named twice in -o
    return None


def _compare_plain(want: dict, got: dict, ost_count: int | None) -> list[dict]:
    """One plain layout (a file, or a component) against the request, key by key."""
    out = []
    for key in (*LAYOUT_KEYS, "overstripe_count", "osts", "pattern"):
        if key == "pattern":
            asked = _wanted_pattern(want)
            if asked is None:
                continue
        elif key not in want:
            continue
        else:
            asked = want[key]
        if key == "overstripe_count":
            # -C N: N stripes whatever the OST count
            status = None if got.get("stripe_count") == asked else (
                "missing" if got.get("stripe_count") is None else "changed")
            seen = got.get("stripe_count")
        elif key == "osts":
            # -o: these OSTs, in this order (lfs getstripe lists the objects in stripe order)
            seen = got.get("osts") or None
            status = "missing" if seen is None else (None if seen == list(asked) else "changed")
        elif key == "pattern":
            seen = got.get("pattern")
            # older lfs prints no name for overstriping: a missing pattern cannot vouch either way
            status = "unverified" if seen is None else (None if seen == asked else "changed")
        else:
            seen = got.get(key)
            status = _layout_status(key, asked, seen, ost_count)
        if status:
            out.append({"path": got.get("path"), "key": key, "requested": asked, "observed": seen,
                        "status": status})
    return out


def compare_layout(req: dict, files: list[dict], ost_count: int | None) -> list[dict]:
    """What differs between the requested layout and each observed file or directory.

    Entries {"path", "key", "requested", "observed", "status"}, status changed | missing |
    unverified (stripe_count -1 without an OST count, or no observed files). Empty: all applied.
    """
    if not files:
        return [{"path": None, "key": k, "requested": req[k], "observed": None, "status": "unverified"}
                for k in (*LAYOUT_KEYS, "overstripe_count", "osts", "components") if req.get(k)]
    out = []
    for f in files:
        if req.get("components"):
            out += _compare_components(req["components"], f, ost_count)
        out += _compare_plain({k: v for k, v in req.items() if k != "components"}, f, ost_count)
    return out




def _osts(files: list) -> int:
    """OSTs that hold objects of the data files, as lfs getstripe listed them."""
    data = files[1:]            # the first entry is the case directory's default layout
    if not data:
        raise NotRecorded("lfs getstripe showed no data file")
    found = {ost for f in data for ost in f.get("osts") or ()}
    if not found:
        raise NotRecorded("lfs getstripe listed no OST of the data files")
    if len(data) >= KEPT_FILES:
        raise NotRecorded(f"a lower bound only: at least {len(found)} (the first {KEPT_FILES} "
                          "files' layouts are kept)")
    return len(found)


def _stripe_size(files: list) -> int:
    return one_setting([f.get("stripe_size") for f in files[1:]], "stripe size", "lfs getstripe",
                       "a data file's layout has components, each with its stripe size")


EVIDENCE = (EvidenceSpec("osts_with_data", "OSTs", "lustre", "OSTs that hold objects of the data "
                         "files (lfs getstripe)", "count", _osts),
            EvidenceSpec("stripe_size_in_effect", "B", "lustre", "the data files' stripe size, as "
                         "lfs getstripe printed it", "bytes", _stripe_size))


class Lustre(FileSystem):
    name = "lustre"
    title = "Lustre"
    prefix = "lustre."
    observed_key = "lustre"
    schema_file = "lustre.json"

    def check(self, req: dict) -> str | None:
        return check_request(req, None)

    evidence_specs = EVIDENCE
    unit_key = "stripe_size"
    unit_evidence = "stripe_size_in_effect"

    def evidence(self, lay: dict) -> list:
        why = unlaid(self, lay)
        return all_missing(EVIDENCE, why) if why else gather(
            EVIDENCE, lay.get("files") or [], "the lfs getstripe witness")

    def preflight(self, reqs: list[dict], base: str, env, say) -> list[Refusal]:
        """Each request against the OST count of the Lustre under `base` (`lfs df`), where lfs
        is here: what only the count refuses (a stripe count above it)."""
        import shutil
        import subprocess

        lfs = shutil.which("lfs", path=env.get("PATH"))
        if not lfs:
            say(f"iolab: lustre.* layouts under {base} not checked against its OST count before "
                "the run: no lfs here; the job's lfs setstripe checks them")
            return []
        try:
            df = subprocess.run([lfs, "df", base], capture_output=True, text=True, timeout=60)
            osts = parse_lfs_df(df.stdout)
        except (subprocess.TimeoutExpired, ValueError) as exc:
            say(f"iolab: lustre.* layouts under {base} not checked against its OST count before "
                f"the run: `lfs df` gave no count ({exc})")
            return []
        out = []
        for req in reqs:
            problem = check_request(req, osts)
            if problem and problem != check_request(req, None):
                key = re.match(r"lustre\.(\w+)", problem)
                name = key.group(1) if key else "stripe_count"
                out.append(Refusal(f"{self.prefix}{name}", req.get(name), problem))
        return out

    def prerun(self, case_dir: str, req: dict, stop_on_failure: bool) -> list[str]:
        return prerun_lines(case_dir, req, stop_on_failure)

    def postrun(self, case_dir: str, req: dict) -> list[str]:
        return postrun_lines(case_dir, req)

    def observe(self, stage: Path, req: dict, out: dict) -> dict:
        return observe(stage, req, out)

    def system_facts(self, lay: dict) -> dict[str, object]:
        if unlaid(self, lay):
            return {}
        asked = lay.get("requested") or {}
        data = (lay.get("files") or [])[1:]      # the first is the case directory's
        out: dict[str, object] = {}
        if data and not asked.get("components"):
            # stripe_offset is where this file began, not a default
            out = {f"default {k}": data[0][k] for k in ("stripe_count", "stripe_size", "pool")
                   if k not in asked and data[0].get(k) not in (None, "")}
        if lay.get("ost_count"):
            out["OSTs"] = lay["ost_count"]
        return out

    def special_value(self, key: str, value) -> str | None:
        return "all (-1)" if all_osts(key, value) else None

    def derived_columns(self) -> dict[str, DerivedColumn]:
        # KAUST's rule of thumb: sqrt(file size in GB) OSTs; it says nothing of other layouts
        return {"sqrt_rule_osts": DerivedColumn(
            "OSTs by sqrt(GB) Rule", lambda size: max(1, math.ceil(math.sqrt(size / 1e9))),
            file_systems=(self.name,))}


FILE_SYSTEM = Lustre()
