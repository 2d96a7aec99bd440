"""iolab.layers.darshan against real Darshan 3.4.7 logs (tests/data/darshan), damaged copies of them, and the
sample logs that ship in the PyDarshan wheel.

Expected numbers come from darshan-parser / darshan-dxt-parser output recorded with the logs (parsed
here, independently of the code under test), from IOR's recorded stdout, or were read by hand from
those files.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import json
import os
import shutil
import struct
from dataclasses import replace
from pathlib import Path

import pytest

from iolab.layers import darshan as dx
from iolab.layers.storage import lustre
from iolab.layers.darshan import aggregators, layouts, sizes
from iolab.layers.darshan.summary import build, excluded_reason
from iolab.errors import IolabError

DATA = Path(__file__).resolve().parents[1] / "data" / "darshan"
FPP_LOG = DATA / "0_ior_id2276-2276_11-21-80602-4730027669762766969_1.darshan"
COLL_LOG = DATA / "ior_mpiio_coll_dxt.darshan"
BAD_LOG = DATA / "known_bad" / "ior_mpiio_coll_dxt_4r_ompio_loghints_default_CORRUPT_DXT.darshan"
COLL_FILE = "/tmp/runs/data/shared/darshan/mpiio_coll"
MIB = 1024 * 1024
HEADER_BYTES = 1328        # darshan-parser: "header: 1328 bytes (uncompressed)"
MOD_VER_OFFSET = 1072      # struct darshan_header: 8+8+8+8 + name_map 16 + mod_map 64*16
DXT_POSIX_INDEX = 10       # darshan-log-format.h module ids: POSIX 1 ... DXT_POSIX 10


@functools.cache
def _summary(path: str) -> dict:
    return dx.summarize(path)


def summary_of(path) -> dict:
    """summarize() once per log for the whole module; a deep copy, so tests may change it."""
    return copy.deepcopy(_summary(str(path)))


# --- the recorded text outputs, read independently of the code under test ---------------------------

def parser_rows(name: str) -> list[tuple]:
    """darshan-parser rows: (module, rank, counter, value, path)."""
    rows = []
    for line in (DATA / name).read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        module, rank, _rid, counter, value, path, *_ = line.split("\t")
        rows.append((module, int(rank), counter, float(value), path))
    return rows


def parser_sum(rows, counter: str, skip=("<STDOUT>", "<STDERR>", "<STDIN>")) -> float:
    return sum(v for _m, _r, c, v, p in rows if c == counter and p not in skip)


def dxt_records(name: str) -> list[dict]:
    """darshan-dxt-parser output -> one dict per (module, file, rank) with its segments."""
    records, module, rec = [], None, None
    for line in (DATA / name).read_text().splitlines():
        if line.startswith("# DXT_POSIX module data") or line.startswith("# DXT_MPIIO module data"):
            module = line.split()[1]
        elif line.startswith("# DXT, file_id:"):
            rec = {"module": module, "path": line.split("file_name: ")[1], "write_lengths": [],
                   "read_lengths": []}
            records.append(rec)
        elif line.startswith("# DXT, rank:"):
            rec["rank"] = int(line.split("rank: ")[1].split(",")[0])
        elif line.startswith("# DXT, write_count:"):
            parts = line.replace(",", "").split()
            rec["write_count"], rec["read_count"] = int(parts[3]), int(parts[5])
        elif line.strip().startswith(("X_POSIX", "X_MPIIO")):
            fields = line.split()
            rec[f"{fields[2]}_lengths"].append(int(fields[5]))
    return records


def pydarshan_log(name: str) -> Path:
    """A sample log shipped in the installed PyDarshan wheel, found at test time."""
    spec = importlib.util.find_spec("darshan")
    if spec is None or spec.origin is None:
        pytest.skip("PyDarshan is not installed")
    root = Path(spec.origin).parent
    for sub in ("tests/input", "examples/example_logs", "examples/darshan-graph"):
        if (root / sub / name).is_file():
            return root / sub / name
    pytest.skip(f"the installed PyDarshan wheel has no {name}")


def test_recorded_files_are_unmodified_copies():
    shared = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "darshan"
    if not shared.is_dir():
        pytest.skip("shared fixtures not mounted")
    for path in DATA.rglob("*"):
        if path.is_file() and path.name != "README.md":
            assert path.read_bytes() == (shared / path.relative_to(DATA)).read_bytes(), path.name


# --- POSIX file per process (0_ior_id2276...): darshan_parser_posix_fpp.txt -------------------------

def test_fpp_job_and_versions():
    s = summary_of(FPP_LOG)
    assert s["status"] == "ok"
    assert (s["darshan_version"], s["log_format"], s["nprocs"], s["jobid"]) == ("3.4.7", "3.41", 4, 2276)
    assert s["runtime_s"] == pytest.approx(0.0361, abs=5e-5)          # "# run time: 0.0361"
    assert s["exe"] == ("/opt/iostack/bin/ior -a POSIX -F -w -r -i 3 -t 1m -b 8m "
                        "-o /tmp/runs/data/shared/darshan/posix_fpp")
    assert s["darshan_log_hints"] == "cb_nodes=1"   # Darshan's own log-writing hints, not IOR's
    assert set(s["reader"]) == {"pydarshan", "darshan_util"}
    mismatch = [w for w in s["warnings"] if "darshan-runtime 3.4.7" in w]
    assert bool(mismatch) == (s["reader"]["darshan_util"] != "3.4.7")
    json.dumps(s, allow_nan=False)


def test_fpp_posix_totals_match_darshan_parser():
    s, rows = summary_of(FPP_LOG), parser_rows("darshan_parser_posix_fpp.txt")
    posix = s["modules"]["POSIX"]
    for field, counter in (("bytes_read", "POSIX_BYTES_READ"), ("bytes_written", "POSIX_BYTES_WRITTEN"),
                           ("reads", "POSIX_READS"), ("writes", "POSIX_WRITES"), ("opens", "POSIX_OPENS"),
                           ("seeks", "POSIX_SEEKS"), ("stats", "POSIX_STATS")):
        assert posix[field] == parser_sum(rows, counter), field
    for field, counter in (("read_time_s", "POSIX_F_READ_TIME"), ("write_time_s", "POSIX_F_WRITE_TIME"),
                           ("meta_time_s", "POSIX_F_META_TIME")):
        assert posix[field] == pytest.approx(parser_sum(rows, counter), abs=4 * 5e-7), field
    assert posix["io_time_s"] == pytest.approx(posix["read_time_s"] + posix["write_time_s"])
    # by hand: 4 ranks x 3 iterations x 8 MiB, in 1 MiB transfers
    assert (posix["bytes_written"], posix["writes"], posix["records"], posix["files"]) == (96 * MIB, 96, 4, 4)


def test_fpp_access_sizes_and_small_requests():
    s, rows = summary_of(FPP_LOG), parser_rows("darshan_parser_posix_fpp.txt")
    for op in ("write", "read"):
        assert s["access_sizes"][op] == {
            name: parser_sum(rows, f"POSIX_SIZE_{op.upper()}_{name}") for name, _, _ in sizes.SIZE_BINS}
    assert s["access_sizes"]["write"]["100K_1M"] == 96
    # 1 MiB requests share Darshan's 100K_1M bin with 200 KiB ones; POSIX_ACCESS1 (1048576 x 48 per
    # file, reads and writes together) proves none is under 1 MiB.
    small = s["request_sizes"]["write"]["small"]
    assert (small["pct"], small["count"], small["requests"], small["method"]) == (0.0, 0, 96, "common_sizes")
    assert s["request_sizes"]["write"]["tiny"]["method"] == "histogram"
    pcts = (s["small_write_pct"], s["small_read_pct"], s["tiny_write_pct"], s["tiny_read_pct"])
    assert pcts == (0, 0, 0, 0)


def test_fpp_files_alignment_and_no_shared_file():
    s = summary_of(FPP_LOG)
    assert s["files"] == 4 and s["file_systems"] == {"ext4": 4}
    assert s["unaligned"] == {"requests": 192, "file_not_aligned": 0, "mem_not_aligned": 0,
                              "file_not_aligned_pct": 0.0, "mem_not_aligned_pct": 0.0,
                              "file_alignment_bytes": [4096], "mem_alignment_bytes": [8]}
    # IOR's stdout: 2668 bytes, the size of the recorded ior_posix_fpp_darshan_4r.txt
    assert s["excluded"] == {"files": 1, "bytes_written": 2668, "bytes_read": 0,
                             "by_reason": {"std_stream": 1}}
    assert s["modules"]["STDIO"]["records"] == 0
    assert s["mpiio"] is None and s["dxt"] == {"posix": False, "mpiio": False}
    assert s["shared_files"] == [] and s["lustre"] == []
    assert s["aggregators"]["observed"] is None
    assert dx.observed_aggregators(s, 4) == {"requested": 4, "observed": None, "differs": False,
                                             "reason": "no shared file was written", "files": [],
                                             "aggregation": None, "evidence": None,
                                             "verdict": "not observable", "effective": None,
                                             "romio": None}
    assert dx.findings(s, {"collective": False, "api": "POSIX"}) == []


# --- MPI-IO collective, shared file, DXT (ior_mpiio_coll_dxt.darshan) -------------------------------

def test_coll_excludes_mpi_library_files():
    s = summary_of(COLL_LOG)
    assert s["files"] == 1
    # ompio's sharedfp probes <file>.locktest.<rank> (4) and its .sm segments in /tmp/ompi.vm.0 (6)
    assert s["excluded"]["by_reason"] == {"ompio_locktest": 4, "openmpi_session_dir": 6, "std_stream": 1}
    stdout = (DATA / "ior_mpiio_coll_darshan_dxt_4r.txt").stat().st_size       # 2447 B
    sm_writes = sum(sum(r["write_lengths"]) for r in dxt_records("darshan_dxt_parser_mpiio_coll.txt")
                    if r["path"].endswith(".sm"))
    assert sm_writes == 400 and s["excluded"]["bytes_written"] == stdout + sm_writes
    assert s["modules"]["POSIX"]["files"] == 1


def test_coll_totals_and_mpiio_counters():
    s = summary_of(COLL_LOG)
    posix, mpiio = s["modules"]["POSIX"], s["mpiio"]
    traced = [r for r in dxt_records("darshan_dxt_parser_mpiio_coll.txt") if r["path"] == COLL_FILE]
    posix_trace = [r for r in traced if r["module"] == "DXT_POSIX"]
    assert posix["writes"] == sum(r["write_count"] for r in posix_trace) == 64
    assert posix["reads"] == sum(r["read_count"] for r in posix_trace) == 64
    assert posix["bytes_written"] == sum(sum(r["write_lengths"]) for r in posix_trace) == 32 * MIB
    assert {k: mpiio[k] for k in ("coll_writes", "indep_writes", "coll_reads", "indep_reads", "coll_opens",
                                  "indep_opens", "bytes_written")} == {
        "coll_writes": 64, "indep_writes": 0, "coll_reads": 64, "indep_reads": 0, "coll_opens": 32,
        "indep_opens": 2, "bytes_written": 32 * MIB}
    assert mpiio["access_sizes"]["write"]["100K_1M"] == 64
    assert s["modules"]["MPI-IO"]["io_time_s"] > 0 and s["dxt"] == {"posix": True, "mpiio": True}


def test_coll_request_sizes_from_dxt():
    s = summary_of(COLL_LOG)
    assert s["request_sizes"]["write"]["small"] == {
        "cutoff_bytes": MIB, "requests": 64, "count": 64, "pct": 100.0, "pct_range": [100.0, 100.0],
        "method": "dxt"}
    assert s["tiny_write_pct"] == 0.0 and s["small_read_pct"] == 100.0


def test_coll_writer_ranks_from_dxt():
    s = summary_of(COLL_LOG)
    traced = [r for r in dxt_records("darshan_dxt_parser_mpiio_coll.txt") if r["path"] == COLL_FILE]
    posix_writers = {r["rank"] for r in traced if r["module"] == "DXT_POSIX" and r["write_count"]}
    mpiio_writers = {r["rank"] for r in traced if r["module"] == "DXT_MPIIO" and r["write_count"]}
    assert (posix_writers, mpiio_writers) == ({0}, {0, 1, 2, 3})
    [shared] = s["shared_files"]
    # darshan-parser, the file's shared record: POSIX_F_FASTEST/SLOWEST_RANK_TIME 0.001855 and
    # 0.032212 s, POSIX_F_READ/WRITE/META_TIME 0.018911 + 0.010530 + 0.009511 s
    assert shared.pop("rank_times") == pytest.approx(
        {"fastest_s": 0.001855, "slowest_s": 0.032212, "total_s": 0.018911 + 0.010530 + 0.009511},
        abs=1e-6)
    assert shared == {"path": COLL_FILE, "bytes_written": 32 * MIB, "writer_ranks": len(posix_writers),
                      "writer_ranks_source": "dxt", "mpiio_bytes_written": 32 * MIB,
                      "mpiio_writer_ranks": len(mpiio_writers),
                      "aggregation": {"happened": True, "evidence": "1 of the 4 ranks that called MPI-IO "
                                      "writes issued the POSIX writes (DXT)"}}
    assert s["aggregators"] == {"observed": 1, "written_shared_files": 1, "unknown_files": 0, "reason": None,
                                "aggregation": True, "evidence": shared["aggregation"]["evidence"]}


def test_observed_aggregators_on_the_coll_log():
    s = summary_of(COLL_LOG)
    assert dx.observed_aggregators(s, 4) == {
        "requested": 4, "observed": 1, "differs": True, "reason": None, "verdict": "differs",
        "aggregation": True,
        "evidence": "1 of the 4 ranks that called MPI-IO writes issued the POSIX writes (DXT)",
        "files": [{"path": COLL_FILE, "writer_ranks": 1}], "effective": None, "romio": None}
    assert dx.observed_aggregators(s, 1)["verdict"] == "matches"
    assert dx.observed_aggregators(s, 1)["differs"] is False
    assert dx.observed_aggregators(s, None)["differs"] is False


def test_writers_that_differ_from_the_request_but_agree_with_romio_say_so():
    """This log's run asked for cb_nodes 4 on one node; ROMIO (cb_config_list *:1) used 1."""
    s = summary_of(COLL_LOG)
    agg = dx.observed_aggregators(s, 4, 1)
    assert (agg["verdict"], agg["differs"], agg["effective"], agg["romio"]) == ("differs", True, 1, "agrees")
    assert agg["reason"] == ("the MPI library used cb_nodes 1, not the 4 asked (its effective hints), "
                             "and 1 rank wrote: as the library said")
    # no cb_nodes asked: the writers are compared with what the library used
    assert dx.observed_aggregators(s, None, 1)["verdict"] == "matches"
    other = dx.observed_aggregators(s, None, 2)
    assert (other["verdict"], other["differs"], other["romio"]) == ("differs", True, "differs")
    assert other["reason"] == "1 rank wrote, but the MPI library says cb_nodes 2"


def test_findings_on_the_coll_log():
    s = summary_of(COLL_LOG)
    got = dx.findings(s, {"collective": True, "cb_nodes": 4, "api": "MPIIO"})
    assert [(f["rule"], f["numbers"].get("op")) for f in got] == [
        ("small_requests", "write"), ("small_requests", "read"), ("aggregators_differ", None)]
    assert got[0]["text"] == "100% of write requests are under 1MiB"
    assert got[2]["text"] == "1 rank(s) wrote the shared file(s), cb_nodes=4 was requested"
    assert [f["rule"] for f in dx.findings(s, {"collective": True, "cb_nodes": 1, "api": "MPIIO"})] == [
        "small_requests", "small_requests"]
    for f in got:
        json.dumps(f, allow_nan=False)


def test_columns_on_real_logs():
    coll, fpp = summary_of(COLL_LOG), summary_of(FPP_LOG)
    assert [dx.column(coll, n) for n in ("agg_ranks", "small_write_pct", "mpiio_coll_writes",
                                         "posix_bytes_written", "shared_files", "files")] == [
        1, 100.0, 64, 32 * MIB, 1, 1]
    assert dx.column(fpp, "posix_write_time") == fpp["modules"]["POSIX"]["write_time_s"]
    assert dx.column(fpp, "mpiio_coll_writes") is None and dx.column(fpp, "agg_ranks") is None
    for name in dx.COLUMNS:       # every column reads every real summary without error
        for s in (coll, fpp):
            value = dx.column(s, name)
            assert value is None or isinstance(value, (int, float)), name
    assert dx.column({"status": "unreadable", "reason": "x"}, "small_write_pct") is None


def test_column_names_are_checked():
    assert dx.parse_columns("small_write_pct, agg_ranks,posix_write_time") == [
        "small_write_pct", "agg_ranks", "posix_write_time"]
    with pytest.raises(IolabError, match="small_write_pct"):
        dx.parse_columns("small_writes_pct")
    with pytest.raises(IolabError, match="unknown Darshan column 'bogus'"):
        dx.column(summary_of(FPP_LOG), "bogus")
    assert {c.unit for c in dx.COLUMNS.values()} <= {"%", "ranks", "s", "B", "count", "OSTs"}
    units = [dx.COLUMNS[n].unit for n in ("small_write_pct", "agg_ranks", "posix_write_time",
                                          "posix_bytes_written")]
    assert units == ["%", "ranks", "s", "B"]


# --- unreadable logs never raise -------------------------------------------------------------------

def assert_unreadable(path, *fragments: str) -> str:
    s = dx.summarize(path)
    assert set(s) == {"status", "log", "reason"} and s["status"] == "unreadable", s
    for fragment in fragments:
        assert fragment in s["reason"], s["reason"]
    return s["reason"]


def test_known_bad_log_is_unreadable_not_short():
    # PyDarshan returns 2 of 4 DXT_MPIIO records for it without raising; the C library's complaint is
    # the same one darshan-dxt-parser printed when it exited 255.
    recorded = (DATA / "known_bad" / "darshan_dxt_parser_CORRUPT_DXT.stderr.txt").read_text()
    assert "failed to read module DXT_MPIIO data" in recorded
    assert_unreadable(BAD_LOG, "failed to read module DXT_MPIIO data", "unable to inflate")


@pytest.mark.parametrize("keep", [10, 500, HEADER_BYTES, HEADER_BYTES + 200, 2000, 3000, 5000, -100, -1])
def test_truncated_logs_are_unreadable(tmp_path, keep):
    # Some of these crash the reader (an assert in darshan_log_close, or SIGSEGV): the child process
    # takes the blow and summarize() reports it.
    data = COLL_LOG.read_bytes()
    log = tmp_path / "cut.darshan"
    log.write_bytes(data[:keep])
    assert_unreadable(log)


def test_empty_missing_and_foreign_files_are_unreadable(tmp_path):
    (tmp_path / "empty.darshan").write_bytes(b"")
    assert_unreadable(tmp_path / "empty.darshan", "empty file")
    assert_unreadable(tmp_path / "missing.darshan", "no such file")
    assert_unreadable(tmp_path, "not a file")
    (tmp_path / "text.darshan").write_text("IOR-4.0.0: MPI Coordinated Test of Parallel I/O\n")
    assert_unreadable(tmp_path / "text.darshan", "Failed to open file", "unable to parse log file format")
    shutil.copy(DATA / "darshan_parser_posix_fpp.txt", tmp_path / "parser.darshan")
    assert_unreadable(tmp_path / "parser.darshan", "Failed to open file")


def test_version_mismatched_logs_are_unreadable(tmp_path):
    # A DXT_POSIX module version 2 is what darshan-runtime after 3.5.0 writes; darshan-util 3.4.7 and
    # 3.5.0 skip the module with only a message on stderr.
    data = bytearray(COLL_LOG.read_bytes())
    assert struct.unpack_from("<I", data, MOD_VER_OFFSET + 4 * DXT_POSIX_INDEX) == (1,)
    struct.pack_into("<I", data, MOD_VER_OFFSET + 4 * DXT_POSIX_INDEX, 2)
    (tmp_path / "dxt2.darshan").write_bytes(data)
    assert_unreadable(tmp_path / "dxt2.darshan", "Invalid DXT POSIX module version number (got 2)",
                      "darshan-util release that wrote it")
    future = bytearray(COLL_LOG.read_bytes())
    future[0:4] = b"3.99"
    (tmp_path / "future.darshan").write_bytes(future)
    assert_unreadable(tmp_path / "future.darshan", "expected version 3.41, but got 3.99")


def test_reader_timeout_is_unreadable():
    s = dx.summarize(COLL_LOG, timeout_s=1e-6)     # less than any read, with a warm reader too
    assert s["status"] == "unreadable" and "took longer than 1e-06 s" in s["reason"]
    assert dx.summarize(COLL_LOG)["status"] == "ok", "the next log gets a new reader"


def test_missing_pydarshan_is_a_setup_error(tmp_path, monkeypatch):
    fake = tmp_path / "fake" / "darshan"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named darshan (test)')\n")
    monkeypatch.setenv("PYTHONPATH", str(fake.parent))   # the children import this one first
    with pytest.raises(IolabError, match="PyDarshan is not importable") as err:
        dx.summarize(FPP_LOG)
    assert "iolab[darshan]" in str(err.value)
    with pytest.raises(IolabError, match="PyDarshan is not installed"):
        dx.html_report(FPP_LOG, tmp_path / "out")


# --- the PyDarshan wheel's sample logs --------------------------------------------------------------

def test_lustre_layouts_goodost_feed_compare_layout():
    log = pydarshan_log("sample-goodost.darshan")
    s = summary_of(log)
    assert s["lustre_totals"]["files"] == 48 and len(s["lustre"]) == 48
    assert s["lustre_totals"]["layouts"] == [
        {"stripe_count": 1, "stripe_size": MIB, "pool": None, "files": 48}]
    got = dx.lustre_layouts(s)
    assert set(got[0]) == {"path", "stripe_count", "stripe_size", "stripe_offset", "pool", "pattern",
                           "osts"}
    assert {f["pattern"] for f in got} == {None}  # a LUSTRE v1 log records no pattern
    requested = {"stripe_count": 1, "stripe_size": MIB, "stripe_offset": -1}
    assert lustre.compare_layout(requested, got, None) == []
    wrong = lustre.compare_layout({"stripe_count": 4}, got, None)
    assert len(wrong) == 48 and {w["status"] for w in wrong} == {"changed"}
    # the same layouts straight from PyDarshan, in this process
    expected = _pydarshan_osts(log)
    assert {lay["path"]: lay["osts"] for lay in got} == expected
    assert all(lay["stripe_offset"] == lay["osts"][0] for lay in got)


def _pydarshan_osts(log: Path) -> dict:
    import darshan

    with darshan.DarshanReport(str(log)) as report:
        comps = report.records["LUSTRE"].to_df()["components"]
        return {report.name_records[rid]: [int(o) for o in osts]
                for rid, osts in zip(comps["id"], comps["LUSTRE_OST_IDS"])}


def test_lustre_layouts_badost_are_capped_but_counted():
    s = summary_of(pydarshan_log("sample-badost.darshan"))
    assert s["lustre_totals"]["files"] == 2048 and len(s["lustre"]) == lustre.MAX_FILES
    assert s["lustre_totals"]["layouts"][0]["files"] == 2048
    assert len(s["lustre_totals"]["osts"]) > 1
    assert s["files"] == 2049 and s["shared_files"] == []   # 2048 FPP files and one more


def test_sample_vpicio_every_rank_wrote():
    # 2048 ranks, one shared HDF5 file, no DXT, no reads: a bytes variance of 0 says every rank wrote.
    s = summary_of(pydarshan_log("sample.darshan"))
    [shared] = s["shared_files"]
    assert (shared["writer_ranks"], shared["writer_ranks_source"]) == (2048, "rank_variance")
    rules = [f["rule"] for f in dx.findings(s, {"collective": True, "api": "HDF5"})]
    assert "no_aggregation" in rules
    assert s["lustre"][0]["stripe_count"] == 24 and len(s["lustre"][0]["osts"]) == 24


def test_sample_macsio_writers_unknown_and_independent_writes():
    s = summary_of(pydarshan_log("shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan"))
    assert set(s["modules"]) >= {"POSIX", "MPI-IO", "H5F", "H5D"}
    assert all(f["writer_ranks"] == "unknown" for f in s["shared_files"])
    agg = dx.observed_aggregators(s, 4)
    assert agg["observed"] is None and agg["differs"] is False and "DXT" in agg["reason"]
    got = {f["rule"]: f for f in dx.findings(s, {"collective": True, "cb_nodes": 4, "api": "HDF5"})}
    assert got["collective_not_used"]["numbers"]["independent"] == s["mpiio"]["indep_writes"] == 7695
    assert "aggregators_differ" not in got


def test_sample_posix_missed_mpiio_writes():
    # MPI-IO wrote 8000 bytes to C, but Darshan's POSIX module saw no write to it.
    s = summary_of(pydarshan_log(
        "pq_app_readAB_writeC_id71326_7-31-5658-2037904274838284930_55623.darshan"))
    [shared] = s["shared_files"]
    assert (shared["bytes_written"], shared["mpiio_bytes_written"]) == (0, 8000)
    assert shared["writer_ranks"] == "unknown"
    assert "saw no writes" in shared["why"] and shared["mpiio_writer_ranks"] == 4


def test_sample_hdf5_with_dxt():
    s = summary_of(pydarshan_log("ior_hdf5_example.darshan"))
    assert {"H5F", "H5D", "MPI-IO", "POSIX"} <= set(s["modules"])
    assert "bytes_written" not in s["modules"]["H5F"] and s["modules"]["H5D"]["bytes_written"] > 0
    assert s["shared_files"][0]["writer_ranks_source"] == "dxt"
    assert s["request_sizes"]["write"]["tiny"]["method"] == "dxt"


def test_single_process_logs_have_no_shared_files():
    s = summary_of(pydarshan_log("pq_app_write_id71296_7-31-5657-2037904274838284930_55623.darshan"))
    assert s["nprocs"] == 1 and s["shared_files"] == []


# --- request sizes: crafted records --------------------------------------------------------------------

def posix_record(rank=0, rid=1, **counters) -> dict:
    return {"id": rid, "rank": rank, "counters": {f"POSIX_{k}": v for k, v in counters.items()},
            "fcounters": {}}


def test_share_below_resolves_the_straddling_bin():
    # 10 writes of 512 KiB + 10 reads of 1 MiB, all in bin 100K_1M: the common sizes tell them apart
    # only when one direction has the bin to itself.
    mixed = posix_record(SIZE_WRITE_100K_1M=10, SIZE_READ_100K_1M=10, ACCESS1_ACCESS=524288,
                         ACCESS1_COUNT=10, ACCESS2_ACCESS=MIB, ACCESS2_COUNT=10)
    share = sizes.share_below([mixed], None, "write", MIB)
    assert (share["pct"], share["pct_range"], share["method"]) == (None, [0.0, 100.0], "bounds")
    alone = posix_record(SIZE_WRITE_100K_1M=10, ACCESS1_ACCESS=524288, ACCESS1_COUNT=4,
                         ACCESS2_ACCESS=MIB, ACCESS2_COUNT=6)
    share = sizes.share_below([alone], None, "write", MIB)
    assert (share["count"], share["pct"], share["method"]) == (4, 40.0, "common_sizes")
    uncovered = posix_record(SIZE_WRITE_100K_1M=10, SIZE_WRITE_0_100=10, ACCESS1_ACCESS=MIB,
                             ACCESS1_COUNT=6)
    share = sizes.share_below([uncovered], None, "write", MIB)
    assert (share["pct"], share["pct_range"]) == (None, [50.0, 100.0])


def test_share_below_at_a_bin_edge_and_with_dxt():
    rec = posix_record(SIZE_WRITE_10K_100K=3, SIZE_WRITE_100K_1M=1)
    assert sizes.share_below([rec], None, "write", 102401)["pct"] == 75.0      # no bin straddles
    assert sizes.share_below([rec], None, "read", MIB)["pct"] is None          # no reads at all
    full = [{"id": 1, "rank": 0, "write_lengths": [[50000, 3], [200000, 1]], "read_lengths": []}]
    share = sizes.share_below([rec], full, "write", 65536)
    assert (share["count"], share["pct"], share["method"]) == (3, 75.0, "dxt")
    partial = [{"id": 1, "rank": 0, "write_lengths": [[50000, 2]], "read_lengths": []}]
    assert sizes.share_below([rec], partial, "write", 65536)["method"] == "bounds"


# --- writer ranks: crafted records ---------------------------------------------------------------------

def shared_record(written, read=0, var=0.0, fastest=(0, 0), slowest=(1, 0), writes=8) -> dict:
    return {"id": 7, "rank": -1, "counters": {
        "POSIX_WRITES": writes, "POSIX_BYTES_WRITTEN": written, "POSIX_BYTES_READ": read,
        "POSIX_FASTEST_RANK": fastest[0], "POSIX_FASTEST_RANK_BYTES": fastest[1],
        "POSIX_SLOWEST_RANK": slowest[0], "POSIX_SLOWEST_RANK_BYTES": slowest[1]},
        "fcounters": {"POSIX_F_VARIANCE_RANK_BYTES": var}}


def test_rank_times_from_the_ranks_records_where_darshan_kept_them_apart():
    """Without the reduction to one record (a file not every rank opened), the fastest and
    slowest rank are the ranks' own read + write + metadata times; a -1 (untracked) is none."""
    recs = [posix_record(rank=r, rid=7) for r in range(3)]
    for rec, (read, write, meta) in zip(recs, ((0.5, 1.0, 0.25), (0.0, 0.125, -1.0), (2.0, 0.0, 0.0))):
        rec["fcounters"] = {"POSIX_F_READ_TIME": read, "POSIX_F_WRITE_TIME": write,
                            "POSIX_F_META_TIME": meta}
    assert aggregators.rank_times(recs) == {"fastest_s": 0.125, "slowest_s": 2.0, "total_s": 3.875}


def test_writer_ranks_from_each_source():
    w = aggregators.writer_ranks
    per_rank = [posix_record(rank=r, rid=7, WRITES=int(r < 2)) for r in range(4)]
    assert w(per_rank, None, 4, "POSIX") == {"writer_ranks": 2, "source": "per_rank_records"}
    assert w([shared_record(400, writes=0)], None, 4, "POSIX")["writer_ranks"] == 0
    assert w([shared_record(400)], None, 4, "POSIX") == {"writer_ranks": 4, "source": "rank_variance"}
    assert w([shared_record(400, var=-1.0)], None, 4, "POSIX")["writer_ranks"] == "unknown"
    two = w([shared_record(400, var=10.0, fastest=(1, 0), slowest=(0, 400))], None, 2, "POSIX")
    assert two == {"writer_ranks": 1, "source": "fastest_slowest"}
    reads = w([shared_record(400, read=400, var=10.0)], None, 4, "POSIX")
    assert (reads["writer_ranks"], reads["bounds"]) == ("unknown", [1, 4]) and "DXT" in reads["why"]
    some = w([shared_record(400, var=10.0, fastest=(3, 0), slowest=(0, 200))], None, 8, "POSIX")
    assert (some["writer_ranks"], some["bounds"]) == ("unknown", [1, 7])


def test_writer_ranks_trust_dxt_only_when_complete():
    dxt = [{"id": 7, "rank": 0, "write_count": 4}, {"id": 7, "rank": 2, "write_count": 4}]
    assert aggregators.writer_ranks([shared_record(400, read=1, var=9.0)], dxt, 4, "POSIX") == {
        "writer_ranks": 2, "source": "dxt"}
    short = aggregators.writer_ranks([shared_record(400, read=1, var=9.0, writes=9)], dxt, 4, "POSIX")
    assert (short["writer_ranks"], short["bounds"]) == ("unknown", [2, 4])


# --- Lustre layouts: crafted PFL record ----------------------------------------------------------------

def lustre_comp(size, count, flags, start, end, osts, pool=""):
    return {"counters": {"LUSTRE_COMP_STRIPE_SIZE": size, "LUSTRE_COMP_STRIPE_COUNT": count,
                         "LUSTRE_COMP_FLAGS": flags, "LUSTRE_COMP_EXT_START": start,
                         "LUSTRE_COMP_EXT_END": end, "LUSTRE_COMP_STRIPE_PATTERN": 1,
                         "LUSTRE_COMP_MIRROR_ID": 0}, "pool": pool, "osts": osts}


def test_pfl_layout_in_getstripe_shape():
    comps = [lustre_comp(MIB, 1, 0x10, 0, 4 * MIB, [3]),
             lustre_comp(4 * MIB, 2, 0x10 | 0x4, 4 * MIB, -1, [5, 3], pool="flash"),
             lustre_comp(-1, 0, 0, 0, 0, [])]                     # unused slot
    files, totals = layouts.layouts([{"id": 9, "rank": -1, "components": comps}], {9: "/lus/f"})
    assert files[0]["components"] == 2 and totals["osts"] == [3, 5]
    [got] = dx.lustre_layouts({"lustre": files})
    assert {k: got[k] for k in ("stripe_count", "stripe_size", "stripe_offset", "pool", "osts")} == {
        "stripe_count": 2, "stripe_size": 4 * MIB, "stripe_offset": 5, "pool": "flash", "osts": [3, 5]}
    assert [c["flags"] for c in got["components"]] == ["init", "prefwr,init"]
    assert [c["extent_end"] for c in got["components"]] == [4 * MIB, None]
    # the same keys and semantics as lustre.parse_getstripe's composite records
    parsed = lustre.parse_getstripe((Path(__file__).resolve().parents[1] / "data" / "lustre" /
                                     "getstripe_pfl.txt").read_text())[0]
    assert set(got) == set(parsed) and set(got["components"][0]) == set(parsed["components"][0])


# --- findings: crafted summaries, each rule firing and not -------------------------------------------

def share(pct, cutoff, requests=100):
    rng = None if pct is None else [pct, pct]
    return {"cutoff_bytes": cutoff, "requests": requests, "count": None if pct is None else int(pct),
            "pct": pct, "pct_range": rng, "method": "histogram"}


def crafted(**changes) -> dict:
    """A minimal readable summary on which no rule fires."""
    s = {"status": "ok", "nprocs": 4, "partial_modules": [],
         "modules": {"POSIX": {"meta_time_s": 1.0, "io_time_s": 9.0}},
         "request_sizes": {op: {"small": share(10.0, MIB), "tiny": share(5.0, 64 * 1024)}
                           for op in ("write", "read")},
         "unaligned": {"requests": 100, "file_not_aligned": 1, "file_not_aligned_pct": 1.0,
                       "file_alignment_bytes": [4096]},
         "mpiio": {f"{k}_{op}": 0 for k in ("coll", "indep", "split", "nb") for op in ("writes", "reads")},
         "shared_files": [{"path": "/f", "bytes_written": 100, "writer_ranks": 2,
                           "writer_ranks_source": "dxt"}],
         "aggregators": {"observed": 2, "written_shared_files": 1, "unknown_files": 0, "reason": None}}
    s["mpiio"]["coll_writes"] = 10
    for key, value in changes.items():
        s[key] = value
    return s


REQ = {"collective": True, "cb_nodes": 2, "api": "MPIIO"}


def rules(summary, requested=REQ, **thresholds) -> list[str]:
    t = replace(dx.THRESHOLDS, **thresholds)
    return [f["rule"] for f in dx.findings(summary, requested, t)]


def test_crafted_summary_has_real_keys():
    real = summary_of(COLL_LOG)
    s = crafted()
    assert set(s) <= set(real)
    for key in ("unaligned", "mpiio", "aggregators"):
        assert set(s[key]) <= set(real[key]), key
    assert set(s["shared_files"][0]) <= set(real["shared_files"][0])
    assert rules(s) == []


def test_rule_small_requests():
    s = crafted()
    s["request_sizes"]["write"]["tiny"] = share(87.0, 64 * 1024)
    [f] = dx.findings(s, REQ)
    assert f["rule"] == "small_requests" and f["text"] == "87% of write requests are under 64KiB"
    s["request_sizes"]["write"]["tiny"] = share(19.9, 64 * 1024)
    assert rules(s) == []
    s["request_sizes"]["read"]["small"] = share(50.0, MIB)
    [f] = dx.findings(s, REQ)
    assert f["text"] == "50% of read requests are under 1MiB" and f["numbers"]["threshold_pct"] == 50.0
    assert rules(s, small_requests_pct=60.0) == []
    uncertain = dict(share(None, MIB), pct_range=[70.0, 90.0])
    s["request_sizes"]["read"]["small"] = uncertain
    [f] = dx.findings(s, REQ)
    assert f["text"].startswith("at least 70% of read requests")
    s["request_sizes"]["read"]["small"] = dict(uncertain, pct_range=[40.0, 90.0])
    assert rules(s) == []


def test_rule_collective_not_used():
    s = crafted()
    s["mpiio"].update(coll_writes=2, indep_writes=6, nb_writes=2)
    [f] = dx.findings(s, REQ)
    assert f["text"] == ("MPI-IO writes were independent although collective was requested: 8 of 10 (80%)")
    assert rules(s, {**REQ, "collective": False}) == []
    assert rules(s, independent_pct=90.0) == []
    no_mpiio = crafted(mpiio=None)
    assert rules(no_mpiio) == ["collective_not_used"]
    assert rules(no_mpiio, {**REQ, "api": "POSIX"}) == []


def test_rule_no_aggregation():
    s = crafted(shared_files=[{"path": "/f", "bytes_written": 100, "writer_ranks": 4,
                               "writer_ranks_source": "rank_variance"}],
                aggregators={"observed": 4, "written_shared_files": 1, "unknown_files": 0, "reason": None})
    got = dx.findings(s, {"collective": True})
    assert [f["text"] for f in got] == ["all 4 ranks wrote /f: no aggregation"]
    assert rules(s, {"collective": False}) == []
    assert rules(s, {"collective": False, "cb_nodes": 2}) == ["no_aggregation", "aggregators_differ"]
    s["shared_files"][0]["writer_ranks"] = 3
    assert rules(s, {"collective": True}) == []


def test_rule_aggregators_differ():
    s = crafted()
    assert rules(s, {"cb_nodes": 2}) == []
    assert rules(s, {"cb_nodes": 8}) == ["aggregators_differ"]
    s["aggregators"] = {"observed": None, "written_shared_files": 1, "unknown_files": 1, "reason": "r"}
    assert rules(s, {"cb_nodes": 8}) == []


def test_rule_metadata_time():
    s = crafted()
    s["modules"]["POSIX"] = {"meta_time_s": 3.0, "io_time_s": 7.0}
    [f] = dx.findings(s, REQ)
    assert f["text"] == "30% of POSIX I/O time is metadata" and f["numbers"]["meta_time_s"] == 3.0
    s["modules"]["POSIX"] = {"meta_time_s": 2.9, "io_time_s": 7.1}
    assert rules(s) == []
    assert rules(crafted(modules={})) == []


def test_rule_metadata_time_with_counts():
    """mdtest's small files under Darshan: the opens and stats behind the metadata time."""
    s = crafted()
    s["modules"]["POSIX"] = {"meta_time_s": 0.95, "io_time_s": 0.05, "opens": 800, "stats": 400}
    [f] = dx.findings(s, REQ)
    assert f["text"] == ("95% of POSIX I/O time is metadata: 800 opens and 400 stats took 0.95 s, "
                         "reads and writes 0.05 s (summed over ranks)")
    assert (f["numbers"]["opens"], f["numbers"]["stats"]) == (800, 400)


def test_rule_many_small_files():
    s = crafted()
    s["modules"]["POSIX"] = {"meta_time_s": 0.0, "io_time_s": 1.0, "files": 400, "opens": 800,
                             "bytes_written": 400 * 64 * 1024, "bytes_read": 0}
    [f] = dx.findings(s, REQ)
    assert f["rule"] == "many_small_files"
    assert f["text"] == "400 files of 64.0 KiB on average (under 1MiB): 800 opens, 2 per file"
    assert rules(s, many_files=401) == []
    s["modules"]["POSIX"]["bytes_written"] = 400 * MIB
    assert rules(s) == []


def test_rule_unaligned():
    s = crafted(unaligned={"requests": 100, "file_not_aligned": 40, "file_not_aligned_pct": 40.0,
                           "file_alignment_bytes": [MIB]})
    [f] = dx.findings(s, REQ)
    assert f["text"] == "40% of POSIX requests are not aligned to the 1MiB file alignment"
    assert rules(s, unaligned_pct=50.0) == []
    s["unaligned"]["file_not_aligned_pct"] = None
    assert rules(s) == []


def test_rule_incomplete_log():
    assert rules(crafted(partial_modules=["POSIX"])) == ["incomplete_log"]


def test_findings_of_unreadable_summary():
    assert dx.findings({"status": "unreadable", "reason": "x"}, REQ) == []
    assert dx.observed_aggregators({"status": "unreadable", "reason": "x"}, 2) == {
        "requested": 2, "observed": None, "differs": False, "reason": "x", "files": [],
        "aggregation": None, "evidence": None, "verdict": "not observable", "effective": None,
        "romio": None}


def test_thresholds_live_in_one_place():
    assert {r.__name__ for r in dx.RULES} == {"small_requests", "collective_not_used", "no_aggregation",
                                              "aggregators_differ", "metadata_time", "many_small_files",
                                              "unaligned",
                                              "incomplete_log"}
    custom = replace(dx.THRESHOLDS, tiny_request_bytes=1024)
    raw_rec = posix_record(SIZE_WRITE_0_100=1, SIZE_WRITE_1K_10K=3)
    raw = {"names": {"1": "/f"}, "job": {"nprocs": 1, "jobid": 1, "run_time": 1.0, "log_ver": "3.41",
                                         "metadata": {"lib_ver": "3.4.7"}, "exe": "x"},
           "reader": {"pydarshan": "3.4.7.0", "darshan_util": "3.4.7"}, "modules": {},
           "records": {"POSIX": [raw_rec]}, "dxt": {}, "lustre": [], "mounts": [["/", "ext4"]]}
    assert build(raw, "x", custom)["request_sizes"]["write"]["tiny"]["pct"] == 25.0
    assert build(raw, "x")["request_sizes"]["write"]["tiny"]["pct"] == 100.0


def test_excluded_paths():
    assert excluded_reason("/tmp/ompi.vm.0/pid.2329/1/mpiio_coll_cid-4-2333.sm") == "openmpi_session_dir"
    assert excluded_reason("/scratch/out.locktest.12") == "ompio_locktest"
    assert excluded_reason("<STDERR>") == "std_stream"
    assert excluded_reason("/scratch/ompi_results/out") is None
    assert excluded_reason("/scratch/a.locktest") is None


# --- PyDarshan's job summary page ---------------------------------------------------------------------

def test_html_report_renders(tmp_path):
    page = dx.html_report(FPP_LOG, tmp_path / "pages")
    assert page == tmp_path / "pages" / f"{FPP_LOG.stem}_report.html"
    assert "<html" in page.read_text()[:2000].lower()
    assert [p.name for p in page.parent.iterdir()] == [page.name]   # no temporary left behind


def test_html_report_failures(tmp_path):
    (tmp_path / "text.darshan").write_text("not a log\n")
    with pytest.raises(IolabError, match="PyDarshan summary failed"):
        dx.html_report(tmp_path / "text.darshan", tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []
    with pytest.raises(IolabError, match="no such Darshan log"):
        dx.html_report(tmp_path / "missing.darshan", tmp_path / "out")


def test_iolab_own_files_are_left_out_of_summaries_and_findings():
    """ROMIO reads iolab-romio-hints.txt in a write-only case: those reads are iolab's, not the
    benchmark's, and must not make '...% of read requests are under 64KiB'."""
    log = DATA.parent / "darshan-recorded" / "ior_romio_write_hints_2r.darshan"
    own = ["/tmp/dar/stage/iolab-romio-hints.txt", "/tmp/dar/stage/iolab-ior-hints.txt",
           "/tmp/dar/stage/ior-summary.json"]
    everything = dx.summarize(log)
    apart = dx.summarize(log, own_files=own)
    assert everything["status"] == apart["status"] == "ok"
    assert apart["excluded"]["by_reason"] == {"iolab_file": 2}
    assert apart["files"] == everything["files"] - 2 == 1
    tiny = {k: s["request_sizes"]["read"]["tiny"] for k, s in (("all", everything), ("apart", apart))}
    assert tiny["all"]["requests"] - tiny["apart"]["requests"] == 2    # ROMIO's two reads of the file
    assert apart["modules"]["POSIX"]["bytes_read"] == everything["modules"]["POSIX"]["bytes_read"] - 66
    assert "STDIO" not in apart["modules"] or apart["modules"]["STDIO"]["bytes_read"] == 0


RECORDED = DATA.parent / "darshan-recorded"


def test_four_writers_for_cb_nodes_4_is_no_aggregation_when_ranks_wrote_their_own_data():
    """The count agrees by coincidence: ROMIO's automatic mode skipped collective buffering, and
    DXT shows each rank writing exactly its own MPI-IO requests."""
    s = dx.summarize(RECORDED / "ior_romio_cb4_automatic_dxt_4r.darshan")
    agg = dx.observed_aggregators(s, 4)
    assert (agg["observed"], agg["aggregation"], agg["verdict"], agg["differs"]) == \
        (4, False, "no aggregation happened", True)
    assert "its own MPI-IO requests" in agg["evidence"]
    texts = [f["text"] for f in dx.findings(s, {"collective": True, "cb_nodes": 4, "api": "MPIIO"})]
    assert any(t.startswith("no aggregation happened: each of the 4 ranks") for t in texts), texts
    assert not any("wrote the shared file(s), cb_nodes=4" in t for t in texts)


def test_two_aggregators_are_seen_writing_for_four_ranks():
    s = dx.summarize(RECORDED / "ior_romio_cb2_enable_dxt_4r.darshan")
    agg = dx.observed_aggregators(s, 2)
    assert (agg["observed"], agg["aggregation"], agg["verdict"]) == (2, True, "matches")
    assert agg["differs"] is False
    assert agg["evidence"] == "2 of the 4 ranks that called MPI-IO writes issued the POSIX writes (DXT)"
    assert dx.observed_aggregators(s, 4)["verdict"] == "differs"


def test_one_reader_serves_many_logs_and_a_crash_costs_only_that_log(tmp_path):
    from iolab.layers.darshan import reader

    assert dx.summarize(COLL_LOG)["status"] == "ok"
    pid = reader._SERVER.proc.pid
    # outside ReFrame's process group: its local scheduler reaps jobs with waitpid(0, 0), which
    # would otherwise wait for this child forever (a hang after the first Darshan case)
    assert os.getpgid(pid) != os.getpgid(0)
    assert dx.summarize(FPP_LOG)["status"] == "ok" and reader._SERVER.proc.pid == pid
    crashed = None
    for keep in (HEADER_BYTES + 200, 2000, 3000, 5000):      # some of these kill the C reader
        log = tmp_path / f"cut{keep}.darshan"
        log.write_bytes(COLL_LOG.read_bytes()[:keep])
        s = dx.summarize(log)
        assert s["status"] == "unreadable"
        if "crashed" in s["reason"]:
            crashed = s["reason"]
    assert dx.summarize(COLL_LOG)["status"] == "ok", "a crash never spoils the next log"
    if crashed:
        assert reader._SERVER.proc.pid != pid


# --- fio under LD_PRELOAD: a job that forks its workers (recorded, see darshan-recorded/README) ---

def fio_job(name: str, tmp_path) -> tuple[dict, object]:
    """A recorded fio log placed as a case's stage would hold it, with what fio itself reported,
    and the JobView iolab builds from the job's recorded stderr."""
    from iolab.layers.base import JobView
    from iolab.layers.darshan import preload

    stage = tmp_path / "stage"
    stage.mkdir()
    shutil.copy(RECORDED / f"{name}.darshan", stage / preload.LOG)
    fio = json.loads((RECORDED / f"{name}.fio-jobs.json").read_text())
    stderr = (RECORDED / f"{name}.stderr.txt").read_text()
    return fio, JobView(stage, "", stderr, {}, ["fio-job.fio", "fio.json"])


def quickstart_fio_case():
    from iolab.experiment.load import load_experiment
    from iolab.experiment.matrix import expand

    exp = load_experiment(Path(__file__).resolve().parents[2] / "experiments" / "quickstart.yaml")
    return next(c for c in expand(exp) if c.benchmark == "fio")


START = {"status": "enabled", "lib": "libdarshan.so", "dxt": False, "env": {}}


def test_fio_one_job_log_is_the_workers_and_holds_all_its_writes(tmp_path):
    """fio forks its job: the worker writes the log first, the parent (job file, output) finds it
    written and says so once on stderr. The log holds every write fio reported."""
    from iolab.layers.darshan.layer import DarshanLayer

    fio, job = fio_job("fio_write_4k_1job", tmp_path)
    (only,) = fio["jobs"]
    dar = DarshanLayer().observe(quickstart_fio_case(), START, job, {})["darshan"]
    assert dar["status"] == "ok" and dar["lost_logs"] == 1
    s = dar["summary"]
    assert s["nprocs"] == 1 and s["files"] == 1 and s["shared_files"] == []
    assert s["modules"]["POSIX"]["bytes_written"] == only["write_io_bytes"]
    assert s["modules"]["POSIX"]["writes"] == only["write_total_ios"]
    assert s["tiny_write_pct"] == 100.0
    assert [f["text"] for f in dar["findings"]] == ["100% of write requests are under 64KiB"]
    assert DarshanLayer().flags({"darshan": dar}) == []


def test_fio_workers_that_lost_their_logs_make_the_log_incomplete(tmp_path):
    """numjobs=2: two workers and the parent share DARSHAN_LOGFILE; the log holds one worker's
    8 MiB of the 16 MiB fio wrote, so no figure of it may reach a table."""
    from iolab.layers.darshan.layer import DarshanLayer

    fio, job = fio_job("fio_write_1m_2jobs", tmp_path)
    written = sum(j["write_io_bytes"] for j in fio["jobs"])
    s = dx.summarize(job.stage / "darshan.log")
    assert s["modules"]["POSIX"]["bytes_written"] == written // 2       # what would be shown
    layer = DarshanLayer()
    dar = layer.observe(quickstart_fio_case(), START, job, {})["darshan"]
    assert dar["status"] == "incomplete" and dar["lost_logs"] == 2
    assert "summary" not in dar and "findings" not in dar
    assert layer.column_values({"darshan": dar}, ["small_write_pct"]) == []
    (flag,) = layer.flags({"darshan": dar})
    assert flag.startswith("Darshan log incomplete: 2 processes of the job wrote no Darshan log")
