"""The layouts sites use today (PFL, Data-on-MDT, overstriping, OST lists): typed at load, rendered
into the `lfs setstripe` lines Lustre 2.16.1's own option parser accepted (recorded in
tests/data/lustre/lfs_setstripe_parser_2.16.1.txt), refused before submission where that parser
refuses them, and compared with what `lfs getstripe` shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from iolab.layers.storage import lustre
from iolab.layers.storage.layer import observed_layout
from iolab import shell
from iolab.errors import IolabError
from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "lustre"
MIB = 1 << 20
# A line lfs's parser accepted gets as far as the layout ioctl, which fails off Lustre.
ACCEPTED = "Inappropriate ioctl for device"


def recorded() -> dict[str, tuple[str, int]]:
    """`$ lfs setstripe ... case-dir` -> (what lfs printed, its exit status)."""
    text = (DATA / "lfs_setstripe_parser_2.16.1.txt").read_text()
    out = {}
    for block in re.split(r"^\$ ", text, flags=re.MULTILINE)[1:]:
        command, _, rest = block.partition("\n")
        printed, _, status = rest.rstrip("\n").rpartition("exit=")
        out[command.removesuffix(" case-dir")] = (printed, int(status))
    return out


RECORDED = recorded()


def rendered(req: dict) -> str:
    return shell.join(lustre.setstripe_args(req), "lfs setstripe argument")


def shipped_requests() -> list[tuple[str, dict]]:
    out = {}
    for path in sorted((ROOT / "experiments").glob("*.yaml")):
        for case in expand(load_experiment(path)):
            req = lustre.file_layout(lustre.requested(case.params))  # setdirstripe is not probed: see below
            if req:
                out.setdefault(rendered(req), (f"{path.stem}:{case.case_id}", req))
    return list(out.values())


SHIPPED = shipped_requests()


def test_the_recording_covers_pfl_dom_overstriping_and_ost_lists():
    lines = " ".join(rendered(req) for _, req in SHIPPED)
    for option in ("-E 4M", "-L mdt", "-C 8", "-o 0,1,2,3", "-c -1"):
        assert option in lines
    assert len(SHIPPED) >= 19


@pytest.mark.parametrize("where, req", SHIPPED, ids=[w for w, _ in SHIPPED])
def test_every_shipped_line_is_one_the_real_parser_accepted(where, req):
    assert lustre.check_request(req, None) is None
    printed, status = RECORDED[rendered(req)]
    assert ACCEPTED in printed and status in (1, 25), printed


# Requests iolab refuses before submission, and what the real lfs said about the line they render.
REFUSED = [
    ({"components": [{"end": MIB, "layout": "mdt", "stripe_count": 1}, {"end": -1, "stripe_count": 4}]},
     "no stripe_count", "can't be specified with Data-on-MDT"),
    ({"components": [{"end": 4 * MIB, "stripe_count": 1}, {"end": MIB, "layout": "mdt"},
                     {"end": -1, "stripe_count": 4}]},
     "must be the first component", "'mdt' layout can be only the first one"),
    ({"components": [{"end": -1, "layout": "mdt"}]}, "needs an end", "'mdt' layout size is too big"),
    ({"components": [{"end": 6 * MIB, "stripe_count": 1, "stripe_size": 4 * MIB},
                      {"end": -1, "stripe_count": 4}]},
     "not a multiple of the component's stripe_size", "must be aligned by the stripe size"),
    ({"components": [{"end": 64 * MIB, "stripe_count": 4}, {"end": 32 * MIB, "stripe_count": 1},
                     {"end": -1, "stripe_count": -1}]},
     "ends must grow", "Set extent [67108864, 33554432) failed"),
    ({"stripe_count": 4, "osts": [0, 1]}, "names 2 OST(s) but the stripe count is 4",
     "stripe_count(4) != nr_tgts(2)"),
    ({"overstripe_count": 2, "osts": [0, 1, 2]}, "names 3 OST(s) but the stripe count is 2",
     "stripe_count(2) != nr_tgts(3)"),
    ({"stripe_size": 100 * 1024}, "multiple of 64 KiB", "invalid stripe size '100K'"),
]


@pytest.mark.parametrize("req, ours, theirs", REFUSED, ids=[t for _, _, t in REFUSED])
def test_refused_before_submission_where_lfs_refuses(req, ours, theirs):
    assert ours in lustre.check_request(req, None)
    printed, status = RECORDED[rendered(req)]
    assert theirs in printed and ACCEPTED not in printed and status != 0


# Lines the 2.16.1 parser lets through that iolab still refuses, because what they ask is unclear.
STRICTER = [
    ({"stripe_count": 4, "overstripe_count": 8}, "not both"),          # lfs: the last one wins
    ({"stripe_offset": 1, "osts": [0, 1, 2, 3]}, "not both"),          # -o starts at its first OST
    ({"components": [{"end": MIB, "layout": "mdt", "stripe_size": MIB},
                     {"end": -1, "stripe_count": 4}]},
     "no stripe_count"),                                               # DoM's stripe size is its end
]


@pytest.mark.parametrize("req, ours", STRICTER)
def test_stricter_than_lfs_where_the_request_is_ambiguous(req, ours):
    assert ours in lustre.check_request(req, None)
    printed, _ = RECORDED[rendered(req)]
    assert ACCEPTED in printed  # recorded, so this list stays honest about lfs


def test_an_ost_named_twice_overstripes_and_the_parser_agrees():
    printed, _ = RECORDED[rendered({"osts": [0, 0, 1, 1]})]
    assert ACCEPTED in printed
    assert lustre._wanted_pattern({"osts": [0, 0, 1, 1]}) == "raid0,overstriped"
    assert lustre._wanted_pattern({"osts": [0, 1]}) is None


# --- typing at load ----------------------------------------------------------------------------

def test_the_demonstration_experiment_types_every_layout():
    cases = {c.part: lustre.requested(c.params)
             for c in expand(load_experiment(ROOT / "experiments" / "lustre-layouts.yaml"))}
    assert cases["dom"]["components"][0] == {"end": MIB, "layout": "mdt"}
    assert cases["overstriped"] == {"overstripe_count": 8, "stripe_size": MIB}
    assert cases["ost-list"] == {"osts": [0, 1, 2, 3], "stripe_size": MIB}
    assert [c["end"] for c in cases["pfl"]["components"]] == [4 * MIB, 64 * MIB, -1]


def load(tmp_path, fixed: str):
    (tmp_path / "experiments").mkdir(exist_ok=True)
    path = tmp_path / "experiments" / "t.yaml"
    path.write_text(f"id: t\ndescription: x\nbenchmark: ior\nfixed:\n{fixed}")
    return load_experiment(path)


@pytest.mark.parametrize("fixed, message", [
    ("  lustre.overstripe_count: 0\n", r"t.yaml:5: fixed.lustre.overstripe_count"),
    ("  lustre.overstripe_count: 2001\n", r"t.yaml:5: fixed.lustre.overstripe_count"),
    ("  lustre.osts: [0, -1]\n", r"t.yaml:5: fixed.lustre.osts"),
    ("  lustre.components:\n    - {end: 1MiB, layout: ost}\n    - {end: -1}\n",
     r"t.yaml:6: fixed.lustre.components\[0\].layout"),
])
def test_bad_values_fail_at_load_with_file_and_line(tmp_path, fixed, message):
    with pytest.raises(IolabError, match=message):
        load(tmp_path, fixed)


# --- requested against what lfs getstripe shows ---------------------------------------------

def plain(count, pattern="raid0", osts=None, size=MIB):
    return {"path": "/l/f", "stripe_count": count, "stripe_size": size, "stripe_offset": (osts or [0])[0],
            "pool": None, "pattern": pattern, "osts": osts if osts is not None else list(range(count))}


def test_overstriping_needs_the_count_and_the_pattern():
    req = {"overstripe_count": 8, "stripe_size": MIB}
    assert lustre.compare_layout(req, [plain(8, "raid0,overstriped", [0, 1, 2, 3] * 2)], 4) == []
    (wrong,) = lustre.compare_layout(req, [plain(4, "raid0,overstriped")], 4)
    assert (wrong["key"], wrong["observed"], wrong["status"]) == ("overstripe_count", 4, "changed")
    (plain_pattern,) = lustre.compare_layout(req, [plain(8, "raid0")], 8)
    assert (plain_pattern["key"], plain_pattern["status"]) == ("pattern", "changed")
    (older,) = lustre.compare_layout(req, [plain(8, None)], 8)
    assert older["status"] == "unverified"


def test_ost_list_in_order():
    req = {"osts": [0, 1, 2, 3]}
    assert lustre.compare_layout(req, [plain(4, osts=[0, 1, 2, 3])], 8) == []
    (moved,) = lustre.compare_layout(req, [plain(4, osts=[4, 5, 6, 7])], 8)
    assert (moved["key"], moved["observed"], moved["status"]) == ("osts", [4, 5, 6, 7], "changed")


def component(end, count, pattern="raid0", size=MIB, start=0):
    return {"id": 1, "flags": "init", "extent_start": start, "extent_end": end, "stripe_count": count,
            "stripe_size": size, "stripe_offset": 0, "pool": None, "pattern": pattern, "osts": []}


def test_dom_component_must_show_pattern_mdt():
    req = {"components": [{"end": MIB, "layout": "mdt"}, {"end": -1, "stripe_count": 4, "stripe_size": MIB}]}
    dom = {"path": "/l/f", "components": [component(MIB, 0, "mdt"), component(None, 4, start=MIB)]}
    assert lustre.compare_layout(req, [dom], 8) == []
    on_osts = {"path": "/l/f", "components": [component(MIB, 1), component(None, 4, start=MIB)]}
    (wrong,) = lustre.compare_layout(req, [on_osts], 8)
    assert (wrong["key"], wrong["requested"], wrong["observed"]) == ("components[0].pattern", "mdt", "raid0")


# --- witnesses: lfs getstripe output printed by the real lfs 2.16.1 -------------------------------

DEMO = {c.part: lustre.requested(c.params)
        for c in expand(load_experiment(ROOT / "experiments" / "lustre-layouts.yaml"))}
WITNESS = {"pfl": "pfl", "dom": "dom", "overstriped": "overstriped", "ost-list": "ost_list"}


def witness(part: str, yaml: bool) -> dict:
    name = f"lfs216_getstripe_{WITNESS[part]}{'_yaml' if yaml else ''}.txt"
    [layout] = lustre.parse_getstripe((DATA / name).read_text())
    return layout


@pytest.mark.parametrize("part", sorted(WITNESS))
def test_each_demonstrated_layout_is_vouched_for_by_its_witness(part):
    plain_form, yaml_form = witness(part, False), witness(part, True)
    assert plain_form["path"] == "ior.dat" and yaml_form["path"] is None
    assert {**plain_form, "path": None} == yaml_form  # -y reads the same as the plain form
    assert lustre.compare_layout(DEMO[part], [plain_form], 8) == []


@pytest.mark.parametrize("part", sorted(WITNESS))
def test_each_witness_refutes_the_other_layouts(part):
    for other in WITNESS:
        if other != part:
            found = lustre.compare_layout(DEMO[other], [witness(part, True)], 8)
            assert [f for f in found if f["status"] == "changed"], (part, other)


def test_witnesses_carry_what_tells_the_layouts_apart():
    dom, over = witness("dom", False), witness("overstriped", False)
    assert [(c["extent_end"], c["stripe_count"], c["pattern"]) for c in dom["components"]] == [
        (MIB, 0, "mdt"), (None, 4, "raid0")]
    assert (over["stripe_count"], over["pattern"], over["osts"]) == (
        8, "raid0,overstriped", [0, 1, 2, 3, 0, 1, 2, 3])
    pfl = witness("pfl", False)
    assert [(c["extent_end"], c["stripe_count"], c["stripe_size"]) for c in pfl["components"]] == [
        (4 * MIB, 1, MIB), (64 * MIB, 4, MIB), (None, 8, 4 * MIB)]


@pytest.mark.parametrize("name", ["getstripe_pfl_yaml_sanity_56ed_2.16.txt",
                                  "getstripe_pfl_yaml_sanity_56ed_2.15.txt"])
def test_lustre_test_suite_pfl_yaml_both_forms(name):
    """Lustre's own expected YAML (sanity.sh test_56ed), in the 2.16 `components:` form and the
    older `componentN:` form: a 3-component layout of which only the first is instantiated."""
    [f] = lustre.parse_getstripe((DATA / name).read_text())
    comps = f["components"]
    assert [(c["flags"], c["extent_end"], c["stripe_count"], c["stripe_offset"]) for c in comps] == [
        ("init", 1 << 30, 1, 0), ("0", 4 << 30, 4, -1), ("0", None, 4, -1)]
    req = {"components": [{"end": 1 << 30, "stripe_count": 1, "stripe_size": 4 * MIB},
                          {"end": 4 << 30, "stripe_count": 4, "stripe_size": 4 * MIB},
                          {"end": -1, "stripe_count": 4, "stripe_size": 4 * MIB}]}
    assert lustre.compare_layout(req, [f], 8) == []
    (moved,) = lustre.compare_layout({**req, "components": [{**req["components"][0], "end": 1 << 29},
                                                            *req["components"][1:]]}, [f], 8)
    assert moved["key"] == "components[0].end"


def test_darshan_components_name_the_pattern_as_lfs_does():
    from iolab.layers.darshan import layouts

    def comp(pattern, count):
        return {"counters": {"LUSTRE_COMP_STRIPE_SIZE": MIB, "LUSTRE_COMP_STRIPE_COUNT": count,
                             "LUSTRE_COMP_FLAGS": 0x10, "LUSTRE_COMP_EXT_START": 0,
                             "LUSTRE_COMP_EXT_END": MIB, "LUSTRE_COMP_STRIPE_PATTERN": pattern},
                "pool": "", "osts": []}
    slots = ((0x100, 0), (0x201, 8), (1, 4), (-1, 4))
    assert [layouts.component(comp(p, n))["pattern"] for p, n in slots] == [
        "mdt", "raid0,overstriped", "raid0", None]


# --- only data files are striped -----------------------------------------------------------------

CASE_DIR = "/scratch/iolab/exp/abcd1234"
H5BENCH_ALL_OSTS = """\
id: h5bench-all-osts
description: the h5bench kernels at stripe count -1, as in the report that cost an hour
parts:
  kernels:
    benchmark: h5bench
    matrix: {kernel: [write, metadata, exerciser]}
    fixed: {lustre.stripe_count: -1}
"""


def striped_cases():
    out = []
    for path in sorted((ROOT / "experiments").glob("*.yaml")):
        out += [c for c in expand(load_experiment(path)) if lustre.requested(c.params)]
    return out


def assert_only_the_case_directory_is_striped(case):
    from iolab.benchmarks import get as get_benchmark
    from iolab.rfm import jobscript

    spec = get_benchmark(case.benchmark).run_spec(case, CASE_DIR)
    from iolab.layers.storage.layer import prerun_lines

    req = lustre.requested(case.params)
    pre, post = jobscript.lines(CASE_DIR, spec, Path("/stage"), prerun_lines(CASE_DIR, case.params),
                                lustre.postrun_lines(CASE_DIR, req) if req else [], remove_data=True)
    (setstripe,) = [line for line in pre + post if "setstripe" in line and "getstripe" not in line]
    layout = lustre.file_layout(lustre.requested(case.params))
    assert f"{rendered(layout) if layout else ''} {CASE_DIR}" in setstripe
    for line in pre + post:
        for target in re.findall(r"(?<![0-9&])>>?\s*(\S+)", line):
            assert not target.startswith(CASE_DIR), line  # iolab's own files stay in the stage
    # the result files the benchmark leaves for parsing are stage-relative
    assert all("/" not in name for name in [*spec.outputs, *spec.files]), spec.outputs
    return spec


@pytest.mark.parametrize("case", striped_cases(), ids=lambda c: f"{c.experiment}:{c.case_id}")
def test_only_the_case_directory_is_striped_in_the_shipped_experiments(case):
    assert_only_the_case_directory_is_striped(case)


def test_h5bench_results_stay_out_of_a_directory_striped_over_every_ost(tmp_path):
    """h5bench users lost an hour at 512 ranks to a stripe count of -1 on the directory of their
    result CSV, which every rank opened: here the CSVs stay in the stage directory, and the
    exerciser, which must run in the case directory, leaves only its data file there."""
    (tmp_path / "experiments").mkdir()
    path = tmp_path / "experiments" / "h5bench-all-osts.yaml"
    path.write_text(H5BENCH_ALL_OSTS)
    specs = {c.params["kernel"]: assert_only_the_case_directory_is_striped(c)
             for c in expand(load_experiment(path))}
    assert set(specs) == {"write", "metadata", "exerciser"}
    assert "h5bench.csv" in specs["write"].outputs + list(specs["write"].args)
    assert specs["exerciser"].workdir == CASE_DIR and specs["write"].workdir is None


# --- striped directories: lfs setdirstripe, a request of its own -----------------------------------
# lfs's parser cannot be probed for setdirstripe off Lustre (it stops at "not on a Lustre
# filesystem" before parsing, REFERENCE §12); the witnesses below are lfs 2.16.1's own printing.

def test_dir_striping_is_typed_and_kept_apart_from_the_file_layout():
    assert DEMO["striped-dir"] == {"dir_stripe_count": 4}
    assert lustre.file_layout({"dir_stripe_count": 4, "stripe_count": 1}) == {"stripe_count": 1}
    assert lustre.setdirstripe_args({"dir_stripe_count": -1}, default=True) == [
        "lfs", "setdirstripe", "-D", "-c", "-1"]


@pytest.mark.parametrize("value", [0, -2, 2001])
def test_bad_dir_stripe_counts_fail_at_load(tmp_path, value):
    with pytest.raises(IolabError, match=r"t.yaml:5: fixed.lustre.dir_stripe_count"):
        load(tmp_path, f"  lustre.dir_stripe_count: {value}\n")


def test_the_job_remakes_the_empty_case_directory_striped_then_sets_the_files_layout():
    (line,) = [x for x in lustre.prerun_lines("/s/case", {"dir_stripe_count": 4, "stripe_count": 1})
               if "setdirstripe" in x]
    assert ("{ rmdir /s/case && lfs setdirstripe -c 4 /s/case && lfs setdirstripe -D -c 4 /s/case"
            " && lfs setstripe -c 1 /s/case; } > iolab-setstripe.txt 2>&1") in line
    assert "lfs setdirstripe/setstripe failed" in line
    (post,) = lustre.postrun_lines("/s/case", {"dir_stripe_count": 4})
    assert f"lfs getdirstripe -y /s/case > {lustre.GETDIRSTRIPE_FILE}" in post
    # a file layout alone: the lines the shipped experiments always had
    assert "getdirstripe" not in lustre.postrun_lines("/s/case", {"stripe_count": 1})[0]
    assert "rmdir" not in "".join(lustre.prerun_lines("/s/case", {"stripe_count": 1}))


@pytest.mark.parametrize("name", ["lfs216_getdirstripe_4.txt", "lfs216_getdirstripe_4_yaml.txt"])
def test_getdirstripe_witness_both_forms(name):
    assert lustre.parse_getdirstripe((DATA / name).read_text()) == {
        "dir_stripe_count": 4, "dir_stripe_offset": 0, "hash_type": "fnv_1a_64", "mdts": [0, 1, 2, 3]}


def test_getdirstripe_refuses_other_text():
    with pytest.raises(ValueError, match="not lfs getdirstripe output"):
        lustre.parse_getdirstripe((DATA / "lfs216_getstripe_pfl.txt").read_text())


def dir_stage(tmp_path, witness=True, df=True):
    (tmp_path / lustre.FSTYPE_FILE).write_text("lustre\n")
    (tmp_path / lustre.SETSTRIPE_FILE).write_text("exit=0\n")
    (tmp_path / lustre.GETSTRIPE_FILE).write_text("")
    if df:
        (tmp_path / lustre.LFSDF_FILE).write_text((DATA / "lfs_df.txt").read_text())  # 1 MDT
    if witness:
        witness_text = (DATA / "lfs216_getdirstripe_4_yaml.txt").read_text()
        (tmp_path / lustre.GETDIRSTRIPE_FILE).write_text(witness_text)
    return tmp_path


@pytest.mark.parametrize("want, df, witness, applied, status", [
    (4, True, True, True, None),
    (2, True, True, False, "changed"),
    (-1, True, True, False, "changed"),        # all MDTs: lfs df counts 1, the directory has 4
    (-1, False, True, True, "unverified"),     # no MDT count to vouch for -1
    (4, True, False, True, "unverified"),      # no witness
])
def test_dir_striping_requested_against_applied(tmp_path, want, df, witness, applied, status):
    from iolab.results.record import Observed

    obs = observed_layout(lustre.FILE_SYSTEM, dir_stage(tmp_path, witness, df), {"dir_stripe_count": want})
    assert obs["applied"] is applied
    found = obs["mismatches"] + obs["unverified"]
    assert [f["status"] for f in found] == ([status] if status else [])
    if status == "changed":
        assert obs["reason"].startswith(f"dir_stripe_count requested {want}, got 4")
        assert Observed.from_json({"lustre": obs}).flags()[0].startswith("striping not applied")
