"""Adapters: typed cases -> the exact IOR command line and the rendered fio job file."""

from __future__ import annotations

import configparser
import json
import shlex

import pytest

from iolab.benchmarks import get as get_benchmark
from iolab.benchmarks.fio import JOBFILE, OUTPUT
from iolab.benchmarks.ior import SUMMARY
from iolab.errors import IolabError
from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand

MIB = 1024**2
CASE_DIR = "/scratch/iolab/exp/abcd1234"


def _cases(write_experiment, name, body):
    return expand(load_experiment(write_experiment(name, f"id: {name}\ndescription: adapter test\n{body}")))


def test_ior_argv_mpiio_collective(write_experiment):
    [case] = _cases(write_experiment, "mpiio-coll", """
benchmark: ior
scale: {nodes: 1, tasks_per_node: 4}
fixed: {api: MPIIO, collective: true, transfer_size: 256k, block_size: 8m, iterations: 3}
""")
    spec = get_benchmark("ior").run_spec(case, CASE_DIR)
    assert spec.executable == "ior"
    assert spec.args == ["-a", "MPIIO", "-b", "8m", "-t", "256k", "-s", "1", "-i", "3", "-c", "-w", "-r",
                         "-o", f"{CASE_DIR}/testfile",
                         "-O", "summaryFormat=JSON", "-O", f"summaryFile={SUMMARY}"]
    assert SUMMARY == "ior-summary.json"
    assert spec.mpi is True
    assert spec.outputs == [SUMMARY]
    assert spec.command == ("ior -a MPIIO -b 8m -t 256k -s 1 -i 3 -c -w -r -o /scratch/iolab/exp/abcd1234/"
                            "testfile -O summaryFormat=JSON -O summaryFile=ior-summary.json")


def test_ior_argv_every_flag(write_experiment):
    [case] = _cases(write_experiment, "all-flags", """
benchmark: ior
fixed:
  api: POSIX
  block_size: 3m
  transfer_size: 1536k
  segments: 16
  iterations: 2
  file_per_process: true
  reorder_tasks: true
  fsync: true
  keep_file: true
  random_offsets: true
  stonewall: 5m
  stonewall_wearout: true
  extra_args: ["-g"]
job: {time_limit: 30m}
""")
    args = get_benchmark("ior").run_spec(case, "/d").args
    assert args == ["-a", "POSIX", "-b", "3m", "-t", "1536k", "-s", "16", "-i", "2",
                    "-F", "-C", "-e", "-w", "-r", "-k", "-z", "-D", "300",
                    "-O", "stoneWallingWearOut=1", "-o", "/d/testfile",
                    "-O", "summaryFormat=JSON", "-O", f"summaryFile={SUMMARY}", "-g"]


def test_ior_argv_write_only_and_odd_sizes(write_experiment):
    [case] = _cases(write_experiment, "write-only", """
benchmark: ior
fixed: {read: false, transfer_size: 4104, block_size: 8208}
""")
    args = get_benchmark("ior").run_spec(case, "/d").args
    assert args[:10] == ["-a", "POSIX", "-b", "8208", "-t", "4104", "-s", "1", "-i", "1"]
    assert "-w" in args and "-r" not in args


def _options(argv):
    """IOR argv -> ({flag: value}, {boolean flags}, [-O values])."""
    valued, flags, extra = {}, set(), []
    it = iter(argv)
    for arg in it:
        if arg == "-O":
            extra.append(next(it))
        elif arg in ("-a", "-b", "-t", "-s", "-i", "-o"):
            valued[arg] = next(it)
        else:
            flags.add(arg)
    return valued, flags, extra


@pytest.mark.parametrize("name, fixed", [
    ("ior_posix_fpp_4r_t1m_b16m", "{api: POSIX, file_per_process: true, transfer_size: 1m, block_size: 16m}"),
    ("ior_mpiio_coll_4r_t256k_b8m", "{api: MPIIO, collective: true, transfer_size: 256k, block_size: 8m}"),
    ("ior_mpiio_indep_4r_t64k_b4m", "{api: MPIIO, transfer_size: 64k, block_size: 4m}"),
    ("ior_hdf5_coll_4r_t512k_b8m", "{api: HDF5, collective: true, transfer_size: 512k, block_size: 8m}"),
    ("ior_ncmpi_4r_t1m_b8m", "{api: NCMPI, transfer_size: 1m, block_size: 8m}"),
])
def test_ior_argv_matches_the_recorded_runs(ior_dir, write_experiment, name, fixed):
    """The same configuration as each recorded IOR run gives the same options (bar -o and the file)."""
    stem = name.replace("_", "-")
    [case] = _cases(write_experiment, stem, f"""
benchmark: ior
scale: {{nodes: 1, tasks_per_node: 4}}
fixed: {fixed}
matrix: {{iterations: [3]}}
""")
    recorded = json.loads((ior_dir / f"{name}.summary.json").read_text())["Command line"]
    want_valued, want_flags, want_extra = _options(shlex.split(recorded)[1:])
    got_valued, got_flags, got_extra = _options(get_benchmark("ior").run_spec(case, CASE_DIR).args)
    assert got_flags == want_flags
    assert got_valued.pop("-o") == f"{CASE_DIR}/testfile"
    want_valued.pop("-o")
    assert got_valued == {**want_valued, "-s": "1"}     # -s 1 is IOR's default, written out by iolab
    assert got_extra == ["summaryFormat=JSON", f"summaryFile={SUMMARY}"]
    assert want_extra == ["summaryFormat=JSON", f"summaryFile={name}.summary.json"]
    assert case.num_tasks == 4


def test_ior_argv_never_has_removed_or_verbose_flags(write_experiment):
    cases = _cases(write_experiment, "all-apis", """
benchmark: ior
matrix:
  api: [POSIX, MPIIO, HDF5, NCMPI]
  file_per_process: [false, true]
  fsync: [false, true]
  keep_file: [false, true]
exclude:
  - {api: NCMPI, file_per_process: true}
""")
    assert len(cases) == 28
    for case in cases:
        args = get_benchmark("ior").run_spec(case, "/d").args
        assert not {"-U", "-H", "-v", "-vv", "-f"} & set(args), args


@pytest.mark.parametrize("extra, fragment", [
    ('["-U", "hints.txt"]', "IOR 4 removed -U"),
    ('["-H"]', "IOR 4 removed -H"),
    ('["-v"]', "invalid JSON"),
    ('["-vv"]', "invalid JSON"),
    ('["-f", "script.txt"]', "one per case"),
    ('["-b", "16m"]', "use the parameter 'block_size'"),
    ('["-t4m"]', "use the parameter 'transfer_size'"),
    ('["--collective"]', "use the parameter 'collective'"),
    ('["-o", "/elsewhere"]', "iolab sets it"),
    ('["-O", "summaryFile=x.json"]', "extra_args 'summaryFile=x.json': iolab owns the summary file"),
    ('["-O", "summaryFormat=CSV"]', "iolab owns the summary file"),
    ('["-OsummaryFile=x.json"]', "extra_args '-OsummaryFile=x.json': iolab owns the summary file "
                               r"\(ior-summary.json, JSON\)"),
    ('["-OsummaryFormat=CSV"]', "extra_args '-OsummaryFormat=CSV': iolab owns"),
    ('["-O", "summaryfile=x"]', "extra_args 'summaryfile=x': iolab owns"),
    ('["-O", " SUMMARYFILE = x"]', "extra_args ' SUMMARYFILE = x': iolab owns"),
    ('["-O", "stoneWallingWearOut=1,summaryFile=x"]', "'stoneWallingWearOut=1,summaryFile=x': iolab owns"),
    ('["-Ominimumtime=1,SummaryFormat=CSV"]', "iolab owns the summary file"),
    ('["--summaryFile=x"]', "extra_args '--summaryFile=x': iolab owns"),
    ('["--summaryformat", "CSV"]', "extra_args '--summaryformat': iolab owns"),
])
def test_ior_extra_args_refused(write_experiment, extra, fragment):
    with pytest.raises(IolabError, match=fragment):
        _cases(write_experiment, "extra", f"benchmark: ior\nfixed: {{api: MPIIO, extra_args: {extra}}}\n")


@pytest.mark.parametrize("fixed, fragment", [
    ("{transfer_size: 3m, block_size: 8m}", "must be a multiple of transfer_size"),
    ("{transfer_size: 1100, block_size: 110000}", "multiple of 8 bytes"),
    ("{transfer_size: 0}", "transfer_size: 0 is not allowed: give at least 1B"),   # refused at load
    ("{write: false, read: false}", "neither write nor read"),
    ("{write: false}", "read without write"),
    ("{api: POSIX, collective: true}", "collective I/O needs api"),
    ("{api: HDF5, random_offsets: true}", "random_offsets"),
    ("{api: MPIIO, collective: true, random_offsets: true}", "random_offsets"),
    ("{api: NCMPI, file_per_process: true}", "NCMPI backend rejects file_per_process"),
])
def test_ior_impossible_cases(write_experiment, fixed, fragment):
    with pytest.raises(IolabError, match=fragment):
        _cases(write_experiment, "impossible", f"benchmark: ior\nfixed: {fixed}\n")


@pytest.mark.parametrize("extra", ['["-O", "minTimeDuration=1"]', '["-Ominimumtime=1"]',
                                   '["-O", "x=1#summaryFile=y"]', '["--mpiio.showHints"]'])
def test_ior_other_directives_pass(write_experiment, extra):
    [case] = _cases(write_experiment, "extra",
                    f"benchmark: ior\nfixed: {{api: MPIIO, extra_args: {extra}}}\n")
    extra_args = case.params["extra_args"]
    assert get_benchmark("ior").run_spec(case, "/d").args[-len(extra_args):] == extra_args


def test_ior_allowed_extra_args(write_experiment):
    [case] = _cases(write_experiment, "hints", """
benchmark: ior
fixed: {api: MPIIO, extra_args: ["--mpiio.showHints", "-O", "minTimeDuration=1"]}
""")
    assert get_benchmark("ior").run_spec(case, "/d").args[-3:] == [
        "--mpiio.showHints", "-O", "minTimeDuration=1"]


# ---------------------------------------------------------------- fio


def _jobfile(spec) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(comment_prefixes=(";", "#"))
    parser.read_string(spec.files[JOBFILE])
    return parser


def test_fio_run_spec(write_experiment, src_layout_templates):
    [case] = _cases(write_experiment, "fio-seq", """
benchmark: fio
fixed: {rw: write, bs: 1m, size: 128m, ioengine: psync, end_fsync: true}
""")
    spec = get_benchmark("fio").run_spec(case, CASE_DIR)
    assert spec.executable == "fio"
    assert spec.mpi is False
    assert spec.args == ["--output-format=json", f"--output={OUTPUT}", JOBFILE]
    assert spec.outputs == [OUTPUT, JOBFILE]
    text = spec.files[JOBFILE]
    assert text.startswith(f"; iolab case {case.case_id} of fio-seq")
    job = _jobfile(spec)
    assert job.sections() == ["global", case.case_id]
    assert dict(job["global"]) == {
        "directory": CASE_DIR, "rw": "write", "bs": str(MIB), "size": str(128 * MIB), "numjobs": "1",
        "direct": "0", "ioengine": "psync", "iodepth": "1", "end_fsync": "1", "group_reporting": "1"}


def test_fio_run_spec_options(write_experiment, src_layout_templates):
    cases = _cases(write_experiment, "fio-rand", """
benchmark: fio
fixed: {bs: 4k, size: 1g, numjobs: 4, direct: true, ioengine: libaio, iodepth: 16, end_fsync: false,
        extra_args: ["--eta=never"]}
matrix:
  rw: [randread, randwrite]
""")
    assert [c.params["rw"] for c in cases] == ["randread", "randwrite"]
    for case in cases:
        spec = get_benchmark("fio").run_spec(case, "/d")
        assert spec.args == ["--output-format=json", f"--output={OUTPUT}", "--eta=never", JOBFILE]
        glob = _jobfile(spec)["global"]
        assert (glob["rw"], glob["bs"], glob["size"], glob["numjobs"]) == (
            case.params["rw"], "4096", str(1024**3), "4")
        assert (glob["direct"], glob["ioengine"], glob["iodepth"], glob["end_fsync"]) == (
            "1", "libaio", "16", "0")


@pytest.mark.parametrize("body, fragment", [
    ("scale: {tasks_per_node: 2}\n", "one process on one node"),
    ("fixed: {size: 4k, bs: 1m}\n", "size must be at least bs"),
    ('fixed: {extra_args: ["--output=other.json"]}\n', "iolab sets this"),
    ('fixed: {extra_args: ["--rw", "read"]}\n', "iolab sets this"),
])
def test_fio_impossible_cases(write_experiment, body, fragment):
    with pytest.raises(IolabError, match=fragment):
        _cases(write_experiment, "fio-bad", f"benchmark: fio\n{body}")


def test_templates_found_through_iolab_root(write_experiment, tmp_path, monkeypatch, src_layout_templates):
    [case] = _cases(write_experiment, "fio-root", "benchmark: fio\n")
    default = get_benchmark("fio").run_spec(case, "/d").files[JOBFILE]
    root = tmp_path / "checkout"
    (root / "templates" / "fio").mkdir(parents=True)
    (root / "templates" / "fio" / "job.fio.j2").write_text("[{{ case.case_id }}]\nrw={{ params.rw }}\n")
    monkeypatch.setenv("IOLAB_ROOT", str(root))
    assert get_benchmark("fio").run_spec(case, "/d").files[JOBFILE] == f"[{case.case_id}]\nrw=write\n"
    monkeypatch.setenv("IOLAB_ROOT", str(tmp_path / "nowhere"))
    with pytest.raises(IolabError, match="template 'fio/job.fio.j2' not found"):
        get_benchmark("fio").run_spec(case, "/d")
    monkeypatch.delenv("IOLAB_ROOT")
    assert get_benchmark("fio").run_spec(case, "/d").files[JOBFILE] == default


def test_unknown_adapter():
    with pytest.raises(IolabError) as info:
        get_benchmark("iozone")
    assert "unknown benchmark 'iozone'" in str(info.value)
    assert "allowed: btio, fio, h5bench, ior" in str(info.value)
