"""Job-time variables in paths (a burst buffer's $DW_JOB_STRIPED): one quoting rule for every
place a case's path reaches. Each benchmark's planned job is run by bash with the variable set
only there: mkdir, the benchmark's arguments and its input files see the same expanded path, and
nothing else in a value becomes live."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from iolab import shell
from iolab.experiment import site
from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand
from iolab.rfm import plan

from tests.unit.test_shell import hostile

VAR = "IOLAB_JOB_ONLY"
BASE = f"${VAR}/bb"

EXPERIMENTS = {
    "ior": ("benchmark: ior\nscale: {tasks_per_node: 2}\n"
            "fixed: {api: POSIX, block_size: 1MiB, transfer_size: 1MiB}\n"),
    "mdtest": "benchmark: mdtest\nscale: {tasks_per_node: 2}\nfixed: {items: 10}\n",
    "h5bench": ("benchmark: h5bench\nscale: {tasks_per_node: 2}\n"
                "fixed: {kernel: write, dim_1: 1024, timesteps: 1}\n"),
    "h5bench-metadata": "benchmark: h5bench\nscale: {tasks_per_node: 2}\nfixed: {kernel: metadata}\n",
    "btio": "benchmark: btio\nscale: {tasks_per_node: 4}\nfixed: {grid: [12, 12, 12]}\n",
    "fio": "benchmark: fio\nfixed: {size: 64KiB, bs: 4KiB}\n",
}


def planned(tmp_path: Path, name: str, base: str = BASE):
    assert VAR not in os.environ, "the variable must be unknown where the job is planned"
    path = tmp_path / "experiments" / f"jp-{name}.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"id: jp-{name}\ndescription: x\n{EXPERIMENTS[name]}")
    exp = load_experiment(path)
    case = expand(exp)[0]
    stage = tmp_path / "stage"
    stage.mkdir()
    p = plan.plan(case, exp, repetition=1, run_id="r1", stage=stage,
                  partition=plan.Partition("sys:part", "local", "mpirun", site.load({"scratch": base})),
                  producer_dir=None, keep_data=False, consumed=False, dry_run=False)
    for file, text in p.files.items():          # as IolabTest writes them before submission
        (stage / file).write_text(text)
    return p, stage


def run_job(p, stage: Path, env: dict) -> subprocess.CompletedProcess:
    """The job's lines around the benchmark, which is replaced by printing its argv."""
    benchmark = "printf '%s\\0' " + " ".join([p.executable, *p.args]) + " > argv.bin"
    script = "\n".join([*p.prerun, benchmark, *p.postrun[:1]])
    clean = {k: v for k, v in os.environ.items() if k != VAR}
    return subprocess.run(["bash", "-c", script], cwd=stage, env={**clean, **env}, capture_output=True,
                          text=True, timeout=30)


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_the_benchmark_sees_the_path_mkdir_made(tmp_path, name):
    p, stage = planned(tmp_path, name)
    assert p.case_dir.startswith(BASE + "/")
    bb = tmp_path / "job only"
    bb.mkdir()
    done = run_job(p, stage, {VAR: str(bb)})
    assert done.returncode == 0, done.stderr
    case_dir = p.case_dir.replace(f"${VAR}", str(bb))
    assert (stage / "iolab-casedir.txt").read_text() == case_dir + "\n"
    argv = (stage / "argv.bin").read_text().split("\0")[:-1]
    assert not [a for a in argv if f"${VAR}" in a], argv
    texts = {f: (stage / f).read_text() for f in p.files}
    assert not [f for f, t in texts.items() if f"${VAR}" in t], "an input file kept the variable"
    assert Path(case_dir).is_dir()
    if name == "ior":
        assert argv[argv.index("-o") + 1] == f"{case_dir}/testfile"
    elif name == "mdtest":
        assert argv[argv.index("-d") + 1] == case_dir
    elif name == "h5bench":
        assert argv[-1] == f"{case_dir}/h5bench.h5"
    elif name == "h5bench-metadata":
        assert f"hdf5-file = {case_dir}/hdf5_iotest.h5\n" in texts["hdf5_iotest.ini"]
        assert texts["hdf5_iotest.ini"] == p.spec.files["hdf5_iotest.ini"].replace(f"${VAR}", str(bb))
    elif name == "btio":
        assert texts["inputbt.data"].splitlines()[4] == case_dir
        assert texts["inputbt.data"] == p.spec.files["inputbt.data"].replace(f"${VAR}", str(bb))
    elif name == "fio":
        # fio expands ${NAME} in its job file itself, from the environment the job exported
        jobfile = p.files["fio-job.fio"]
        assert f"directory=${{{VAR}}}/bb/" in jobfile
        assert f"export {VAR}" in p.prerun


def test_fio_expands_the_job_file_the_job_exported(tmp_path):
    """fio itself reads the case directory from the job file written before the job."""
    if not shutil_which("fio"):
        pytest.skip("fio is not installed")
    p, stage = planned(tmp_path, "fio")
    bb = tmp_path / "bb dir"
    bb.mkdir()
    fio = " ".join([p.executable, *p.args])
    script = "\n".join([*p.prerun, fio, *p.postrun[:1]])
    clean = {k: v for k, v in os.environ.items() if k != VAR}
    # set only in the job script, as a site's job environment does, not exported by the caller
    done = subprocess.run(["bash", "-c", f"{VAR}={shell.word(str(bb))}\n{script}"], cwd=stage,
                          env=clean, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (stage / "iolab-exit-code.txt").read_text() == "0\n", done.stderr
    case_dir = Path(p.case_dir.replace(f"${VAR}", str(bb)))
    assert [f.name for f in case_dir.iterdir()], "fio wrote its file into the expanded directory"
    assert not (stage / f"${VAR}").exists() and not (stage / f"${{{VAR}}}").exists()


def shutil_which(name):
    import shutil

    return shutil.which(name)


@pytest.mark.parametrize("name", ["ior", "btio"])
def test_a_variable_the_job_lacks_stops_it_before_anything_is_made(tmp_path, name):
    p, stage = planned(tmp_path, name)
    done = run_job(p, stage, {})
    assert done.returncode == shell.JOB_ERROR_EXIT
    reason = (stage / shell.JOB_ERROR_FILE).read_text()
    assert reason.startswith(f"the case directory {p.case_dir} needs ${VAR}, which is not set "
                             "in the job")
    assert not (stage / "argv.bin").exists() and not (stage / "bb").exists()


def test_an_expanded_line_too_long_for_the_program_stops_the_job(tmp_path):
    p, stage = planned(tmp_path, "h5bench-metadata")
    long = tmp_path / ("d" * 150)
    long.mkdir()
    done = run_job(p, stage, {VAR: str(long)})
    assert done.returncode == shell.JOB_ERROR_EXIT
    assert (stage / shell.JOB_ERROR_FILE).read_text().startswith(
        f"hdf5_iotest.ini: a line is longer than 198 characters once {p.case_dir} is expanded")


def test_only_the_path_becomes_live(tmp_path):
    """Hostile text around a job-time path, in an argument and in a file the job writes: the
    variable expands, nothing else runs."""
    markers = tmp_path / "m"
    markers.mkdir()
    live = f"${VAR}/x"
    for value in hostile(markers):
        arg = shell.JobPath(f"{live}/{value}")
        text = f"{value}\n{value} {live} {value}\n\n$HOME {live}\n"
        script = (f"printf '%s' {' '.join(shell.words([arg]))} > arg.txt\n"
                  + shell.write_file("in.txt", text, live))
        done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                              env={**os.environ, VAR: "/bb"}, timeout=30)
        assert done.returncode == 0, done.stderr
        # a variable in the path expands, as in the case directory (${IFS}: bash sets it itself)
        assert (tmp_path / "arg.txt").read_text() == f"/bb/x/{value}".replace("${IFS}", " \t\n")
        assert (tmp_path / "in.txt").read_text() == text.replace(live, "/bb/x")
    assert not list(markers.iterdir())
    assert shell.words(["$HOME/x"]) == ["'$HOME/x'"], "an argument not marked stays literal"


def test_braced_and_variables():
    assert shell.braced("$A/b/${C}x/$D_1") == "${A}/b/${C}x/${D_1}"
    assert shell.variables("$A/${B}/$A/$(c)") == ["A", "B"]
