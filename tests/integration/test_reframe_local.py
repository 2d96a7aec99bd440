"""End to end: experiment YAML -> ReFrame on the local system -> results -> table."""

from __future__ import annotations

import json
import os

import pytest

from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand

from .conftest import REPO, check_replay_flag, have, iolab, make_project, only_run, records, reframe, without

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not have("mpirun"), reason="mpirun (Open MPI) is not installed"),
              pytest.mark.skipif(not have("fio"), reason="fio is not installed")]


def test_quickstart_runs_and_publishes_a_table(rfm_env, tmp_path):
    out = reframe(["-r", "-n", "quickstart"], rfm_env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    run = only_run(tmp_path / "results", "quickstart")
    recs = records(run)
    exp = load_experiment(REPO / "experiments" / "quickstart.yaml", "local")
    assert exp.profiles == ["local", "full"]
    cases = expand(exp)
    # the local profile is the experiment as written: its cases (and recordings) are the base's
    assert [c.case_id for c in cases] == [c.case_id for c in expand(
        load_experiment(REPO / "experiments" / "quickstart.yaml"))]
    assert all(r["profile"] == "local" for r in recs)
    assert len(recs) == len(cases) * exp.repetitions
    assert {r["case_id"] for r in recs} == {c.case_id for c in cases}
    assert all(r["status"] == "ok" for r in recs), [r["error"] for r in recs]

    for rec in recs:
        bw = {m["name"]: m for m in rec["metrics"]}["write_bw"]
        assert bw["value"] > 0 and bw["unit"] == "MiB/s"
        prov = rec["provenance"]
        assert prov["system"] == "local:default" and prov["jobid"] and prov["nodelist"]
        assert prov["binary"]["path"].endswith(rec["benchmark"])
        assert prov["binary"]["version"]
        # every raw output is stored with its checksum
        for name in ("rfm_job.sh", "rfm_job.out"):
            assert (run / rec["raw"]["dir"] / name).is_file()
        assert rec["observed"]["lustre"]["fs_type"]
        if rec["benchmark"] == "ior":
            check_replay_flag(rec, tmp_path)
            assert prov["command"].startswith("mpirun -np 2 ior -a ")
            assert "-O summaryFormat=JSON -O summaryFile=ior-summary.json" in prov["command"]
            assert {m["source"] for m in rec["metrics"]} == {"ior-json"}
        else:
            assert "fio --output-format=json" in prov["command"]
            assert (run / rec["raw"]["dir"] / "fio.json").is_file()

    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["experiment_yaml"] == (REPO / "experiments" / "quickstart.yaml").read_text()
    assert manifest["profile"] == "local" and manifest["origin"] == "reframe"
    assert "IOLAB_YAML_SHA256" in manifest["shim"]

    # data files were removed from scratch after each case
    scratch = tmp_path / "scratch" / "quickstart" / run.name
    assert not any(p.is_file() for p in scratch.rglob("*"))

    if (tmp_path / "standin-bin" / "ior").exists():
        logged = [json.loads(line) for line in (tmp_path / "ior-args.log").read_text().splitlines()]
        assert logged and all("-U" not in a and "-v" not in a for a in logged)

    table = iolab(["table", "quickstart"], rfm_env)
    assert table.returncode == 0, table.stderr
    assert "Mean Write Bandwidth ± 95% CI (MiB/s)" in table.stdout
    replayed = (tmp_path / "standin-bin" / "ior").exists()
    assert ("replayed by a test stand-in: not a measurement" in table.stdout) == replayed

    # ReFrame's own results database groups by iolab's parameters (README's example)
    spec = "now-1h:now/now-1h:now/mean:iolab_experiment,rw,bs,pvar,punit/+psamples"
    cmp = reframe([f"--performance-compare={spec}", "--table-format=csv"], rfm_env)
    rows = [line.split(",") for line in cmp.stdout.splitlines() if line.startswith("quickstart,")]
    # r[1] empty (ReFrame 4.10) or None (4.9): IOR, which has no rw
    bw = {(r[1], r[2]): r for r in rows if r[3] == "write_bw" and r[1] not in ("", "None")}
    assert set(bw) == {("write", "4096"), ("write", "1048576"), ("randwrite", "4096"),
                       ("randwrite", "1048576")}, cmp.stdout[-2000:]
    # psamples of both periods (ReFrame 4.9 and 4.10 place them in other columns)
    assert all([c.strip() for c in r[5:]].count("2") == 2 for r in bw.values()), \
        "both repetitions in each group"
    assert "| POSIX |" in table.stdout and "| MPIIO |" in table.stdout


def test_missing_benchmark_is_skipped_with_its_name(rfm_env, tmp_path):
    rfm_env.update(without(rfm_env, "ior"))
    exp = load_experiment(REPO / "experiments" / "quickstart.yaml")
    names = [f"quickstart%case={c.case_id}" for c in expand(exp) if c.benchmark == "ior"]
    out = reframe(["-r", *[a for n in names for a in ("-n", n)]], rfm_env)
    # nothing the user asked for could run: the run says why and fails
    assert out.returncode == 1, out.stdout[-3000:]
    assert "not found on PATH" in out.stdout and "PASSED" not in out.stdout
    run = only_run(tmp_path / "results", "quickstart")
    recs = records(run)
    assert recs and all(r["status"] == "skipped" for r in recs)
    assert all("'ior'" in r["error"] for r in recs)
    for rec in recs:   # the command it would have run, in full
        command = rec["provenance"]["command"]
        assert command.startswith(f"mpirun -np {rec['params']['scale.tasks_per_node']} ior -a "), command
        assert f"-o {rec['provenance']['case_dir']}/testfile" in command
    manifest = json.loads((run / "manifest.json").read_text())
    assert len(manifest["planned"]) == len(recs) == len(names) * exp.repetitions
    assert manifest["finished"]["complete"] and manifest["finished"]["counts"] == {"skipped": len(recs)}


def test_archer_dry_run_shows_exact_command_lines(rfm_env, tmp_path):
    out = reframe(["--dry-run", "-n", "archer"], rfm_env)
    assert out.returncode == 0, out.stdout[-3000:]
    scripts = [p.read_text() for p in (tmp_path / "rfm").rglob("rfm_job.sh")]
    exp = load_experiment(REPO / "experiments" / "archer-fpp-vs-ssf.yaml", "local")
    assert len(scripts) == len(expand(exp)) * exp.repetitions
    text = "\n".join(scripts)
    assert "ior -a POSIX -b 16m -t 1m -s 1 -i 1 -F -e -w -o " in text
    assert "ior -a MPIIO -b 4m -t 1m -s 1 -i 1 -c -e -w -o " in text
    assert "lfs setstripe -c -1 -S 8M " in text
    assert "mpirun -np 4 --oversubscribe ior" in text or os.cpu_count() >= 4
    assert not (tmp_path / "results").exists(), "a dry run must not write results"


FIO_OK_AND_BROKEN = """\
id: fio-fail
description: one good case and one whose I/O engine does not exist
benchmark: fio
fixed: {size: 8MiB, bs: 1MiB}
matrix:
  ioengine: [psync, no_such_engine]
"""


FIO_TOO_SLOW = """\
id: fio-slow
description: throttled to 1 MiB/s, so it cannot finish within its time limit
benchmark: fio
job: {time_limit: 3s}
fixed: {size: 64MiB, bs: 1MiB, extra_args: ["--rate=1m"]}
"""


def test_failed_case_is_recorded_and_others_kept(rfm_env, tmp_path):
    root = make_project(tmp_path, {"fio-fail": FIO_OK_AND_BROKEN, "fio-slow": FIO_TOO_SLOW})
    out = reframe(["-r", "-n", "fio_fail", "-n", "fio_slow"], rfm_env, cwd=root,
                  config=str(root / "reframe" / "config" / "local.py"))
    assert out.returncode != 0
    (slow,) = records(only_run(tmp_path / "results", "fio-slow"))
    assert slow["status"] == "failed" and "timed out" in slow["error"]
    assert (only_run(tmp_path / "results", "fio-slow") / slow["raw"]["dir"] / "rfm_job.sh").is_file()
    assert not any(p.is_file() for p in (tmp_path / "scratch").rglob("*"))
    recs = records(only_run(tmp_path / "results", "fio-fail"))
    by_engine = {r["params"]["ioengine"]: r for r in recs}
    assert by_engine["psync"]["status"] == "ok"
    bad = by_engine["no_such_engine"]
    assert bad["status"] == "failed" and "fio exited with status" in bad["error"]
    assert bad["metrics"] == []
    table = iolab(["table", "fio-fail"], rfm_env)
    assert "1 failed" in table.stdout


def test_new_yaml_and_changed_yaml_regenerate_shims(rfm_env, tmp_path):
    text = FIO_OK_AND_BROKEN.replace("fio-fail", "shim-demo").replace(", no_such_engine", "")
    root = make_project(tmp_path, {"shim-demo": text})
    listed = reframe(["-l"], rfm_env, cwd=root, config=str(root / "reframe" / "config" / "local.py"))
    assert "shim_demo %case=" in listed.stdout, listed.stdout[-2000:]
    shim = root / "reframe" / "generated" / "shim_demo.py"
    first = shim.read_text()
    assert load_experiment(root / "experiments" / "shim-demo.yaml").sha256 in first

    (root / "experiments" / "shim-demo.yaml").write_text(text.replace("[psync]", "[psync, sync]"))
    env = dict(rfm_env, IOLAB_ROOT=str(root))
    check = iolab(["render", "--check"], env)
    assert check.returncode == 1 and "stale" in check.stdout
    listed = reframe(["-l"], rfm_env, cwd=root, config=str(root / "reframe" / "config" / "local.py"))
    assert listed.stdout.count("shim_demo %case=") == 2
    assert shim.read_text() != first
    assert iolab(["render", "--check"], env).returncode == 0


def test_slurm_dry_run_shows_directives_striping_and_hints(rfm_env, tmp_path):
    """What a cluster job script will contain, without a cluster: #DW lines, lfs setstripe,
    hint variables and the srun launch (no Slurm needs to be running for a dry run)."""
    out = reframe(["--dry-run", "-n", "nersc", "-n", "cp2k"], rfm_env,
                  config="reframe/config/localslurm.py")
    scripts = {p.parent.name: p.read_text() for p in (tmp_path / "rfm").rglob("rfm_job.sh")}
    bb = [t for n, t in scripts.items() if '"$DW_JOB_STRIPED"/nersc-burst-buffer/' in t]
    # the variable is live wherever the path goes: mkdir and IOR's -o alike, never single-quoted
    assert bb and not [t for t in bb if "'$DW_JOB_STRIPED" in t]
    assert all(' -o "$DW_JOB_STRIPED"/nersc-burst-buffer/' in t for t in bb)
    assert bb and all("#DW jobdw type=scratch capacity=1GiB access_mode=striped\n" in t for t in bb)
    assert all(t.index("#DW jobdw") < t.index("\nsrun ") for t in bb), "directives precede commands"
    scratch = [t for n, t in scripts.items() if n.startswith("nersc") and t not in bb]
    assert len(scratch) == 3 * 2 and all("lfs setstripe -c 1 -S 1M " in t and "#DW" not in t for t in scratch)
    # ompio: cb_nodes becomes its MCA parameter (the burst-buffer cases at 2 aggregators)
    assert {t.count("export OMPI_MCA_io_ompio_num_aggregators=2") for t in bb} == {0, 1}
    assert all("srun --mpi=pmix ior -a MPIIO" in t for t in bb + scratch)
    assert all("#SBATCH --partition=debug" in t for t in scripts.values())
    # cp2k's local profile sets cb_config_list *:*, which ompio cannot take: refused, with the reason
    assert not any(n.startswith("cp2k") for n in scripts)
    assert out.returncode != 0
    assert "ompio has no equivalent for cb_config_list" in out.stdout


def test_romio_hints_file_and_effective_hints_recorded(rfm_env, tmp_path):
    """Under ROMIO the hints go to a ROMIO_HINTS file and the ones in effect are read back."""
    out = reframe(["--dry-run", "-n", "cp2k"], rfm_env, config="reframe/config/local-romio.py")
    assert out.returncode == 0, out.stdout[-3000:]
    stages = [p.parent for p in (tmp_path / "rfm").rglob("rfm_job.sh")]
    assert stages
    for stage in stages:
        script = (stage / "rfm_job.sh").read_text()
        assert "export ROMIO_HINTS=iolab-romio-hints.txt" in script
        assert "export ROMIO_PRINT_HINTS=1" in script and "export OMPI_MCA_io=romio321" in script
        assert "--mpiio.showHints" in script
        hints = (stage / "iolab-romio-hints.txt").read_text().splitlines()
        assert any(line.startswith("cb_nodes ") for line in hints)


def test_cp2k_on_romio_records_effective_cb_nodes(rfm_env, tmp_path):
    out = reframe(["-r", "-n", "cp2k"], rfm_env, config="reframe/config/local-romio.py")
    assert out.returncode == 0, out.stdout[-3000:]
    recs = records(only_run(tmp_path / "results", "cp2k-aggregators"))
    assert recs and all(r["status"] == "ok" for r in recs)
    for rec in recs:
        check_replay_flag(rec, tmp_path)
        hints = rec["observed"]["mpiio_hints"]
        assert hints["flavour"] == "openmpi-romio" and hints["verify"] == "romio-print"
        # cb_config_list *:* (the post's Cray default) lets ROMIO keep every requested aggregator
        assert hints["requested"]["cb_config_list"] == "*:*"
        assert hints["effective"]["cb_nodes"] == hints["requested"]["cb_nodes"]
        assert not [f for f in rec["flags"] if f.startswith("hint ")]
    assert {r["params"]["mpiio.cb_nodes"] for r in recs} == {1, 2, 8}
    table = iolab(["table", "cp2k-aggregators"], rfm_env)
    assert "| cb_nodes | cb_nodes (effective) |" in table.stdout
    assert "| 8 | 8 |" in table.stdout


STRIPED_FIO = """\
id: striped-fio
description: a stripe request on whatever file system the scratch root is on
benchmark: fio
fixed: {size: 8MiB, bs: 1MiB}
matrix:
  lustre.stripe_count: [1, 4]
"""

HINTS_MUST_HOLD = """\
id: hints-must-hold
description: aggregator requests that must be honoured, or the case fails
benchmark: ior
scale: {nodes: 1, tasks_per_node: 4}
fixed: {api: MPIIO, collective: true, transfer_size: 1MiB, block_size: 4MiB, read: false}
matrix:
  mpiio.cb_nodes: [1, 4]
verify: {hints: fail}
"""


def test_stripes_off_lustre_are_recorded_as_not_applied(rfm_env, tmp_path):
    from iolab.layers.storage.base import detect_fstype

    root = make_project(tmp_path, {"striped-fio": STRIPED_FIO})
    out = reframe(["-r", "-n", "striped_fio"], rfm_env, cwd=root,
                  config=str(root / "reframe" / "config" / "local.py"))
    fstype = detect_fstype(tmp_path)
    if fstype == "lustre":
        pytest.skip("the scratch root is on Lustre here")
    assert out.returncode == 0, out.stdout[-3000:]
    recs = records(only_run(tmp_path / "results", "striped-fio"))
    for rec in recs:
        lay = rec["observed"]["lustre"]
        assert lay["applied"] is False and lay["reason"].endswith(": no striping")
        assert lay["requested"]["stripe_count"] == rec["params"]["lustre.stripe_count"]
        assert rec["status"] == "ok" and rec["flags"] == [f"striping not applied: {lay['reason']}"]
    table = iolab(["table", "striped-fio"], rfm_env).stdout
    assert f"† striping not applied: {recs[0]['observed']['lustre']['reason']}" in table
    assert table.count("| † |") == 2


def test_verify_hints_fail_fails_lowered_cases(rfm_env, tmp_path):
    root = make_project(tmp_path, {"hints-must-hold": HINTS_MUST_HOLD})
    out = reframe(["-r", "-n", "hints_must_hold"], rfm_env, cwd=root,
                  config=str(root / "reframe" / "config" / "local-romio.py"))
    assert out.returncode != 0
    recs = records(only_run(tmp_path / "results", "hints-must-hold"))
    by_cb = {r["params"]["mpiio.cb_nodes"]: r for r in recs}
    assert by_cb[1]["status"] == "ok"
    assert by_cb[4]["status"] == "failed"
    assert by_cb[4]["error"] == "MPI-IO hints not applied: cb_nodes requested 4, effective 1"
    assert by_cb[4]["metrics"], "the measured bandwidth is kept with the failed case"
