"""The tutorial prints what its commands print (issue 36, item 20).

Its console blocks are checked twice. Against the run they were copied from (recorded under
tests/data/tutorial, a real fio run on the `local` system), every command after `scripts/run`
prints exactly what the page shows. On a fresh project made from the page's own YAML, every
command runs for real in the page's order and prints the page's lines, measured values aside:
decimals, run ids, durations, seeds and the cells of a table's rows may differ (the rows' keys
and widths may not). `validate` and `plan` measure nothing: they must match exactly there too.
In the page, a line `...` stands for any lines, and `...` inside a line for any text.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO, have, make_project

TUTORIAL = REPO / "docs" / "tutorial.md"
RECORDED = REPO / "tests" / "data" / "tutorial"
RECORDED_RUN = "20261128T184854Z-282d86"

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not have("mpirun"), reason="mpirun (Open MPI) is not installed"),
              pytest.mark.skipif(not have("fio"), reason="fio is not installed")]


def console_blocks(text: str) -> list[tuple[str, list[str]]]:
    """(command, the lines the page says it prints) for each `$ ` line of a console block."""
    steps: list[tuple[str, list[str]]] = []
    for block in re.findall(r"^```console\n(.*?)^```$", text, re.M | re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                assert steps, f"output before any command in a console block: {line!r}"
                steps[-1][1].append(line)
    return steps


def experiment_yaml(text: str) -> str:
    """The YAML the page tells the reader to save as experiments/first-fio.yaml."""
    after = text.index("`experiments/first-fio.yaml`")
    return re.search(r"^```yaml\n(.*?)^```$", text[after:], re.M | re.S).group(1)


def _pattern(expected: list[str]) -> re.Pattern:
    parts = []
    for line in expected:
        if line == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(p) for p in line.split("...")) + r"\n")
    return re.compile("".join(parts))


def fits(expected: list[str], actual: str) -> bool:
    return _pattern(expected).fullmatch(actual if actual.endswith("\n") else actual + "\n") is not None


def misfit(expected: list[str], actual: str) -> str | None:
    """None when the output fits the page; else the first line of the page it does not reach."""
    if fits(expected, actual):
        return None
    for i, line in enumerate(expected):
        if not fits(expected[:i + 1] + ["..."], actual):
            return f"line {i + 1} of the block: {line!r}"
    return "output left over after the block's last line"


def _row_shape(line: str) -> str:
    """A table row as its key (first cell) and its width: the measured cells may differ."""
    cells = line.strip().strip("|").split("|")
    if set("".join(cells).strip()) <= set("-: "):
        return line
    return f"| {cells[0].strip()} | <{len(cells) - 1} cells> |"


def measured_aside(text: str) -> str:
    """What a new run changes: run ids, decimals and versions, durations, seeds, the jobs' order,
    digests, drift found, the cells of table rows."""
    out = []
    for line in text.splitlines():
        line = re.sub(r"\d{8}T\d{6}Z-[0-9a-f]{6}", "RUN", line)
        line = re.sub(r"\d+:\d\d:\d\d", "T", line)
        line = re.sub(r"\bseed \d+", "seed S", line)
        # the jobs' order is shuffled anew by each run
        line = re.sub(r"%case=[0-9a-f]+ %repetition=\d+ /[0-9a-f]+", "%case=C %repetition=R /H", line)
        line = re.sub(r"\b[0-9a-f]{64}\b", "DIGEST", line)
        # drift found in a fresh run is measured too (a busy machine drifts; the recorded run
        # did not): `iolab runs` appends it to the run's line
        line = re.sub(r"; drift in [^;(]*(?:\([^()]*\)[^;(]*)*", "", line)
        line = re.sub(r"\d+(?:\.\d+)+", "N", line)
        if line.startswith("| "):
            line = _row_shape(line)
        out.append(line)
    return "\n".join(out) + "\n"


def _env(rfm_env: dict) -> dict:
    # the tutorial's set-up: the venv's iolab and reframe first; fio from PATH (--no-spack)
    env = {k: v for k, v in rfm_env.items() if k != "IOLAB_RESULTS"}   # the project's results/
    return dict(env, PATH=os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]]),
                IOLAB_SPACK_ENV="", IOLAB_TEMPLATES=str(REPO / "templates"))


def _project(tmp_path: Path, text: str) -> Path:
    root = make_project(tmp_path, {"first-fio": experiment_yaml(text)})
    (root / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "run", root / "scripts" / "run")
    return root


def _shell(command: str, root: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(command, shell=True, cwd=root, env=env, capture_output=True, text=True,
                          timeout=900)


def _check(command: str, expected: list[str], actual: str, loose: bool = False) -> None:
    wrong = (misfit(measured_aside("\n".join(expected)).splitlines(), measured_aside(actual)) if loose
             else misfit(expected, actual))
    if wrong:
        pytest.fail(f"`{command}` no longer prints what docs/tutorial.md shows: {wrong}\n"
                    f"--- printed:\n{actual}", pytrace=False)


def test_the_page_has_the_steps_it_walks_through():
    steps = [command for command, _ in console_blocks(TUTORIAL.read_text())]
    assert steps == ["iolab validate experiments/first-fio.yaml", "iolab plan first-fio",
                     "scripts/run first-fio local", "iolab runs first-fio", "iolab verify first-fio",
                     "iolab compare first-fio --by bs --baseline 4KiB",
                     "iolab publish first-fio --out first-fio-page"]
    for command, expected in console_blocks(TUTORIAL.read_text()):
        assert [line for line in expected if line != "..."], f"`{command}` shows no output"


def test_the_matching_rules_can_fail():
    assert fits(["a", "...", "d ... f"], "a\nb\nc\nd e f\n")
    assert not fits(["a", "...", "d ... f"], "a\nb\nd e g\n")
    assert not fits(["a", "b"], "a\nb\nc\n")          # nothing left over
    assert fits(["x 1.5 MiB"], measured_aside("x 2.25 MiB")) is False
    assert fits(measured_aside("x 1.5 MiB").splitlines(), measured_aside("x 2.25 MiB"))
    assert measured_aside("| 4 | 1.0 | 2 |") != measured_aside("| 1024 | 1.0 | 2 |")


def test_the_setup_lines_are_those_setup_prints():
    """The set-up block's lines are lines scripts/setup prints, in its order (running setup
    itself here would reinstall the venv that runs these tests)."""
    text = TUTORIAL.read_text()
    assert "```sh\nscripts/setup --no-spack " in text
    setup = (REPO / "scripts" / "setup").read_text()
    assert "--no-spack" in setup.split("\n\n")[0] or "--no-spack)" in setup
    block = re.search(r"^```text\n(== benchmarks:\n.*?)^```$", text, re.M | re.S).group(1).splitlines()
    order = re.search(r"^for b in ([a-z_0-9 ]+); do$", setup, re.M).group(1).split()
    shown = [re.match(r"   (\w+): ", line).group(1) for line in block[1:] if line.startswith("   ")]
    assert shown == order[:len(shown)] and "fio" in shown
    assert 'echo "== benchmarks:"' in setup
    venv_default = re.search(r'^venv=\$\{IOLAB_VENV:-([^}]+)\}', setup, re.M).group(1)
    assert block[-1] == f"== done. Activate with: source {venv_default}/bin/activate"
    assert 'echo "== done. Activate with: source $venv/bin/activate"' in setup


def test_every_command_after_the_run_prints_what_the_page_shows(rfm_env, tmp_path):
    """Against the recorded run the page was made from: exactly its lines."""
    text = TUTORIAL.read_text()
    root = _project(tmp_path, text)
    shutil.copytree(RECORDED / "first-fio", root / "results" / "first-fio")
    env = dict(_env(rfm_env), HOME=str(tmp_path), IOLAB_ROOT=str(root))
    steps = console_blocks(text)
    run_at = next(i for i, (command, _) in enumerate(steps) if command.startswith("scripts/run"))
    # the run's table is the table of the recorded run, as `iolab table` prints it
    expected = steps[run_at][1]
    table = expected[expected.index(next(x for x in expected if x.startswith("### first-fio"))):-1]
    out = _shell("iolab table first-fio", root, env)
    assert out.returncode == 0, out.stderr
    _check("iolab table first-fio", table, out.stdout)
    assert RECORDED_RUN in expected[-1]
    for command, expected in steps[run_at + 1:]:
        out = _shell(command, root, env)
        assert out.returncode == 0, out.stdout + out.stderr
        _check(command, expected, out.stdout)


def test_a_new_reader_gets_what_the_page_shows(rfm_env, tmp_path):
    """From the page's YAML on a fresh project, each command in the page's order: the same
    lines, measured values aside; `validate` and `plan` exactly."""
    text = TUTORIAL.read_text()
    root = _project(tmp_path, text)
    env = dict(_env(rfm_env), HOME=str(tmp_path), IOLAB_ROOT=str(root))
    measured = False
    for command, expected in console_blocks(text):
        out = _shell(command, root, env)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        measured = measured or command.startswith("scripts/run")
        _check(command, expected, out.stdout, loose=measured)
    assert (root / "first-fio-page" / "index.html").is_file()
