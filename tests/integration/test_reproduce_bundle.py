"""`iolab reproduce FILE --system SYSTEM` (issue 40 item 4): a real bundle of a real run is checked
as `iolab import-bundle` checks it, its runs stored, and its experiment as run (the YAML bytes,
the profile, the order and its seed) run here by ReFrame with the real fio, then compared with
the bundle's run as `iolab compare` compares two runs; and each refusal (a damaged bundle, an
unknown system, a system that cannot run the study, a bundle of several experiments as run)
is one line, with nothing stored or run."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from .conftest import REPO, have, iolab, make_project, records, reframe, without

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not have("fio"), reason="fio is not installed")]

TUTORIAL = REPO / "tests" / "data" / "tutorial" / "first-fio" / "20261128T184854Z-282d86"

# profiles: `local` is the one the local systems choose; `tiny` is asked for by name
PROFILED = """\
id: rerun-fio
description: a study re-run from its bundle (fio on this machine)
benchmark: fio
repetitions: 2
fixed: {size: 256KiB, ioengine: psync}
matrix:
  bs: [4KiB, 64KiB]
profiles:
  local:
    fixed: {size: 128KiB}
  tiny:
    fixed: {size: 64KiB}
"""

# a system whose profile no experiment here has: experiments run as written (no profile)
ELSEWHERE = """\
from iolab.rfm.systems import local_system

site_configuration = local_system('elsewhere', 'openmpi-ompio', 'another site, runs as written')
site_configuration['systems'][0]['partitions'][0]['extras']['iolab']['profile'] = 'full'
"""


class Site:
    """A project and results directory of its own (the loader, the shipped configurations)."""

    def __init__(self, base: Path, env: dict, experiments: dict[str, str] | None = None):
        base.mkdir(parents=True, exist_ok=True)
        self.base, self.root = base, make_project(base, experiments or {})
        self.results = base / "results"
        self.env = dict(env, IOLAB_ROOT=str(self.root), IOLAB_RESULTS=str(self.results),
                        IOLAB_CACHE=str(base / "cache"), IOLAB_RFM_OUTPUT=str(base / "rfm"),
                        IOLAB_TEMPLATES=str(REPO / "templates"))

    def iolab(self, *args, env: dict | None = None):
        return iolab([str(a) for a in args], env or self.env, cwd=self.root)

    def runs(self, experiment: str) -> list[Path]:
        """This site's own runs of the experiment (not the ones imported from a bundle)."""
        base = self.results / experiment
        return sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith("@")) \
            if base.is_dir() else []

    def tree(self) -> dict:
        """Every path under the results and ReFrame's output, with its bytes (None: a directory):
        what a run or an import would change."""
        return {str(p.relative_to(self.base)): None if p.is_dir() else p.read_bytes()
                for top in (self.results, self.base / "rfm") for p in sorted(top.rglob("*"))}


def manifest(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text())


def bundled(home: Site, out: Path, experiment: str, *args) -> Path:
    made = home.iolab("bundle", experiment, *args, "--site", "home", "--out", out)
    assert made.returncode == 0, made.stdout + made.stderr
    return out


def refused(answer, *says: str) -> str:
    """Non-zero, no traceback, and one `iolab: error:` line holding every phrase."""
    text = answer.stdout + answer.stderr
    assert answer.returncode != 0 and "Traceback" not in text, text[-3000:]
    (line,) = [ln for ln in answer.stderr.splitlines() if ln.startswith("iolab: error:")]
    for phrase in says:
        assert phrase in line, f"{phrase!r} not in {line!r}"
    return line


def as_run(run: Path) -> tuple:
    """What makes a run the experiment as run: the YAML bytes, the profile, the order and seed,
    and the jobs in the order they ran."""
    m = manifest(run)
    return (m["experiment_yaml"].encode(), m["experiment_sha256"], m["profile"], m["order"],
            [(j["case_id"], j["repetition"]) for j in m["planned"]])


@pytest.fixture
def tutorial_bundle(rfm_env, tmp_path) -> tuple[Site, Path]:
    home = Site(tmp_path / "home", rfm_env)
    shutil.copytree(TUTORIAL, home.results / "first-fio" / TUTORIAL.name)
    return home, bundled(home, tmp_path / "first-fio.tar.gz", "first-fio")


def test_a_bundles_study_is_rerun_here_as_it_ran_and_compared(tutorial_bundle, rfm_env, tmp_path):
    _home, bundle = tutorial_bundle
    away = Site(tmp_path / "away", rfm_env)
    out = away.iolab("reproduce", bundle, "--system", "local-romio")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    original = away.results / "first-fio" / "@home" / TUTORIAL.name
    assert (original / "records.jsonl").read_bytes() == (TUTORIAL / "records.jsonl").read_bytes()
    (again,) = away.runs("first-fio")
    # the experiment as run: the same YAML bytes, profile, order seed and jobs in that order
    assert as_run(again) == as_run(TUTORIAL)
    assert hashlib.sha256(manifest(again)["experiment_yaml"].encode()).hexdigest() == \
        manifest(TUTORIAL)["experiment_sha256"]
    assert manifest(again)["order"]["seed"] == 296439466
    got = manifest(again)
    assert got["system"] == "local-romio:default"
    assert got["reruns"] == {"site": "home", "runs": [TUTORIAL.name], "bundle": bundle.name,
                             "bundle_sha256": hashlib.sha256(bundle.read_bytes()).hexdigest()}
    assert "site home's run ran on its system local:default; this one runs on local-romio here" \
        in got["differences"]
    assert [r["status"] for r in records(again)] == ["ok"] * 6
    assert {r["case_id"] for r in records(again)} == {r["case_id"] for r in records(TUTORIAL)}
    # the comparison, as `iolab compare first-fio RUN@home NEW` prints it
    assert f"$ iolab compare first-fio {TUTORIAL.name}@home {again.name}" in out.stdout
    said = away.iolab("compare", "first-fio", f"{TUTORIAL.name}@home", again.name)
    assert said.returncode == 0 and said.stdout in out.stdout
    assert f"A = run {TUTORIAL.name}" in out.stdout and f"B = run {again.name}" in out.stdout
    # the YAML never went into experiments/ (this project has no first-fio)
    assert list((away.root / "experiments").iterdir()) == []
    runs = away.iolab("runs", "first-fio")
    assert f"re-runs {TUTORIAL.name}@home from bundle {bundle.name}" in runs.stdout

    # again: the bundle's run is there with the same bytes, and reused
    out = away.iolab("reproduce", bundle, "--system", "local")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert f"first-fio run {TUTORIAL.name}@home is already there, the same bytes" in out.stdout
    assert len(away.runs("first-fio")) == 2 and all(as_run(r) == as_run(TUTORIAL)
                                                   for r in away.runs("first-fio"))


def test_the_profile_and_order_are_the_bundles_whatever_this_system_would_choose(rfm_env, tmp_path):
    """Two runs of one YAML at another site, one as written (its system has none of the
    experiment's profiles) and one with profile tiny, travel in one bundle: it holds two
    experiments as run, so one must be chosen; each is re-run on `local`, whose profile is
    `local` (and IOLAB_PROFILE says local too), with the profile it ran."""
    home = Site(tmp_path / "home", rfm_env, {"rerun-fio": PROFILED})
    (home.root / "reframe" / "config" / "elsewhere.py").write_text(ELSEWHERE)
    made = {}
    for system, profile in (("elsewhere", None), ("local", "tiny")):
        env = {k: v for k, v in home.env.items() if k != "IOLAB_PROFILE"}
        env.update({"IOLAB_PROFILE": profile} if profile else {})
        done = reframe(["-r", "-n", "rerun_fio"], env, cwd=home.root,
                       config=str(home.root / "reframe" / "config" / f"{system}.py"))
        assert done.returncode == 0, done.stdout[-3000:]
        (made[profile],) = [r for r in home.runs("rerun-fio") if r not in made.values()]
        assert manifest(made[profile])["profile"] == profile
    bundle = bundled(home, tmp_path / "two.tar", "rerun-fio", *[r.name for r in made.values()])

    away = Site(tmp_path / "away", dict(rfm_env, IOLAB_PROFILE="local"))
    before = away.tree()
    refused(away.iolab("reproduce", bundle, "--system", "local"),
            "the bundle holds 2 experiments as run", "profile (none)", "profile tiny")
    assert away.tree() == before
    for profile, run in made.items():
        out = away.iolab("reproduce", bundle, run.name[-6:], "--system", "local")
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
        (again,) = [r for r in away.runs("rerun-fio") if manifest(r)["reruns"]["runs"] == [run.name]]
        assert as_run(again) == as_run(run)
        sizes = {r["params"]["size"] for r in records(again)}
        assert sizes == {r["params"]["size"] for r in records(run)} == \
            {None: {262144}, "tiny": {65536}}[profile]
        assert f"$ iolab compare rerun-fio {run.name}@home {again.name}" in out.stdout


def _damaged(bundle: Path, out: Path) -> Path:
    """The bundle with one byte of its records changed, its content list left as it was."""
    with tarfile.open(bundle) as tar:
        members = [(i, tar.extractfile(i).read()) for i in tar.getmembers()]
    with tarfile.open(out, "w:gz") as tar:
        for info, data in members:
            if info.name.endswith("records.jsonl"):
                data = data[:100] + bytes([data[100] ^ 1]) + data[101:]
            tar.addfile(info, io.BytesIO(data))
    return out


def test_each_refusal_is_one_line_and_nothing_is_stored_or_run(tutorial_bundle, rfm_env, tmp_path):
    _home, bundle = tutorial_bundle
    away = Site(tmp_path / "away", rfm_env)
    (away.results / "first-fio").mkdir(parents=True)      # results to keep as they are
    before = away.tree()
    cases = [
        (("reproduce", _damaged(bundle, tmp_path / "bad.tar.gz"), "--system", "local"),
         ("bad.tar.gz", f"first-fio/{TUTORIAL.name}/records.jsonl", "changed since it was bundled",
          "nothing was written to the results")),
        (("reproduce", bundle, "--system", "nosuch"),
         ("--system nosuch: no system 'nosuch'", "the systems: ", "local-romio")),
        (("reproduce", bundle), ("give --system SYSTEM",)),
        (("reproduce", bundle, TUTORIAL.name, "3cf5ac", "--system", "local"),
         ("CASE: for one case of a run here",)),
        (("reproduce", bundle, "nosuchrun", "--system", "local"),
         ("no run of the bundle matches 'nosuchrun'", TUTORIAL.name)),
        (("reproduce", "first-fio", "--system", "local"), ("--system: for a bundle's study",)),
    ]
    for args, says in cases:
        refused(away.iolab(*args), *says)
        assert away.tree() == before, args
    # fio is not on this system: the planner's own reason, before anything is stored or run
    refused(away.iolab("reproduce", bundle, "--system", "local", env=without(away.env, "fio")),
            "system local cannot run first-fio as run", "benchmark binary 'fio' not found",
            "(2 of 2 cases)", "nothing was stored or run")
    assert away.tree() == before
    # a dry run checks the same and says what would run; nothing is stored or run
    dry = away.iolab("reproduce", bundle, "--system", "local", "--dry-run")
    assert dry.returncode == 0 and "would run: " in dry.stdout and "-n ^first_fio\\b" in dry.stdout
    assert away.tree() == before
