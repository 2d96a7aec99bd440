"""`iolab trend` (analysis/trend.py) over copies of real recorded runs, one a day, with a step
change injected on purpose: from a known run on, every value times a known factor. The step must
be found at that run, with that factor, and nowhere else; runs of another system stay apart."""

from __future__ import annotations

import datetime
import json
import os
import shutil
from pathlib import Path

import pytest

from iolab.analysis import trend
from iolab.cli import main

pytest.importorskip("ruptures")

RUNS = Path(__file__).parent.parent / "data" / "runs"
# two real runs of quickstart that measured the same cases alike (two commits, minutes apart)
REAL = [RUNS / "855c081" / "quickstart" / "20261123T182533Z-baeba3",
        RUNS / "9d00b02" / "quickstart" / "20261123T182624Z-113f60"]
STEP_AT, FACTOR, DAYS = 6, 0.6, 10


def _shifted(src: Path, results: Path, day: int, scale: float, system: str | None = None) -> str:
    """A copy of a real run `day` days later (its name, start times and record times moved
    alike), every metric times `scale`."""
    stamp = datetime.datetime.strptime(src.name[:16], "%Y%m%dT%H%M%SZ") + datetime.timedelta(days=day)
    name = stamp.strftime("%Y%m%dT%H%M%SZ") + f"-d{day:02d}{'o' if system else ''}{src.name[-4:]}"
    dest = results / "quickstart" / name
    shutil.copytree(src, dest)
    out = []
    for line in (src / "records.jsonl").read_text().splitlines():
        r = json.loads(line)
        r["run_id"] = name
        timing = r["provenance"].get("timing")
        for k, v in (timing or {}).items():
            if isinstance(v, (int, float)):
                timing[k] = v + day * 86400
        when = datetime.datetime.fromisoformat(r["recorded"].replace("Z", "+00:00"))
        r["recorded"] = (when + datetime.timedelta(days=day)).strftime("%Y-%m-%dT%H:%M:%SZ")
        for m in r["metrics"]:
            if isinstance(m.get("value"), (int, float)):
                m["value"] *= scale
        if system:
            r["provenance"]["system"] = system
        out.append(json.dumps(r) + "\n")
    (dest / "records.jsonl").write_text("".join(out))
    if system:
        manifest = json.loads((dest / "manifest.json").read_text())
        manifest["system"] = system
        (dest / "manifest.json").write_text(json.dumps(manifest))
    return name


@pytest.fixture
def campaign(tmp_path, monkeypatch) -> list[str]:
    """DAYS runs, the real two alternating; from run STEP_AT on, values times FACTOR."""
    results = tmp_path / "results"
    monkeypatch.setenv("IOLAB_RESULTS", str(results))
    return [_shifted(REAL[day % 2], results, day, FACTOR if day >= STEP_AT else 1.0)
            for day in range(DAYS)]


def _rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| Part")]


def test_the_step_is_found_at_the_run_it_was_put_in(campaign, capsys):
    assert main(["trend", "quickstart"]) == 0
    text = capsys.readouterr().out
    rows = _rows(text)
    assert rows, text
    fio = [r for r in rows if r[0] == "fio"]
    assert len(fio) == 4, text              # every fio case: one change, the injected one
    for _part, _case, metric, at, _date, before, after, ratio, way in fio:
        assert at == campaign[STEP_AT] and metric == "write_bw" and way == "slower"
        assert float(ratio) == pytest.approx(FACTOR, abs=0.03)
        assert f"({STEP_AT} runs)" in before and f"({DAYS - STEP_AT} runs)" in after
    assert all(r[3] == campaign[STEP_AT] for r in rows), text     # no change anywhere else


def test_without_a_step_no_change_is_found(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IOLAB_RESULTS", str(tmp_path / "results"))
    for day in range(DAYS):
        _shifted(REAL[day % 2], tmp_path / "results", day, 1.0)
    assert main(["trend", "quickstart"]) == 0
    text = capsys.readouterr().out
    assert "no change point in any case" in text and "No change found in 6 of 6 series" in text


def test_other_systems_are_kept_apart_unless_asked(campaign, tmp_path, capsys):
    # the same runs measured on another system, twice as fast, all along: a level of its own
    for day in range(DAYS):
        _shifted(REAL[day % 2], tmp_path / "results", day, 2.0, system="other:compute")
    assert main(["trend", "quickstart", "--cases", "3cf5ac1a"]) == 0
    text = capsys.readouterr().out
    assert "### system local:default" in text and "### system other:compute" in text
    rows = _rows(text)
    assert [r[3] for r in rows if r[0] == "fio"] == [campaign[STEP_AT]], text
    assert main(["trend", "quickstart", "--system", "other:compute"]) == 0
    assert "no change point in any case" in capsys.readouterr().out
    # pooled across systems, the faster system's runs interleave day by day: not one step
    assert main(["trend", "quickstart", "--all-systems", "--cases", "3cf5ac1a"]) == 0
    assert "### system all systems" in capsys.readouterr().out


def test_since_and_a_missing_metric(campaign, capsys):
    assert main(["trend", "quickstart", "--since", campaign[STEP_AT][:8]]) == 0
    # from the step on only: one level, nothing changed
    assert "no change point in any case" in capsys.readouterr().out
    assert main(["trend", "quickstart", "--metric", "no_such_metric"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("iolab: error: no ok record of 'quickstart' has metric 'no_such_metric'")
    assert "Traceback" not in err


def test_the_plot_is_drawn(campaign, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert main(["trend", "quickstart", "--plot", str(tmp_path / "plot")]) == 0
    assert (tmp_path / "plot" / "trend.png").stat().st_size > 0
    assert (tmp_path / "plot" / "trend.svg").read_text().startswith("<?xml")


def test_the_noise_ignores_a_step():
    logs = [0.0, 0.02, -0.01, 0.01, -0.5, -0.49, -0.52, -0.5]
    assert trend.noise(logs) < 0.05
    changes, _ = trend.change_points(logs)
    assert changes == [4]


def test_drift_reference_jobs_are_left_out_as_in_the_table(tmp_path, monkeypatch, capsys):
    """A drift reference's extra jobs (provenance role drift-reference) are not repetitions of
    their case: slow ones in the later runs change no case's series."""
    results = tmp_path / "results"
    monkeypatch.setenv("IOLAB_RESULTS", str(results))
    for day in range(DAYS):
        name = _shifted(REAL[day % 2], results, day, 1.0)
        if day < STEP_AT:
            continue
        path = results / "quickstart" / name / "records.jsonl"
        lines = path.read_text().splitlines()
        extra = []
        for line in lines:
            r = json.loads(line)
            if r["benchmark"] != "fio":
                continue
            r["repetition"] += 100
            r["provenance"]["role"] = "drift-reference"
            for m in r["metrics"]:
                if isinstance(m.get("value"), (int, float)):
                    m["value"] *= 0.2
            extra.append(json.dumps(r))
        path.write_text("\n".join(lines + extra) + "\n")
    assert main(["trend", "quickstart"]) == 0
    assert "no change point in any case" in capsys.readouterr().out


@pytest.mark.parametrize("penalty", ["nan", "inf", "-inf", "0"])
def test_a_penalty_that_means_nothing_is_refused_in_one_line(campaign, capsys, penalty):
    # nan: a change point at every run; inf: never one
    assert main(["trend", "quickstart", f"--penalty={penalty}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"iolab: error: --penalty {float(penalty):g}: give a positive finite number")
    assert len(err.strip().splitlines()) == 1, err


def test_set_aside_names_the_lines_it_leaves_out(campaign, tmp_path, capsys):
    run = tmp_path / "results" / "quickstart" / campaign[3]
    lines = (run / "records.jsonl").read_text().splitlines()
    damaged = json.loads(lines[1])
    damaged["metrics"][0]["value"] = -1.0     # never a measurement
    lines[1] = json.dumps(damaged)
    (run / "records.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["trend", "quickstart"]) != 0
    assert "records.jsonl:2" in capsys.readouterr().err
    assert main(["trend", "quickstart", "--set-aside"]) == 0
    err = capsys.readouterr().err
    assert (f"iolab: note: run {campaign[3]}: 1 record line(s) set aside, not in the trend: "
            "records.jsonl:2 (") in err, err


def test_a_value_the_statistics_set_aside_is_in_no_runs_mean_and_named(campaign, capsys):
    """One fio record of a run written 1e308 MiB/s (on purpose): as the table sets it aside
    (stats.LIMIT), the trend takes the run's other values for that case, finds no change there
    (only the injected step) and names the value."""
    results = Path(os.environ["IOLAB_RESULTS"])
    damaged = campaign[2]
    path = results / "quickstart" / damaged / "records.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    (victim,) = [r for r in lines if r["benchmark"] == "fio" and r["repetition"] == 1][:1]
    for m in victim["metrics"]:
        if m["name"] == "write_bw":
            m["value"] = 1e308
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert main(["trend", "quickstart"]) == 0
    text = capsys.readouterr().out
    fio = [r for r in _rows(text) if r[0] == "fio"]
    assert len(fio) == 4 and all(r[3] == campaign[STEP_AT] for r in fio), text
    assert (f"write_bw: 1 value set aside (1e+308: above 1e+150), in no run's mean: "
            f"{victim['case_id']} rep 1 of run {damaged}") in text, text
