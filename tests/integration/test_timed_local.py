"""A time-based fio case through ReFrame on the local system: fio runs for its runtime whatever
its size, the record says so (the echo check passed on fio's own account), and the bytes moved
are the run's."""

from __future__ import annotations

import pytest

from .conftest import have, make_project, only_run, records, reframe

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not have("fio"), reason="fio is not installed")]

TIMED = """\
id: timed
description: fio for 2 seconds over a 4 MiB file, and a runtime cap it does not reach
benchmark: fio
job: {time_limit: 2m}
fixed: {size: 4MiB, bs: 1MiB, end_fsync: false}
zip:
  runtime: [2s, 1m]
  time_based: [true, false]
"""


def test_a_time_based_fio_case_runs_for_its_runtime(rfm_env, tmp_path):
    root = make_project(tmp_path, {"timed": TIMED})
    out = reframe(["-r", "-n", "timed"], rfm_env, cwd=root,
                  config=str(root / "reframe" / "config" / "local.py"))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "blocks by repetition, shuffled with seed" in out.stdout
    recs = {r["params"]["runtime"]: r for r in records(only_run(tmp_path / "results", "timed"))}
    assert set(recs) == {2, 60}
    assert all(r["status"] == "ok" for r in recs.values()), [r["error"] for r in recs.values()]
    timed, capped = recs[2], recs[60]
    echo = timed["observed"]["benchmark"]
    assert echo["runtime"] == 2 and echo["time_based"] is True and echo["ran_runtime"] is True
    metrics = {m["name"]: m["value"] for m in timed["metrics"]}
    assert metrics["write_bytes"] > 4 * 1024 * 1024          # fio went over the file again
    timing = timed["provenance"]["timing"]
    assert timing["benchmark_end"] - timing["benchmark_start"] >= 2
    # a runtime without time_based is a cap: the file is written once, and that is checked
    assert {m["name"]: m["value"] for m in capped["metrics"]}["write_bytes"] == 4 * 1024 * 1024
    assert capped["observed"]["benchmark"]["time_based"] is False
