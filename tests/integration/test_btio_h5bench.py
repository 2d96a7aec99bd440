"""BTIO and h5bench end to end on the local systems: decks and configs rendered, reads after
their writes, hints through the environment, parsed metrics in the records."""

from __future__ import annotations

import pytest

from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand, producers

from .conftest import REPO, check_replay_flag, have, iolab, only_run, records, reframe

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not have("mpirun"), reason="mpirun (Open MPI) is not installed")]


def test_csc_btio_hints_local_on_romio(rfm_env, tmp_path):
    out = reframe(["-r", "-n", "csc_btio"], rfm_env, config="reframe/config/local-romio.py")
    assert out.returncode == 0, out.stdout[-3000:]
    recs = records(only_run(tmp_path / "results", "csc-btio-hints"))
    exp = load_experiment(REPO / "experiments" / "csc-btio-hints.yaml", "local")
    assert len(recs) == len(expand(exp)) * exp.repetitions
    for rec in recs:
        assert rec["status"] == "ok", rec["error"]
        check_replay_flag(rec, tmp_path)
        bw = {m["name"]: m for m in rec["metrics"]}["write_bw"]
        assert bw["value"] > 0 and bw["unit"] == "MiB/s"
        hints = rec["observed"]["mpiio_hints"]
        requested = hints["requested"]
        assert requested == {k.removeprefix("mpiio."): str(v).lower() if isinstance(v, bool) else str(v)
                             for k, v in rec["params"].items() if k.startswith("mpiio.")}
        # the PnetCDF methods hand the hints to ROMIO through the environment
        if requested:
            assert "ROMIO_HINTS" in rec["provenance"]["env"]
        assert rec["provenance"]["command"].startswith("mpirun -np 4")
        assert rec["provenance"]["command"].endswith("btio inputbt.data")
    table = iolab(["table", "csc-btio-hints"], rfm_env).stdout
    assert "| I/O Method | Stripe Count |" in table and "cb_config_list (effective)" in table


def test_lustre_adio_h5bench_reads_follow_their_writes(rfm_env, tmp_path):
    exp = load_experiment(REPO / "experiments" / "lustre-adio-io-size.yaml", "local")
    cases = [c for c in expand(exp) if c.benchmark == "h5bench"]
    pairs = producers(cases)
    assert len(pairs) == 3
    names = [a for c in cases for a in ("-n", f"lustre_adio_io_size%case={c.case_id}")]
    out = reframe(["-r", *names], rfm_env)
    assert out.returncode == 0, out.stdout[-3000:]
    recs = records(only_run(tmp_path / "results", "lustre-adio-io-size"))
    assert len(recs) == len(cases) * exp.repetitions and all(r["status"] == "ok" for r in recs)
    for rec in recs:
        check_replay_flag(rec, tmp_path)
    by_case = {(r["case_id"], r["repetition"]): r for r in recs}
    for reader, writer in pairs.items():
        for rep in range(1, exp.repetitions + 1):
            read, write = by_case[(reader, rep)], by_case[(writer, rep)]
            assert read["provenance"]["input"]["case_id"] == writer
            assert read["provenance"]["input"]["case_dir"] == write["provenance"]["case_dir"]
            assert read["recorded"] >= write["recorded"]
            assert {m["name"] for m in read["metrics"]} >= {"observed_read_rate", "raw_read_rate"}
            assert read["params"]["collective_data"] == write["params"]["collective_data"]
    # the written files are gone once their last read has run
    assert not any(p.is_file() for p in (tmp_path / "scratch").rglob("*.h5"))


def test_btio_read_after_write_dry_run_and_square_ranks(tmp_path):
    from iolab.errors import IolabError

    (tmp_path / "experiments").mkdir()
    bad = tmp_path / "experiments" / "btio-six.yaml"
    bad.write_text("id: btio-six\ndescription: x\nbenchmark: btio\nscale: {tasks_per_node: 6}\n")
    with pytest.raises(IolabError, match="square number of ranks; 6 is not"):
        expand(load_experiment(bad))
