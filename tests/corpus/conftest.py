"""The damaged-input corpus (issue 23): real recorded runs, damaged on purpose, through the real
`iolab` command line as a process.

Each case answers in one of two ways, and never with a traceback or after more than
TIMEOUT seconds:
- refused: a non-zero exit and one line saying why (`refused(...)`);
- a correct table whose note names what was set aside (`noted(...)`).

The run every case starts from is made here, once per test session, by `reframe -r` with the
real fio (Debian's): the records, manifest and raw outputs are exactly what iolab writes. A case
copies it (`run_copy`) and damages the copy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.conftest import REPO, STANDIN_BIN, make_project, reframe

TIMEOUT = 10          # seconds per command: a hang fails the case

CORPUS_FIO = """\
id: corpus-fio
description: the damaged-input corpus's real run (fio on this machine)
benchmark: fio
repetitions: 2
fixed: {size: 256KiB, ioengine: psync}
matrix:
  rw: [write, randwrite]
  bs: [4KiB, 64KiB]
"""


@dataclass
class Answer:
    args: tuple
    returncode: int
    stdout: str
    stderr: str

    def __str__(self):
        return (f"iolab {' '.join(map(str, self.args))} -> {self.returncode}\n"
                f"--- stdout\n{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-3000:]}")


def iolab(*args, env: dict, cwd: Path = REPO, stdin=subprocess.DEVNULL) -> Answer:
    """`iolab ARGS` as a process; a hang past TIMEOUT fails the case."""
    try:
        done = subprocess.run([sys.executable, "-m", "iolab.cli", *map(str, args)], cwd=cwd,
                              env=env, capture_output=True, text=True, timeout=TIMEOUT, stdin=stdin)
    except subprocess.TimeoutExpired:
        pytest.fail(f"iolab {' '.join(map(str, args))}: no answer after {TIMEOUT} s (a hang)")
    answer = Answer(tuple(args), done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr, str(answer)
    return answer


def refused(answer: Answer, *says: str) -> str:
    """A non-zero exit whose error is one line holding every phrase of `says`; returns it."""
    assert answer.returncode != 0, str(answer)
    errors = [line for line in answer.stderr.splitlines() if "error" in line]
    assert errors, str(answer)
    line = errors[0]
    for phrase in says:
        assert phrase in line, f"{phrase!r} not in {line!r}\n{answer}"
    return line


def noted(answer: Answer, *says: str) -> str:
    """Exit 0 with a table whose output names, in one note, what was set aside."""
    assert answer.returncode == 0, str(answer)
    text = answer.stdout + answer.stderr
    for phrase in says:
        assert phrase in text, f"{phrase!r} not in the output\n{answer}"
    return text


@pytest.fixture(scope="session")
def recorded_run(tmp_path_factory) -> Path:
    """One real run of corpus-fio (4 cases x 2 repetitions), made by `reframe -r` with real fio;
    never damaged itself: cases take a copy (run_copy)."""
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed: the corpus's real run needs it")
    base = tmp_path_factory.mktemp("corpus-real")
    root = make_project(base, {"corpus-fio": CORPUS_FIO})
    env = _env(base, root)
    out = reframe(["-r", "-n", "corpus_fio"], env, cwd=root,
                  config=str(root / "reframe" / "config" / "local.py"))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    (run,) = [p for p in (base / "results" / "corpus-fio").iterdir() if p.is_dir()]
    return run


def _env(base: Path, root: Path) -> dict:
    env = dict(os.environ)
    for name in ("IOLAB_STACK_PREFIX", "IOLAB_DARSHAN", "IOLAB_DARSHAN_DXT", "IOLAB_KEEP_DATA",
                 "IOLAB_CACHE"):
        env.pop(name, None)
    env.update(IOLAB_RESULTS=str(base / "results"), IOLAB_RFM_OUTPUT=str(base / "rfm"),
               IOLAB_SCRATCH=str(base / "scratch"), IOLAB_PROFILE="local", IOLAB_ROOT=str(root),
               IOLAB_TEMPLATES=str(REPO / "templates"), IOLAB_CACHE=str(base / "cache"))
    return env


def rechain(run: Path, recs: list[dict]) -> None:
    """`recs` as run's records.jsonl with a whole new digest chain, as iolab writes one, and the
    manifest's end with it: for cases whose damage is in what a record says, not in how it was
    written (the chain is a check, not a signature: anyone can rewrite it whole)."""
    from iolab.results import integrity

    manifest = json.loads((run / "manifest.json").read_text())
    prev, lines = integrity.seed(manifest, run.name), []
    for n, rec in enumerate(recs, 1):
        rec = {k: v for k, v in rec.items() if k != integrity.KEY}
        line, prev = integrity.seal(json.dumps(rec, sort_keys=True), n, prev)
        lines.append(line + "\n")
    (run / "records.jsonl").write_text("".join(lines))
    if isinstance(manifest.get("finished"), dict):
        manifest["finished"].update(records=len(recs), last_digest=prev)
        (run / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


@dataclass
class Copy:
    """A copy of the recorded run under a results root of its own, and the environment to read it."""
    root: Path            # the project (experiments/corpus-fio.yaml)
    results: Path         # the results root
    run: Path             # results/corpus-fio/<run id>
    env: dict

    @property
    def records_path(self) -> Path:
        return self.run / "records.jsonl"

    def lines(self) -> list[str]:
        return self.records_path.read_text().splitlines(keepends=True)

    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.lines() if line.strip()]

    def write_lines(self, lines: list[str]) -> None:
        self.records_path.write_text("".join(lines))

    def write_records(self, recs: list[dict]) -> None:
        self.write_lines([json.dumps(r, sort_keys=True) + "\n" for r in recs])

    def rechain(self, recs: list[dict]) -> None:
        """Records written with a whole new digest chain (see rechain)."""
        rechain(self.run, recs)

    def manifest(self) -> dict:
        return json.loads((self.run / "manifest.json").read_text())

    def write_manifest(self, manifest: dict) -> None:
        (self.run / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")

    def iolab(self, *args, **kw) -> Answer:
        return iolab(*args, env=self.env, cwd=self.root, **kw)


@pytest.fixture
def run_copy(recorded_run, tmp_path) -> Copy:
    root = make_project(tmp_path, {"corpus-fio": CORPUS_FIO})
    env = _env(tmp_path, root)
    dest = tmp_path / "results" / "corpus-fio" / recorded_run.name
    shutil.copytree(recorded_run, dest, symlinks=True)
    return Copy(root, tmp_path / "results", dest, env)


__all__ = ["CORPUS_FIO", "Copy", "rechain", "STANDIN_BIN", "TIMEOUT", "iolab", "noted", "refused"]
