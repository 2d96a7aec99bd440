"""mdtest end to end: experiment YAML -> ReFrame on the local system -> records -> table. The real
mdtest runs where it is on PATH; elsewhere the stand-in of tests/bin replays real recordings."""

from __future__ import annotations

import json

import pytest

from iolab import benchmarks

from .conftest import (check_replay_flag, darshan_stack, have, iolab, make_project, need_darshan, only_run,
                       records, reframe)

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not have("mpirun"), reason="mpirun (Open MPI) is not installed")]

MDTEST_DEMO = """\
id: mdtest-demo
description: small files of 64 KiB in one directory per rank, and files and directories in a tree
benchmark: mdtest
repetitions: 1
scale: {nodes: 1, tasks_per_node: 2}
fixed: {items: 50, iterations: 2}
zip:
  entries: [files, both]
  unique_dir: [true, false]
  write_bytes: [64KiB, 0]
  read_bytes: [64KiB, 0]
  depth: [0, 2]
  branching: [1, 2]
"""


def test_mdtest_cases_run_end_to_end(rfm_env, tmp_path):
    rfm_env["MDTEST_STANDIN_LOG"] = str(tmp_path / "mdtest-args.log")
    root = make_project(tmp_path, {"mdtest-demo": MDTEST_DEMO})
    out = reframe(["-r", "-n", "mdtest_demo"], rfm_env, cwd=root,
                  config=str(root / "reframe" / "config" / "local.py"))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    run = only_run(tmp_path / "results", "mdtest-demo")
    recs = records(run)
    assert len(recs) == 2 and all(r["status"] == "ok" for r in recs), [r["error"] for r in recs]
    bench = benchmarks.get("mdtest")
    by_entries = {r["params"]["entries"]: r for r in recs}
    for rec in recs:
        check_replay_flag(rec, tmp_path)
        metrics = {m["name"]: m for m in rec["metrics"]}
        for name in ("file_create_rate", "file_stat_rate", "file_read_rate", "file_remove_rate",
                     "tree_create_rate", "tree_remove_rate"):
            assert metrics[name]["value"] > 0 and metrics[name]["unit"] == "ops/s", name
        assert {m["source"] for m in rec["metrics"]} == {"mdtest-text", "mdtest-csv"}
        assert all(bench.metric(n) and bench.metric(n).unit == m["unit"] for n, m in metrics.items())
        assert rec["provenance"]["binary"]["version"] == "4.0.0"
        command = rec["provenance"]["command"]
        assert command.startswith("mpirun -np 2 mdtest -n 50 ")
        assert f"-d {rec['provenance']['case_dir']} --saveRankPerformanceDetails=mdtest-ranks.csv" in command
        assert (run / rec["raw"]["dir"] / "mdtest-ranks.csv").is_file()
        # what mdtest said it ran was checked against the request
        assert rec["observed"]["benchmark"]["tasks"] == 2
    files = {m["name"] for m in by_entries["files"]["metrics"]}
    assert not any(n.startswith("dir_") for n in files)
    both = {m["name"]: m["value"] for m in by_entries["both"]["metrics"]}
    assert both["dir_create_rate"] > 0 and both["dir_remove_rate"] > 0
    assert " -F -u -w 65536 -e 65536 -C -T -E -r -i 2 " in by_entries["files"]["provenance"]["command"]
    assert " -z 2 -b 2 -C -T -E -r -i 2 " in by_entries["both"]["provenance"]["command"]
    # the case directory (mdtest's -d) was removed after each case
    assert not any(p.is_file() for p in (tmp_path / "scratch").rglob("*"))
    if (tmp_path / "standin-bin" / "mdtest").exists():
        logged = [json.loads(line) for line in (tmp_path / "mdtest-args.log").read_text().splitlines()]
        assert len(logged) == 2

    table = iolab(["table", "mdtest-demo"], dict(rfm_env, IOLAB_ROOT=str(root)))
    assert table.returncode == 0, table.stderr
    assert "File Create Rate" in table.stdout or "file_create_rate" in table.stdout, table.stdout
    assert "ops/s" in table.stdout


LIBDARSHAN, STACK_ENV = darshan_stack()

MDTEST_SMALL_FILES = """\
id: mdtest-small-files
description: 64 KiB files, one directory per rank, striped (not applied off Lustre)
benchmark: mdtest
repetitions: 1
scale: {nodes: 1, tasks_per_node: 2}
fixed: {items: 200, entries: files, unique_dir: true, write_bytes: 64KiB, read_bytes: 64KiB,
        lustre.stripe_count: 1}
"""


@need_darshan()
def test_mdtest_under_darshan_striping_and_metadata_findings(rfm_env, tmp_path):
    assert LIBDARSHAN is not None and LIBDARSHAN.exists(), "IOLAB_REQUIRE_STACK=1 but no libdarshan.so"
    rfm_env.update(IOLAB_DARSHAN="1", **STACK_ENV)
    root = make_project(tmp_path, {"mdtest-small-files": MDTEST_SMALL_FILES})
    out = reframe(["-r", "-n", "mdtest_small_files"], rfm_env, cwd=root,
                  config=str(root / "reframe" / "config" / "local.py"))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    (rec,) = records(only_run(tmp_path / "results", "mdtest-small-files"))
    assert rec["status"] == "ok", rec["error"]
    lay = rec["observed"]["lustre"]
    assert lay["requested"] == {"stripe_count": 1} and lay["applied"] is False
    assert lay["reason"] == f"{lay['fs_type']}: no striping" and lay["fs_type"] != "lustre"
    dar = rec["observed"]["darshan"]
    assert dar["status"] == "ok", dar.get("reason")
    posix = dar["summary"]["modules"]["POSIX"]
    # 200 files per rank, each opened to create and write, and again to read
    assert posix["files"] == 400 and posix["opens"] == 800
    assert posix["bytes_written"] == posix["bytes_read"] == 400 * 65536
    found = {f["rule"]: f for f in dar["findings"]}
    assert found["many_small_files"]["text"].startswith("400 files of 64.0 KiB on average")
    assert found["many_small_files"]["numbers"]["opens"] == 800
    if "metadata_time" in found:     # most of the time here, but a timing is not a certainty
        assert "800 opens" in found["metadata_time"]["text"]
