"""Corpus: benchmark options that run a program, load code or name a path, written into a shared
experiment YAML. Each is refused by `iolab validate` and by `iolab plan` (real processes) at its
file, line and key, naming the option and what it does, unless the experiment allows it by name;
options iolab owns (the case directory's) are refused too, however they are spelled."""

from __future__ import annotations

import os

import pytest

from tests.integration.conftest import make_project

from .conftest import iolab, refused

FIO = "benchmark: fio\nfixed: {size: 64KiB, bs: 4KiB, extra_args: [%s]}\n"
IOR = ("benchmark: ior\nscale: {nodes: 1, tasks_per_node: 2}\n"
       "fixed: {api: POSIX, block_size: 1MiB, transfer_size: 1MiB, extra_args: [%s]}\n")
MDTEST = "benchmark: mdtest\nscale: {nodes: 1, tasks_per_node: 2}\nfixed: {items: 10, extra_args: [%s]}\n"

# id -> (experiment body after id and description, phrases of the one-line reason)
CASES = {
    "fio-exec-prerun": (FIO % '"--exec_prerun=touch /tmp/iolab-x"', [
        ":4: fixed.extra_args[0]: '--exec_prerun=touch /tmp/iolab-x' sets fio's exec_prerun, which runs "
        "a program before the job: an experiment does that only where it says so (allow: [exec_prerun])"]),
    "fio-exec-postrun-one-dash": (FIO % '"-exec_postrun=rm -rf /"', [
        ":4: fixed.extra_args[0]: '-exec_postrun=rm -rf /' sets fio's exec_postrun, which runs a program "
        "after the job"]),
    "fio-exec-abbreviated": (FIO % '"--rate=1m", "--exec_pre=touch x"', [
        ":4: fixed.extra_args[1]: '--exec_pre=touch x' sets fio's exec_prerun"]),
    "fio-ioengine-exec": ("benchmark: fio\nfixed: {size: 64KiB, ioengine: exec}\n", [
        ":4: fixed.ioengine: 'exec' sets fio's ioengine=exec, which runs a program (its `program` "
        "option) as the job's I/O", "(allow: [ioengine=exec])"]),
    "fio-ioengine-external": (
        "benchmark: fio\nfixed: {size: 64KiB}\nmatrix:\n  ioengine: [psync, external]\n", [
        ":6: matrix.ioengine[1]: 'external' sets fio's ioengine=external, which loads code from a shared "
        "library as the I/O engine"]),
    "fio-filename-format": (FIO % '"--filename_format=/tmp/elsewhere/$jobname"', [
        "fixed.extra_args[0]: '--filename_format=/tmp/elsewhere/$jobname' sets fio's filename_format, "
        "which names the files fio writes, anywhere"]),
    "fio-opendir": (FIO % '"--opendir=/etc"', [
        "fixed.extra_args[0]: '--opendir=/etc' sets fio's opendir, which adds every file under a "
        "directory to the job"]),
    "fio-write-bw-log": (FIO % '"--write_bw_log=/tmp/bw"', [
        "'--write_bw_log=/tmp/bw' sets fio's write_bw_log, which names a file fio writes its "
        "bandwidth log to"]),
    "fio-read-iolog": (FIO % '"--read_iolog=/tmp/trace"',
                       ["sets fio's read_iolog, which replays I/O from a file"]),
    "fio-trigger": (FIO % '"--trigger=touch x"', ["'--trigger=touch x' sets fio's trigger, which runs a "
                                                   "program when a trigger fires"]),
    "fio-client": (FIO % '"--client=evil.example"', ["sets fio's client, which runs the jobs on other "
                                                      "hosts' fio servers"]),
    "fio-in-a-profile": ("benchmark: fio\nfixed: {size: 64KiB}\nprofiles:\n  local:\n"
                         "    fixed: {extra_args: ['--ioscheduler=none']}\n", [
        ":7: profiles.local.fixed.extra_args[0]: '--ioscheduler=none' sets fio's ioscheduler, which "
        "changes the I/O scheduler of the device under the case directory"]),
    "ior-stonewall-status-file": (IOR % '"-O", "stoneWallingStatusFile=/tmp/sw"', [
        ":5: fixed.extra_args[1]: 'stoneWallingStatusFile=/tmp/sw' sets ior's stoneWallingStatusFile, "
        "which names a file IOR writes its stonewalling state to"]),
    "ior-test-file-directive": (IOR % '"-OtestFile=/tmp/elsewhere"', [
        "fixed.extra_args[0]: '-OtestFile=/tmp/elsewhere' sets ior's testFile, which names the file "
        "IOR writes (-O testFile=), in place of the case directory's", "(allow: [testFile])"]),
    "ior-hints-file": (IOR % '"--mpiio.hintsFileName=/etc/hints"', [
        "sets ior's mpiio.hintsFileName, which names a file IOR reads MPI-IO hints from"]),
    "ior-rank-csv": (IOR % '"-O", "saveRankPerformanceDetailsCSV=/tmp/r.csv"', [
        "sets ior's saveRankPerformanceDetailsCSV, which names a file IOR writes each rank's results to"]),
    "mdtest-cmd-before": (MDTEST % '"--run-cmd-before-phase=touch /tmp/x"', [
        ":5: fixed.extra_args[0]: '--run-cmd-before-phase=touch /tmp/x' sets mdtest's "
        "run-cmd-before-phase, which runs a shell command before each phase (outside the timing)"]),
    "mdtest-cmd-after": (MDTEST % '"--run-cmd-after-phase=sync"', [
        "sets mdtest's run-cmd-after-phase, which runs a shell command after each phase (inside the "
        "timing)"]),
    "allow-unknown-name": ("allow: [exec_prerunn]\n" + FIO % "", [
        ":3: allow[0]: 'exec_prerunn' is not an option iolab guards for fio, so there is nothing to "
        "allow (did you mean 'exec_prerun'?"]),
    "allow-for-another-benchmark": ("allow: [run-cmd-before-phase]\n" + FIO % "", [
        "allow[0]: 'run-cmd-before-phase' is not an option iolab guards for fio"]),
    # options iolab owns, spelled as fio reads them: refused when the cases are made
    "fio-filename-owned": (FIO % '"-filename=/dev/sda"', [
        "extra_args '-filename=/dev/sda': iolab sets this from the typed parameters"]),
    "fio-directory-abbreviated": (FIO % '"--directo=/tmp/elsewhere"', [
        "extra_args '--directo=/tmp/elsewhere': iolab sets this from the typed parameters"]),
    "fio-job-file": (FIO % '"/tmp/evil.fio"', [
        "extra_args '/tmp/evil.fio': fio reads it as a job file, with jobs of its own; give options "
        "as --name=value"]),
}


@pytest.fixture
def project(tmp_path):
    def make(exp_id: str, body: str):
        root = make_project(tmp_path, {exp_id: f"id: {exp_id}\ndescription: a guarded option\n{body}"})
        env = {k: v for k, v in os.environ.items() if not k.startswith("IOLAB_")}
        env.update(IOLAB_ROOT=str(root), IOLAB_RESULTS=str(tmp_path / "results"),
                   IOLAB_CACHE=str(tmp_path / "cache"))
        return root, env
    return make


@pytest.mark.parametrize("exp_id", list(CASES))
def test_refused_by_validate_and_plan(project, exp_id):
    body, says = CASES[exp_id]
    root, env = project(exp_id, body)
    line = refused(iolab("validate", f"experiments/{exp_id}.yaml", env=env, cwd=root), *says)
    assert refused(iolab("plan", exp_id, env=env, cwd=root), *says).endswith(line.split("error: ", 1)[1])
    assert not (root.parent / "results").exists()


def test_an_allowed_option_passes_validate_and_plan(project):
    body = "allow: [exec_prerun]\n" + FIO % '"--exec_prerun=true"'
    root, env = project("allowed", body)
    ok = iolab("validate", "experiments/allowed.yaml", env=env, cwd=root)
    assert ok.returncode == 0 and ok.stdout.startswith("ok: "), str(ok)
    plan = iolab("plan", "allowed", env=env, cwd=root)
    assert plan.returncode == 0, str(plan)
