"""The iolab command line as a user runs it: exit codes, messages, outputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from iolab.cli import main

REPO = Path(__file__).resolve().parents[2]
IOR = REPO / "tests" / "data" / "ior"


def run_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "iolab.cli", *args], capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=120)


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_RESULTS", str(tmp_path / "results"))
    return tmp_path / "results"


def test_validate_shipped_experiments(capsys):
    files = sorted(str(p) for p in (REPO / "experiments").glob("*.yaml"))
    assert main(["validate", *files]) == 0
    out = capsys.readouterr().out
    assert out.count("ok: ") == len(files)


def test_validate_bad_yaml_has_location_and_no_traceback(tmp_path):
    bad = tmp_path / "typo.yaml"
    bad.write_text("id: typo\ndescription: x\nbenchmark: ior\nmatrix:\n  lustre.stripe_cont: [1, 4]\n")
    out = run_cli("validate", str(bad))
    assert out.returncode == 2
    assert "typo.yaml:5: matrix.lustre.stripe_cont: unknown parameter" in out.stderr
    assert "did you mean 'lustre.stripe_count'" in out.stderr
    assert "Traceback" not in out.stderr + out.stdout


def test_plan_counts_cases_jobs_and_bytes(capsys):
    assert main(["plan", "archer-fpp-vs-ssf", "--profile", "local"]) == 0
    out = capsys.readouterr().out
    assert "cases: 16  jobs: 32" in out
    # FPP: 16 MiB x tasks; SSF: 4 MiB x tasks, each once per case (iterations 1)
    assert "bytes written: 672.0 MiB (704643072 B)" in out


def test_plan_unknown_profile():
    out = run_cli("plan", "quickstart", "--profile", "full")
    assert out.returncode == 2 and "no profile 'full'" in out.stderr


def test_parse_prints_json_lines():
    out = run_cli("parse", "ior", str(IOR / "ior_mpiio_coll_4r_t256k_b8m.summary.json"))
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    bw = next(m for m in lines if m["name"] == "write_bw")
    assert bw == {"file": str(IOR / "ior_mpiio_coll_4r_t256k_b8m.summary.json"), "name": "write_bw",
                  "value": 1404.0598, "unit": "MiB/s", "source": "ior-json", "version": "4.0.0"}


def test_parse_failed_output_exits_1():
    out = run_cli("parse", "ior", str(IOR / "ior_legacy_U_H_rejected.txt"))
    assert out.returncode == 1
    assert "IOR reported an error: Error invalid argument: -U" in out.stderr
    assert "Traceback" not in out.stderr


def test_import_table_compare(results, capsys):
    files = [str(IOR / "ior_mpiio_coll_4r_t256k_b8m.summary.json"),
             str(IOR / "ior_mpiio_coll_4r_t256k_b8m.txt")]
    args = ["import", "ior", *files, "--into", "imported-study", "--param", "api=MPIIO",
            "--param", "collective=true", "--param", "lustre.stripe_size=4MiB", "--label", "vm"]
    assert main(args) == 0
    assert main(args[:3] + ["--into", "imported-study", "--param", "api=MPIIO",
                            "--param", "collective=true", "--param", "lustre.stripe_size=4MiB"]) == 0
    from iolab.results import list_runs

    runs = list_runs(results, "imported-study")
    assert len(runs) == 2
    recs = [json.loads(x) for x in (runs[0] / "records.jsonl").read_text().splitlines()]
    assert len(recs) == 2 and all(r["provenance"]["origin"] == "imported" for r in recs)
    assert recs[0]["params"]["lustre.stripe_size"] == 4194304
    manifest = json.loads((runs[0] / "manifest.json").read_text())
    assert manifest["origin"] == "imported" and manifest["label"] == "vm"
    capsys.readouterr()

    assert main(["table", "imported-study", "--run", runs[0].name]) == 0
    table = capsys.readouterr().out
    # mean of the JSON summary's 1404.0598 and the text run's 1577.50
    assert "| 1490.78 |" in table and "Stripe Size (MiB)" in table
    assert main(["table", "imported-study", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["metrics"]["write_bw"]["n"] == 1

    assert main(["compare", "imported-study", runs[0].name, runs[1].name]) == 0
    cmp = capsys.readouterr().out
    assert "Ratio" in cmp and "| 0.94 |" in cmp  # B/A: 1404.06 / 1490.78


def test_import_rejects_bad_file_and_writes_nothing(results):
    out = run_cli("import", "ior", str(IOR / "ior_posix_fpp_4r_t1m_b16m_json.txt"), "--into", "x",
                  env={**__import__("os").environ, "IOLAB_RESULTS": str(results)})
    assert out.returncode == 1 and "summaryFile" in out.stderr
    assert not (results / "x").exists()


def test_table_without_results(results):
    out = run_cli("table", "quickstart", env={**__import__("os").environ, "IOLAB_RESULTS": str(results)})
    assert out.returncode == 2 and "no results for experiment 'quickstart'" in out.stderr


def test_committed_shims_match_their_yamls():
    out = run_cli("render", "--check")
    assert out.returncode == 0, out.stdout + out.stderr
