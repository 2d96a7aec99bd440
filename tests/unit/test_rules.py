"""Rules of thumb (issue 39, item 3) on real recorded runs: the fio Darshan logs at 4 KiB and
1 MiB, the 4-node ROMIO records on CephFS and Darshan logs, the cephfs-local grid and the
cp2k-aggregators run; each rule says the counters that made it apply, "cannot check" with what
is missing (never "does not apply" for want of evidence), and whether it separates the best case
from the rest."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from iolab.analysis import rules
from iolab.layers import registry
from iolab.layers.darshan import summarize
from iolab.layers.darshan.evidence import evidence as darshan_evidence
from iolab.layers.rule import APPLIES, CANNOT, CLEAR, MIXED, CannotCheck, CaseCheck, Finding
from iolab.results import digest, evidence
from iolab.results.digest import CaseFacts
from iolab.results.record import Record
from iolab.results.run import load_run

DATA = Path(__file__).resolve().parents[1] / "data"
DOCS = Path(__file__).resolve().parents[2] / "docs"
RULES = {rule.name: rule for rule in registry.rules()}
DARSHAN_RULES = [r for r in RULES.values() if r.owner == "darshan"]


def darshan_case(*logs: str, params=None, case_id="c") -> CaseFacts:
    """A case whose repetitions are the Darshan logs given (None: a repetition without Darshan),
    each folded as an ok record's Darshan part would be."""
    case = CaseFacts("main", case_id, "test", params or {})
    for rep, log in enumerate(logs, 1):
        part = {} if log is None else {"darshan": {"status": "ok", "summary": summarize(
            DATA / "darshan-recorded" / log)}}
        case.evidence.add(rep, darshan_evidence(part))
    return case


def record_case(name: str, change=None) -> CaseFacts:
    data = json.loads((DATA / "cephfs-collective" / name).read_text())
    if change:
        change(data)
    rec = Record.from_json(data)
    case = CaseFacts(rec.part, rec.case_id, rec.benchmark, rec.params)
    evidence.add(case.evidence, rec)
    return case


def readings(check: CaseCheck) -> dict:
    return {r.name: (r.value, r.unit) for r in check.outcomes[0][1].readings}


# --- Drishti's small requests --------------------------------------------------------------------

def test_small_writes_apply_at_4_kib_and_not_at_1_mib():
    """fio_write_4k_1job: 2048 writes, all under 1 MiB (over Drishti's 10% and 1000 requests);
    fio_write_1m_2jobs: 8 writes of 1 MiB, none small."""
    rule = RULES["small_writes"]
    small = rule.check(darshan_case("fio_write_4k_1job.darshan").evidence, {})
    large = rule.check(darshan_case("fio_write_1m_2jobs.darshan").evidence, {})
    assert (small.state, large.state) == (APPLIES, CLEAR)
    assert readings(small) == {"write_ops": (2048.0, "count"), "small_write_share": (100.0, "%")}
    assert small.text == "100% of 2048 POSIX writes are under 1 MiB (2048 requests)"
    assert readings(large) == {"write_ops": (8.0, "count"), "small_write_share": (0.0, "%")}
    # the fio logs hold no reads: the read rule has nothing to say of them, and says so
    reads = RULES["small_reads"].check(darshan_case("fio_write_4k_1job.darshan").evidence, {})
    assert (reads.state, reads.text) == (CLEAR, "no POSIX reads")


def test_drishti_s_absolute_count_keeps_a_few_small_writes_from_applying():
    """Drishti asks for more than 1000 small requests besides the 10% share: the 4 KiB log's
    2048 writes are over it; with the limit at 2048 the same log does not apply."""
    from dataclasses import replace

    from iolab.layers.rule import Limit

    rule = RULES["small_writes"]
    case = darshan_case("fio_write_4k_1job.darshan")
    assert rule.limit("share") == 10.0 and rule.limit("requests") == 1000
    higher = replace(rule, limits=(rule.limits[0], Limit("requests", 2048, "requests", "")))
    assert higher.check(case.evidence, {}).state == CLEAR


def pydarshan_log(name: str) -> Path:
    """A sample log shipped in the installed PyDarshan wheel (real logs of other machines)."""
    import importlib.util

    root = Path(importlib.util.find_spec("darshan").origin).parent
    return next(root.glob(f"**/{name}"))


def sample_case(name: str, case_id="c") -> CaseFacts:
    case = CaseFacts("main", case_id, "test", {})
    case.evidence.add(1, darshan_evidence({"darshan": {"status": "ok", "summary": summarize(
        pydarshan_log(name))}}))
    return case


def test_misaligned_requests_and_metadata_time_on_a_real_macsio_log():
    """PyDarshan's shane_macsio sample, darshan-parser --total: POSIX_FILE_NOT_ALIGNED 7681 of
    6 + 7816 requests (98.2%, over 10%); POSIX_F_META_TIME 0.320424 s against 0.009038 s read
    and 0.123212 s write (70.8%, over 30%). The 4-node cb_nodes 1 log: none misaligned,
    metadata 0.04%."""
    macsio = sample_case("shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan")
    quiet = darshan_case("ior_romio_cb1_enable_dxt_4nodes.darshan")
    misaligned, metadata = RULES["misaligned_requests"], RULES["metadata_time"]
    got = misaligned.check(macsio.evidence, {})
    assert got.state == APPLIES and readings(got)["unaligned_share"][0] == pytest.approx(
        100 * 7681 / 7822)
    got = metadata.check(macsio.evidence, {})
    assert got.state == APPLIES and readings(got)["meta_time_share"][0] == pytest.approx(
        100 * 0.320424 / (0.320424 + 0.009038 + 0.123212), abs=1e-3)
    assert got.text == "metadata took 70.8% of the POSIX I/O time"
    assert misaligned.check(quiet.evidence, {}).state == CLEAR
    assert metadata.check(quiet.evidence, {}).state == CLEAR


def test_independent_writes_to_a_shared_file_under_and_over_drishti_s_count():
    """PyDarshan's ior_hdf5_example: one shared file, 23 independent MPI-IO writes and no
    collective one: under Drishti's 1000 it does not apply, and says so; with the count at 10,
    it would. The macsio log's 64 collective writes beside 7695 independent ones: Drishti's M03
    asks for none collective."""
    from dataclasses import replace

    from iolab.layers.rule import Limit

    rule = RULES["no_collective_writes"]
    case = sample_case("ior_hdf5_example.darshan")
    got = rule.check(case.evidence, {})
    assert (got.state, got.text) == (CLEAR, "none of the 23 MPI-IO writes to a shared file was "
                                            "collective, but 23 is not over Drishti's 1000")
    lower = replace(rule, limits=(Limit("writes", 10, "calls", ""),))
    assert lower.check(case.evidence, {}).state == APPLIES
    macsio = sample_case("shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan")
    assert rule.check(macsio.evidence, {}).text == "64 of the 7759 MPI-IO writes were collective"


# --- the ROMIO guides' aggregators per node -------------------------------------------------------

def test_fewer_aggregators_than_nodes_on_the_4_node_records():
    """record-cb1/cb4.json: ROMIO printed cb_nodes 1 and 4 on 4 nodes, romio_cb_write enable
    (no Darshan: the request is what says collective buffering was on). cb_nodes 4 wrote at
    6.3043 MiB/s, cb_nodes 1 at 2.4911: the rule applies to every case but the best."""
    one, four = record_case("record-cb1.json"), record_case("record-cb4.json")
    rule = RULES["aggregators_below_nodes"]
    got = rule.check(one.evidence, one.params)
    assert got.state == APPLIES
    assert readings(got) == {"mpiio.romio_cb_write": ("enable", ""), "scale.nodes": (4, "nodes"),
                             "aggregators_in_effect": (1.0, "ranks")}
    assert got.text == "1 aggregator(s) in effect for 4 nodes: 3 node(s) wrote through another's"
    assert rule.check(four.evidence, four.params).state == CLEAR
    [over] = rules.over_cases([one, four], best=four.case_id, rules=(rule,))
    assert (over.applies, over.does_not_apply) == ([one.case_id], [four.case_id])
    assert over.separation == rules.Separation(
        True, "applies to all 1 other cases and not to the best one", rules.ALL_BUT_BEST)
    # switched off, or on one node, it does not apply; the request alone is not evidence of
    # collective calls where it is "automatic", and there Darshan must say
    off = rule.check(one.evidence, {**one.params, "mpiio.romio_cb_write": "disable"})
    assert off.state == CLEAR and "switched off" in off.text
    assert rule.check(one.evidence, {**one.params, "scale.nodes": 1}).state == CLEAR
    auto = rule.check(one.evidence, {**one.params, "mpiio.romio_cb_write": "automatic"})
    assert auto.state == CANNOT
    assert auto.first(CannotCheck).missing == (("collective_writes", "Darshan was not enabled"),)


# --- no Darshan: cannot check, with the reason and what it needs -----------------------------------

@pytest.mark.parametrize("rule", DARSHAN_RULES, ids=lambda r: r.name)
def test_a_case_without_darshan_cannot_be_checked_never_does_not_apply(rule):
    case = record_case("record-cb4.json")
    got = rule.check(case.evidence, case.params)
    assert got.state == CANNOT
    cannot = got.first(CannotCheck)
    assert [why for _name, why in cannot.missing] == ["Darshan was not enabled"]
    assert "run with darshan: {enabled: true}" in cannot.needs
    assert got.text.startswith(f"not recorded ({cannot.missing[0][0]}: Darshan was not enabled); "
                               "needs Darshan's counters")


# --- the stripe guides: requests and the stripe unit ------------------------------------------------

def grid(name: str) -> digest.Digest:
    with gzip.open(DATA / "grids" / name / "records.jsonl.gz", "rt") as f:
        return digest.fold(Record.from_json(json.loads(line)) for line in f if line.strip())


def test_requests_off_the_stripe_unit_on_the_cephfs_grid():
    """cephfs-local (fio, real CephFS): bs 64 KiB, 1 MiB, 4 MiB x stripe unit 64 KiB, 1 MiB,
    4 MiB x stripe count 1, 2, 4. The rule applies exactly where bs is not a multiple of the
    unit the files' layouts say (9 of 27 cases), read from fio's echo and getfattr."""
    part = grid("cephfs-local").parts["main"]
    [over] = rules.over_cases(part.cases.values(), rules=(RULES["transfers_off_stripe"],))
    expected = [c.case_id for c in part.cases.values()
                if c.params["bs"] % c.params["cephfs.stripe_unit"]]
    assert over.applies == expected and len(expected) == 9
    assert len(over.does_not_apply) == 18 and not over.mixed and not over.cannot_check
    check = over.checks[expected[0]]
    assert set(readings(check)) == {"stripe_unit_in_effect", "request_size"}
    assert re.fullmatch(r"\d+[KM]iB requests against a \d+MiB CephFS stripe unit \(in effect\): "
                        r"not a whole multiple of it", check.text)
    assert over.separation is None


def test_the_stripe_rule_takes_the_request_where_no_unit_was_recorded():
    """The 4-node record's unit in effect is 1 MiB; without it the request stands in, and says
    so; a case that asked for no stripe unit is not one the rule speaks of."""
    rule = RULES["transfers_off_stripe"]
    case = record_case("record-cb1.json")
    assert rule.check(case.evidence, case.params).state == CLEAR
    case = record_case("record-cb1.json", lambda d: d["observed"]["cephfs"].pop("files"))
    assert case.evidence["stripe_unit_in_effect"].why == ["getfattr showed no data file"]
    asked = rule.check(case.evidence, {**case.params, "cephfs.stripe_unit": 4 << 20})
    assert asked.state == APPLIES and "(requested (none was recorded in effect))" in asked.text
    plain = {k: v for k, v in case.params.items() if not k.startswith("cephfs.")}
    assert rule.check(case.evidence, plain).text == (
        "the case asked for no stripe unit, and none was recorded")


# --- the 4-node Darshan logs: stragglers, collective writes ----------------------------------------

def test_stragglers_and_collective_writes_on_the_4_node_darshan_logs():
    """Drishti's stragglers measure is 91.7% (cb_nodes 1) and 28.7% (cb_nodes 4), over its 15%;
    all 32 MPI-IO writes were collective in both. The cp2k-aggregators records were summarised
    before per-rank times were kept: they cannot be checked, and say why."""
    cases = [darshan_case(f"ior_romio_cb{n}_enable_dxt_4nodes.darshan", case_id=f"cb{n}")
             for n in (1, 4)]
    over = {o.rule.name: o for o in rules.over_cases(cases, best="cb4")}
    assert over["rank_stragglers"].applies == ["cb1", "cb4"]
    assert over["rank_stragglers"].separation.separates is False
    assert readings(over["rank_stragglers"].checks["cb1"])["rank_time_imbalance"][0] == \
        pytest.approx(91.73, abs=0.01)
    # PyDarshan's VPIC sample, 2048 ranks on one shared file (darshan-parser): fastest 20.436100 s,
    # slowest 85.474950 s, all ranks' 100397.600422 + 11.300842 s: 0.065%, Drishti's measure
    # divides by every rank's time together
    vpic = RULES["rank_stragglers"].check(sample_case("sample.darshan").evidence, {})
    assert vpic.state == CLEAR and readings(vpic)["rank_time_imbalance"][0] == pytest.approx(
        100 * (85.474950 - 20.436100) / (100397.600422 + 11.300842), rel=1e-4)
    assert over["no_collective_writes"].does_not_apply == ["cb1", "cb4"]
    assert over["no_collective_writes"].checks["cb1"].text == "32 of the 32 MPI-IO writes were collective"
    run = load_run(next((DATA / "runs" / "9d00b02" / "cp2k-aggregators").iterdir()))
    part = next(iter(run.digest.parts.values()))
    old = {o.rule.name: o for o in rules.over_cases(part.cases.values())}
    assert old["rank_stragglers"].cannot_check == list(part.cases)
    assert old["rank_stragglers"].checks[next(iter(part.cases))].first(CannotCheck).missing == (
        ("rank_time_imbalance", "this record's Darshan summary was made before iolab kept "
                                "per-rank times"),)
    # one node, 32 writes of 32 MiB, collective: nothing else applies to these cases
    for name in ("aggregators_below_nodes", "small_writes", "no_collective_writes"):
        assert old[name].does_not_apply == list(part.cases), name


# --- repetitions and separation ------------------------------------------------------------------

def test_repetitions_that_disagree_are_mixed_and_unchecked_ones_are_said():
    rule = RULES["small_writes"]
    mixed = rule.check(darshan_case("fio_write_4k_1job.darshan", "fio_write_1m_2jobs.darshan").evidence, {})
    assert mixed.state == MIXED
    assert mixed.text.startswith("applies in 1 of 2 repetitions (1): 100% of 2048 POSIX writes")
    part = rule.check(darshan_case("fio_write_4k_1job.darshan", None).evidence, {})
    assert part.state == APPLIES and part.text.endswith(
        "(1 of 2 repetitions; the others cannot be checked)")
    assert isinstance(part.outcomes[0][1], Finding) and isinstance(part.outcomes[1][1], CannotCheck)
    none = rule.check(CaseFacts("main", "x", "test", {}).evidence, {})
    assert (none.state, none.text) == (CANNOT, "no ok repetition to check")


@pytest.mark.parametrize("best, rest, separates, text", [
    (CLEAR, [APPLIES, APPLIES], True, "applies to all 2 other cases and not to the best one"),
    (APPLIES, [CLEAR], True, "applies to the best case and to none of the 1 others"),
    (APPLIES, [APPLIES, CLEAR], False, "applies to 1 of the other cases and not to 1"),
    (CLEAR, [CLEAR, CANNOT], False, "does not apply to the best case and to 1 of the 2 others alike"),
    (CANNOT, [APPLIES], None, "cannot say: the best case: cannot check"),
    (CLEAR, [APPLIES, MIXED, CANNOT], None, "cannot say: 1 of the 3 others: mixed; 1 of the 3 "
                                            "others: cannot check"),
    (APPLIES, [], None, "one case: nothing to separate it from"),
])
def test_what_separates_means(best, rest, separates, text):
    checks = {"best": CaseCheck("r", best, ())}
    checks.update({f"c{i}": CaseCheck("r", state, ()) for i, state in enumerate(rest)})
    got = rules.separation(checks, "best")
    assert (got.separates, got.text) == (separates, text)


def test_the_best_case_must_be_one_of_the_cases():
    with pytest.raises(ValueError, match="best case 'nope' is not among the cases given"):
        rules.over_cases([record_case("record-cb1.json")], best="nope")


# --- what is declared ----------------------------------------------------------------------------

def test_every_rule_is_declared_whole_and_on_its_reference_page():
    import importlib.util

    names = [r.name for r in registry.rules()]
    assert len(names) == len(set(names)) >= 8
    declared = {s.name for s in evidence.specs()}
    for rule in registry.rules():
        assert re.fullmatch(r"[a-z][a-z_]*", rule.name) and rule.source and rule.needs and rule.help
        assert rule.owner and all(lim.unit and lim.what for lim in rule.limits), rule.name
        # every name a rule reads is declared evidence (its docstring and code say which)
        read = set(re.findall(r'v\("([a-z_]+)"\)|v\.optional\("([a-z_]+)"\)', _source(rule)))
        assert {n for pair in read for n in pair if n} <= declared, rule.name
    spec = importlib.util.spec_from_file_location("iolab_reference", DOCS / "_ext" / "iolab_reference.py")
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    page = reference.PAGES["rules.md"]()
    assert re.findall(r"^## `([a-z_]+)`", page, re.M) == names
    assert "reference/rules\n" in (DOCS / "index.md").read_text()
    assert "(reference/rules.md)" in (DOCS / "analysis.md").read_text()


def _source(rule) -> str:
    import inspect

    return inspect.getsource(inspect.getmodule(rule.test))
