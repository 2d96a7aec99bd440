"""Parsers against real IOR 4.0.0 and fio 3.33 outputs (tests/data, copied from the shared fixtures).

Every expected number below was read by hand from the recorded file named in its table entry;
none is computed by the code under test.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from iolab.benchmarks import RunSpec, get as get_benchmark
from iolab.benchmarks.ior import SUMMARY, parse_any
from iolab.errors import IolabError, ParseError
from iolab.parsers import fio_json, ior_json, ior_text

MIB = 1024 * 1024

# Summary metrics: (bw mean, bw max, bw min, bw stddev, ops mean, ops max, ops min, ops stddev)
SUMMARY_NAMES = ("bw", "bw_max", "bw_min", "bw_stddev", "ops", "ops_max", "ops_min", "ops_stddev")
SUMMARY_UNITS = ("MiB/s",) * 4 + ("ops/s",) * 4
TIME_NAMES = ("open_time", "io_time", "close_time", "total_time")

# <name>.summary.json: "summary" entries (bwMeanMIB, bwMaxMIB, bwMinMIB, bwStdMIB, OPsMean, OPsMax,
# OPsMin, OPsSD) and "Results" per iteration (openTime, wrRdTime, closeTime, totalTime).
IOR_JSON = {
    "ior_hdf5_coll_4r_t512k_b8m": {
        "api": "HDF5", "path": "/tmp/runs/data/shared/hdf5_coll/testfile.h5",
        "write": (1567.5033, 1765.8136, 1297.0152, 198.0744, 3135.0066, 3531.6273, 2594.0304, 396.1488),
        "read": (1073.7492, 1122.6818, 998.3393, 54.1052, 2147.4983, 2245.3635, 1996.6785, 108.2103),
        "write_iters": [(0.0058, 0.0190, 0.0007, 0.0247), (0.0021, 0.0160, 0.0006, 0.0181),
                        (0.0024, 0.0174, 0.0007, 0.0195)],
        "read_iters": [(0.0028, 0.0300, 0.0005, 0.0321), (0.0016, 0.0271, 0.0008, 0.0291),
                       (0.0016, 0.0269, 0.0007, 0.0285)],
    },
    "ior_mpiio_coll_4r_t256k_b8m": {
        "api": "MPIIO", "path": "/tmp/runs/data/shared/mpiio_coll/testfile",
        "write": (1404.0598, 1751.0238, 942.9243, 339.6396, 5616.2393, 7004.0953, 3771.6971, 1358.5584),
        "read": (1237.5397, 1250.2932, 1224.2234, 10.6504, 4950.1586, 5001.1729, 4896.8934, 42.6017),
        "write_iters": [(0.0045, 0.0265, 0.0034, 0.0339), (0.0012, 0.0174, 0.0028, 0.0211),
                        (0.0011, 0.0139, 0.0036, 0.0183)],
        "read_iters": [(0.0009, 0.0250, 0.0004, 0.0261), (0.0009, 0.0246, 0.0004, 0.0258),
                       (0.0009, 0.0245, 0.0003, 0.0256)],
    },
    "ior_mpiio_indep_4r_t64k_b4m": {
        "api": "MPIIO", "path": "/tmp/runs/data/shared/mpiio_indep/testfile",
        "write": (1577.048, 2222.8839, 1138.3838, 466.3512, 25232.7672, 35566.1419, 18214.141, 7461.6197),
        "read": (6093.0113, 6893.5659, 4665.8461, 1011.6536, 97488.1807, 110297.0543, 74653.5371,
                 16186.4579),
        "write_iters": [(0.0091, 0.0044, 0.0037, 0.0117), (0.0045, 0.0044, 0.0039, 0.0072),
                        (0.0098, 0.0060, 0.0053, 0.0141)],
        "read_iters": [(0.0018, 0.0013, 0.0010, 0.0023), (0.0019, 0.0013, 0.0010, 0.0024),
                       (0.0026, 0.0014, 0.0014, 0.0034)],
    },
    "ior_ncmpi_4r_t1m_b8m": {
        "api": "NCMPI", "path": "/tmp/runs/data/shared/ncmpi/testfile.nc",
        # one op per MiB: IOR reports OPs equal to MiB/s for 1 MiB transfers
        "write": (2142.384, 2395.2054, 1645.8538, 351.1196, 2142.384, 2395.2054, 1645.8538, 351.1196),
        "read": (6033.6884, 7854.9615, 4703.1231, 1332.6958, 6033.6884, 7854.9615, 4703.1231, 1332.6958),
        "write_iters": [(0.0063, 0.0128, 0.0047, 0.0194), (0.0019, 0.0110, 0.0072, 0.0134),
                        (0.0020, 0.0111, 0.0014, 0.0134)],
        "read_iters": [(0.0023, 0.0045, 0.0039, 0.0068), (0.0020, 0.0036, 0.0030, 0.0058),
                       (0.0027, 0.0026, 0.0015, 0.0041)],
    },
    "ior_posix_fpp_4r_t1m_b16m": {
        "api": "POSIX", "path": "/tmp/runs/data/shared/posix_fpp/testfile.00000000",
        "write": (7882.151, 8552.7132, 6970.901, 667.8225, 7882.151, 8552.7132, 6970.901, 667.8225),
        "read": (24779.2895, 25176.8389, 24150.7383, 449.6235, 24779.2895, 25176.8389, 24150.7383,
                 449.6235),
        "write_iters": [(0.0053, 0.0091, 0.0004, 0.0092), (0.0023, 0.0074, 0.0019, 0.0075),
                        (0.0035, 0.0078, 0.0045, 0.0079)],
        "read_iters": [(0.0013, 0.0025, 0.0013, 0.0025), (0.0013, 0.0025, 0.0014, 0.0026),
                       (0.0012, 0.0026, 0.0015, 0.0027)],
    },
}

# <name>.txt: "Summary of all tests" rows (Max(MiB) Min(MiB) Mean(MiB) StdDev Max(OPs) Min(OPs)
# Mean(OPs) StdDev) and the Results rows per iteration (open(s) wr/rd(s) close(s) total(s)).
IOR_TEXT = {
    "ior_hdf5_coll_4r_t512k_b8m": {
        "write": (1602.33, 1126.17, 1382.13, 196.03, 3204.66, 2252.33, 2764.25, 392.06),
        "read": (1143.84, 691.97, 932.96, 185.70, 2287.67, 1383.93, 1865.92, 371.40),
        "write_iters": [(0.006116, 0.022672, 0.001020, 0.028415), (0.001989, 0.017921, 0.000563, 0.019971),
                        (0.003442, 0.019499, 0.000495, 0.022569)],
        "read_iters": [(0.002793, 0.031075, 0.000555, 0.033227), (0.001866, 0.025820, 0.000736, 0.027976),
                       (0.003427, 0.043116, 0.000728, 0.046245)],
    },
    "ior_mpiio_coll_4r_t256k_b8m": {
        "write": (1996.25, 872.44, 1577.50, 501.48, 7984.99, 3489.76, 6310.01, 2005.92),
        "read": (1263.82, 982.80, 1126.83, 114.83, 5055.28, 3931.22, 4507.33, 459.33),
        "write_iters": [(0.005255, 0.028367, 0.003992, 0.036679), (0.001079, 0.013021, 0.003343, 0.017169),
                        (0.001114, 0.012141, 0.003076, 0.016030)],
        "read_iters": [(0.001067, 0.031291, 0.000353, 0.032560), (0.000870, 0.027123, 0.000354, 0.028222),
                       (0.000809, 0.024297, 0.000327, 0.025320)],
    },
    "ior_mpiio_indep_4r_t64k_b4m": {
        "write": (1603.52, 1160.11, 1434.52, 195.77, 25656.30, 18561.75, 22952.34, 3132.27),
        "read": (5144.81, 2961.43, 4106.76, 894.58, 82316.91, 47382.81, 65708.21, 14313.36),
        "write_iters": [(0.009648, 0.005720, 0.005644, 0.013792), (0.004076, 0.005904, 0.006017, 0.009978),
                        (0.005762, 0.005775, 0.006094, 0.010390)],
        "read_iters": [(0.001801, 0.003299, 0.003666, 0.005403), (0.002303, 0.001657, 0.001366, 0.003110),
                       (0.002667, 0.001850, 0.001850, 0.003797)],
    },
    "ior_ncmpi_4r_t1m_b8m": {   # WARNING lines are interleaved with the Results rows
        "write": (2263.90, 1785.43, 2093.20, 218.06, 2263.90, 1785.43, 2093.20, 218.06),
        "read": (6588.34, 4831.63, 5737.99, 718.27, 6588.34, 4831.63, 5737.99, 718.27),
        "write_iters": [(0.006960, 0.010764, 0.005025, 0.017923), (0.001705, 0.011999, 0.006670, 0.014135),
                        (0.001894, 0.012031, 0.006357, 0.014348)],
        "read_iters": [(0.003104, 0.002884, 0.002014, 0.004857), (0.002416, 0.004223, 0.003581, 0.006623),
                       (0.001721, 0.003644, 0.003087, 0.005523)],
    },
    "ior_posix_fpp_4r_t1m_b16m": {
        "write": (5926.51, 610.28, 3226.22, 2171.16, 5926.51, 610.28, 3226.22, 2171.16),
        "read": (20151.30, 18374.66, 19525.47, 814.79, 20151.30, 18374.66, 19525.47, 814.79),
        "write_iters": [(0.005775, 0.104740, 0.042422, 0.104869), (0.007226, 0.020270, 0.016439, 0.020370),
                        (0.006977, 0.010708, 0.007675, 0.010799)],
        "read_iters": [(0.002190, 0.003163, 0.002012, 0.003176), (0.002306, 0.003471, 0.002329, 0.003483),
                       (0.002177, 0.003183, 0.002083, 0.003192)],
    },
}

# Text summary columns are Max, Min, Mean, ...; reorder them as SUMMARY_NAMES (mean first).
_TEXT_ORDER = (2, 0, 1, 3, 6, 4, 5, 7)


def _mean(values):
    return sum(values) / len(values)


def _check_metrics(parsed, expected: dict, summary: dict, source: str):
    got = parsed.by_name()
    names = {f"{op}_{n}" for op in ("write", "read") for n in SUMMARY_NAMES + TIME_NAMES}
    assert set(got) == names
    assert len(parsed.metrics) == len(names)          # no metric reported twice
    for op in ("write", "read"):
        for name, unit, value in zip(SUMMARY_NAMES, SUMMARY_UNITS, summary[op]):
            metric = got[f"{op}_{name}"]
            assert metric.value == value, f"{op}_{name}"
            assert metric.unit == unit
            assert metric.source == source
        for i, name in enumerate(TIME_NAMES):
            metric = got[f"{op}_{name}"]
            assert metric.value == pytest.approx(_mean([it[i] for it in expected[f"{op}_iters"]]),
                                                 rel=1e-12, abs=0), f"{op}_{name}"
            assert metric.unit == "s"
            assert metric.source == source


def test_every_recorded_ior_output_is_covered(ior_dir):
    """A new fixture file must get a table entry (or an explicit failure test) here."""
    names = {p.name for p in ior_dir.iterdir()}
    expected = ({f"{n}.summary.json" for n in IOR_JSON} | {f"{n}.txt" for n in IOR_TEXT}
                | {f"{n}_json.txt" for n in IOR_JSON}
                | {"ior_legacy_U_H_rejected.txt", "ior_legacy_U_H_rejected.stderr.txt"}
                | IMPORT_CHECKS | STONEWALLED)
    assert names == expected


# stonewalled runs (IOR's -D, with and without wear-out); tests/unit/test_timed.py reads them
STONEWALLED = {
    *(f"{n}{suffix}" for n in ("ior_posix_stonewall_wearout_2r_t1m_b4g", "ior_posix_stonewall_2r_t1m_b4g",
                               "ior_posix_stonewall_unreached_2r_t1m_b16m")
      for suffix in (".summary.json", "_json.txt")),
    "ior_posix_stonewall_wearout_2r_t1m_b4g.txt",
}


# recorded for `iolab import`'s checks; tests/unit/test_import_checks.py and
# tests/corpus/test_import.py read them
IMPORT_CHECKS = {
    *(f"ior_{n}_2r_t64k_b1m.txt" for n in ("posix_v", "mpiio_showhints", "hdf5_showhints",
                                           "ncmpi_showhints", "posix_csv", "posix_fsync",
                                           "posix_readonly", "posix_read_unkept")),
    "ior_posix_vvv_2r_t64k_b256k.txt", "ior_posix_script_two_tests_2r.txt",
    "ior_posix_script_two_tests.ior",
    "ior_posix_fsync_2r_t64k_b1m_json.txt", "ior_posix_fsync_2r_t64k_b1m.summary.json",
    "ior_posix_read_unkept_2r_t64k_b1m.stderr.txt", "README.md",
}


# ---------------------------------------------------------------- IOR JSON summaries


@pytest.mark.parametrize("name", sorted(IOR_JSON))
def test_ior_json_summary(ior_dir, name):
    exp = IOR_JSON[name]
    path = ior_dir / f"{name}.summary.json"
    parsed = ior_json.parse(path.read_text(), path.name)
    assert parsed.version == "4.0.0"
    _check_metrics(parsed, exp, exp, "ior-json")
    assert parsed.details["api"] == exp["api"]
    assert parsed.details["tasks"] == 4
    assert parsed.details["iterations"] == 3
    assert parsed.details["path"] == exp["path"]
    assert f"summaryFile={name}.summary.json" in parsed.details["command_line"]


def test_ior_json_named_values(ior_dir):
    """Spelled out once: write_bw is bwMeanMIB of the write summary; open time the mean of Results."""
    parsed = ior_json.parse((ior_dir / "ior_mpiio_coll_4r_t256k_b8m.summary.json").read_text())
    m = parsed.by_name()
    assert m["write_bw"].value == 1404.0598
    assert m["read_bw"].value == 1237.5397
    assert m["write_open_time"].value == pytest.approx((0.0045 + 0.0012 + 0.0011) / 3)
    assert m["read_close_time"].value == pytest.approx((0.0004 + 0.0004 + 0.0003) / 3)
    assert m["write_bw"].as_dict() == {"name": "write_bw", "value": 1404.0598, "unit": "MiB/s",
                                       "source": "ior-json"}


@pytest.mark.parametrize("name", sorted(IOR_JSON))
def test_ior_stdout_of_a_json_run_names_the_summary_file(ior_dir, name):
    """With -O summaryFile, stdout holds only 'Writing output to ...': it is not a result."""
    path = ior_dir / f"{name}_json.txt"
    with pytest.raises(ParseError) as info:
        ior_text.parse(path.read_text(), path.name)
    assert f"{name}.summary.json" in str(info.value)
    assert path.name in str(info.value)
    with pytest.raises(ParseError, match=rf"{name}\.summary\.json"):
        parse_any(path)


# ---------------------------------------------------------------- IOR text output


@pytest.mark.parametrize("name", sorted(IOR_TEXT))
def test_ior_text_output(ior_dir, name):
    exp = IOR_TEXT[name]
    path = ior_dir / f"{name}.txt"
    parsed = ior_text.parse(path.read_text(), path.name)
    assert parsed.version == "4.0.0"
    summary = {op: tuple(exp[op][i] for i in _TEXT_ORDER) for op in ("write", "read")}
    _check_metrics(parsed, exp, summary, "ior-text")


def test_ior_text_named_values(ior_dir):
    m = ior_text.parse((ior_dir / "ior_mpiio_coll_4r_t256k_b8m.txt").read_text()).by_name()
    assert m["write_bw"].value == 1577.50          # Mean(MiB), not Max(MiB) 1996.25
    assert m["write_bw_max"].value == 1996.25
    assert m["read_ops"].value == 4507.33
    assert m["write_open_time"].value == pytest.approx((0.005255 + 0.001079 + 0.001114) / 3)
    assert m["read_bw"].unit == "MiB/s" and m["read_bw"].source == "ior-text"


# ---------------------------------------------------------------- auto-detection


@pytest.mark.parametrize("name", sorted(IOR_JSON))
def test_parse_any_detects_the_format(ior_dir, name):
    as_json = parse_any(ior_dir / f"{name}.summary.json")
    as_text = parse_any(ior_dir / f"{name}.txt")
    assert {m.source for m in as_json.metrics} == {"ior-json"}
    assert {m.source for m in as_text.metrics} == {"ior-text"}
    # Two separate executions: the numbers are those of each file, not of the other
    assert as_json.by_name()["write_bw"].value == IOR_JSON[name]["write"][0]
    assert as_text.by_name()["write_bw"].value == IOR_TEXT[name]["write"][2]


def test_parse_any_json_with_leading_whitespace(ior_dir, tmp_path):
    target = tmp_path / "summary.json"
    target.write_text("\n  " + (ior_dir / "ior_ncmpi_4r_t1m_b8m.summary.json").read_text())
    assert parse_any(target).by_name()["read_bw"].source == "ior-json"


def test_adapter_parse_files_and_dispatcher(ior_dir):
    adapter = get_benchmark("ior")
    paths = [ior_dir / "ior_posix_fpp_4r_t1m_b16m.summary.json", ior_dir / "ior_posix_fpp_4r_t1m_b16m.txt"]
    got = adapter.parse_files(paths)
    assert [p.by_name()["read_bw"].value for p in got] == [24779.2895, 19525.47]
    text = paths[0].read_text()
    assert ior_json.parse(text).by_name()["write_bw"].value == 7882.151
    assert ior_text.parse(paths[1].read_text()).by_name()["write_bw"].value == 3226.22


# ---------------------------------------------------------------- IOR failures


def _summary(ior_dir, name="ior_mpiio_coll_4r_t256k_b8m"):
    return (ior_dir / f"{name}.summary.json").read_text()


@pytest.mark.parametrize("name", sorted(IOR_JSON))
@pytest.mark.parametrize("cut", ["one-char", "quarter", "half", "three-quarters", "before-summary",
                                 "before-finished", "last-char"])
def test_ior_json_truncated(ior_dir, name, cut):
    text = _summary(ior_dir, name)
    at = {
        "one-char": 1,
        "quarter": len(text) // 4,
        "half": len(text) // 2,
        "three-quarters": 3 * len(text) // 4,
        "before-summary": text.index('"summary"'),
        "before-finished": text.rindex('"Finished"'),
        "last-char": len(text.rstrip()) - 1,
    }[cut]
    with pytest.raises(ParseError, match=r"truncated|not valid JSON") as info:
        ior_json.parse(text[:at], "ior-summary.json")
    assert "ior-summary.json" in str(info.value)
    with pytest.raises(ParseError):
        ior_json.parse(text[:at])


def test_ior_json_without_finished_entry(ior_dir):
    """Valid JSON, but IOR never wrote 'Finished': the run did not complete."""
    doc = json.loads(_summary(ior_dir))
    del doc["Finished"]
    with pytest.raises(ParseError, match="'Finished'"):
        ior_json.parse(json.dumps(doc))


@pytest.mark.parametrize("op, index", [("write", 0), ("read", 1)])
def test_ior_json_zero_bandwidth(ior_dir, op, index):
    doc = json.loads(_summary(ior_dir))
    assert doc["summary"][index]["operation"] == op
    doc["summary"][index]["bwMeanMIB"] = 0
    with pytest.raises(ParseError, match=rf"{op} bandwidth is 0"):
        ior_json.parse(json.dumps(doc), "ior-summary.json")


@pytest.mark.parametrize("key", ["bwMeanMIB", "bwMaxMIB", "OPsSD"])
def test_ior_json_inf_strings(ior_dir, key):
    doc = json.loads(_summary(ior_dir))
    doc["summary"][0][key] = "inf"
    with pytest.raises(ParseError, match=rf"write {key} is 'inf', not a number"):
        ior_json.parse(json.dumps(doc))


def test_ior_json_bare_inf_and_infinity(ior_dir):
    text = _summary(ior_dir)
    assert '"bwMeanMIB": 1404.0598' in text
    # C's printf("%f") writes a bare inf: not JSON at all
    with pytest.raises(ParseError, match="not valid JSON"):
        ior_json.parse(text.replace('"bwMeanMIB": 1404.0598', '"bwMeanMIB": inf'))
    # Python's json reads Infinity: the value must still be refused
    with pytest.raises(ParseError, match="not finite"):
        ior_json.parse(text.replace('"bwMeanMIB": 1404.0598', '"bwMeanMIB": Infinity'))
    with pytest.raises(ParseError, match="not finite"):
        ior_json.parse(text.replace('"bwMaxMIB": 1751.0238', '"bwMaxMIB": NaN'))


@pytest.mark.parametrize("op", ["write", "read"])
def test_ior_json_results_missing_an_iteration(ior_dir, op):
    doc = json.loads(_summary(ior_dir))
    results = doc["tests"][0]["Results"]
    drop = [i for i, r in enumerate(results) if r["access"] == op][-1]
    del results[drop]
    with pytest.raises(ParseError, match=rf"2 of 3 {op} iterations reported"):
        ior_json.parse(json.dumps(doc))


def test_ior_json_missing_time_and_not_a_summary(ior_dir):
    doc = json.loads(_summary(ior_dir))
    del doc["tests"][0]["Results"][0]["openTime"]
    with pytest.raises(ParseError, match="write openTime is None, not a number"):
        ior_json.parse(json.dumps(doc))
    with pytest.raises(ParseError, match="not an IOR JSON summary"):
        ior_json.parse("[1, 2]")
    doc = json.loads(_summary(ior_dir))
    doc["summary"] = []
    with pytest.raises(ParseError, match="no results"):
        ior_json.parse(json.dumps(doc))


def test_ior_json_two_tests_in_one_summary(ior_dir):
    doc = json.loads(_summary(ior_dir))
    doc["tests"].append(doc["tests"][0])
    with pytest.raises(ParseError, match="2 IOR tests"):
        ior_json.parse(json.dumps(doc))


def test_ior_text_truncated(ior_dir):
    text = (ior_dir / "ior_mpiio_coll_4r_t256k_b8m.txt").read_text()
    with pytest.raises(ParseError, match="no 'Finished' line"):
        ior_text.parse(text[:text.index("Finished")])
    # cut after the write summary row: read is missing and so is Finished
    with pytest.raises(ParseError, match="no 'Finished' line"):
        ior_text.parse(text[:text.index("\nread         1263.82")])
    with pytest.raises(ParseError, match="did not finish"):
        ior_text.parse(text[:text.index("Summary of all tests")])
    with pytest.raises(ParseError, match="did not finish"):
        ior_text.parse(text[:len(text) // 2])
    # cut inside the last summary row
    with pytest.raises(ParseError, match="truncated read summary line"):
        ior_text.parse(text[:text.index("MPIIO      0\nFinished")])


def test_ior_text_missing_iteration_zero_and_inf(ior_dir):
    text = (ior_dir / "ior_mpiio_coll_4r_t256k_b8m.txt").read_text()
    row = "write     1863.82    9830       0.000406"
    assert row in text
    lines = [ln for ln in text.splitlines(keepends=True) if not ln.startswith(row)]
    with pytest.raises(ParseError, match="2 of 3 write iterations reported"):
        ior_text.parse("".join(lines))
    summary_row = "read         1263.82     982.80    1126.83"
    with pytest.raises(ParseError, match="read bandwidth is 0.0"):
        ior_text.parse(text.replace(summary_row, "read         1263.82     982.80       0.00"))
    with pytest.raises(ParseError, match="not finite"):
        ior_text.parse(text.replace(summary_row, "read         1263.82     982.80        inf"))
    with pytest.raises(ParseError, match="'n/a', not a number"):
        ior_text.parse(text.replace(summary_row, "read         1263.82     982.80        n/a"))


def test_ior_rejected_legacy_flags(ior_dir):
    """IOR 4.0.0 refuses -U/-H and prints its usage: a clear error, not 'no results'."""
    path = ior_dir / "ior_legacy_U_H_rejected.txt"
    for parsed_by in (lambda: ior_text.parse(path.read_text(), path.name), lambda: parse_any(path)):
        with pytest.raises(ParseError) as info:
            parsed_by()
        message = str(info.value)
        assert "IOR reported an error" in message
        assert "Error invalid argument: -U" in message
        assert "Error invalid argument: -H" in message
        assert path.name in message
    assert ior_text.errors(path.read_text())[:4] == [
        "Error invalid argument: -U", "Error invalid argument: ior_hints_cb.txt",
        "Error invalid argument: -H", "Invalid options"]
    # its stderr (mpirun's abort notice) holds no result either, nor anything of IOR's
    stderr = ior_dir / "ior_legacy_U_H_rejected.stderr.txt"
    with pytest.raises(ParseError, match="not an IOR output"):
        parse_any(stderr)


def test_ior_adapter_reports_the_rejection_from_the_stage(ior_dir, tmp_path):
    """As after a ReFrame run: stdout/stderr in the stage, no summary file written."""
    shutil.copy(ior_dir / "ior_legacy_U_H_rejected.txt", tmp_path / "rfm_job.out")
    shutil.copy(ior_dir / "ior_legacy_U_H_rejected.stderr.txt", tmp_path / "rfm_job.err")
    spec = RunSpec("ior", [], outputs=[SUMMARY])
    with pytest.raises(ParseError, match="IOR reported an error: Error invalid argument: -U"):
        get_benchmark("ior").parse_outputs(tmp_path, spec)


def test_ior_adapter_stage_success_and_missing_summary(ior_dir, tmp_path):
    shutil.copy(ior_dir / "ior_ncmpi_4r_t1m_b8m_json.txt", tmp_path / "rfm_job.out")
    (tmp_path / "rfm_job.err").write_text("")
    spec = RunSpec("ior", [], outputs=[SUMMARY])
    with pytest.raises(ParseError, match=rf"{SUMMARY} is missing"):
        get_benchmark("ior").parse_outputs(tmp_path, spec)
    shutil.copy(ior_dir / "ior_ncmpi_4r_t1m_b8m.summary.json", tmp_path / SUMMARY)
    parsed = get_benchmark("ior").parse_outputs(tmp_path, spec)   # NCMPI warnings are not errors
    assert parsed.by_name()["write_bw"].value == 2142.384


def test_empty_outputs(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    for call in (lambda: parse_any(empty), lambda: ior_json.parse("", "x.json"),
                 lambda: ior_text.parse("  \n", "x.txt")):
        with pytest.raises(ParseError, match="empty"):
            call()
    with pytest.raises(ParseError, match="no fio JSON output"):
        fio_json.parse("")
    with pytest.raises(ParseError, match="missing"):
        parse_any(tmp_path / "absent.json")


def test_parse_error_is_an_iolab_error_that_fails_the_case():
    assert issubclass(ParseError, IolabError)
    assert ParseError.exit_code == 1


# ---------------------------------------------------------------- fio


def _fio(fio_dir) -> str:
    return (fio_dir / "fio_seqwrite_1m_128m.json").read_text()


def test_fio_json(fio_dir):
    parsed = fio_json.parse(_fio(fio_dir), "fio_seqwrite_1m_128m.json")
    m = parsed.by_name()
    # jobs[0].write: bw_bytes 240103270, iops 228.980322, io_bytes 134217728, clat_ns.mean 3685804.179687
    assert set(m) == {"write_bw", "write_iops", "write_bytes", "write_clat_mean"}   # read moved nothing
    assert m["write_bw"].value == 240103270 / MIB
    assert m["write_bw"].value == pytest.approx(228.98032, rel=1e-7)
    assert m["write_bw"].unit == "MiB/s"
    assert m["write_iops"].value == 228.980322
    assert m["write_iops"].unit == "ops/s"
    assert m["write_bytes"].value == 134217728 == 128 * MIB
    assert m["write_bytes"].unit == "B"
    assert m["write_clat_mean"].value == pytest.approx(3685.804179687, rel=1e-12)
    assert m["write_clat_mean"].unit == "us"
    assert {x.source for x in parsed.metrics} == {"fio-json"}
    assert parsed.version == "3.33"
    assert parsed.details == {"jobs": 1}


def test_fio_json_with_leading_noise(fio_dir):
    text = "fio: this platform does not support process shared mutexes\n" + _fio(fio_dir)
    assert fio_json.parse(text).by_name()["write_iops"].value == 228.980322


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9, 0.999])
def test_fio_json_truncated(fio_dir, fraction):
    text = _fio(fio_dir)
    with pytest.raises(ParseError, match="truncated or corrupt") as info:
        fio_json.parse(text[:int(len(text) * fraction)], "fio.json")
    assert "fio.json" in str(info.value)


def test_fio_job_error(fio_dir):
    doc = json.loads(_fio(fio_dir))
    doc["jobs"][0]["error"] = 5
    with pytest.raises(ParseError, match="fio job\\(s\\) failed: seqwrite"):
        fio_json.parse(json.dumps(doc))


def test_fio_no_jobs_no_data_zero_bandwidth(fio_dir):
    doc = json.loads(_fio(fio_dir))
    with pytest.raises(ParseError, match="no jobs"):
        fio_json.parse(json.dumps({**doc, "jobs": []}))
    moved = json.loads(_fio(fio_dir))
    moved["jobs"][0]["write"]["io_bytes"] = 0
    with pytest.raises(ParseError, match="moved no data"):
        fio_json.parse(json.dumps(moved))
    stalled = json.loads(_fio(fio_dir))
    stalled["jobs"][0]["write"]["bw_bytes"] = 0
    with pytest.raises(ParseError, match="write bandwidth is 0"):
        fio_json.parse(json.dumps(stalled))
    lacking = json.loads(_fio(fio_dir))
    del lacking["jobs"][0]["read"]
    with pytest.raises(ParseError, match="lacks 'read'"):
        fio_json.parse(json.dumps(lacking))


def test_fio_adapter_reads_its_output(fio_dir, tmp_path):
    adapter = get_benchmark("fio")
    shutil.copy(fio_dir / "fio_seqwrite_1m_128m.json", tmp_path / "fio.json")
    spec = RunSpec("fio", [], outputs=["fio.json"], mpi=False)
    assert adapter.parse_outputs(tmp_path, spec).by_name()["write_bytes"].value == 128 * MIB
    [parsed] = adapter.parse_files([fio_dir / "fio_seqwrite_1m_128m.json"])
    assert parsed.version == "3.33"
    (tmp_path / "fio.json").unlink()
    with pytest.raises(ParseError, match="fio.json is missing"):
        adapter.parse_outputs(tmp_path, spec)


def test_recorded_files_are_unmodified_copies(ior_dir, fio_dir):
    """tests/data keeps the fixtures byte for byte (where the shared set is reachable)."""
    shared = Path(__file__).resolve().parents[3] / "shared" / "fixtures"  # beside the checkout
    if not shared.is_dir():
        pytest.skip("shared fixtures not mounted")
    for path in ior_dir.iterdir():
        if path.name in IMPORT_CHECKS | STONEWALLED:
            continue                    # recorded here, not copied
        origin = shared / ("romio" if "legacy" in path.name else "ior") / path.name
        assert path.read_bytes() == origin.read_bytes(), path.name
    for path in fio_dir.iterdir():
        assert path.read_bytes() == (shared / "fio" / path.name).read_bytes()
