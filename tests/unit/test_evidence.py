"""Evidence per case (issue 39, item 1): what the layers and the benchmark measured of a job,
from real recorded data, each value checked by hand against the raw files (the numbers are in
the tests), "not recorded" with why where a record lacks it, never 0, and folded per repetition
into a run's digest that goes through JSON and back."""

from __future__ import annotations

import copy
import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

from iolab.benchmarks import get as bench
from iolab.layers import registry
from iolab.layers.base import EvidenceSpec, gather
from iolab.layers.darshan import summarize
from iolab.layers.darshan.evidence import evidence as darshan_evidence
from iolab.layers.storage import cephfs
from iolab.layers.storage.base import FSTYPE_FILE
from iolab.layers.storage.layer import observed_layout
from iolab.parsers import fio_json
from iolab.results import digest, evidence
from iolab.results.record import Record
from iolab.results.run import load_run

DATA = Path(__file__).resolve().parents[1] / "data"
DOCS = Path(__file__).resolve().parents[2] / "docs"
MIB = 1 << 20


def by_name(items) -> dict:
    return {e.name: e for e in items}


def record(name: str) -> Record:
    return Record.from_json(json.loads((DATA / "cephfs-collective" / name).read_text()))


# --- CephFS witnesses, the MPI-IO hints in effect and IOR's figures: the 4-node ROMIO records

def test_the_cephfs_collective_records_give_osds_aggregators_and_the_write_phase():
    """record-cb1/cb4.json (real, 4 nodes, ROMIO over ceph-fuse). By hand: cb1-iolab-cephfs-
    spread.txt maps the 8 objects to osd.1 (1), osd.0 (3) and osd.3 (4): 3 OSDs, the fullest 4
    over a mean of 8/3 = 1.5; the cb4 record's spread has {0: 3, 1: 3, 3: 2}: 3/(8/3) = 1.125.
    ROMIO printed cb_nodes 1 and 4 and cb_buffer_size 16777216. IOR's write phase (cb4): open
    1.2191 s + close 0.1022 s of 5.0759 s = 26.03%."""
    one, four = (by_name(evidence.of_record(record(f"record-cb{n}.json"))) for n in (1, 4))
    assert (one["osds_with_data"].value, one["objects_written"].value,
            one["objects_per_osd_balance"].value) == (3.0, 8.0, 1.5)
    assert (four["osds_with_data"].value, four["objects_per_osd_balance"].value) == (3.0, 1.125)
    assert (one["aggregators_in_effect"].value, four["aggregators_in_effect"].value) == (1.0, 4.0)
    assert four["collective_buffer_in_effect"].value == 16777216.0
    # IOR echoed transferSize 1048576; getfattr printed stripe_unit=1048576 (cb*-iolab-cephfs-files)
    assert (four["request_size"].value, four["stripe_unit_in_effect"].value) == (float(MIB),) * 2
    assert four["write_open_close_share"].value == pytest.approx(100 * (1.2191 + 0.1022) / 5.0759)
    assert [(e.source, e.unit) for e in (four["osds_with_data"], four["aggregators_in_effect"],
                                         four["write_open_close_share"])] == [
        ("cephfs", "OSDs"), ("mpiio_hints", "ranks"), ("ior", "%")]
    # what these records do not hold: said, with why, never 0
    assert four["bytes_per_osd_balance"].why == \
        "the spread counted objects, not bytes (no rados stat in this record)"
    assert four["osts_with_data"].why.startswith("no Lustre layout was requested")
    assert four["read_open_close_share"].why == "the case has no read phase"
    assert four["write_iteration_spread"].why == "one IOR iteration per job: no spread within it"
    darshan = [e for e in four.values() if e.source == "darshan"]
    assert darshan and {e.why for e in darshan} == {"Darshan was not enabled"}
    assert all(e.value is None for e in darshan)


def test_bytes_per_osd_from_the_recorded_object_sizes(tmp_path):
    """count4-unit1m-sized: 10 MiB in objects of 3, 3, 2, 2 MiB on osd.3, osd.0, osd.0, osd.3
    (its spread file, rados stat): 5 MiB on each of 2 OSDs, an even 1.0, 50% on the fullest; its
    files file (getfattr): stripe_unit=1048576."""
    stage = tmp_path / "stage"
    shutil.copytree(DATA / "cephfs" / "count4-unit1m-sized", stage)
    lay = observed_layout(cephfs.FILE_SYSTEM, stage,
                          {"stripe_unit": MIB, "stripe_count": 4, "object_size": 4 * MIB})
    got = by_name(cephfs.FILE_SYSTEM.evidence(lay))
    assert {n: e.value for n, e in got.items()} == {
        "osds_with_data": 2.0, "objects_written": 4.0, "objects_per_osd_balance": 1.0,
        "bytes_per_osd_balance": 1.0, "fullest_osd_share": 50.0, "stripe_unit_in_effect": float(MIB)}
    lay["applied"], lay["reason"] = False, "ext4: no striping"
    assert {e.why for e in cephfs.FILE_SYSTEM.evidence(lay)} == {
        "CephFS layout not applied: ext4: no striping"}


def test_lustre_stripe_size_in_effect_from_lfs_getstripe(tmp_path):
    """getstripe_dir_listing.txt: the directory's default, then two files of stripe size 4194304
    over OSTs 0-7, as requested; files that disagree give none."""
    from iolab.layers.storage import lustre

    (tmp_path / lustre.GETSTRIPE_FILE).write_text((DATA / "lustre" / "getstripe_dir_listing.txt").read_text())
    (tmp_path / lustre.SETSTRIPE_FILE).write_text("exit=0\n")
    (tmp_path / FSTYPE_FILE).write_text("lustre\n")
    lay = observed_layout(lustre.FILE_SYSTEM, tmp_path, {"stripe_count": -1, "stripe_size": 4 * MIB})
    got = by_name(lustre.FILE_SYSTEM.evidence(lay))
    assert (got["osts_with_data"].value, got["stripe_size_in_effect"].value) == (8.0, 4.0 * MIB)
    lay["files"][2]["stripe_size"] = MIB
    assert by_name(lustre.FILE_SYSTEM.evidence(lay))["stripe_size_in_effect"].why == (
        "the data files' stripe sizes differ: [1048576, 4194304]")


# --- Darshan: the recorded logs, read by the layer's reader as a record's part would be ------

def darshan_part(log: str, own=()) -> dict:
    summary = summarize(DATA / "darshan-recorded" / log, own_files=own)
    assert summary["status"] == "ok"
    return {"darshan": {"status": "ok", "summary": summary}}


def test_darshan_evidence_of_two_and_four_aggregators():
    """darshan-parser of the logs, by hand: with cb_nodes 2 (enable) the test file has 8 POSIX
    writes of 41943040 bytes (5 MiB each) and 16 collective MPI-IO writes, DXT shows 2 writer
    ranks; with cb_nodes 4 (automatic) 16 POSIX writes of 1 MiB by 4 ranks, 16 collective
    writes. ROMIO's hints file (104 bytes, 2 reads) is iolab's own and left out."""
    two = by_name(darshan_evidence(darshan_part(
        "ior_romio_cb2_enable_dxt_4r.darshan", own=["/tmp/dar/stage2/iolab-romio-hints.txt"])))
    assert {n: two[n].value for n in ("write_ops", "bytes_written", "mean_write_size",
                                      "collective_writes", "independent_writes",
                                      "collective_write_share", "aggregators_that_wrote",
                                      "small_write_share", "read_ops", "bytes_read")} == {
        "write_ops": 8.0, "bytes_written": 41943040.0, "mean_write_size": 5.0 * MIB,
        "collective_writes": 16.0, "independent_writes": 0.0, "collective_write_share": 100.0,
        "aggregators_that_wrote": 2.0, "small_write_share": 0.0, "read_ops": 11.0,
        "bytes_read": 28311552.0}
    four = by_name(darshan_evidence(darshan_part("ior_romio_cb4_automatic_dxt_4r.darshan")))
    assert (four["write_ops"].value, four["mean_write_size"].value,
            four["aggregators_that_wrote"].value) == (16.0, float(MIB), 4.0)
    assert {e.unit for e in (two["write_ops"], two["bytes_written"], two["small_write_share"],
                             two["aggregators_that_wrote"])} == {"count", "B", "%", "ranks"}
    # kept by no summary iolab records: said so, with what it would take
    assert two["sequential_write_share"].value is None
    assert two["sequential_write_share"].why == ("the Darshan summary iolab records keeps no "
                                                 "sequential or consecutive counts")


def test_darshan_evidence_of_fio_block_sizes_and_an_unobservable_writer_count():
    """fio_write_4k_1job: 2048 writes of 4 KiB (its fio-jobs.json: write_total_ios 2048, 8 MiB),
    all small; fio_write_1m_2jobs: one job's 8 writes of 1 MiB (the log holds one process, see
    the README). The 2-rank log without DXT cannot say how many ranks wrote: not recorded, with
    the bounds and how to see it."""
    small = by_name(darshan_evidence(darshan_part("fio_write_4k_1job.darshan")))
    jobs = json.loads((DATA / "darshan-recorded" / "fio_write_4k_1job.fio-jobs.json").read_text())
    assert small["write_ops"].value == jobs["jobs"][0]["write_total_ios"] == 2048
    assert (small["mean_write_size"].value, small["small_write_share"].value,
            small["tiny_write_share"].value, small["bytes_written"].value) == (4096.0, 100.0, 100.0,
                                                                              8.0 * MIB)
    assert small["mean_read_size"].why == "no POSIX reads"
    assert small["collective_writes"].why.startswith("the log has no MPI-IO records")
    large = by_name(darshan_evidence(darshan_part("fio_write_1m_2jobs.darshan")))
    assert (large["write_ops"].value, large["mean_write_size"].value,
            large["small_write_share"].value) == (8.0, float(MIB), 0.0)
    hidden = by_name(darshan_evidence(darshan_part("ior_romio_write_hints_2r.darshan")))
    assert hidden["aggregators_that_wrote"].value is None
    assert "not observable (between 1 and 2)" in hidden["aggregators_that_wrote"].why
    assert "DXT" in hidden["aggregators_that_wrote"].why


def test_hosts_that_wrote_from_dxt_on_four_nodes():
    """The 4-node ROMIO logs (README): darshan-dxt-parser shows the test file's POSIX writes by
    rank 0 on node1 alone with cb_nodes 1, by ranks 0, 2, 4 and 6 on node1..node4 with cb_nodes
    4; each host's aggregator also read (read-modify-write). The one-node logs name one host
    ('vm'). Without DXT the hosts are not recorded, never 0; a summary made before they were kept
    says so."""
    one, four = (by_name(darshan_evidence(darshan_part(f"ior_romio_cb{n}_enable_dxt_4nodes.darshan")))
                 for n in (1, 4))
    assert (one["hosts_that_wrote"].value, four["hosts_that_wrote"].value) == (1.0, 4.0)
    assert (one["hosts_that_read"].value, four["hosts_that_read"].value) == (1.0, 4.0)
    assert (one["aggregators_that_wrote"].value, four["aggregators_that_wrote"].value) == (1.0, 4.0)
    assert one["hosts_that_wrote"].unit == "hosts" and one["hosts_that_wrote"].source == "darshan"
    part = darshan_part("ior_romio_cb4_enable_dxt_4nodes.darshan")
    assert part["darshan"]["summary"]["hosts"]["write"]["names"] == ["node1", "node2", "node3", "node4"]
    local = by_name(darshan_evidence(darshan_part("ior_romio_cb2_enable_dxt_4r.darshan")))
    assert local["hosts_that_wrote"].value == 1.0
    blind = by_name(darshan_evidence(darshan_part("ior_romio_write_hints_2r.darshan")))
    for name in ("hosts_that_wrote", "hosts_that_read"):
        assert blind[name].value is None and blind[name].why.startswith("the log has no DXT")
    # the fio log has no DXT and no reads: no host read, as its counters say
    fio = by_name(darshan_evidence(darshan_part("fio_write_4k_1job.darshan")))
    assert (fio["hosts_that_wrote"].value, fio["hosts_that_read"].value) == (None, 0.0)
    del part["darshan"]["summary"]["hosts"]
    old = by_name(darshan_evidence(part))["hosts_that_wrote"]
    assert old.value is None and "made before iolab kept the hosts" in old.why


def test_the_fastest_and_slowest_rank_on_the_shared_file():
    """darshan-parser of the 4-node logs, the test file's shared record: cb_nodes 1: fastest rank
    0.003814 s, slowest 1.086273 s, read + write + metadata time 0.498592 + 0.680969 + 0.000473 s;
    cb_nodes 4: 0.014788 s, 0.851333 s, 0.852515 + 2.058649 + 0.005543 s (Darshan's fcounters,
    printed to 6 decimals). With collective buffering the aggregators do the POSIX I/O: Drishti's
    stragglers measure, (slowest - fastest) / all, is 91.7% and 28.7%."""
    one, four = (by_name(darshan_evidence(darshan_part(f"ior_romio_cb{n}_enable_dxt_4nodes.darshan")))
                 for n in (1, 4))
    for got, (fast, slow, total) in ((one, (0.003814, 1.086273, 0.498592 + 0.680969 + 0.000473)),
                                     (four, (0.014788, 0.851333, 0.852515 + 2.058649 + 0.005543))):
        assert got["fastest_rank_time"].value == pytest.approx(fast, abs=1e-6)
        assert got["slowest_rank_time"].value == pytest.approx(slow, abs=1e-6)
        assert got["rank_time_spread"].value == pytest.approx(slow / fast, rel=1e-3)
        assert got["rank_time_imbalance"].value == pytest.approx(100 * (slow - fast) / total, abs=1e-3)
    assert round(one["rank_time_imbalance"].value, 1) == 91.7
    assert four["rank_time_imbalance"].unit == "%" and four["fastest_rank_time"].unit == "s"
    fio = by_name(darshan_evidence(darshan_part("fio_write_4k_1job.darshan")))
    assert fio["rank_time_imbalance"].why == "no shared file was written"


def test_hosts_from_dxt_that_stopped_tracing_are_a_lower_bound_not_a_count():
    """DXT stops tracing at its memory limit: with node4's aggregator's record gone from the
    cb_nodes 4 log, DXT holds 12 of the 16 POSIX writes, and the hosts are at least 3."""
    from iolab.layers.darshan.reader import read_raw
    from iolab.layers.darshan.summary import build

    raw = read_raw(DATA / "darshan-recorded" / "ior_romio_cb4_enable_dxt_4nodes.darshan")
    raw["dxt"]["DXT_POSIX"] = [d for d in raw["dxt"]["DXT_POSIX"] if d["hostname"] != "node4"]
    got = by_name(darshan_evidence({"darshan": {"status": "ok", "summary": build(raw, "log")}}))
    assert got["hosts_that_wrote"].value is None
    assert got["hosts_that_wrote"].why == ("DXT traced 12 of the 16 POSIX writes (it stops at its "
                                          "memory limit): at least 3 host(s)")


def test_a_damaged_summary_gives_not_recorded_with_the_reason_never_0_nor_a_crash():
    part = darshan_part("ior_romio_cb2_enable_dxt_4r.darshan")
    whole = by_name(darshan_evidence(part))
    summary = part["darshan"]["summary"]
    del summary["modules"]["POSIX"]["meta_time_s"]        # a counter missing
    del summary["unaligned"]
    summary["mpiio"] = ["not", "a", "dict"]
    summary["aggregators"]["observed"] = True            # a bool is no count
    got = by_name(darshan_evidence(part))
    assert got["meta_time"].why == "the Darshan summary has no 'meta_time_s'"
    assert got["unaligned_share"].why == "the Darshan summary has no 'unaligned'"
    assert got["collective_writes"].why.startswith("the Darshan summary is damaged here (TypeError")
    assert got["aggregators_that_wrote"].why == "not a number in the record: True"
    for name in ("meta_time", "unaligned_share", "collective_writes", "aggregators_that_wrote"):
        assert got[name].value is None
    assert got["write_ops"] == whole["write_ops"]         # the rest still read
    assert [e.name for e in got.values()] == [e.name for e in whole.values()]


@pytest.mark.parametrize("part, why", [
    ({}, "Darshan was not enabled"),
    ({"darshan": {"status": "not available", "reason": "no darshan-runtime in the path stack"}},
     "Darshan requested but not run: no darshan-runtime in the path stack"),
    ({"darshan": {"status": "unreadable", "reason": "truncated"}}, "Darshan log unreadable: truncated"),
    ({"darshan": {"status": "incomplete", "reason": "2 processes wrote no log"}},
     "Darshan log incomplete: 2 processes wrote no log"),
    ({"darshan": {"status": "ok"}}, "the Darshan part holds no readable summary"),
])
def test_without_a_readable_summary_every_darshan_evidence_says_why(part, why):
    got = darshan_evidence(part)
    assert len(got) == len(registry.get("darshan").evidence_specs())
    assert {(e.value, e.why) for e in got} == {(None, why)}


# --- fio's own figures ------------------------------------------------------------------------

def test_fio_evidence_from_its_recorded_json():
    """fio_randwrite_4k_16m.json: bs=4k, write io_bytes 16777216, total_ios 4096, clat mean
    2138.959473 ns; its percentiles are in the file but not in what iolab's parser keeps."""
    parsed = fio_json.parse((DATA / "fio-recorded" / "fio_randwrite_4k_16m.json").read_text())
    got = by_name(bench("fio").evidence({m.name: m.value for m in parsed.metrics}, parsed.echo, {}))
    assert (got["request_size"].value, got["requests"].value) == (4096.0, 4096.0)
    assert got["write_clat_mean"].value == pytest.approx(2.138959473)
    assert got["read_clat_mean"].why == "fio read nothing in this case"
    assert "not fio's percentiles" in got["write_clat_p99"].why


# --- folded into the digest -------------------------------------------------------------------

def test_a_real_run_s_evidence_per_case_and_repetition_through_the_run():
    """cp2k-aggregators (9d00b02, real, Open MPI's ompio, Darshan): each case's 2 repetitions;
    its records say cb_nodes 1 in effect, 32 POSIX writes of 32 MiB and 4 ranks writing the
    shared file (observed.darshan.summary: modules.POSIX, aggregators.observed)."""
    run = load_run(next((DATA / "runs" / "9d00b02" / "cp2k-aggregators").iterdir()))
    every = evidence.of(run)
    assert len(every) == 3
    for key, ev in every.items():
        assert run.digest.case(*key).evidence is ev
        assert (ev["aggregators_in_effect"].reps, ev["aggregators_in_effect"].values) == ([1, 2], [1.0, 1.0])
        assert ev["aggregators_that_wrote"].recorded() == [(1, 4.0), (2, 4.0)]
        assert ev["write_ops"].values == [32.0, 32.0] and ev["bytes_written"].values == [32.0 * MIB] * 2
        assert ev["write_ops"].unit == "count" and ev["write_ops"].source == "darshan"
        assert ev["rank_time_spread"].reasons() == [
            "this record's Darshan summary was made before iolab kept per-rank times"]
    for rec in run.records:
        summary = rec.observed.get("darshan")["summary"]
        assert (summary["modules"]["POSIX"]["writes"], summary["aggregators"]["observed"]) == (32, 4)


def grid(name: str) -> list[Record]:
    with gzip.open(DATA / "grids" / name / "records.jsonl.gz", "rt") as f:
        return [Record.from_json(json.loads(line)) for line in f if line.strip()]


def test_the_digest_keeps_each_repetition_s_value_and_reasons_through_json():
    """cephfs-local (81 real records): OSDs reached per repetition, as each record's spread says;
    failed records give none; the digest goes through JSON and back unchanged."""
    records = grid("cephfs-local")
    facts = digest.fold(records)
    for rec in records:
        if rec.ok:
            series = facts.case(rec.part, rec.case_id).evidence["osds_with_data"]
            i = series.reps.index(rec.repetition)
            assert series.values[i] == len(rec.observed.get("cephfs")["spread"]["osds"])
    case = next(iter(next(iter(facts.parts.values())).cases.values()))
    assert case.evidence["osds_with_data"].values == [3.0, 3.0, 2.0]      # da26023530c81937
    assert case.evidence["bytes_per_osd_balance"].values == [None] * 3
    text = json.dumps(digest.to_json(facts))
    back = digest.from_json(json.loads(text))
    assert back == facts
    for a, b in zip(back.parts["main"].cases.values(), facts.parts["main"].cases.values()):
        assert a.evidence == b.evidence

    def damaged(change):
        data = json.loads(text)
        change(data["parts"]["main"]["evidence"])
        return data
    ev = json.loads(text)["parts"]["main"]["evidence"]
    assert ev["reps"][0] == [1, 2, 3] and ev["columns"]["osds_with_data"][0] == [3.0, 3.0, 2.0]
    assert type(ev["columns"]["bytes_per_osd_balance"]) is int   # one reason, every case
    for change in (lambda e: e["reps"].pop(),
                   lambda e: e["columns"]["osds_with_data"][0].__setitem__(0, "3"),
                   lambda e: e.__setitem__("columns", {**e["columns"], "bytes_per_osd_balance": 99}),
                   lambda e: e["columns"]["osds_with_data"][0].__setitem__(0, None),
                   lambda e: e["reps"][0].append(4),
                   lambda e: e["units"].pop("osds_with_data")):
        with pytest.raises((ValueError, KeyError, TypeError)):
            loaded = digest.from_json(damaged(change))      # the shape now, each case when read
            [dict(c.evidence) for p in loaded.parts.values() for c in p.cases.values()]
    other = json.loads(text)
    other["evidence_declared"] = "0" * 16
    with pytest.raises(ValueError, match="evidence was declared otherwise"):
        digest.from_json(other)


def test_a_record_without_any_witness_folds_as_not_recorded():
    """quickstart (855c081, the first format: no Darshan, no hints part): every piece is there
    per repetition, without a value, each with its reason."""
    run = load_run(next((DATA / "runs" / "855c081" / "quickstart").iterdir()))
    ev = next(iter(evidence.of(run).values()))
    assert ev["aggregators_that_wrote"].reasons() == ["Darshan was not enabled"]
    assert ev["aggregators_in_effect"].reasons() == [
        "the benchmark did not open its files through MPI-IO"]
    assert all(v is None for v in ev["aggregators_that_wrote"].values)


# --- what is declared ---------------------------------------------------------------------------

def test_names_are_unique_and_every_spec_is_well_formed():
    layers = [s.name for s in registry.evidence_specs()]
    assert len(layers) == len(set(layers))
    for b in ("ior", "fio"):
        own = [s.name for s in bench(b).evidence_specs]
        assert own and len(own) == len(set(own)) and not set(own) & set(layers), b
    for spec in evidence.specs():
        assert re.fullmatch(r"[a-z][a-z0-9_]*", spec.name) and spec.unit and spec.help and spec.read
    with pytest.raises(ValueError, match="kind"):
        EvidenceSpec("x", "s", "t", "help", kind="speed")


def test_a_reader_s_none_is_its_absent_reason_and_never_0():
    spec = EvidenceSpec("x", "count", "test", "help", read=lambda part: part.get("x"), absent="none seen")
    (damaged,) = gather([spec], None, "p")
    assert damaged.value is None and damaged.why.startswith("p is damaged here (AttributeError")
    got = [gather([spec], part, "p")[0] for part in ({"x": 0}, {}, {"x": float("nan")})]
    assert [(e.value, e.why) for e in got] == [(0.0, None), (None, "none seen"),
                                               (None, "not a number in the record: nan")]


def test_every_declared_piece_of_evidence_is_on_its_reference_page():
    """The page is generated from the declarations (docs/_ext): a row per spec, its unit and
    source as declared, and the docs' index and the analysis page link it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("iolab_reference", DOCS / "_ext" / "iolab_reference.py")
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    page = reference.PAGES["evidence.md"]()
    rows = set(re.findall(r"^\| `([a-z0-9_]+)` \| ([^|]+) \| `([a-z_]+)` \|", page, re.M))
    assert {(n, u.strip(), s) for n, u, s in rows} == {(s.name, s.unit, s.source) for s in evidence.specs()}
    assert "reference/evidence\n" in (DOCS / "index.md").read_text()
    assert "(reference/evidence.md)" in (DOCS / "analysis.md").read_text()


def test_the_spec_list_is_copied_not_shared_by_a_damaged_part():
    """gather reads, never writes: the part a record holds is unchanged."""
    part = darshan_part("fio_write_4k_1job.darshan")
    before = copy.deepcopy(part)
    darshan_evidence(part)
    assert part == before
