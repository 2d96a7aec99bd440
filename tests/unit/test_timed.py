"""Time-based runs as typed parameters: IOR's stonewall (-D, with wear-out) and fio's
time_based + runtime, typed at load, put on the command line or in the job file, echo-checked
against what the benchmark says it ran, and the stonewalled bandwidth read the benchmark's way
(tests/data/ior/README.md says how the IOR outputs were recorded)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from iolab.benchmarks import get as get_benchmark
from iolab.benchmarks.fio import JOBFILE, OUTPUT
from iolab.errors import IolabError
from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand, show_value
from iolab.parsers import fio_json, ior_json, ior_text
from iolab.units import OutOfRange, parse_duration

MIB = 1024 * 1024
WEAROUT = "ior_posix_stonewall_wearout_2r_t1m_b4g"
PLAIN = "ior_posix_stonewall_2r_t1m_b4g"
UNREACHED = "ior_posix_stonewall_unreached_2r_t1m_b16m"


def _cases(write_experiment, name, body):
    return expand(load_experiment(write_experiment(name, f"id: {name}\ndescription: timed\n{body}")))


@pytest.mark.parametrize("text, seconds", [("300s", 300), ("5m", 300), ("1h30m", 5400), (300, 300),
                                           (0, 0), ("0s", 0), ("2d", 172800)])
def test_durations_are_seconds(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["5 min", "-3", "3.5s", "", True, "5m30", -1])
def test_a_duration_that_is_none_is_refused(text):
    with pytest.raises(ValueError):
        parse_duration(text)


def test_a_duration_over_a_week_is_out_of_range():
    with pytest.raises(OutOfRange, match="longer than a week"):
        parse_duration("8d")


def test_stonewall_is_typed_at_load_and_goes_on_iors_command_line(write_experiment):
    cases = _cases(write_experiment, "sw", """
benchmark: ior
scale: {nodes: 1, tasks_per_node: 2}
job: {time_limit: 30m}
fixed: {stonewall_wearout: true, read: false}
matrix: {stonewall: [300s, 5m, 2m]}
""")
    # 300s and 5m are one case: the same typed value
    assert [c.params["stonewall"] for c in cases] == [300, 120]
    assert show_value("ior", "stonewall", 300) == "300"
    args = get_benchmark("ior").run_spec(cases[0], "/d").args
    assert args[args.index("-D") + 1] == "300"
    assert args[args.index("-D") + 2:args.index("-D") + 4] == ["-O", "stoneWallingWearOut=1"]


def test_without_a_stonewall_iors_command_line_is_unchanged(write_experiment):
    [case] = _cases(write_experiment, "nosw", "benchmark: ior\n")
    args = get_benchmark("ior").run_spec(case, "/d").args
    assert "-D" not in args and not any("stoneWalling" in a for a in args)


@pytest.mark.parametrize("fixed, message", [
    ("{stonewall_wearout: true}", "stonewall_wearout goes on after a stonewall"),
    ("{stonewall: 6m}", r"2 stonewalled phase\(s\) of 360 s take at least 720 s, not less than "
                        r"the job's time limit \(10m\)"),
    ("{extra_args: ['-D', '30']}", "use the parameter 'stonewall'"),
    ("{stonewall: 30s, extra_args: ['-O', 'stoneWallingWearOut=1']}",
     "use the parameter 'stonewall_wearout'"),
    ("{stonewall: 30s, extra_args: ['-Ostonewallingwearout=1']}", "stonewall_wearout"),
])
def test_ior_refuses_what_cannot_run_as_asked(write_experiment, fixed, message):
    with pytest.raises(IolabError, match=message):
        _cases(write_experiment, "bad", f"benchmark: ior\nfixed: {fixed}\n")


def test_a_duration_that_is_not_one_names_its_line(write_experiment):
    with pytest.raises(IolabError) as info:
        _cases(write_experiment, "typo", "benchmark: ior\nfixed:\n  stonewall: 5 minutes\n")
    text = str(info.value)
    assert "typo.yaml:5: fixed.stonewall:" in text and "not a duration" in text


def _summary(ior_dir, name):
    return ior_json.parse((ior_dir / f"{name}.summary.json").read_text(), f"{name}.summary.json")


def test_stonewalled_wearout_figures_are_iors(ior_dir):
    """write_bw stays IOR's bwMeanMIB: every byte moved (wear-out included, xsizeMiB) over the
    phase's time; the stonewall's own figures are recorded beside it under their own names."""
    m = _summary(ior_dir, WEAROUT).by_name()
    assert m["write_bw"].value == 171.028                          # bwMeanMIB
    assert m["write_moved_bytes"].value == 348 * MIB                # xsizeMiB: 174 pairs x 2 ranks
    assert m["write_moved_bytes"].value == 364904448               # "actual aggregate bytes moved"
    assert m["write_stonewall_time"].value == 2.024                 # StoneWallTime
    assert m["write_stonewall_rank_bw"].value == 85.4726            # StoneWallbwMeanMIB, per rank
    assert m["write_stonewall_bw"].value == pytest.approx(2 * 85.4726)   # all ranks
    assert m["write_stonewall_bw"].unit == "MiB/s" and m["write_moved_bytes"].unit == "B"
    assert m["read_stonewall_time"].value == 0.0239


def test_a_stonewall_without_wearout_has_no_stonewall_figures(ior_dir):
    m = _summary(ior_dir, PLAIN).by_name()
    assert m["write_moved_bytes"].value == 384827392
    assert not any("stonewall" in name for name in m)


def test_reported_metrics_follow_the_parameters(write_experiment, ior_dir):
    """What a case's parameters say it reports is what the recorded run reports."""
    bench = get_benchmark("ior")
    for name, fixed in ((WEAROUT, "{stonewall: 2, stonewall_wearout: true}"), (PLAIN, "{stonewall: 2}"),
                        (UNREACHED, "{stonewall: 30, stonewall_wearout: true}")):
        [case] = _cases(write_experiment, name.replace("_", "-"), f"benchmark: ior\nfixed: {fixed}\n")
        assert set(bench.reported(case.params)) == set(_summary(ior_dir, name).by_name()), name
        for metric in _summary(ior_dir, name).metrics:
            assert bench.metric(metric.name).unit == metric.unit, metric.name


@pytest.mark.parametrize("name, stonewall, wearout, tasks, block, iterations", [
    (WEAROUT, 2, True, 2, 4 * 1024 * MIB, 1), (PLAIN, 2, False, 2, 4 * 1024 * MIB, 1),
    (UNREACHED, 30, True, 2, 16 * MIB, 2)])
def test_iors_echo_checks_the_stonewall(write_experiment, ior_dir, name, stonewall, wearout,
                                         tasks, block, iterations):
    bench = get_benchmark("ior")
    body = (f"benchmark: ior\nscale: {{nodes: 1, tasks_per_node: {tasks}}}\n"
            f"fixed: {{transfer_size: 1MiB, block_size: {block}, iterations: {iterations}, "
            f"stonewall: {stonewall}s, stonewall_wearout: {str(wearout).lower()}}}\n")
    [case] = _cases(write_experiment, "echo", body)
    parsed = _summary(ior_dir, name)
    assert parsed.echo["deadlineForStonewall"] == stonewall
    assert bench.check_echo(parsed, case, None) is None
    # the same output taken for another stonewall, or the other wear-out, fails the case
    [other] = _cases(write_experiment, "echo", body.replace(f"stonewall: {stonewall}s", "stonewall: 60s"))
    assert f"deadlineForStonewall {stonewall}, requested 60" in bench.check_echo(parsed, other, None)
    flipped = body.replace(f"stonewall_wearout: {str(wearout).lower()}",
                           f"stonewall_wearout: {str(not wearout).lower()}")
    [flip] = _cases(write_experiment, "echo", flipped)
    assert f"stoneWallingWearOut {str(wearout).lower()}" in bench.check_echo(parsed, flip, None)


def test_a_run_without_a_stonewall_echoes_none(write_experiment, ior_dir):
    """The recordings made before stonewall was a parameter echo 0 and no wear-out: a case that
    asked for one would fail its check on them."""
    parsed = ior_json.parse((ior_dir / "ior_posix_fpp_4r_t1m_b16m.summary.json").read_text())
    assert parsed.echo["deadlineForStonewall"] == 0 and parsed.echo["stoneWallingWearOut"] is False


def test_iors_text_output_of_a_stonewalled_run_parses(ior_dir):
    """IOR's stdout with the stonewall lines and columns filled in (for `iolab import`)."""
    m = ior_text.parse((ior_dir / f"{WEAROUT}.txt").read_text()).by_name()
    assert m["write_bw"].value == 263.63


# ---------------------------------------------------------------- fio


def test_fio_job_file_carries_runtime_and_time_based(write_experiment):
    [case] = _cases(write_experiment, "fio-timed", """
benchmark: fio
fixed: {runtime: 1m, time_based: true, size: 8MiB, bs: 1MiB}
""")
    assert case.params["runtime"] == 60
    text = get_benchmark("fio").run_spec(case, "/d").files[JOBFILE]
    assert "runtime=60\n" in text and "time_based=1\n" in text
    [plain] = _cases(write_experiment, "fio-plain", "benchmark: fio\n")
    text = get_benchmark("fio").run_spec(plain, "/d").files[JOBFILE]
    assert "runtime" not in text and "time_based" not in text


@pytest.mark.parametrize("fixed, message", [
    ("{time_based: true}", "time_based runs for runtime seconds: set runtime"),
    ("{runtime: 10m, time_based: true}", r"runtime 600 s is not shorter than the job's time limit"),
    ("{extra_args: ['--time_based']}", "iolab sets this from the typed parameters"),
    ("{extra_args: ['--runtime=30']}", "iolab sets this from the typed parameters"),
])
def test_fio_refuses_what_cannot_run_as_asked(write_experiment, fixed, message):
    with pytest.raises(IolabError, match=message):
        _cases(write_experiment, "bad", f"benchmark: fio\nfixed: {fixed}\n")


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_a_real_time_based_fio_run_says_it_ran_that_long(write_experiment, tmp_path):
    """fio itself, for 2 s over an 8 MiB file: it echoes runtime and time_based, each job ran
    the whole runtime, and the bytes moved are the run's (more than size), so no io_bytes check."""
    bench = get_benchmark("fio")
    [case] = _cases(write_experiment, "fio-live", """
benchmark: fio
fixed: {runtime: 2s, time_based: true, size: 8MiB, bs: 1MiB, end_fsync: false}
""")
    data = tmp_path / "data"
    data.mkdir()
    spec = bench.run_spec(case, str(data))
    for name, text in spec.files.items():
        (tmp_path / name).write_text(text)
    subprocess.run([spec.executable, *spec.args], cwd=tmp_path, check=True, timeout=60,
                   capture_output=True)
    parsed = fio_json.parse((tmp_path / OUTPUT).read_text(), OUTPUT)
    assert parsed.echo["runtime"] == 2 and parsed.echo["time_based"] is True
    assert parsed.echo["ran_runtime"] is True
    assert bench.check_echo(parsed, case, spec) is None
    assert parsed.by_name()["write_bytes"].value > 8 * MIB       # went over the file again
    # the same output, taken for a case that asked for 10 s, fails its check
    [longer] = _cases(write_experiment, "fio-longer", """
benchmark: fio
fixed: {runtime: 10s, time_based: true, size: 8MiB, bs: 1MiB, end_fsync: false}
""")
    assert "runtime 2, requested 10" in bench.check_echo(parsed, longer, spec)
