"""Each benchmark descriptor's guarded options (those that run a program, load code or name a
path), recognised however the benchmark itself would read them, and `allow:` typed at load."""

from __future__ import annotations

import pytest

from iolab.benchmarks import get, registry
from iolab.errors import IolabError
from iolab.experiment.load import load_experiment

FIO, IOR, MDTEST = get("fio"), get("ior"), get("mdtest")


@pytest.mark.parametrize("args, expected", [
    (["--exec_prerun=touch /tmp/x"], [(0, "exec_prerun")]),
    (["-exec_prerun=touch /tmp/x"], [(0, "exec_prerun")]),         # getopt_long_only: one dash
    (["--exec_pre=touch /tmp/x"], [(0, "exec_prerun")]),           # an abbreviation fio accepts
    (["--exec_postrun", "touch /tmp/x"], [(0, "exec_postrun")]),   # the value as its own argument
    (["--rate=1m", "--write_bw_log=/tmp/bw"], [(1, "write_bw_log")]),
    (["--filename_format=/elsewhere/$jobname"], [(0, "filename_format")]),
    (["--opendir=/etc"], [(0, "opendir")]),
    (["--trigger=touch /tmp/x"], [(0, "trigger")]),
    (["--trigger-remote=x"], [(0, "trigger-remote")]),
    (["--client=host"], [(0, "client")]),
    (["--aux-path=/tmp"], [(0, "aux-path")]),
    (["--ioscheduler=none"], [(0, "ioscheduler")]),
    (["--cgroup=x"], [(0, "cgroup")]),
    (["--cgroup_weight=100", "--rwmixread=30", "--description=$(touch x)"], []),
    (["--filename=/dev/sda"], []),          # owned (the case directory's), refused as such
    (["-d"], []),                            # too short to be taken as an abbreviation
])
def test_fio_guarded_spellings(args, expected):
    assert FIO.guarded("extra_args", args) == expected


def test_fio_engines_that_run_programs_or_load_code():
    assert FIO.guarded("ioengine", "exec") == [(None, "ioengine=exec")]
    assert FIO.guarded("ioengine", "external") == [(None, "ioengine=external")]
    assert FIO.guarded("ioengine", "psync") == []
    assert "loads code" in FIO.guarded_options["ioengine=external"]


@pytest.mark.parametrize("args, expected", [
    (["-O", "stoneWallingStatusFile=/tmp/sw"], [(1, "stoneWallingStatusFile")]),
    (["-OtestFile=/elsewhere/f"], [(0, "testFile")]),
    (["-O", " TESTFILE = /x"], [(1, "testFile")]),                 # IOR reads keys in any case
    (["-O", "stoneWallingWearOut=1,hintsFileName=/h"], [(1, "hintsFileName")]),
    (["-O", "saveRankPerformanceDetailsCSV=/r.csv"], [(1, "saveRankPerformanceDetailsCSV")]),
    (["--mpiio.hintsFileName=/etc/h"], [(0, "mpiio.hintsFileName")]),
    (["-Q", "1", "-g", "-O", "stoneWallingWearOut=1"], []),
    (["-O", "stoneWallingWearOut=1 # testFile=x"], []),              # after '#': a comment
])
def test_ior_guarded_spellings(args, expected):
    assert IOR.guarded("extra_args", args) == expected


def test_mdtest_commands_are_guarded():
    assert MDTEST.guarded("extra_args", ["-L", "--run-cmd-before-phase=rm -rf /"]) == \
        [(1, "run-cmd-before-phase")]
    assert MDTEST.guarded("extra_args", ["--run-cmd-after-phase=x"]) == [(0, "run-cmd-after-phase")]
    assert MDTEST.guarded("extra_args", ["-N", "1"]) == []
    assert MDTEST.guarded("extra_args", ["--mpiio.hintsFileName=/h"]) == [(0, "mpiio.hintsFileName")]


def test_benchmarks_without_raw_options_guard_none():
    assert get("h5bench").guarded_options == {} and get("btio").guarded_options == {}
    assert set(registry()) == {"fio", "ior", "mdtest", "h5bench", "btio"}


def test_guarded_in_names_what_each_allowed_option_does():
    params = {"extra_args": ["--exec_prerun=x", "--rate=1m"], "ioengine": "exec"}
    assert FIO.guarded_in(params) == {"exec_prerun": "runs a program before the job",
                                      "ioengine=exec": FIO.guarded_options["ioengine=exec"]}


def _load(tmp_path, body: str):
    path = tmp_path / "experiments" / "g.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text("id: g\ndescription: guarded options\n" + body)
    return load_experiment(path)


def test_refused_where_written_and_allowed_by_name(tmp_path):
    body = "benchmark: fio\nfixed: {size: 64KiB, extra_args: ['--rate=1m', '--exec_prerun=touch m']}\n"
    with pytest.raises(IolabError) as err:
        _load(tmp_path, body)
    assert str(err.value).endswith(
        "g.yaml:4: fixed.extra_args[1]: '--exec_prerun=touch m' sets "
        "fio's exec_prerun, which runs a program before the job: an experiment does that only where "
        "it says so (allow: [exec_prerun])")
    exp = _load(tmp_path, "allow: [exec_prerun]\n" + body)
    assert exp.allow == ("exec_prerun",)


@pytest.mark.parametrize("body, where", [
    ("benchmark: fio\nmatrix: {ioengine: [psync, exec]}\n",
     ":4: matrix.ioengine[1]: 'exec' sets fio's ioengine=exec"),
    ("benchmark: fio\nprofiles:\n  local:\n    fixed: {extra_args: ['--opendir=/etc']}\n",
     ":6: profiles.local.fixed.extra_args[0]: '--opendir=/etc' sets fio's opendir"),
    ("parts:\n  a:\n    benchmark: ior\n    zip:\n      api: [POSIX, MPIIO]\n"
     "      extra_args: [[], ['-O', 'testFile=/x']]\n",
     ":8: parts.a.zip.extra_args[1][1]: 'testFile=/x' sets ior's testFile"),
    ("benchmark: h5bench\nallow: [exec_prerun]\n",
     ":4: allow[0]: 'exec_prerun' is not an option iolab guards for h5bench"),
    ("benchmark: fio\nallow: [exec_prerunn]\n",
     "allow[0]: 'exec_prerunn' is not an option iolab guards for fio, so there is nothing to allow "
     "(did you mean 'exec_prerun'?"),
])
def test_refusals_name_the_line_and_key(tmp_path, body, where):
    with pytest.raises(IolabError) as err:
        _load(tmp_path, body)
    assert where in str(err.value)


def test_readme_lists_every_guarded_option_of_every_benchmark():
    """docs/guarantees.md's Shell safety list is the descriptors' lists, no more, no less."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "guarantees.md").read_text()
    section = text.split("## Shell safety", 1)[1].split("\n## ", 1)[0]
    listed = section.split("The guarded options:", 1)[1]
    items = {}
    for entry in listed.split("\n- ")[1:]:
        label, _, names = entry.partition(":")
        items[label.strip()] = {n.strip(" `\n") for n in names.replace("\n", " ").split(",")}
    for bench in registry().values():
        label = next(k for k in items if bench.name in k.lower().replace(" ", "").split(","))
        expected = set(bench.guarded_options) or {"none (they take no raw options)"}
        assert items[label] == expected, bench.name


def test_an_external_engine_loads_only_where_allowed(tmp_path):
    body = 'benchmark: fio\nfixed: {size: 64KiB, ioengine: "external:/opt/engines/libfoo.so"}\n'
    with pytest.raises(IolabError, match=r":4: fixed.ioengine: 'external:/opt/engines/libfoo.so' sets "
                                         r"fio's ioengine=external, which loads code"):
        _load(tmp_path, body)
    exp = _load(tmp_path, "allow: [ioengine=external]\n" + body)
    from iolab.experiment.matrix import expand

    (case,) = expand(exp)
    assert "ioengine=external:/opt/engines/libfoo.so\n" in FIO.run_spec(case, "/d").files["fio-job.fio"]
    with pytest.raises(IolabError, match="does not match"):
        _load(tmp_path, 'allow: [ioengine=external]\nbenchmark: fio\nfixed: {ioengine: "external:a b"}\n')
