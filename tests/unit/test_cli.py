"""The iolab command line as a user runs it: exit codes, messages, outputs."""

from __future__ import annotations

import json
import os
import re
import shutil
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


def test_validate_prints_every_schema_error(tmp_path):
    bad = tmp_path / "two.yaml"
    bad.write_text("id: two\ndescription: x\nbenchmark: ior\nrepetitions: 0\nkeep_data: 1\n")
    out = run_cli("validate", str(bad))
    assert out.returncode == 2
    shown = os.path.relpath(bad, REPO)      # errors name files relative to the working directory
    assert out.stderr.splitlines() == [
        f"iolab: error: {shown}:4: repetitions: 0 is out of range (minimum 1)",
        f"{shown}:5: keep_data: expected boolean, got integer 1"]


def test_plan_counts_cases_jobs_and_bytes(capsys):
    assert main(["plan", "archer-fpp-vs-ssf", "--profile", "local"]) == 0
    out = capsys.readouterr().out
    assert "cases: 16  jobs: 32" in out
    # FPP: 16 MiB x tasks; SSF: 4 MiB x tasks, each once per case (iterations 1)
    assert "bytes written: 672.0 MiB (704643072 B)" in out


def test_plan_of_a_search_shows_its_budget_beside_the_grid(capsys):
    assert main(["plan", "fio-search"]) == 0
    out = capsys.readouterr().out
    assert "cases: 24  jobs: 72" in out
    assert ("search: model, max write_bw: at most 24 jobs (8 cases' worth x 3 repetitions) of the "
            "grid's 72 with `iolab search fio-search`") in out
    assert main(["plan", "quickstart"]) == 0
    assert "search:" not in capsys.readouterr().out


def test_plan_unknown_profile():
    out = run_cli("plan", "quickstart", "--profile", "huge")
    assert out.returncode == 2
    assert "no profile 'huge' in this experiment (profiles: local, full)" in out.stderr


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


def test_import_table_compare(results, capsys, tmp_path):
    files = [str(IOR / "ior_mpiio_coll_4r_t256k_b8m.summary.json"),
             str(IOR / "ior_mpiio_coll_4r_t256k_b8m.txt")]
    args = ["import", "ior", *files, "--into", "imported-study", "--param", "api=MPIIO",
            "--param", "collective=true", "--param", "lustre.stripe_size=4MiB", "--label", "vm"]
    assert main(args) == 0
    assert main(args[:3] + ["--into", "imported-study", "--param", "api=MPIIO",
                            "--param", "collective=true", "--param", "lustre.stripe_size=4MiB"]) == 0
    from iolab.results.lookup import list_runs

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
    # mean of the JSON summary's 1404.0598 and the text run's 1577.50 = 1490.78;
    # s = 173.4402 / sqrt(2) = 122.6407; half-width = 12.7062 * 122.6407 / sqrt(2) = 1101.88
    assert "| 1490.78 ± 1101.88 |" in table and "Stripe Size (MiB)" in table
    assert "| 8.2 |" in table  # CV = 122.64 / 1490.78
    # only imported runs: 'latest' (the latest measured run) needs --include-imported
    assert main(["table", "imported-study", "--format", "json"]) == 2
    assert "has only imported runs (2)" in capsys.readouterr().err
    assert main(["table", "imported-study", "--format", "json", "--include-imported"]) == 0
    rows = json.loads(capsys.readouterr().out)
    bw = rows[0]["metrics"]["write_bw"]
    assert bw["n"] == 1 and bw["ci95_half_width"] is None and bw["noisy"] is False
    assert rows[0]["run"]["run_id"] == runs[1].name and rows[0]["run"]["origin"] == "imported"
    assert main(["table", "imported-study", "--run", runs[0].name, "--format", "csv"]) == 0
    csv_out = capsys.readouterr().out
    # Max. is IOR's own maximum over its iterations (bwMaxMIB: 1751.0238 and 1996.25), not the
    # best repetition's mean (1577.50)
    assert ",1490.78,1101.88,1996.25,8.2," in csv_out
    assert "IOR's Max. Write Bandwidth (MiB/s)" in csv_out.splitlines()[0]

    assert main(["compare", "imported-study", runs[0].name, runs[1].name]) == 0
    cmp = capsys.readouterr().out
    assert "| B/A |" in cmp and "| 0.94 |" in cmp  # B/A: 1404.06 / 1490.78
    assert "| n too small |" in cmp                 # B has one repetition

    yaml_path = tmp_path / "imported-study.yaml"
    # the imported case as IOR ran it (the import took block size, iterations and tasks from IOR)
    yaml_path.write_text("id: imported-study\ndescription: the imported case\nbenchmark: ior\n"
                         "scale: {nodes: 1, tasks_per_node: 4}\n"
                         "fixed: {api: MPIIO, collective: true, lustre.stripe_size: 4MiB, block_size: 8MiB,\n"
                         "        iterations: 3}\nrepetitions: 3\n")
    assert main(["plan", str(yaml_path), "--suggest-reps", "--target-ci", "5"]) == 0
    plan = capsys.readouterr().out
    assert "t(0.975, n-1) * CV / sqrt(n) <= target" in plan
    # pooled over both runs: 1404.0598, 1577.50, 1404.0598 -> mean 1461.87, s 100.136, CV 6.85%;
    # 9 reps: 2.306 * 0.0685 / 3 = 5.27% > 5%; 10 reps: 2.262 * 0.0685 / 3.162 = 4.90%: suggest 10
    line = next(x for x in plan.splitlines() if "write_bw" in x)
    assert line.split()[-1] == "10" and "6.8" in line.split()


def test_import_rejects_bad_file_and_writes_nothing(results):
    out = run_cli("import", "ior", str(IOR / "ior_posix_fpp_4r_t1m_b16m_json.txt"), "--into", "x",
                  env={**os.environ, "IOLAB_RESULTS": str(results)})
    assert out.returncode == 1 and "summaryFile" in out.stderr
    assert not (results / "x").exists()


def test_table_without_results(results):
    out = run_cli("table", "quickstart", env={**os.environ, "IOLAB_RESULTS": str(results)})
    assert out.returncode == 2 and "no results for experiment 'quickstart'" in out.stderr


def test_committed_shims_match_their_yamls():
    out = run_cli("render", "--check")
    assert out.returncode == 0, out.stdout + out.stderr


def test_compare_forms_and_errors(results, capsys):
    files = [str(IOR / "ior_mpiio_coll_4r_t256k_b8m.summary.json"),
             str(IOR / "ior_mpiio_coll_4r_t256k_b8m.txt")]
    for stripes in ("1", "4"):
        assert main(["import", "ior", *files, "--into", "cmp-study", "--param", "api=MPIIO",
                     "--param", f"lustre.stripe_count={stripes}"]) == 0
    capsys.readouterr()
    # two imports are two runs: --by needs the cases in one run
    assert main(["compare", "cmp-study", "--by", "lustre.stripe_count", "--baseline", "1",
                 "--include-imported"]) == 2
    assert "no case has lustre.stripe_count = 1" in capsys.readouterr().err

    assert main(["compare", "cmp-study", "latest", "published:csc-btio-mahti"]) == 2
    assert "has only imported runs" in capsys.readouterr().err
    assert main(["compare", "cmp-study", "latest", "published:csc-btio-mahti", "--include-imported"]) == 0
    out = capsys.readouterr().out
    assert "vs published: csc-btio-mahti" in out and "rows: 0 matched, 9 without a matching case" in out
    assert "absolute: not assessed: hardware differs" in out

    assert main(["compare", "cmp-study", "latest", "--include-imported"]) == 2
    assert "give another to compare it with (ID RUN_A RUN_B), or compare its cases by a parameter " \
           "with --by KEY --baseline VALUE" in capsys.readouterr().err
    assert main(["compare", "cmp-study", "published:nope", "--include-imported"]) == 2
    assert "no published study 'nope'" in capsys.readouterr().err


RECORDED = REPO / "tests" / "data" / "runs" / "855c081" / "quickstart" / "20261123T182533Z-baeba3"


@pytest.fixture
def fio_only(results) -> str:
    """A real quickstart run as it is where IOR is absent: its fio records only."""
    run = results / "quickstart" / RECORDED.name
    shutil.copytree(RECORDED, run)
    lines = (run / "records.jsonl").read_text().splitlines(keepends=True)
    (run / "records.jsonl").write_text("".join(ln for ln in lines if json.loads(ln)["benchmark"] == "fio"))
    return RECORDED.name


def test_compare_one_run_suggests_by_and_a_run_with_itself_is_refused(fio_only, capsys):
    assert main(["compare", "quickstart", fio_only]) == 2
    err = capsys.readouterr().err
    assert f"iolab: error: one run ({fio_only}): give another to compare it with" in err
    assert "--by KEY --baseline VALUE (its cases vary bs, rw)" in err
    assert main(["compare", "quickstart", fio_only, fio_only[-6:]]) == 2
    assert capsys.readouterr().err == (
        f"iolab: error: {fio_only} and {fio_only[-6:]} are the same run, {fio_only}: compare two "
        "runs, or one run's cases by a parameter (--by KEY --baseline VALUE)\n")


def test_baseline_values_are_shown_as_the_matrix_writes_them(fio_only, capsys):
    assert main(["compare", "quickstart", "--by", "bs", "--baseline", "3KiB"]) == 2
    assert "(values of bs in this run: 4KiB, 1MiB)" in capsys.readouterr().err


def test_by_without_baseline_shows_a_layer_s_example(fio_only, capsys):
    assert main(["compare", "quickstart", "--by", "bs"]) == 2
    assert capsys.readouterr().err.endswith("iolab: error: --by needs --baseline VALUE, e.g. --by "
                                            "lustre.stripe_count --baseline 1\n")


def test_the_help_examples_of_table_and_compare_work_with_fio_alone(fio_only, capsys):
    import shlex

    from iolab.cli import EXAMPLES

    ran = 0
    for line in EXAMPLES["table"] + EXAMPLES["compare"]:
        words = shlex.split(line, comments=True)
        if words[2] == "quickstart" and not {"RUN", "RUN_A"} & set(words):
            assert main(words[1:]) == 0, (line, capsys.readouterr().err)
            ran += 1
    assert ran == 4


def test_the_layers_examples_name_an_experiment_that_has_them():
    """What --help shows of a layer (import, compare, table) is live: its experiment is shipped
    and varies the parameter over the baseline (compare --by), the other value is one an import
    takes (--param), and the columns are the layer's."""
    from iolab.experiment.load import load_experiment
    from iolab.experiment.matrix import expand
    from iolab.experiment.params import type_param_text
    from iolab.layers import registry

    offered = [layer for layer in registry.registry() if layer.example_param or layer.example_columns]
    assert offered, "no layer offers an example: the verbs' examples lost theirs"
    for layer in offered:
        if layer.example_param:
            ex = layer.example_param
            assert layer.owns(ex.key), (layer.name, ex.key)
            cases = expand(load_experiment(REPO / "experiments" / f"{ex.experiment}.yaml"))
            seen = {str(c.params.get(ex.key)) for c in cases}
            assert ex.baseline in seen, (ex, seen)
            type_param_text(cases[0].benchmark, ex.key, ex.other, "--param")    # raises if refused
        if layer.example_columns:
            experiment, columns = layer.example_columns
            assert (REPO / "experiments" / f"{experiment}.yaml").exists(), experiment
            assert layer.parse_columns(columns) == columns.split(",")
    option, experiment, columns = registry.example_columns()
    from iolab.cli import EXAMPLES

    assert f"iolab table {experiment} {option} {columns}" in EXAMPLES["table"]


def test_reproduce_writes_no_colour_codes_where_stdout_is_no_terminal(fio_only, results):
    # ReFrame colours what it prints (here: its one-line refusal of a config setting) unless told
    env = {**os.environ, "IOLAB_RESULTS": str(results), "IOLAB_RFM_LOG": "loud"}
    env.pop("RFM_COLORIZE", None)
    out = run_cli("reproduce", "quickstart", fio_only, "3cf5ac1a", env=env)
    assert out.returncode == 1
    assert "ERROR: failed to load configuration: IOLAB_RFM_LOG='loud'" in out.stdout + out.stderr
    assert "\x1b[" not in out.stdout + out.stderr


# ------------------------------------------------------------------------- results paths, exits

SUMMARY = IOR / "ior_mpiio_coll_4r_t256k_b8m.summary.json"
DARSHAN = REPO / "tests" / "data" / "darshan"


def env_with(results: Path) -> dict:
    return {**os.environ, "IOLAB_RESULTS": str(results)}


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("into", ["../../x", "ABSOLUTE", "a/b", "", ".", "..",
                                  "quickstart/20261121T000000Z-aaaaaa", "My-Study"])
def test_import_into_must_be_an_experiment_id(tmp_path, into):
    results = tmp_path / "deep" / "results"
    results.mkdir(parents=True)
    into = str(tmp_path / "abs-target") if into == "ABSOLUTE" else into
    before = files_under(tmp_path)
    out = run_cli("import", "ior", str(SUMMARY), "--into", into, env=env_with(results))
    assert out.returncode == 2
    assert out.stderr == (f"iolab: error: --into {into!r}: not an experiment id (lower-case letters and "
                          "digits in words joined by single hyphens, e.g. my-study) (results are filed "
                          "by experiment id, never by a path)\n")
    assert files_under(tmp_path) == before                   # ../../x would be tmp_path/x


def test_import_into_a_symlinked_experiment_dir_is_refused(tmp_path):
    results = tmp_path / "results"
    target = tmp_path / "elsewhere"
    target.mkdir()
    results.mkdir()
    (results / "my-study").symlink_to(target)
    out = run_cli("import", "ior", str(SUMMARY), "--into", "my-study", env=env_with(results))
    assert out.returncode == 2 and "is a symlink" in out.stderr
    assert list(target.iterdir()) == []
    # a results root inside a run would nest runs
    done = run_cli("import", "ior", str(SUMMARY), "--into", "other-study", env=env_with(results))
    assert done.returncode == 0
    (run_dir,) = (results / "other-study").iterdir()
    nested = run_cli("import", "ior", str(SUMMARY), "--into", "x", env=env_with(run_dir / "r"))
    assert nested.returncode == 2 and "runs are never nested" in nested.stderr
    assert sorted(p.name for p in run_dir.iterdir()) == ["cases", "manifest.json", "records.digest",
                                                       "records.jsonl"]


def test_import_refuses_unknown_and_repeated_params(results):
    env = env_with(results)
    out = run_cli("import", "ior", str(SUMMARY), "--into", "s", "--param", "lustre.stripe_cont=4", env=env)
    assert out.returncode == 2 and "unknown parameter 'lustre.stripe_cont' for ior" in out.stderr
    assert "did you mean 'lustre.stripe_count'" in out.stderr
    out = run_cli("import", "ior", str(SUMMARY), "--into", "s", "--param", "api=MPIIO",
                  "--param", "api=POSIX", env=env)
    assert out.returncode == 2 and "--param api is given twice" in out.stderr
    assert not results.exists() or not any(results.rglob("manifest.json"))


def test_darshan_unreadable_log_exits_1_and_shows_the_others(tmp_path):
    pytest.importorskip("darshan", reason="PyDarshan is not installed")
    good = DARSHAN / "ior_mpiio_coll_dxt.darshan"
    cut = tmp_path / "cut.darshan"
    cut.write_bytes(good.read_bytes()[:3000])
    out = run_cli("darshan", str(good), str(cut))
    assert out.returncode == 1
    assert f"== {good}" in out.stdout and "MPI-IO writes" in out.stdout
    assert f"== {cut}\n   unreadable: " in out.stdout
    (line,) = out.stderr.splitlines()
    assert line.startswith(f"iolab: error: {cut}: unreadable: ")
    js = run_cli("darshan", str(good), str(cut), "--json")
    assert js.returncode == 1
    assert [item["summary"]["status"] for item in json.loads(js.stdout)] == ["ok", "unreadable"]
    assert run_cli("darshan", str(good)).returncode == 0
    missing = run_cli("darshan", str(tmp_path / "absent.darshan"))
    assert missing.returncode == 1 and "no such file" in missing.stderr


def test_every_verb_exits_non_zero_on_input_it_cannot_use(tmp_path):
    results = tmp_path / "results"
    env = env_with(results)
    assert run_cli("import", "ior", str(SUMMARY), "--into", "my-study", env=env).returncode == 0
    (empty,) = (results / "my-study").iterdir()
    (empty / "records.jsonl").write_text("")                  # a run with no records
    (empty / "records.digest").unlink()                         # (nor a digest of any)
    manifest = json.loads((empty / "manifest.json").read_text())
    del manifest["finished"]        # that never ended (with its end, the empty file is refused:
    (empty / "manifest.json").write_text(json.dumps(manifest))    # its records were removed)
    broken = results / "broken-study" / "20261121T000000Z-bbbbbb"
    broken.mkdir(parents=True)
    (broken / "manifest.json").write_text('{"origin": "reframe"')
    (broken / "records.jsonl").mkdir()                        # unreadable records
    (results / "dir-only").mkdir()
    a_dir = tmp_path / "a-dir"
    a_dir.mkdir()
    cases = [
        (["parse", "ior", str(tmp_path / "absent.json")], 1, "is missing"),
        (["parse", "ior", str(a_dir)], 1, "a directory, not a regular file"),
        (["import", "ior", str(tmp_path / "absent.json"), "--into", "s"], 1, "is missing"),
        (["import", "ior", str(a_dir), "--into", "s"], 2, "a directory, not a regular file"),
        (["table", "no-such-study"], 2, "experiments with results: broken-study, my-study"),
        (["table", "my-study", "--include-imported"], 2, "has no readable records"),
        (["table", "broken-study"], 2, "unreadable manifest"),
        (["table", "my-stuyd"], 2, "did you mean 'my-study'?"),
        (["compare", "my-study", "zz", "yy"], 2, "no run matching 'zz'"),
        (["compare", "my-study", "--by", "api", "--baseline", "POSIX", "--include-imported"], 2,
         "has no readable records"),
        (["publish", "my-study", "--out", str(tmp_path / "site"), "--include-imported"], 2,
         "has no readable records"),
        (["publish", "no-such-study", "--out", str(tmp_path / "site")], 2, "no results for experiment"),
        (["runs", "no-such-study"], 2, "no results for experiment 'no-such-study'"),
        (["runs", "dir-only"], 2, "its directory holds no runs"),
        (["runs", "broken-study"], 1, "some runs of 'broken-study' are unreadable"),
        (["runs", "../results"], 2, "not an experiment id"),
        (["darshan", "my-study", "--include-imported"], 2, "has no Darshan data"),
        (["darshan", str(tmp_path / "absent.darshan")], 1, "no such file"),
        (["darshan", "20261126T223616Z-6780d4"], 2, "is a run id, not a Darshan log (iolab darshan "
         "EXPERIMENT --run 20261126T223616Z-6780d4)"),
    ]
    for args, code, words in cases:
        out = run_cli(*args, env=env)
        assert (out.returncode, words in out.stderr) == (code, True), (args, out.stderr)
        assert "Traceback" not in out.stderr and out.stderr.strip().count("\n") == 0, (args, out.stderr)
    assert not (tmp_path / "site").exists()


def test_an_unknown_experiment_lists_the_known_ones(results, capsys):
    assert main(["plan", "quickstrt"]) == 2
    err = capsys.readouterr().err
    assert "no such experiment file (did you mean 'quickstart'?" in err and "archer-fpp-vs-ssf" in err
    assert main(["table", "quickstrt"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'quickstart'?" in err and "experiments: archer-fpp-vs-ssf" in err


def test_plan_shows_the_part_and_never_python_none(capsys):
    assert main(["plan", "nersc-burst-buffer", "--profile", "local"]) == 0
    out = capsys.readouterr().out
    assert "None" not in out
    lines = [line for line in out.splitlines() if re.match(r"  [0-9a-f]{16}  ", line)]
    assert len(lines) == 9 and len(set(line.split(None, 1)[1] for line in lines)) == 9, lines
    assert "part scratch (ior): 3 cases" in out and "part burst-buffer (ior): 6 cases" in out
    assert "storage=burst_buffer" in out
    assert main(["plan", "csc-btio-hints", "--profile", "local"]) == 0
    out = capsys.readouterr().out
    assert "None" not in out and "mpiio.cb_config_list=unset" in out


FIO = Path(__file__).resolve().parents[1] / "data" / "fio-recorded"


def test_import_checks_param_against_what_the_benchmark_says(results, capsys):
    """A 4 KiB fio run imported as bs=1MiB is refused, naming both; parameters not given come
    from the output, never from defaults."""
    four_k = str(FIO / "fio_randwrite_4k_16m.json")
    assert main(["import", "fio", four_k, "--into", "fio-check", "--param", "bs=1MiB"]) == 2
    err = capsys.readouterr().err
    assert "bs 4096, requested 1048576" in err and "--trust-params" in err
    assert not (results / "fio-check").exists() or not list((results / "fio-check").iterdir())

    assert main(["import", "fio", four_k, "--into", "fio-check"]) == 0
    from iolab.results.lookup import list_runs
    (run,) = list_runs(results, "fio-check")
    (rec,) = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]
    assert (rec["params"]["bs"], rec["params"]["size"]) == (4096, 16 * 1024**2)
    assert rec["params"]["rw"] == "randwrite"
    assert rec["observed"]["benchmark"]["io_bytes"] == 16 * 1024**2

    assert main(["import", "fio", four_k, "--into", "fio-trusted", "--param", "bs=1MiB",
                 "--trust-params"]) == 0
    (run,) = list_runs(results, "fio-trusted")
    (rec,) = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]
    assert rec["params"]["bs"] == 1048576 and rec["provenance"]["params_trusted"] is True
    assert rec["observed"]["benchmark"]["bs"] == 4096


def test_import_refuses_files_that_ran_different_cases(results, capsys):
    files = [str(IOR / "ior_mpiio_coll_4r_t256k_b8m.summary.json"),
             str(IOR / "ior_mpiio_indep_4r_t64k_b4m.summary.json")]
    assert main(["import", "ior", *files, "--into", "mixed"]) == 2
    assert "ran different" in capsys.readouterr().err


@pytest.mark.parametrize("seconds", ["-1", "nan", "inf", "0", "1e400", "abc"])
def test_status_watch_is_checked_before_any_run_is_read(results, capsys, seconds):
    # no results at all: the argument is refused first, with its own reason
    assert main(["status", "quickstart", "--watch", seconds]) == 2
    assert capsys.readouterr().err == (f"iolab: error: --watch {seconds}: give a positive number of "
                                       f"seconds, at most 86400 (e.g. --watch 5)\n")


def test_reproduce_record_from_stdin_names_what_is_missing(results, capsys, monkeypatch):
    import io

    line = json.dumps({"experiment": "quickstart", "run_id": "r1", "repetition": 1}) + "\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(line.encode())))
    assert main(["reproduce", "--record", "-"]) == 2
    assert capsys.readouterr().err == "iolab: error: --record -: the record has no case_id\n"


def test_plan_shows_each_part_with_its_own_parameters_and_the_default_profile(capsys, monkeypatch):
    monkeypatch.delenv("IOLAB_PROFILE", raising=False)
    assert main(["plan", "quickstart"]) == 0
    out = capsys.readouterr().out
    assert "profile: local (what the default system, local, runs; --profile to choose)" in out
    ior, fio = out.split("part ior (ior): 2 cases\n")[1].split("part fio (fio): 4 cases\n")
    assert "api=" in ior and "rw=" not in ior and "bs=" not in ior
    assert "rw=" in fio and "api=" not in fio and "transfer_size" not in fio
    assert "unset" not in out
    rows = [line for line in out.splitlines() if re.match(r"  [0-9a-f]{16}  ", line)]
    assert len(rows) == 6 and max(map(len, rows)) < 100, rows
    assert any(row.endswith("bs=4KiB, rw=randwrite") for row in rows), rows
    assert main(["plan", "quickstart", "--profile", "full"]) == 0
    assert "profile: full  repetitions" in capsys.readouterr().out
    assert main(["plan", "fio-search"]) == 0      # no profiles: the experiment as written
    assert "profile: (base)  repetitions" in capsys.readouterr().out


def test_plan_into_a_closed_pipe_ends_quietly():
    proc = subprocess.Popen([sys.executable, "-m", "iolab.cli", "plan", "io500-like"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()         # `| head` that has read all it wanted
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and err == "", err


def test_list_shows_each_experiment_its_profiles_parts_and_last_run(results, capsys):
    from iolab.results.rundir import RunDir

    run = RunDir.create(results, "quickstart", "20260101T000000Z-abcdef", {"experiment": "quickstart"})
    run.finish({"complete": True, "reason": None, "counts": {"ok": 8, "skipped": 4}})
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(list((REPO / "experiments").glob("*.yaml")))
    assert ("quickstart  profiles: local, full  parts: ior (ior), fio (fio)  last run "
            "20260101T000000Z-abcdef (complete: 8 ok, 4 skipped)") in lines
    assert "fio-search  profiles: -  parts: fio  never run" in lines


def test_every_verb_has_examples_that_its_parser_takes():
    """`iolab VERB --help` ends with examples a user can copy: each verb has some, and each
    parses as written (a verb or option renamed without its examples fails here)."""
    import shlex

    from iolab.cli import EXAMPLES, build_parser

    parser = build_parser()
    verbs = set(parser._subparsers._group_actions[0].choices)
    assert verbs == set(EXAMPLES), verbs ^ set(EXAMPLES)
    for verb, lines in EXAMPLES.items():
        assert lines, verb
        for line in lines:
            words = shlex.split(line, comments=True)
            assert words[:2] == ["iolab", verb], line
            assert parser.parse_args(words[1:]).command == verb, line
    out = subprocess.run([sys.executable, "-m", "iolab.cli", "plan", "--help"], capture_output=True,
                         text=True)
    assert out.stdout.rstrip().endswith("iolab plan archer-fpp-vs-ssf --profile full --queue-wait 20m "
                                        "--longest-allocation 24h"), out.stdout


def test_bare_iolab_prints_the_help():
    out = run_cli()
    assert out.returncode == 2
    assert out.stdout.startswith("usage: iolab [-h] [--version]")
    assert "a first session:" in out.stdout and "validate" in out.stdout
    assert "error" not in out.stderr


def test_the_closing_line_of_a_killed_run_counts_the_jobs_it_planned(results, capsys):
    """A run killed after 5 of its 12 jobs: the closing line said '5 of 5 jobs ran, none
    skipped'. It counts the plan's jobs and says the others never ran, and why."""
    planned_run = REPO / "tests" / "data" / "runs" / "3940bc6" / "quickstart" / "20261123T182827Z-8d23bf"
    run = results / "quickstart" / planned_run.name
    shutil.copytree(planned_run, run)
    lines = (run / "records.jsonl").read_text().splitlines(keepends=True)
    (run / "records.jsonl").write_text("".join(lines[:5]))
    (run / "records.digest").unlink(missing_ok=True)
    manifest = json.loads((run / "manifest.json").read_text())
    planned = len(manifest["planned"])
    manifest.pop("finished", None)          # SIGKILL: the run never wrote its end
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert planned == 12
    main(["table", "quickstart", "--summary"])
    last = capsys.readouterr().out.rstrip().splitlines()[-1]
    assert last.startswith(f"quickstart run {planned_run.name}: 5 of 12 jobs ran"), last
    assert ", 7 never ran (unfinished (" in last, last
    assert "7 of 12 jobs have no record)" in last, last



@pytest.mark.parametrize("argv", [["table", "quickstart", "--format", "nope"], ["table"], ["nosuch"],
                                  ["plan", "quickstart", "--target-ci", "x"],
                                  ["plan", "quickstart", "--target-ci", "0"]])
def test_every_error_line_has_one_prefix(argv):
    """argparse's own errors said "iolab table: error: ...", iolab's "iolab: error: ...": both
    say "iolab: error:" now (argparse's after the verb's usage)."""
    out = run_cli(*argv)
    errors = [line for line in out.stderr.splitlines() if "error:" in line]
    assert out.returncode == 2 and len(errors) == 1, out.stderr
    assert re.match(r"iolab: error: \S", errors[0]), out.stderr

def test_a_file_that_cannot_be_parsed_is_an_error_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    out = run_cli("parse", "fio", str(bad))
    assert out.returncode == 1 and out.stderr.startswith(f"iolab: error: {bad}: "), out.stderr


def test_publish_notes_read_as_every_verb_s(results, tmp_path, capsys):
    """`iolab publish` printed its notes as "note: ...", the other verbs "iolab: note: ..."."""
    shutil.copytree(REPO / "tests" / "data" / "runs" / "3940bc6" / "interrupted", results / "interrupted")
    assert main(["publish", "interrupted", "--out", str(tmp_path / "page")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith("iolab: note: run 20261123T183055Z-7769dd: ") for line in err), err
    assert any("run incomplete: 1 aborted (interrupted by SIGTERM)" in line for line in err), err
