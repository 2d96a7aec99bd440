"""`iolab publish`: the static folder, what the page holds, and that results are only read.

Records are built as the ReFrame session writes them, with metrics parsed from real IOR outputs
(tests/golden/publish_data.py).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from markupsafe import escape as html_escape   # as the page escapes it (Jinja)
from pathlib import Path

import pytest

from iolab.cli import main
from iolab.errors import IolabError
from iolab.experiment.load import load_text
from iolab.results.record import Observed
from iolab.analysis import doc
from iolab.analysis.published.compare import SHAPE_RULE
from iolab.present.publish import MARKER, publish
from iolab.analysis.report import build_tables, render
from iolab.experiment.reportspec import StudyLink
from iolab.results import asrun
from iolab.results.run import load_run
from tests.golden.publish_data import (DARSHAN_FINDINGS, REPO, STRIPING_FLAG, experiment, make_run,
                                       published_links, records)

RUN_A = "20261121T000000Z-aaaaaa"
RUN_B = "20261122T000000Z-bbbbbb"


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_RESULTS", str(tmp_path / "results"))
    monkeypatch.delenv("IOLAB_ROOT", raising=False)
    monkeypatch.delenv("IOLAB_TEMPLATES", raising=False)
    return tmp_path / "results"


def archer_run(results: Path, run_id: str = RUN_A, **manifest) -> Path:
    exp = experiment("archer-fpp-vs-ssf")
    return make_run(results, exp, run_id, records(exp, run_id, darshan_cases=2, fail_last=True), **manifest)


def tree_digest(root: Path) -> dict:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def publish_archer(results: Path, out: Path, **kw):
    return publish("archer-fpp-vs-ssf", out, project_root=REPO, results=results, **kw)


# -------------------------------------------------------------------------------------- folder

def test_folder_files_and_tables_as_iolab_table_prints_them(results, tmp_path):
    run = archer_run(results)
    out = tmp_path / "site"
    done = publish_archer(results, out)
    names = set(done.files)
    assert {"index.html", "report.md", "tables.md", "tables.csv"} <= names
    plots = sorted(n for n in names if n.startswith("plots/"))
    assert plots == ["plots/main-line-read_bw-by-scale-num_tasks.png",
                     "plots/main-line-read_bw-by-scale-num_tasks.svg",
                     "plots/main-line-write_bw-by-scale-num_tasks.png",
                     "plots/main-line-write_bw-by-scale-num_tasks.svg"]
    assert done.plots == 2 and done.runs == [RUN_A]
    loaded = load_run(run)
    tables = build_tables(loaded.records, order=asrun.of(loaded).matrix_order)     # as iolab table does
    assert (out / "tables.md").read_text() == render(tables, "md")
    assert (out / "tables.csv").read_text() == render(tables, "csv")
    marker = json.loads((out / MARKER).read_text())
    assert marker["files"] == sorted(names) and marker["runs"] == [RUN_A]


def test_an_outlier_among_five_repetitions_is_marked(results, tmp_path):
    """With 5 repetitions the modified z-score applies: IOR's 7882 MiB/s among values of 1382
    to 1578 is marked on the page and named in Notes."""
    exp = experiment("archer-fpp-vs-ssf")
    make_run(results, exp, RUN_A, records(exp, RUN_A, reps=5))
    out = tmp_path / "site"
    publish_archer(results, out)
    html = (out / "index.html").read_text()
    assert '<span class="mark" title="outlier among the repetitions (see Notes)">‡</span>' in html
    assert "write_bw rep 5 = 7882.15" in html


def test_page_contents(results, tmp_path):
    archer_run(results)
    out = tmp_path / "site"
    publish_archer(results, out)
    html = (out / "index.html").read_text()
    # experiment and provenance
    assert "<h1>archer-fpp-vs-ssf</h1>" in html
    assert "ARCHER Best Practice Guide, section 8 (I/O on ARCHER)" in html
    for text in (RUN_A, "local:default", "0123456789ab", "4.10.4", "0.1.0", "cdcdcdcdcdcd",
                 "/opt/stack/bin/ior", "4.0.0", "provider=spack", "48 (47 ok, 1 failed)"):
        assert text in html, text
    # the tables with their marks and footnotes
    assert html.count('<table class="report-table"') == 1
    assert '<span class="mark" title="noisy: coefficient of variation above 10%">§</span>' in html
    # 3 repetitions: no value is flagged an outlier (stats.OUTLIER_MIN_N), as the legend says
    assert '<span class="mark" title="outlier among the repetitions (see Notes)">‡</span>' not in html
    assert "flagged from 5 repetitions on (fewer are never flagged)" in html
    assert f"† {STRIPING_FLAG}" in html
    # the plots, as files next to the page
    imgs = re.findall(r'<img src="([^"]+)"', html)
    assert imgs == ["plots/main-line-write_bw-by-scale-num_tasks.png",
                    "plots/main-line-read_bw-by-scale-num_tasks.png"]
    assert all((out / src).is_file() for src in imgs)
    # requested vs applied: every flag by case, with its repetitions
    applied = html.split('id="applied"')[1].split("</section>")[0]
    assert applied.count(STRIPING_FLAG) == 16
    assert "Darshan log unreadable: truncated log" in applied
    # Darshan findings
    darshan = html.split('id="darshan"')[1].split("</section>")[0]
    for finding in DARSHAN_FINDINGS:
        assert finding["text"] in darshan
    assert "unreadable: truncated log (darshan-parser: unexpected end of file)" in darshan
    # the published study, with the shape verdict
    published = html.split('id="published"')[1].split("</section>")[0]
    assert "archer-fpp-ssf" in published
    assert re.search(r'class="verdict shape-verdict"[^>]*>Verdict: (shape|not assessed)', published)
    assert "the study&#39;s rows at 24 processes (closest to the run&#39;s 4): 5 of 47" in published
    assert "choose another with --pick scale.tasks_per_node=2" in published
    assert "Transcribed from: <span class=\"mono\">001_a4fc0f76de13e6e1.txt" in published
    assert "<strong>verdict: " in published
    assert "rows: 5 matched, 0 without a matching case, 0 ambiguous" in published
    # the rule the verdict follows, stated where it is given, as `iolab compare` states it
    assert html_escape(SHAPE_RULE) in published


def test_page_is_self_contained(results, tmp_path):
    archer_run(results)
    out = tmp_path / "site"
    publish_archer(results, out)
    html = (out / "index.html").read_text()
    refs = re.findall(r'(?:src|href)="([^"]*)"', html)
    assert refs and not [r for r in refs if re.match(r"[a-z]+:|//", r)]
    assert "<link" not in html and "@import" not in html and "url(" not in html
    assert re.findall(r"<script[^>]*\bsrc=", html) == []
    for ref in refs:
        if not ref.startswith("#"):
            assert (out / ref).is_file(), ref


def test_results_are_only_read(results, tmp_path):
    archer_run(results)
    before = tree_digest(results)
    publish_archer(results, tmp_path / "site")
    publish_archer(results, tmp_path / "site", force=True)
    assert tree_digest(results) == before


def test_out_inside_results_is_refused(results, tmp_path):
    run = archer_run(results)
    with pytest.raises(IolabError, match="inside the results directory"):
        publish_archer(results, run / "site")


# ---------------------------------------------------------------------------------- overwriting

def test_non_empty_out_needs_force_and_force_replaces_only_its_own_files(results, tmp_path):
    archer_run(results)
    out = tmp_path / "site"
    publish_archer(results, out)
    (out / "notes.txt").write_text("mine")
    stale = out / "plots" / "old-plot.png"           # pretend an earlier publish wrote it
    stale.write_bytes(b"old")
    marker = json.loads((out / MARKER).read_text())
    marker["files"].append("plots/old-plot.png")
    (out / MARKER).write_text(json.dumps(marker))
    with pytest.raises(IolabError, match="is not empty"):
        publish_archer(results, out)
    publish_archer(results, out, force=True)
    assert (out / "notes.txt").read_text() == "mine"          # not ours: left alone
    assert not stale.exists()                                  # ours and no longer produced
    assert (out / "index.html").is_file()


def test_force_refuses_a_directory_it_did_not_write(results, tmp_path):
    archer_run(results)
    out = tmp_path / "site"
    out.mkdir()
    (out / "index.html").write_text("somebody else's page")
    with pytest.raises(IolabError, match="was not written by `iolab publish`"):
        publish_archer(results, out, force=True)
    assert (out / "index.html").read_text() == "somebody else's page"


def test_force_refuses_to_overwrite_a_foreign_file_in_the_way(results, tmp_path):
    archer_run(results)
    out = tmp_path / "site"
    publish_archer(results, out)
    marker = json.loads((out / MARKER).read_text())
    marker["files"].remove("tables.csv")                     # now tables.csv is somebody else's
    (out / MARKER).write_text(json.dumps(marker))
    (out / "tables.csv").write_text("hand-made")
    with pytest.raises(IolabError, match="tables.csv would be overwritten"):
        publish_archer(results, out, force=True)
    assert (out / "tables.csv").read_text() == "hand-made"


# ------------------------------------------------------------------------------ runs and studies

def test_several_runs(results, tmp_path):
    archer_run(results, RUN_A)
    archer_run(results, RUN_B, system="other:compute")
    out = tmp_path / "site"
    done = publish_archer(results, out, runs=["aaaaaa", "bbbbbb"])
    assert done.runs == [RUN_A, RUN_B] and done.plots == 4
    html = (out / "index.html").read_text()
    assert f"Results: run {RUN_A} (local:default)" in html and f"Results: run {RUN_B} (other:compute)" in html
    assert (out / "plots" / f"{RUN_B}-main-line-write_bw-by-scale-num_tasks.svg").is_file()
    rows = list(csv.reader(io.StringIO((out / "tables.csv").read_text())))
    assert rows[0][:3] == ["run", "part", "case_id"]
    assert {r[0] for r in rows if r and r[0] not in ("run",)} == {RUN_A, RUN_B}
    assert html.count('class="verdict shape-verdict"') == 2


def test_aggregators_page_and_a_study_without_rows_for_the_experiment(results, tmp_path):
    exp = experiment("cp2k-aggregators")
    make_run(results, exp, RUN_A, records(exp, RUN_A, effective_cb_nodes=1))
    out = tmp_path / "site"
    publish("cp2k-aggregators", out, project_root=REPO, results=results)
    html = (out / "index.html").read_text()
    assert "hint cb_nodes: requested 8, effective 1" in html
    assert "eff. 1" in (out / "plots" / "main-line-write_bw-by-mpiio-cb_nodes.svg").read_text()
    assert "metric: run write_bw against study net_write_bw (MiB/s)" in html
    assert "rows: 3 matched, 5 without a matching case, 0 ambiguous" in html
    # the burst-buffer experiment is paired with the same post, which has no number to set against it
    bb = experiment("nersc-burst-buffer")
    make_run(results, bb, RUN_A, records(bb, RUN_A))
    publish("nersc-burst-buffer", tmp_path / "bb", project_root=REPO, results=results)
    html = (tmp_path / "bb" / "index.html").read_text()
    assert "Not compared: the post gives its burst-buffer timings (Figure 2" in html


def test_experiment_without_a_study(results, tmp_path):
    # the experiment as run has no report.published (the pairing is the run's, not today's)
    text = experiment("archer-fpp-vs-ssf").text.replace("report:\n  published: [archer-fpp-ssf]\n", "")
    exp = load_text(text, REPO / "experiments" / "archer-fpp-vs-ssf.yaml", "local")
    assert exp.report.study() is None
    make_run(results, exp, RUN_A, records(exp, RUN_A))
    out = tmp_path / "site"
    publish_archer(results, out)
    page = (out / "index.html").read_text()
    assert "No published study is paired with archer-fpp-vs-ssf" in page
    assert "report: {published: ...}" in page and "PUBLISHED_STUDIES" not in page   # names no code


def test_study_parts_and_groups(results, tmp_path):
    """KAUST: each group of the slides' rows against its part of the run, and a study verdict."""
    exp = experiment("kaust-stripe-count")
    make_run(results, exp, RUN_A, records(exp, RUN_A))
    out = tmp_path / "site"
    publish("kaust-stripe-count", out, project_root=REPO, results=results)
    md = (out / "report.md").read_text()
    assert "#### wrf-restart" in md and "#### dd-small-file (write_rate)" in md
    assert "- only the run's part 'wrf-restart'" in md and "- only the run's part 'small-file'" in md
    assert "metric: run write_total_time against study restart_write_time (s)" in md
    assert ("**Verdict: wrf-restart: not assessed: 2 matched rows are too few for a verdict (it needs "
            "at least 3); dd-small-file (write_time): not assessed") in md


def test_mapping_names_shipped_studies():
    links = published_links()
    assert set(links) >= {"archer-fpp-vs-ssf", "csc-btio-hints", "cp2k-aggregators",
                          "kaust-stripe-count", "lustre-adio-io-size"}
    for exp_id, link in links.items():
        assert (REPO / "experiments" / f"{exp_id}.yaml").is_file(), exp_id
        assert (REPO / "results" / "published" / f"{link.study}.csv").is_file(), link.study
        assert isinstance(link, StudyLink)


def test_blocks_print_as_markdown_and_as_page_blocks():
    """The comparison's one source: Markdown for the terminal, blocks for the page."""
    blocks = [doc.heading("title", 2), doc.line(), doc.line("line one"), doc.line(),
              doc.table(["a", "b"], [["1", "2 | 3"]]), doc.line(), doc.verdict("verdict: x"), doc.line()]
    assert doc.markdown(blocks) == ("## title\n\nline one\n\n| a | b |\n|---|---|\n| 1 | 2 | 3 |\n\n"
                                    "verdict: x\n")
    assert doc.markdown(blocks, shift=1).startswith("### title\n")
    assert doc.as_dicts(blocks) == [
        {"kind": "heading", "text": "title"}, {"kind": "line", "text": "line one"},
        {"kind": "table", "header": ["a", "b"], "rows": [["1", "2 | 3"]]},   # a cell stays whole
        {"kind": "verdict", "text": "verdict: x"}]


# ------------------------------------------------------------------------------------------- CLI

def test_cli_publish(results, tmp_path, capsys):
    archer_run(results)
    out = tmp_path / "site"
    assert main(["publish", "archer-fpp-vs-ssf", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"published archer-fpp-vs-ssf (run {RUN_A}): 8 files, 2 plot(s)" in printed
    assert main(["publish", "archer-fpp-vs-ssf", "--out", str(out)]) == 2
    assert "is not empty" in capsys.readouterr().err
    assert main(["publish", "archer-fpp-vs-ssf", "--runs", RUN_A, "--out", str(out), "--force"]) == 0
    assert main(["publish", "archer-fpp-vs-ssf", "--runs", "nope", "--out", str(tmp_path / "x")]) == 2
    assert "no run matching 'nope'" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ symlinks

def attack_marker(out: Path, *names: str) -> None:
    """An edited (or stale) marker listing files that are not the page's."""
    marker = json.loads((out / MARKER).read_text())
    marker["files"] += list(names)
    (out / MARKER).write_text(json.dumps(marker))


@pytest.mark.parametrize("attack", ["plots", "index.html", "out", "out-elsewhere"])
def test_publish_never_writes_through_a_symlink(results, tmp_path, attack):
    run = archer_run(results)
    out = tmp_path / "site"
    publish_archer(results, out)
    before = tree_digest(results)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if attack == "plots":              # the reported incident: plots/ -> a run, records.jsonl listed
        shutil.rmtree(out / "plots")
        (out / "plots").symlink_to(run)
        attack_marker(out, "plots/records.jsonl", "plots/manifest.json")
    elif attack == "index.html":
        (out / "index.html").unlink()
        (out / "index.html").symlink_to(run / "records.jsonl")
    elif attack == "out":
        out = tmp_path / "site-link"
        out.symlink_to(run)
    else:
        out = tmp_path / "site-link"
        out.symlink_to(elsewhere)
    site_before = {p.name: os.lstat(p).st_mtime_ns for p in (tmp_path / "site").iterdir()}
    with pytest.raises(IolabError, match="symlink"):
        publish_archer(results, out, force=True)
    assert tree_digest(results) == before                      # the run is untouched
    assert list(elsewhere.iterdir()) == []
    assert {p.name: os.lstat(p).st_mtime_ns for p in (tmp_path / "site").iterdir()} == site_before


def test_writes_refuse_a_symlink_that_appears_after_the_checks(results, tmp_path):
    """The descriptors are opened with O_NOFOLLOW: the kernel refuses what the checks missed."""
    from iolab.present.outdir import OutDir

    run = archer_run(results)
    before = tree_digest(results)
    out = tmp_path / "site"
    (out / "plots").mkdir(parents=True)
    target = OutDir(out)
    shutil.rmtree(out / "plots")
    (out / "plots").symlink_to(run)
    (out / "index.html").symlink_to(run / "records.jsonl")
    try:
        with pytest.raises(IolabError, match="plots is a symlink"):
            target.write("plots/records.jsonl", b"x")
        with pytest.raises(IolabError, match="plots is a symlink"):
            target.unlink("plots/records.jsonl")
        target.unlink("index.html")                   # not a file of ours: left alone
        target.write("tables.md", b"ok")
    finally:
        target.close()
    assert tree_digest(results) == before
    assert (out / "index.html").is_symlink() and (out / "tables.md").read_bytes() == b"ok"


def test_publish_refuses_out_inside_or_around_results_via_cli(results, tmp_path):
    run = archer_run(results)
    env = {**os.environ, "IOLAB_RESULTS": str(results)}
    for out, why in ((run / "site", "inside the results directory"),
                     (results.parent, "contains the results directory")):
        done = subprocess.run([sys.executable, "-m", "iolab.cli", "publish", "archer-fpp-vs-ssf",
                               "--out", str(out), "--force"], capture_output=True, text=True,
                              cwd=REPO, env=env, timeout=120)
        assert done.returncode == 2 and why in done.stderr
        assert len(done.stderr.splitlines()) == 1
    assert not (run / "site").exists()


def test_publish_reads_iolab_results_and_skips_imported_runs(results, tmp_path):
    archer_run(results)
    ior = REPO / "tests" / "data" / "ior" / "ior_mpiio_coll_4r_t256k_b8m.summary.json"
    assert main(["import", "ior", str(ior), "--into", "archer-fpp-vs-ssf"]) == 0
    done = publish_archer(results, tmp_path / "site")
    assert done.runs == [RUN_A] and done.notes == []
    imported = publish_archer(results, tmp_path / "site2", include_imported=True)
    assert imported.runs != [RUN_A]
    md = (tmp_path / "site2" / "tables.md").read_text()
    assert md.startswith("**Note:** imported run: outputs of runs made outside iolab")
    assert "imported run" in (tmp_path / "site2" / "index.html").read_text()


def test_a_run_where_nothing_ran_says_so(results, tmp_path):
    """Binaries absent: the page says 'not found', never 'not printed', and never that every
    setting was applied as requested."""
    exp = experiment("archer-fpp-vs-ssf")
    recs = [replace(r, status="skipped", metrics=[], flags=[], observed=Observed(),
                    error="benchmark binary 'ior' not found on PATH; provide it with Spack")
            for r in records(exp, RUN_A, reps=1)]
    make_run(results, exp, RUN_A, recs)
    out = tmp_path / "site"
    publish_archer(results, out)
    for name in ("index.html", "report.md"):
        text = (out / name).read_text()
        assert "not found" in text and "not printed" not in text, name
        assert "applied as requested" not in text and "No case ran, so no setting was applied" in text
