"""Figures in the docs are figures a script printed: `scripts/bench --record` writes what it
printed as a figures file (scripts/figures.py), the Performance page is generated from
docs/perf/*.json, and a file no script wrote stops the docs build, naming it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "iolab_reference", REPO / "docs" / "_ext" / "iolab_reference.py")
reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """One real run of scripts/bench's steps section with --record."""
    folder = tmp_path_factory.mktemp("perf")
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "bench"), "--repeat", "1",
                          "--record", str(folder / "steps.json")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return folder, out.stdout


def test_record_keeps_what_was_printed(recorded):
    folder, printed = recorded
    data = json.loads((folder / "steps.json").read_text())
    # the command as typed, the file written named without the directories of this machine
    assert data["command"] == "scripts/bench --repeat 1 --record steps.json"
    assert data["script"] == "scripts/bench" and data["format"] == reference.PERF_FORMAT
    (table,) = data["tables"]
    assert table["header"] == ["step", "items", "median ms"]
    steps = {row[0]: row for row in table["rows"]}
    assert "load+expand quickstart" in steps and "table from records" in steps
    assert steps["table from records"][1] == "3000"
    for row in table["rows"]:                     # every row kept is a row printed, same cells
        assert any(line.split() == " ".join(row).split() for line in printed.splitlines()), row
    assert not list(folder.glob(".*.tmp"))         # written whole: the temporary file is gone


def test_the_page_shows_each_recorded_table_with_its_provenance(recorded):
    folder, _ = recorded
    data = json.loads((folder / "steps.json").read_text())
    page = reference.performance_page(folder)
    assert f"## `{data['command']}`" in page
    assert f"commit `{data['commit']}`" in page and data["machine"] in page
    assert "| step | items | median ms |" in page
    assert sum(1 for line in page.splitlines() if line.startswith("| load+expand ")) == \
        sum(1 for row in data["tables"][0]["rows"] if row[0].startswith("load+expand "))


@pytest.mark.parametrize("damage, phrase", [
    (lambda d: d.pop("commit"), "missing commit"),
    (lambda d: d.update(format=2), "figures format 2"),
    (lambda d: d["tables"][0]["rows"][0].pop(), "row 1 has 2 cells for 3 columns"),
])
def test_a_figures_file_no_script_wrote_stops_the_page(recorded, tmp_path, damage, phrase):
    folder, _ = recorded
    data = json.loads((folder / "steps.json").read_text())
    damage(data)
    (tmp_path / "typed-by-hand.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match="typed-by-hand.json: .*" + phrase):
        reference.performance_page(tmp_path)


def test_the_shipped_figures_files_are_well_formed():
    files = reference.perf_files()
    assert files, "docs/perf/ holds no figures: record them with scripts/bench* --record"
    for path, data in files:
        assert data["script"].startswith("scripts/bench"), path
        assert data["tables"] or data["notes"], f"{path.name} records nothing"


def test_the_readme_quotes_the_recorded_overhead():
    """The README's overhead figures are the medians `scripts/bench overhead --record` wrote, with
    the goals and the versions that ran, never figures typed from another run."""
    data = json.loads((REPO / "docs" / "perf" / "bench-overhead.json").read_text())
    table = next(t for t in data["tables"] if t["title"].startswith("overhead"))
    medians = {row[0]: row[-1] for row in table["rows"] if row[1] == "median"}
    assert set(medians) == {"no darshan", "darshan"}, "record it with Darshan in the stack"
    rounds = sum(1 for row in table["rows"] if row[0] == "darshan" and row[1].isdigit())
    assert rounds >= 5, "at least 5 interleaved rounds"
    ran = " ".join(n for n in data["notes"] if n.startswith("darshan: ran "))
    readme = " ".join((REPO / "README.md").read_text().split())
    said = ("a median of {} s per job after ReFrame's start-up (goal 0.2 s), and {} s with "
            "Darshan {} on").format(medians["no darshan"], medians["darshan"],
                                    ran.split("Darshan ")[1].split(",")[0])
    assert said in readme
    assert f"{rounds} interleaved rounds" in readme
    for name in ("ior", "fio"):
        version = ran.split(f"{name} ")[1].split(",")[0]
        assert f"{name.upper() if name == 'ior' else name} {version}" in readme
