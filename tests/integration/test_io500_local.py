"""The io500-like experiment end to end: its local profile through ReFrame (real IOR and mdtest
where installed, the stand-ins' real recordings elsewhere), then `iolab table io500-like` with
the phase table and the score, labelled as no official submission."""

from __future__ import annotations

import math
import re

import pytest

from iolab.analysis import io500

from .conftest import check_replay_flag, have, iolab, only_run, records, reframe

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not have("mpirun"), reason="mpirun (Open MPI) is not installed")]


def test_io500_like_runs_and_prints_phases_and_score(rfm_env, tmp_path):
    out = reframe(["-r", "-n", "io500_like"], rfm_env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    recs = records(only_run(tmp_path / "results", "io500-like"))
    assert {r["part"] for r in recs} == {"ior-easy", "ior-hard", "mdtest-easy", "mdtest-hard"}
    assert all(r["status"] == "ok" for r in recs), [r["error"] for r in recs]
    for rec in recs:
        check_replay_flag(rec, tmp_path)
    by_part = {r["part"]: r for r in recs}
    assert " -t 47008 -s 200 " in by_part["ior-hard"]["provenance"]["command"]
    assert " -w 3901 -e 3901 " in by_part["mdtest-hard"]["provenance"]["command"]
    assert " -u " in by_part["mdtest-easy"]["provenance"]["command"]

    table = iolab(["table", "io500-like"], rfm_env)
    assert table.returncode == 0, table.stderr
    text = table.stdout
    assert "NOT an official IO500 submission" in text
    rows = dict(re.findall(r"^\| ([a-z0-9-]+) \| (?:BW|MD) \| ([0-9.e+-]+) \|", text, re.M))
    assert set(rows) == {p.name for p in io500.PHASES}
    assert "| find | MD | not run (no iolab case) |" in text
    # the score from the printed phases, the IO500 way
    bw = math.prod(float(rows[p.name]) for p in io500.PHASES if p.group == "BW") ** (1 / 4)
    md = math.prod(float(rows[p.name]) for p in io500.PHASES if p.group == "MD") ** (1 / 7)
    score = float(re.search(r"io500-like score: ([0-9.e+-]+)", text).group(1))
    assert score == pytest.approx(math.sqrt(bw * md), rel=1e-4)
    write_bw = {m["name"]: m["value"] for m in by_part["ior-easy"]["metrics"]}["write_bw"]
    assert float(rows["ior-easy-write"]) == pytest.approx(write_bw / 1024, rel=1e-5)
    # CSV readers get the tables only
    csv = iolab(["table", "io500-like", "--format", "csv"], rfm_env)
    assert csv.returncode == 0 and "io500-like score" not in csv.stdout
