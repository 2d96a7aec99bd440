"""Real `reframe -r` runs under hostile input, broken experiments, concurrency and signals.

Each test runs ReFrame for real on this machine (the `local` systems), with the test stand-ins
only where a benchmark binary is absent.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import REFRAME, REPO, have, iolab, make_project, only_run, records, reframe, sigint_default

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not have("mpirun"), reason="mpirun (Open MPI) is not installed"),
              pytest.mark.skipif(not have("fio"), reason="fio is not installed")]


def _config(root: Path, name: str = "local") -> str:
    return str(root / "reframe" / "config" / f"{name}.py")


def _hostile(marker_dir: Path) -> list[str]:
    """Strings that would run a command (each touching a marker file) if a shell read them."""
    m = marker_dir
    return [f"; touch {m}/semicolon ;", f"$(touch {m}/dollar)", f"`touch {m}/backtick`",
            f"' ; touch {m}/squote ; '", f'" ; touch {m}/dquote ; "', f"&& touch {m}/and",
            f"| touch {m}/pipe", f"$(touch${{IFS}}{m}/ifs)", f"> {m}/redirect"]


def _yaml_list(values: list[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def test_hostile_strings_never_reach_a_shell(rfm_env, tmp_path):
    """Every string field that reaches a job script carries ;, $(), backticks, quotes: a real
    reframe -r runs them, and no marker file appears; the benchmark gets each one literally."""
    markers = tmp_path / "markers"
    markers.mkdir()
    evil = _hostile(markers)
    fio_args = [f"--description={v}" for v in evil]
    fio = f"""\
id: evil-fio
description: "hostile $(touch {markers}/description) `touch {markers}/descr2`"
source: "; touch {markers}/source"
benchmark: fio
fixed: {{size: 64KiB, bs: 4KiB, extra_args: {_yaml_list(fio_args)}}}
"""
    ior = f"""\
id: evil-ior
description: hostile hint values and IOR arguments
benchmark: ior
scale: {{nodes: 1, tasks_per_node: 2}}
fixed: {{api: MPIIO, transfer_size: 1MiB, block_size: 2MiB,
        extra_args: ["-O", {json.dumps("minTimeDuration=" + evil[1])}],
        mpiio.cb_config_list: {json.dumps(evil[7])},
        mpiio.romio_my_hint: {json.dumps(evil[7].replace("ifs", "hint"))}}}
"""
    root = make_project(tmp_path, {"evil-fio": fio, "evil-ior": ior})
    env = dict(rfm_env, IOLAB_SCRATCH=str(tmp_path / "scratch" / f"x$(touch {markers}/scratch)"),
               IOLAB_NODE_LOCAL=f"/tmp/`touch {markers}/nodelocal`")
    out = reframe(["-r", "-n", "evil_fio", "-n", "evil_ior"], env, cwd=root,
                  config=_config(root, "local-romio"))
    assert not list(markers.iterdir()), (list(markers.iterdir()), out.stdout[-3000:])

    (fio_rec,) = records(only_run(tmp_path / "results", "evil-fio"))
    assert fio_rec["provenance"]["case_dir"].startswith(str(tmp_path / "scratch" / "x$(touch"))
    argv = shlex.split(fio_rec["provenance"]["command"])   # as the job's shell split it
    start = argv.index(fio_args[0])
    assert argv[start:start + len(fio_args)] == fio_args, "each value is one argument, as written"
    (ior_rec, *_rest) = records(only_run(tmp_path / "results", "evil-ior"))
    if (tmp_path / "standin-bin" / "ior").exists():
        logged = [json.loads(line) for line in (tmp_path / "ior-args.log").read_text().splitlines()]
        assert logged and all(["-O", "minTimeDuration=" + evil[1]] == a[-2:] for a in logged), logged
        stage = only_run(tmp_path / "results", "evil-ior") / ior_rec["raw"]["dir"]
        hints = (stage / "iolab-romio-hints.txt").read_text()
        assert f"cb_config_list {evil[7]}\n" in hints
        assert f"romio_my_hint {evil[7].replace('ifs', 'hint')}\n" in hints


@pytest.mark.parametrize("field,value", [
    ("job", "{extra_directives: [\"#SBATCH --comment=x\\ntouch MARK\"]}"),
    ("job", "{resources: {datawarp: {capacity: \"1GiB\\ntouch MARK\"}}}"),
    ("description", "\"x\"\nfixed: {size: 64KiB, bs: 4KiB, extra_args: [\"a\\nb\"]}"),
])
def test_newlines_in_job_fields_are_refused_before_anything_runs(rfm_env, tmp_path, field, value):
    text = f"id: nl\ndescription: newline\nbenchmark: fio\n{field}: {value}\n"
    if field != "description":
        text += "fixed: {size: 64KiB, bs: 4KiB}\n"
    else:
        text = "id: nl\nbenchmark: fio\ndescription: " + value + "\n"
    root = make_project(tmp_path, {"nl": text})
    out = reframe(["-r", "-n", "nl"], rfm_env, cwd=root, config=_config(root))
    assert out.returncode == 1, out.stdout[-3000:]
    assert "cannot run" in out.stdout and "PASSED" not in out.stdout
    assert not (tmp_path / "results").exists() or not list((tmp_path / "results").rglob("records.jsonl"))


DIRECTIVE_ON_LOCAL = """\
id: needs-sbatch
description: a Slurm directive, run where there is no Slurm
benchmark: fio
job: {extra_directives: ["#SBATCH --constraint=nvme"]}
fixed: {size: 64KiB, bs: 4KiB}
"""

RESOURCE_ON_LOCAL = """\
id: needs-datawarp
description: a partition resource this partition does not define
benchmark: fio
job: {resources: {datawarp: {capacity: 1GiB}}}
fixed: {size: 64KiB, bs: 4KiB}
"""


@pytest.mark.parametrize("exp_id,text,words", [
    ("needs-sbatch", DIRECTIVE_ON_LOCAL, "'#SBATCH --constraint=nvme' cannot be applied on local:default"),
    ("needs-datawarp", RESOURCE_ON_LOCAL, "local:default defines no resource 'datawarp'"),
])
def test_job_settings_a_partition_would_drop_fail_the_case(rfm_env, tmp_path, exp_id, text, words):
    root = make_project(tmp_path, {exp_id: text})
    out = reframe(["-r", "-n", exp_id.replace("-", "_")], rfm_env, cwd=root, config=_config(root))
    assert out.returncode == 1 and words in out.stdout, out.stdout[-3000:]
    (rec,) = records(only_run(tmp_path / "results", exp_id))
    assert rec["status"] == "failed" and words in rec["error"]


GOOD = """\
id: good
description: a small fio write
benchmark: fio
fixed: {size: 64KiB, bs: 4KiB}
"""


def test_a_broken_experiment_fails_the_run_and_the_others_still_load(rfm_env, tmp_path):
    broken = GOOD.replace("id: good", "id: broken").replace("bs: 4KiB", "bz: 4KiB")
    root = make_project(tmp_path, {"good": GOOD, "broken": broken})
    out = reframe(["-r", "-n", "broken"], rfm_env, cwd=root, config=_config(root))
    assert out.returncode == 1, out.stdout[-3000:]
    assert "broken.yaml:4: fixed.bz: unknown parameter 'bz' for fio" in out.stdout
    assert "Ran 1/1" in out.stdout and "PASSED" not in out.stdout
    listed = reframe(["-l"], rfm_env, cwd=root, config=_config(root))
    assert "good %case=" in listed.stdout and "cannot run: " in listed.stdout

    ok = reframe(["-r", "-n", "^good"], rfm_env, cwd=root, config=_config(root))
    assert ok.returncode == 0, ok.stdout[-3000:]
    assert [r["status"] for r in records(only_run(tmp_path / "results", "good"))] == ["ok"]


# Runs ReFrame's command line in-process, counting what the loader costs: ReFrame's deprecation
# path (inspect.stack) and reads of each experiment YAML.
PROBE = """\
import atexit, collections, inspect, sys
from pathlib import Path
import iolab.experiment.load
calls, loads = [0], collections.Counter()
real_stack, real_load = inspect.stack, iolab.experiment.load.load_experiment
def stack(*a, **k):
    calls[0] += 1
    return real_stack(*a, **k)
def load(path, *a, **k):
    loads[Path(path).name] += 1
    return real_load(path, *a, **k)
inspect.stack, iolab.experiment.load.load_experiment = stack, load
atexit.register(lambda: print(f"PROBE {calls[0]} {dict(loads)}"))
from reframe.frontend.cli import main
sys.argv[0] = "reframe"
sys.exit(main())
"""


def _probe(root: Path, env: dict, args: list[str]) -> tuple[subprocess.CompletedProcess, int, dict]:
    probe = root / "probe.py"
    probe.write_text(PROBE)
    out = subprocess.run([str(Path(REFRAME).with_name("python")), str(probe), "-C", _config(root),
                          "-c", "reframe/", "-R", *args], cwd=root, env=env, capture_output=True,
                         text=True, timeout=600)
    line = next(line for line in out.stdout.splitlines() if line.startswith("PROBE "))
    _, calls, loads = line.split(" ", 2)
    return out, int(calls), eval(loads)  # noqa: S307 - our own probe's dict of counts


def test_reframe_builds_only_the_selected_experiments_and_reads_each_yaml_once(rfm_env, tmp_path):
    broken = GOOD.replace("id: good", "id: broken").replace("bs: 4KiB", "bz: 4KiB")
    many = GOOD.replace("id: good", "id: many") + "matrix: {bs: [4KiB, 8KiB, 16KiB]}\nrepetitions: 3\n"
    many = many.replace("fixed: {size: 64KiB, bs: 4KiB}", "fixed: {size: 64KiB}")
    root = make_project(tmp_path, {"good": GOOD, "broken": broken, "many": many})
    one, one_calls, one_loads = _probe(root, rfm_env, ["-l", "-n", "^good\\b"])
    assert "Found 1 check(s)" in one.stdout, one.stdout[-3000:]
    assert "cannot run" not in one.stdout, "the broken experiment was not selected, so not loaded"
    assert one_loads == {"good.yaml": 1}
    nine, nine_calls, nine_loads = _probe(root, rfm_env, ["-l", "-n", "many"])
    assert "Found 9 check(s)" in nine.stdout and nine_loads == {"many.yaml": 1}
    # ReFrame's deprecated `variables` alias walks the stack for each test that has it: iolab's
    # tests do not, so nine tests cost what one does (ReFrame's own classes warn once at import).
    assert nine_calls == one_calls < 9
    everything, _, loads = _probe(root, rfm_env, ["-l"])
    assert "Found 11 check(s)" in everything.stdout and "cannot run" in everything.stdout
    assert loads == {"good.yaml": 1, "broken.yaml": 1, "many.yaml": 1}
    # reframe/experiments.py and the generated shims (now written) both load: still one read each
    _, _, loads = _probe(root, rfm_env, ["-l", "-n", "good", "-n", "many"])
    assert loads == {"good.yaml": 1, "many.yaml": 1}

    only = reframe(["-l"], dict(rfm_env, IOLAB_EXPERIMENTS="many"), cwd=root, config=_config(root))
    assert "Found 9 check(s)" in only.stdout and "good %case" not in only.stdout
    unknown = reframe(["-r"], dict(rfm_env, IOLAB_EXPERIMENTS="good,nosuch"), cwd=root, config=_config(root))
    assert unknown.returncode == 1 and "PASSED" not in unknown.stdout
    assert "IOLAB_EXPERIMENTS names 'nosuch', which is not an experiment" in unknown.stdout
    log = (tmp_path / "rfm" / "reframe.log").read_text()
    assert "info: " in log and "debug: " not in log, "the shipped configs log at info unless asked"
    reframe(["-l", "-n", "good", "-v"], rfm_env, cwd=root, config=_config(root))
    assert "debug: " in (tmp_path / "rfm" / "reframe.log").read_text()


def test_an_unknown_profile_fails_the_run(rfm_env, tmp_path):
    text = GOOD + "profiles:\n  local: {fixed: {size: 32KiB}}\n"
    root = make_project(tmp_path, {"good": text})
    out = reframe(["-r", "-n", "good"], dict(rfm_env, IOLAB_PROFILE="lcoal"), cwd=root, config=_config(root))
    assert out.returncode == 1
    assert "no profile 'lcoal' in this experiment (profiles: local)" in out.stdout


def test_a_misconfigured_stack_fails_the_run(rfm_env, tmp_path):
    root = make_project(tmp_path, {"good": GOOD})
    config = root / "reframe" / "config" / "badstack.py"
    config.write_text("from iolab.rfm.systems import local_system\n"
                      "site_configuration = local_system('badstack', 'openmpi-ompio', 'x')\n"
                      "site_configuration['systems'][0]['partitions'][0]['extras']['iolab']['stack'] = "
                      "{'provider': 'spak'}\n")
    out = reframe(["-r", "-n", "good"], rfm_env, cwd=root, config=str(config))
    assert out.returncode == 1, out.stdout[-3000:]
    # refused when the tests load, before any case is planned (no run, nothing measured to lose)
    assert (f"{config}:3: extras['iolab'].stack.provider: 'spak' is not allowed "
            "(did you mean 'spack'?" in out.stdout)
    assert "PASSED" not in out.stdout and not (tmp_path / "results" / "good").exists()


def test_failure_reasons_quote_the_benchmark_and_the_system(rfm_env, tmp_path):
    bad_engine = GOOD.replace("id: good", "id: bad-engine").replace("bs: 4KiB", "bs: 4KiB, ioengine: nope")
    root = make_project(tmp_path, {"bad-engine": bad_engine, "good": GOOD})
    out = reframe(["-r", "-n", "bad_engine"], rfm_env, cwd=root, config=_config(root))
    assert out.returncode == 1
    (rec,) = records(only_run(tmp_path / "results", "bad-engine"))
    assert rec["error"].startswith("fio exited with status 1: fio: engine nope not loadable"), rec["error"]

    # a scratch root that is a file: the case directory cannot be made, the benchmark never runs
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    out = reframe(["-r", "-n", "^good"], dict(rfm_env, IOLAB_SCRATCH=str(blocker)), cwd=root,
                  config=_config(root))
    assert out.returncode == 1
    (rec,) = records(only_run(tmp_path / "results", "good"))
    assert rec["error"].startswith(f"cannot create the case directory {blocker}/good/"), rec["error"]
    assert "Not a directory" in rec["error"]
    raw = only_run(tmp_path / "results", "good") / rec["raw"]["dir"]
    assert not (raw / "fio.json").exists()


def _mounted_tmpfs(path: Path, size: str) -> bool:
    path.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, text=True)
    return done.returncode == 0


def test_a_full_scratch_disk_is_named_in_the_reason(rfm_env, tmp_path):
    scratch = tmp_path / "small"
    if os.geteuid() != 0 or not _mounted_tmpfs(scratch, "1m"):
        pytest.skip("mounting a tmpfs needs root (and a kernel that allows it)")
    try:
        big = GOOD.replace("id: good", "id: too-big").replace("size: 64KiB", "size: 8MiB")
        root = make_project(tmp_path, {"too-big": big})
        out = reframe(["-r", "-n", "too_big"], dict(rfm_env, IOLAB_SCRATCH=str(scratch)), cwd=root,
                      config=_config(root))
        assert out.returncode == 1
        (rec,) = records(only_run(tmp_path / "results", "too-big"))
        assert rec["status"] == "failed"
        assert "no space left on the device (ENOSPC)" in rec["error"], rec["error"]
        assert "fio" in rec["error"]
        assert not any(p.is_file() for p in scratch.rglob("*")), "the case's data was cleaned up"
    finally:
        subprocess.run(["umount", str(scratch)], check=False)


def test_two_concurrent_runs_of_one_experiment_keep_to_themselves(rfm_env, tmp_path):
    # 4 s a job (64 KiB at 16 KiB/s): the second session starts once the first has recorded a
    # job, so it arrives while the first still measures however slowly either starts (started
    # together, a loaded machine once let the first end before the second reached the lock)
    text = GOOD.replace("fixed:", "repetitions: 3\nmatrix: {rw: [write, randwrite]}\nfixed:").replace(
        "bs: 4KiB}", 'bs: 4KiB, extra_args: ["--rate=16k"]}')
    root = make_project(tmp_path, {"good": text})
    cmd = [REFRAME, "-C", _config(root), "-c", "reframe/", "-R", "-r", "-n", "good"]

    def start():
        return subprocess.Popen(cmd, cwd=root, env=rfm_env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)

    procs = [start()]
    deadline = time.monotonic() + 300
    while not any(p.stat().st_size for p in (tmp_path / "results").glob("good/*/records.jsonl")):
        assert procs[0].poll() is None and time.monotonic() < deadline, "the first run recorded nothing"
        time.sleep(0.2)
    procs.append(start())
    outs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[-2000:] for o in outs]
    runs = sorted(p for p in (tmp_path / "results" / "good").iterdir() if p.is_dir())
    assert len(runs) == 2
    stages = set()
    for run in runs:
        recs = records(run)
        assert len(recs) == 6 and all(r["status"] == "ok" for r in recs)
        assert {(r["case_id"], r["repetition"]) for r in recs} == {
            (c, n) for c in {r["case_id"] for r in recs} for n in (1, 2, 3)}
        for r in recs:
            assert run.name in r["provenance"]["case_dir"]
            stored = (run / r["raw"]["dir"] / "rfm_job.sh").read_text()
            assert run.name in stored and not any(o.name in stored for o in runs if o != run)
            stages.add(str(Path(r["provenance"]["stagedir"]).parents[4]))
        assert json.loads((run / "manifest.json").read_text())["finished"]["complete"] is True
    assert len(stages) == 2, "each ReFrame session stages in its own directory"
    # and they never measured at the same time: one waited for the other (rfm/measuring.py);
    # they had run their jobs side by side, each record saying nothing of it
    spans = [[(r["provenance"]["timing"]["benchmark_start"], r["provenance"]["timing"]["benchmark_end"])
              for r in records(run)] for run in runs]
    first, second = sorted(spans, key=min)
    assert max(end for _, end in first) <= min(start for start, _ in second), spans
    assert sum("waiting for it to end, so that no measurement overlaps another" in o for o in outs) == 1


SLOW = """\
id: slow
description: fio throttled to 1 MiB/s, so a signal arrives while it writes
benchmark: fio
repetitions: 2
matrix: {rw: [write, randwrite]}
fixed: {size: 64MiB, bs: 64KiB, extra_args: ["--rate=1m"]}
"""


def _processes_under(root: Path) -> list[str]:
    """Processes whose working directory or command line is inside root (a job's stage dir)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cwd = os.readlink(proc / "cwd")
            args = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cwd.startswith(str(root)) or str(root) in args:
            found.append(f"{proc.name}: {args}")
    return found


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_records_every_planned_case(rfm_env, tmp_path, signum):
    root = make_project(tmp_path, {"slow": SLOW})
    cmd = [REFRAME, "-C", _config(root), "-c", "reframe/", "-R", "-r", "-n", "slow"]
    proc = subprocess.Popen(cmd, cwd=root, env=rfm_env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, preexec_fn=sigint_default)
    scratch = tmp_path / "scratch" / "slow"
    deadline = time.monotonic() + 300   # a loaded 2-core machine starts slowly
    while not any(p.is_file() for p in scratch.rglob("*")):      # fio has started writing
        assert time.monotonic() < deadline and proc.poll() is None, "fio never started"
        time.sleep(0.1)
    time.sleep(1)
    (lock,) = (tmp_path / "results" / "slow").glob("*/run.lock")     # its writer holds it
    proc.send_signal(signum)
    out = proc.communicate(timeout=180)[0]
    assert proc.returncode != 0, out[-2000:]

    run = only_run(tmp_path / "results", "slow")
    assert not lock.exists()        # given up however the run ended
    recs = records(run)
    manifest = json.loads((run / "manifest.json").read_text())
    planned = {(p["case_id"], p["repetition"]) for p in manifest["planned"]}
    assert len(planned) == 4 and {(r["case_id"], r["repetition"]) for r in recs} == planned
    assert all(r["status"] == "aborted" for r in recs), [r["status"] for r in recs]
    assert {r["error"] for r in recs} == {f"interrupted by {signum.name}"}
    assert manifest["finished"]["complete"] is False
    assert manifest["finished"]["reason"] == f"interrupted by {signum.name}"
    # the job that was running was stopped whole, and its data removed
    assert not _processes_under(tmp_path / "rfm"), _processes_under(tmp_path / "rfm")
    assert not any(p.is_file() for p in scratch.rglob("*"))


ONE_BAD_CELL = """\
id: one-bad-cell
description: one combination of the matrix cannot run
benchmark: ior
scale: {nodes: 1, tasks_per_node: 2}
fixed: {transfer_size: 2MiB}
matrix:
  block_size: [4MiB, 3MiB]
"""


def test_an_invalid_cell_is_named_by_validate_and_fails_the_run(rfm_env, tmp_path):
    root = make_project(tmp_path, {"one-bad-cell": ONE_BAD_CELL})
    checked = iolab(["validate", str(root / "experiments" / "one-bad-cell.yaml")], rfm_env)
    assert checked.returncode == 2
    assert "(block_size=3MiB): block_size (3145728) must be a multiple of transfer_size" in checked.stderr
    out = reframe(["-r", "-n", "one_bad_cell"], rfm_env, cwd=root, config=_config(root))
    assert out.returncode == 1 and "block_size=3MiB" in out.stdout and "PASSED" not in out.stdout


def test_iolab_work_never_overlaps_a_benchmark(rfm_env, tmp_path):
    """Parsing, read-back and recording of a case end before the next case's benchmark starts
    (ReFrame's default asynchronous policy, one job slot): from the run's own timestamps."""
    out = reframe(["-r", "-n", "quickstart"], rfm_env)
    assert out.returncode == 0, out.stdout[-3000:]
    recs = records(only_run(tmp_path / "results", "quickstart"))
    spans = sorted((r["provenance"]["timing"] for r in recs), key=lambda t: t["benchmark_start"])
    assert len(spans) == len(recs) >= 2
    for t in spans:
        assert t["benchmark_start"] < t["benchmark_end"] <= t["postprocess_start"] <= t["recorded"]
    for before, after in zip(spans, spans[1:]):
        assert before["recorded"] <= after["benchmark_start"], (before, after)


def test_a_selection_that_matches_nothing_fails_the_run(rfm_env, tmp_path):
    out = reframe(["-r", "-n", "quickstrt"], rfm_env)
    assert out.returncode == 1 and "PASSED" not in out.stdout
    assert "nothing to run" in out.stdout and "quickstart" in out.stdout


def test_a_misspelt_experiment_id_names_the_tests_to_select(rfm_env):
    """-n takes the id as written or ReFrame's test name (test_select_names.py); a misspelt id
    selects nothing, and the error names both forms of every experiment."""
    out = reframe(["-r", "-n", "cp2k-agregators"], rfm_env)
    assert out.returncode == 1 and "PASSED" not in out.stdout
    assert "cp2k-aggregators (-n cp2k_aggregators)" in out.stdout, out.stdout[-2000:]


def test_a_full_results_disk_loses_no_record_and_fails_the_run(rfm_env, tmp_path):
    """records.jsonl on a tiny tmpfs: what does not fit goes whole to a fallback file, the run
    fails saying where, and every planned job has exactly one record between the two files."""
    results = tmp_path / "small-results"
    if os.geteuid() != 0 or not _mounted_tmpfs(results, "96k"):
        pytest.skip("mounting a tmpfs needs root (and a kernel that allows it)")
    spill = tmp_path / "spill"
    spill.mkdir()
    try:
        env = dict(rfm_env, IOLAB_RESULTS=str(results), TMPDIR=str(spill))
        out = reframe(["-r", "-n", "quickstart"], env)
        assert out.returncode == 1, out.stdout[-3000:]
        assert "results could not all be written" in out.stdout and "Nothing is lost" in out.stdout
        (run,) = [p for p in (results / "quickstart").iterdir() if p.is_dir()]
        kept = (run / "records.jsonl").read_text()
        assert kept == "" or kept.endswith("\n")
        spilled = [line for f in spill.glob("*unsaved*.jsonl") for line in f.read_text().splitlines()]
        recs = [json.loads(line) for line in kept.splitlines() + spilled]
        manifest = json.loads((run / "manifest.json").read_text())
        planned = manifest["planned"]
        assert sorted((r["case_id"], r["repetition"]) for r in recs) == \
            sorted((p["case_id"], p["repetition"]) for p in planned)
        # the records are safe, so the run ended, naming where they are (issue 23)
        fallbacks = sorted(str(f) for f in spill.glob("*unsaved*.jsonl"))
        finished = manifest["finished"]
        assert finished["complete"] is False and finished["complete_once_merged"] is True
        assert finished["unsaved"] == fallbacks and not (run / "run.lock").exists()
        cli_env = dict(env, IOLAB_ROOT=str(REPO))
        out = iolab(["runs", "quickstart"], cli_env)
        assert "incomplete" in out.stdout and f"unmerged: {', '.join(fallbacks)}" in out.stdout, \
            out.stdout + out.stderr
        # the README's merge once there is space: the run is complete
        subprocess.run(["mount", "-o", "remount,size=4m", str(results)], check=True)
        for f in fallbacks:
            subprocess.run(f"cat {f} >> {run / 'records.jsonl'} && rm {f}", shell=True, check=True)
        out = iolab(["runs", "quickstart"], cli_env)
        assert "  complete" in out.stdout and "unmerged" not in out.stdout, out.stdout + out.stderr
    finally:
        subprocess.run(["umount", str(results)], check=False)


def test_the_reframe_loader_takes_the_whole_hostile_corpus(rfm_env, tmp_path):
    """Every hostile file at once in one project's experiments/: ReFrame lists (and would fail)
    each broken one by name, with its message, and lists the valid ones as tests. No traceback,
    no hang."""
    hostile = sorted((Path(__file__).resolve().parents[1] / "data" / "hostile").glob("*.yaml"))
    # valid, and 10,000 cases: ReFrame's own listing of that many tests takes a minute (issue 14)
    hostile = [p for p in hostile if p.stem != "matrix-at-limit"]
    assert len(hostile) >= 40
    root = make_project(tmp_path, {})
    for path in hostile:
        shutil.copy(path, root / "experiments" / path.name)
    started = time.monotonic()
    out = reframe(["-l"], rfm_env, cwd=root, config=_config(root))
    elapsed = time.monotonic() - started
    assert out.returncode == 0, out.stdout[-3000:]
    assert "Traceback" not in out.stdout + out.stderr
    assert elapsed < 5 * len(hostile)
    for path in hostile:
        broken = f"iolab: experiment {path.stem} cannot run:" in out.stdout
        listed = f"- {path.stem.replace('-', '_')} %case=" in out.stdout
        assert broken or listed, path.name
    failed = reframe(["-r", "-n", "alias_bomb"], rfm_env, cwd=root, config=_config(root))
    assert failed.returncode == 1 and "more than 100000 values" in failed.stdout


STRIPING_HINTS = """\
id: striping-hints
description: ROMIO's striping hints on whatever file system the scratch root is on
benchmark: ior
scale: {nodes: 1, tasks_per_node: 2}
fixed: {api: MPIIO, collective: true, transfer_size: 1MiB, block_size: 2MiB, mpiio.striping_unit: 1MiB,
        mpiio.striping_factor: 2}
"""


def test_striping_hints_off_lustre_are_not_applied_whatever_romio_echoes(rfm_env, tmp_path):
    from iolab.layers.storage.base import detect_fstype

    if detect_fstype(tmp_path) == "lustre":
        pytest.skip("the scratch root is on Lustre here")
    root = make_project(tmp_path, {"striping-hints": STRIPING_HINTS})
    out = reframe(["-r", "-n", "striping_hints"], rfm_env, cwd=root, config=_config(root, "local-romio"))
    assert out.returncode == 0, out.stdout[-3000:]
    (rec,) = records(only_run(tmp_path / "results", "striping-hints"))
    fstype = rec["observed"]["lustre"]["fs_type"]
    status = {c["key"]: c for c in rec["observed"]["mpiio_hints"]["comparison"]}
    for key in ("striping_unit", "striping_factor"):
        assert status[key]["status"] == "not applied", status[key]
        assert status[key]["reason"].startswith(f"{fstype}: no striping")
        assert f"hint {key} not applied: {fstype}: no striping" in " ".join(rec["flags"])
    table = iolab(["table", "striping-hints"], rfm_env, cwd=root)
    assert "hint striping_unit not applied" in table.stdout
