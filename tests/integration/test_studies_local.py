"""End to end, per published study: the experiment's local profile through ReFrame on this machine
(the stand-ins of tests/bin replay real recordings where a benchmark is absent), then
`iolab compare ID latest published:STUDY` as a user types it: every compared table lines up
without ambiguous rows and ends in a verdict. README's compare examples run as written.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from html import escape
from pathlib import Path

import pytest

from iolab.experiment.load import load_experiment
from iolab.analysis.published.study import load_study

from .conftest import (REPO, STANDIN_BIN, check_replay_flag, have, iolab, only_run, records, reframe,
                       spack_env)

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not have("mpirun"), reason="mpirun (Open MPI) is not installed")]

# experiment -> (its study, the system config its local profile needs)
STUDIES = {
    "csc-btio-hints": ("csc-btio-mahti", "reframe/config/local-romio.py"),
    "archer-fpp-vs-ssf": ("archer-fpp-ssf", "reframe/config/local.py"),
    "kaust-stripe-count": ("kaust-wrf-striping", "reframe/config/local.py"),
    "cp2k-aggregators": ("cp2k-aggregators", "reframe/config/local-romio.py"),
    "lustre-adio-io-size": ("lustre-adio-talk", "reframe/config/local.py"),
}
PUBLISHED_STUDIES = {e: load_experiment(REPO / "experiments" / f"{e}.yaml").report.study() for e in STUDIES}
ROWS = re.compile(r"^rows: (\d+) matched, (\d+) without a matching case, (\d+) ambiguous$", re.M)


def real_stack(rfm_env, tmp_path) -> bool:
    """Whether this run measures with the real benchmarks and a Darshan runtime (the stack that
    scripts/setup --spack-bundle built): no stand-in on the run's PATH, and libdarshan.so in the
    Spack environment's view."""
    env = rfm_env.get("IOLAB_SPACK_ENV", spack_env())
    standins = tmp_path / "standin-bin"
    return bool(env) and (Path(env) / ".spack-env" / "view" / "lib" / "libdarshan.so").exists() and not (
        standins.is_dir() and any((standins / b.name).exists() for b in STANDIN_BIN.iterdir()
                                  if b.name != "spack"))


def run_locally(exp_id: str, config: str, rfm_env, tmp_path):
    darshan = real_stack(rfm_env, tmp_path)
    if darshan:     # measured for real: with Darshan around every case, as a study would be
        rfm_env["IOLAB_DARSHAN"] = "1"
    out = reframe(["-r", "-n", exp_id.replace("-", "_")], rfm_env, config=config)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    recs = records(only_run(tmp_path / "results", exp_id))
    assert recs and all(r["status"] == "ok" for r in recs), {r["error"] for r in recs}
    for rec in recs:
        check_replay_flag(rec, tmp_path)
        if darshan:
            dar = rec["observed"]["darshan"]
            assert dar["status"] == "ok", (rec["case_id"], dar)
            assert rec["provenance"]["stack"]["supplied_by"] == "spack", rec["provenance"]["stack"]
    return recs


def test_the_five_seed_studies_are_the_ones_paired():
    assert {PUBLISHED_STUDIES[e].study for e in STUDIES} == {s for s, _ in STUDIES.values()}
    for study, _config in STUDIES.values():
        assert load_study(study, REPO).citation["seed"]


@pytest.mark.parametrize("exp_id", list(STUDIES))
def test_local_run_gets_a_verdict_per_study_without_ambiguous_rows(exp_id, rfm_env, tmp_path):
    study, config = STUDIES[exp_id]
    run_locally(exp_id, config, rfm_env, tmp_path)
    out = iolab(["compare", exp_id, "latest", f"published:{study}"], rfm_env)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    link = PUBLISHED_STUDIES[exp_id]
    compared = [t for t in link.tables if not t.not_compared]
    counts = ROWS.findall(text)
    assert len(counts) == len(compared), text[-3000:]
    for matched, _unmatched, ambiguous in counts:
        assert int(matched) >= 2 and ambiguous == "0", text[-3000:]
    verdicts = re.findall(r"^verdict: (.+)$", text, re.M)
    assert len(verdicts) == len(compared)
    for v in verdicts:
        assert v.startswith(("shape reproduced: ", "shape partly reproduced: ", "shape not reproduced: ",
                             "not assessed: ")), v
        if not v.startswith("not assessed"):
            assert re.search(r"ρ = -?\d\.\d\d over \d+ rows$", v), v
    assert re.findall(r"^ordering: ", text, re.M) and re.findall(r"^best of the matched rows: ", text, re.M)
    for t in link.tables:
        if t.not_compared:
            assert f"not compared: {t.not_compared}" in text
    if len(link.tables) > 1:
        assert re.search(r"^study verdict: ", text, re.M)
    # where a table has fewer than 3 matched rows the verdict says so instead of guessing
    for (matched, _, _), v in zip(counts, verdicts):
        assert (int(matched) < 3) == v.startswith("not assessed: ") or "do not differ" in v, (matched, v)
    # and the page: the study's verdicts beside the run's tables
    page = tmp_path / "page"
    out = iolab(["publish", exp_id, "--out", str(page)], rfm_env)
    assert out.returncode == 0, out.stderr
    html = (page / "index.html").read_text()
    assert html.count('class="verdict shape-verdict"') == 1, exp_id      # the study's
    for v in verdicts:                                                    # and each table's
        assert escape(v.split(": ", 1)[1][:60], quote=False) in html, (exp_id, v)
    if real_stack(rfm_env, tmp_path):
        lock = only_run(tmp_path / "results", exp_id) / "spack.lock"
        assert f'title="{hashlib.sha256(lock.read_bytes()).hexdigest()}"' in html, exp_id
        assert "No Darshan data in these runs" not in html and '<table class="darshan">' in html, exp_id


def readme_compare_examples(study: str) -> list[list[str]]:
    text = (REPO / "docs" / "analysis.md").read_text().replace("\\\n", " ")
    found = []
    for line in text.splitlines():
        line = line.split("  #")[0].strip()
        if line.startswith("iolab compare ") and f"published:{study}" in line:
            found.append(shlex.split(line)[1:])
    return found


def test_readme_compare_examples_work_as_written(rfm_env, tmp_path):
    examples = readme_compare_examples("archer-fpp-ssf")
    assert len(examples) >= 3, examples
    run_locally("archer-fpp-vs-ssf", "reframe/config/local.py", rfm_env, tmp_path)
    for args in examples:
        out = iolab(args, rfm_env)
        assert out.returncode == 0, (args, out.stderr)
        (counts,) = ROWS.findall(out.stdout)
        assert counts[2] == "0" and int(counts[0]) == 5, (args, counts)
        assert re.search(r"^verdict: ", out.stdout, re.M), args
