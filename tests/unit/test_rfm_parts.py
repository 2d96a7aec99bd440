"""The parts IolabTest is made of, without ReFrame: launcher policies, storage, the job-script
lines (run by bash), the plan of a case, and reading a finished job's stage directory."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from iolab.experiment import site
from iolab.experiment.load import load_experiment
from iolab.layers.storage.base import FSTYPE_FILE
from iolab.experiment.matrix import expand
from iolab.rfm import jobscript, launch, observe, plan
from iolab.layers.storage import place as storage

DATA = Path(__file__).resolve().parents[1] / "data"

FIO = """\
id: parts-fio
description: one fio case
benchmark: fio
fixed: {size: 64KiB, bs: 4KiB, rw: write}
"""

IOR = """\
id: parts-ior
description: one IOR case with a hint
benchmark: ior
scale: {nodes: 1, tasks_per_node: 4}
fixed: {api: MPIIO, collective: true, transfer_size: 1MiB, block_size: 2MiB, mpiio.cb_nodes: 2,
        lustre.stripe_count: 4}
job: {extra_directives: ["#SBATCH --constraint=nvme"]}
"""


def case_of(tmp_path, text: str):
    path = tmp_path / "experiments" / (text.split()[1] + ".yaml")
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    exp = load_experiment(path)
    return exp, expand(exp)[0]


def partition(scheduler="local", launcher="mpirun", **extras):
    return plan.Partition("sys:part", scheduler, launcher,
                          site.load({"scratch": extras.pop("scratch", "/tmp/iolab-parts"), **extras}))


# --- launch --------------------------------------------------------------------------------

def test_each_launcher_passes_the_environment_its_own_way():
    openmpi = launch.policy("openmpi", "mpirun")
    assert openmpi.forward_options(["B", "A"]) == ["-x", "A", "-x", "B"]
    assert openmpi.preload_options("'/l/libdarshan.so'") == (["-x", "LD_PRELOAD='/l/libdarshan.so'"], None)
    assert openmpi.oversubscribe == ("--oversubscribe",)
    hydra = launch.policy("mpich", "mpiexec")
    assert hydra.forward_options(["B", "A"]) == ["-genvlist", "A,B"]
    assert hydra.preload_options("x") == (["-genv", "LD_PRELOAD", "x"], None)
    assert hydra.oversubscribe == ()
    srun = launch.policy("openmpi", "srun")
    assert srun.forward_options(["A"]) == []
    assert srun.preload_options("x") == (["--export=ALL,LD_PRELOAD=x"], None)
    other = launch.policy("cray", "alps")
    assert other.preload_options("x") == ([], "env LD_PRELOAD=x")
    assert launch.UNLAUNCHED.preload_options("x") == ([], "LD_PRELOAD=x")


# --- storage -------------------------------------------------------------------------------

def test_case_directories_per_target(tmp_path):
    _, case = case_of(tmp_path, FIO)
    where = storage.place(case, site.load({"scratch": str(tmp_path)}), "sys:part", experiment="e", run_id="r",
                          repetition=2, dry_run=False)
    assert where.case_dir == f"{tmp_path}/e/r/{case.case_id}-r2" and not where.unrunnable
    bb_case = dataclasses.replace(case, params={**case.params, "storage": "burst_buffer"})
    bb = storage.place(bb_case, site.load({}), "sys:part", experiment="e", run_id="r", repetition=1,
                       dry_run=False)
    assert bb.base == "$DW_JOB_STRIPED" and bb.on("lustre")
    assert bb.unrunnable == ["storage 'burst_buffer': system sys:part declares no burst buffer "
                             "(extras['iolab']['burst_buffer'])"]
    strict = storage.place(case, site.load({"scratch": str(tmp_path)}), "sys:part", experiment="e",
                           run_id="r", repetition=1, require_file_system="lustre", dry_run=False)
    assert strict.unrunnable and strict.unrunnable[0].startswith("require_file_system: scratch")


# --- the job script's lines, run by bash ---------------------------------------------------

def test_job_lines_around_a_benchmark(tmp_path):
    _, case = case_of(tmp_path, FIO)
    stage, case_dir = tmp_path / "stage", tmp_path / "scratch" / "case"
    stage.mkdir()
    from iolab.benchmarks import RunSpec

    spec = RunSpec("sh", ["-c", "echo data > x"], workdir=str(case_dir))
    pre, post = jobscript.lines(str(case_dir), spec, stage, [], [], remove_data=True)
    script = "\n".join([*pre, "sh -c 'echo data > x; exit 3'", *post])
    env = {**os.environ, "SLURM_JOB_NODELIST": "n[1-2]"}
    done = subprocess.run(["bash", "-c", script], cwd=stage, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (stage / jobscript.EXIT_FILE).read_text() == "3\n"
    assert (stage / jobscript.CASEDIR_FILE).read_text() == f"{case_dir}\n"
    assert (stage / jobscript.NODES_FILE).read_text() == "n[1-2]\n"
    start, end = map(float, (stage / jobscript.TIMES_FILE).read_text().split())
    assert start <= end
    assert (stage / jobscript.BINARY_FILE).read_text().startswith(shutil.which("sh"))
    assert not case_dir.exists(), "the data is removed after the benchmark"


# --- a case's plan -------------------------------------------------------------------------

def test_plan_of_a_non_mpi_case_on_a_local_partition(tmp_path):
    exp, case = case_of(tmp_path, FIO)
    p = plan.plan(case, exp, repetition=1, run_id="r", stage=tmp_path, partition=partition(),
                  producer_dir=None, keep_data=False, consumed=False, dry_run=False)
    assert p.local_launcher and p.launcher_options == [] and p.starts["mpiio"] is None
    assert p.executable == "fio" and p.args[-1] == "fio-job.fio" and "fio-job.fio" in p.files
    assert p.case_dir.startswith("/tmp/iolab-parts/parts-fio/r/") and p.failure is None
    assert any(line.startswith("rm -rf ") for line in p.postrun)


def test_plan_of_a_non_mpi_case_in_an_allocation_is_a_one_task_step_on_its_first_node(tmp_path):
    """fio from salloc would run on the node ReFrame runs on: it is a step, as MPI cases are."""
    exp, case = case_of(tmp_path, FIO)
    p = plan.plan(case, exp, repetition=1, run_id="r", stage=tmp_path,
                  partition=partition(launcher="srunalloc"),
                  producer_dir=None, keep_data=False, consumed=False, dry_run=False)
    assert not p.local_launcher and p.executable == "fio"
    assert p.launcher_options == ["--nodes=1", '--nodelist="$iolab_step_nodes"']
    script = "\n".join(line for line in p.prerun if "iolab_step_nodes" in line)
    assert "head -n 1 " in script and script.count("\n") == 2    # found, counted, written down


def test_plan_of_an_mpi_case_forwards_hints_and_refuses_what_the_partition_drops(tmp_path, monkeypatch):
    exp, case = case_of(tmp_path, IOR)
    monkeypatch.setenv("PATH", "/nonexistent")
    p = plan.plan(case, exp, repetition=1, run_id="r", stage=tmp_path,
                  partition=partition(mpi_flavour="openmpi-romio", cores_per_node=2),
                  producer_dir=None, keep_data=False, consumed=True, dry_run=False)
    hints = p.starts["mpiio"]
    assert hints["requested"] == {"cb_nodes": "2"} and hints["verify"] == "romio-print"
    assert p.env_values["OMPI_MCA_io"] == "romio321" and "iolab-romio-hints.txt" in p.files
    assert p.launcher_options[:1] == ["--oversubscribe"]          # 4 tasks on 2 cores
    assert p.launcher_options[1:] == ["-x", "OMPI_MCA_io", "-x", "ROMIO_HINTS",
                                      "-x", "ROMIO_PRINT_HINTS"]
    assert p.failure.startswith("job.extra_directives: '#SBATCH --constraint=nvme' cannot be applied")
    assert p.unrunnable == ["benchmark binary 'ior' not found on PATH; provide it with Spack "
                            "(spack.yaml), a module, or a prefix (see docs/benchmarks.md)"]
    assert not any(line.startswith("rm -rf ") for line in p.postrun), "a read uses its data"
    assert any("lfs setstripe -c 4" in line for line in p.prerun)
    srun = plan.plan(case, exp, repetition=1, run_id="r", stage=tmp_path,
                     partition=partition("slurm", "srun", mpi_flavour="openmpi-romio"),
                     producer_dir=None, keep_data=False, consumed=False, dry_run=True)
    assert srun.launcher_options == [] and srun.failure is None and srun.unrunnable == []


def test_plan_preloads_darshan_through_the_launcher(tmp_path):
    text = IOR.replace('job: {extra_directives: ["#SBATCH --constraint=nvme"]}\n', "")
    exp, case = case_of(tmp_path, text + "darshan: {enabled: true, dxt: true}\n")
    prefix = tmp_path / "stack"
    (prefix / "lib").mkdir(parents=True)
    (prefix / "bin").mkdir()
    (prefix / "lib" / "libdarshan.so").write_bytes(b"")
    p = plan.plan(case, exp, repetition=1, run_id="r", stage=tmp_path,
                  partition=partition(stack={"provider": "prefix", "prefix": str(prefix)}),
                  producer_dir=None, keep_data=False, consumed=False, dry_run=True)
    lib = str(prefix / "lib" / "libdarshan.so")
    assert p.starts["darshan"] == {"status": "enabled", "lib": lib, "dxt": True, "env": {
        "DARSHAN_LOGFILE": str(tmp_path / "darshan.log"), "DARSHAN_LOGHINTS": "cb_nodes=1",
        "DARSHAN_MOD_ENABLE": "DXT_POSIX,DXT_MPIIO"}}
    assert p.launcher_options[:2] == ["-x", f"LD_PRELOAD={lib}"]
    assert "DARSHAN_LOGFILE" in p.launcher_options and "LD_PRELOAD" not in p.env
    assert p.env["PATH"].startswith(str(prefix / "bin"))


# --- reading a finished job ----------------------------------------------------------------

def _stage(tmp_path, **files) -> Path:
    stage = tmp_path / "stage"
    stage.mkdir(exist_ok=True)
    for name, text in files.items():
        (stage / name.replace("__", "-").replace("_dot_", ".")).write_text(text)
    return stage


def test_outcome_of_a_job_that_stopped_before_the_benchmark(tmp_path):
    exp, case = case_of(tmp_path, FIO)
    p = plan.plan(case, exp, repetition=1, run_id="r", stage=tmp_path, partition=partition(),
                  producer_dir=None, keep_data=False, consumed=False, dry_run=True)
    stage = _stage(tmp_path)
    why = "cannot create the case directory /x: mkdir: Permission denied"
    (stage / "iolab-job-error.txt").write_text(why + "\n")
    out = observe.outcome(stage, case, _bench(case), p, exp.verify)
    assert (out.status, out.error) == ("failed", why)


def test_outcome_of_a_failed_and_of_a_good_fio_run(tmp_path):
    exp, case = case_of(tmp_path, FIO.replace("size: 64KiB, bs: 4KiB, rw: write",
                                               "size: 16MiB, bs: 4KiB, rw: randwrite"))
    p = plan.plan(case, exp, repetition=1, run_id="r", stage=tmp_path, partition=partition(),
                  producer_dir=None, keep_data=False, consumed=False, dry_run=True)
    stage = _stage(tmp_path)
    (stage / FSTYPE_FILE).write_text("ext4\n")     # the job's first line (detect_line)
    (stage / jobscript.EXIT_FILE).write_text("1\n")
    (stage / "rfm_job.err").write_text("fio: pid=7, err=28/file:io_u.c:1845, func=io_u error, "
                                        "error=No space left on device\n")
    out = observe.outcome(stage, case, _bench(case), p, exp.verify)
    assert out.status == "failed" and "no space left on the device (ENOSPC)" in out.error
    (stage / jobscript.EXIT_FILE).write_text("0\n")
    (stage / "rfm_job.err").write_text("")
    shutil.copy(DATA / "fio-recorded" / "fio_randwrite_4k_16m.json", stage / "fio.json")
    out = observe.outcome(stage, case, _bench(case), p, exp.verify)
    assert out.status == "ok", out.error
    assert out.observed["benchmark"]["bs"] == 4096 and out.observed["lustre"]["fs_type"] == "ext4"
    metrics = {m.name for m in out.parsed.metrics}
    assert "write_bw" in metrics
    # the same output for another block size: the echo check fails it, naming both
    (tmp_path / "other").mkdir()
    exp8, case8 = case_of(tmp_path / "other", FIO.replace("size: 64KiB, bs: 4KiB, rw: write",
                                                           "size: 16MiB, bs: 8KiB, rw: randwrite"))
    out = observe.outcome(stage, case8, _bench(case8), p, exp8.verify)
    assert out.status == "failed" and out.error == "echo: bs 4096, requested 8192"


def _bench(case):
    from iolab import benchmarks

    return benchmarks.get(case.benchmark)


def test_a_replayed_output_is_flagged(tmp_path):
    exp, case = case_of(tmp_path, FIO)
    stage = _stage(tmp_path)
    (stage / "rfm_job.err").write_text("IOLAB-STANDIN: replaying tests/data/replay/fio/abc\n")
    seen = observe.observed(stage, case, {}, {}, [])
    assert seen["replayed"] == "tests/data/replay/fio/abc"
    assert json.dumps(seen)     # records are JSON


@pytest.mark.parametrize("layout,hints,expected", [
    ("fail", "warn", "Lustre layout not as requested: x"),
    ("warn", "warn", None),
    ("warn", "fail", "MPI-IO hints not applied: cb_nodes requested 4, effective 1"),
])
def test_the_verify_policy_decides(layout, hints, expected):
    from iolab.experiment.load import Verify

    seen = {"lustre": {"mismatches": [1], "reason": "x"},
            "mpiio_hints": {"comparison": [{"key": "cb_nodes", "requested": "4", "effective": "1",
                                            "status": "changed"}]}}
    assert observe.failing(seen, Verify(layout=layout, hints=hints)) == expected
