"""`iolab publish`: a run (or several) as a self-contained static folder.

    index.html      the experiment, provenance, a search's answer and progress (a search's run),
                    tables, plots, requested vs applied, Darshan findings and the comparison
                    with the published study (no server, no CDN, no external resources; the
                    images are files next to it)
    report.md       the same page as Markdown (for wikis)
    tables.md/.csv  the tables exactly as `iolab table` prints them
    plots/*.png/svg the plots (iolab.present.plots)

Publishing only reads results/. It refuses a non-empty output directory unless --force, and
then replaces only files an earlier `iolab publish` wrote there (listed in .iolab-publish.json);
any other file is left alone, and one in the way stops it. Nothing is written, replaced or
deleted through a symlink: --out itself and every path below it must be real directories and
files (its parents may be symlinks), checked before anything changes and then opened relative to
directory descriptors with O_NOFOLLOW; an --out inside the results root, or containing it, is
refused.

Which published study an experiment is set against, and how a run is lined up with it, is
the experiment's `report.published` and iolab.analysis.published.studies.compare_study: the page shows
what `iolab compare ID RUN published:STUDY` prints.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__
from ..analysis import doc, drift
from . import plots, progress
from ..experiment import reportspec
from .. import stats
from ..analysis.compare import Side
from ..errors import IolabError
from ..experiment.matrix import show_value
from ..analysis.published.study import load_study
from ..layers.registry import findings_folds
from ..render import render_template
from ..experiment.reportspec import StudyLink
from ..results import asrun, notes as run_notes, state as run_state
from ..results.combine import load_chain
from ..results.run import Run, chain_of, kept_at, run_dir
from ..results.runfiles import run_name, site_of
from ..analysis.sites import compare_sites, site_blocks
from ..analysis.published.studies import compare_study, study_blocks
from ..analysis.columns import run_tables
from ..analysis.report import LEGEND, NOISY_MARK, OUTLIER_MARK, render, table_rows, tables_from
from .outdir import MARKER, OutDir, install, previous_files, real_out

PLOTS_DIR = "plots"
# ------------------------------------------------------------------------------------ helpers

def _short(sha: str | None, n: int = 12) -> str | None:
    return sha[:n] if sha else None


def setting(benchmark: str, varied, params: dict, case_id: str) -> str:
    """A case's varied parameters, as `iolab plan` shows them."""
    text = ", ".join(f"{k}={show_value(benchmark, k, params.get(k))}" for k in varied
                     if k in params)
    return text or case_id


def _setting(facts, job: tuple) -> str:
    """setting() of a case of the run's digest (a drift reference's case too)."""
    part = facts.parts[job[0]]
    case = part.cases.get(job[1]) or part.reference
    return setting(part.benchmark, part.varied, case.params if case else {}, job[1])


def _reps(values) -> str:
    reps = sorted({v for v in values if v is not None})
    return ", ".join(map(str, reps)) if reps else "-"


# --------------------------------------------------------------------------------- provenance

def provenance(run: Run) -> dict:
    """What the run is: system, versions, git state, stack, per part the benchmark binaries
    (from the run's digest: no record is read)."""
    path, manifest, facts = run.path, run.manifest, run.digest
    stack_locks = set()
    parts: list[dict] = []
    for name, pf in facts.parts.items():
        part = {"part": name, "benchmark": pf.benchmark, "names": list(pf.binaries["name"]),
                "versions": list(pf.binaries["version"]), "paths": list(pf.binaries["path"]),
                "sha256": list(pf.binaries["sha256"]), "stacks": []}
        if pf.not_found:
            part["not_found"] = True
        for stack in pf.stacks:
            shown = ", ".join(f"{k}={v}" for k, v in sorted(stack.items())
                              if v not in (None, "", [], {}) and k != "spack_lock_sha256")
            if shown and shown not in part["stacks"]:
                part["stacks"].append(shown)
            if stack.get("spack_lock_sha256"):
                stack_locks.add(stack["spack_lock_sha256"])
        # never "not printed" for a binary that did not run: say why there is no version
        part["version_text"] = (", ".join(part["versions"]) or "not printed" if pf.ran
                                else "not found" if pf.not_found else "did not run")
        parts.append(part)
    status = {s: facts.counts.get(s, 0) for s in ("ok", "failed", "skipped", "aborted")}
    reframe = manifest.get("reframe") or facts.reframe
    lock = manifest.get("spack_lock_sha256") or (sorted(stack_locks)[0] if len(stack_locks) == 1 else None)
    return {
        "run_id": run_name(path),      # RUN@SITE for another site's run
        "site": site_of(path),
        "path": str(path),
        "system": manifest.system or manifest.label or "unknown",
        "origin": manifest.origin or "-",
        "created": manifest.created or "-",
        "profile": manifest.profile or "(base)",
        "git": manifest.git,
        "git_short": _short(manifest.git) or "unknown",
        "dirty": manifest.dirty,
        "iolab": manifest.iolab or "-",
        "reframe": reframe or "-",
        "spack_lock_sha256": lock,
        "spack_lock_short": _short(lock),
        "experiment_sha256": manifest.experiment_sha256,
        "host": manifest.host.get("hostname") or "-",
        "records": facts.records,
        "status": status,
        "parts": parts,
        "state": run_state.of(run).describe(),
        # each run's records as checked (integrity.py): its final digest, or why none
        "checked": [{"run_id": run_name(r.path),
                     "text": r.reading.verdict.describe() if r.reading.verdict else "in memory"}
                    for r in run_notes.runs_read(run)],
    }


# ------------------------------------------------------------------------------------- tables

_MARK_TITLES = {NOISY_MARK: f"noisy: coefficient of variation above {stats.NOISY_CV:.0%}",
                OUTLIER_MARK: "outlier among the repetitions (see Notes)"}
_MARKED = re.compile(rf"^(.*?) ([{NOISY_MARK}{OUTLIER_MARK}]+)$")


def _cell(text: str) -> dict:
    m = _MARKED.match(text) if text[-1:] in _MARK_TITLES else None
    if not m:
        return {"text": text, "marks": []}
    return {"text": m.group(1), "marks": [{"mark": c, "title": _MARK_TITLES[c]} for c in m.group(2)]}


def html_table(table) -> dict:
    """A report table for the HTML page: the Markdown table's cells, marks split out."""
    header, body, footnotes = table_rows(table, "md")
    if not table.keys:
        header = ["Case"] + header
        body = [[row.case_id] + line for row, line in zip(table.rows, body)]
    return {"title": f"{table.experiment} · {table.part} ({table.benchmark}) · run {table.run_id}",
            "part": table.part, "header": header, "rows": [[_cell(c) for c in line] for line in body],
            "footnotes": footnotes}


# ------------------------------------------------------------------------- requested vs applied

def flags_by_case(facts) -> list[dict]:
    """Every flag (requested vs applied difference), by case, with the repetitions it concerns
    (the run's digest's, in the order the records first say them)."""
    return [{"part": job[0], "case_id": job[1], "setting": _setting(facts, job),
             "flags": [{"text": t, "reps": _reps(r)} for t, r in flags.items()]}
            for job, flags in facts.flags.items() if flags]


def findings_by_case(facts) -> dict[str, list[dict]]:
    """Each findings fold of the digest (a layer's, by its key), per case: findings (with their
    repetitions) and outcomes without any. A page has a section per fold (its template's)."""
    return {fold: [{"part": job[0], "case_id": job[1], "setting": _setting(facts, job),
                    "findings": [{"rule": r or "", "text": t, "reps": _reps(v)}
                                 for (r, t), v in findings.items()],
                    "other": [{"text": t, "reps": _reps(v)} for t, v in other.items()]}
                   for job, (findings, other) in by_job.items()]
            for fold, by_job in facts.findings.items()}


# ----------------------------------------------------------------------------------- published

@dataclass
class PublishedSection:
    study: str
    title: str = ""
    url: str = ""
    link: StudyLink | None = None
    adjustments: list[str] = field(default_factory=list)
    markdown: str = ""
    blocks: list[dict] = field(default_factory=list)
    seed: str = ""
    verdict: str = ""
    error: str = ""


def published_comparison(run: Run, link: StudyLink, project_root: Path) -> PublishedSection:
    """The run against its published study, as `iolab compare ID RUN published:STUDY` does
    (iolab.analysis.published.studies.compare_study): per group of the study's rows a table and
    its verdict lines, then the study's verdict."""
    section = PublishedSection(link.study, link=link)
    try:
        study = load_study(link.study, project_root)
    except IolabError as exc:
        section.error = str(exc)
        return section
    section.title = study.citation.get("title", "")
    section.url = study.citation.get("url", "")
    section.seed = study.citation.get("seed", "")
    if link.why:
        section.adjustments.append(link.why)
    if not run.reading.total:
        section.error = "the run has no records"
        return section
    try:
        result = compare_study(Side("run", run), study)
    except IolabError as exc:
        section.error = str(exc)
        return section
    if not result.compared:
        section.error = "; ".join(g.error for g in result.groups)
        return section
    blocks = study_blocks(result)
    section.blocks = doc.as_dicts(blocks)
    section.markdown = doc.markdown(blocks, shift=1)     # under the page's "## Published study"
    section.verdict = result.verdict()
    return section


# ----------------------------------------------------------------------------------- the page

@dataclass
class RunReport:
    provenance: dict
    tables: list[dict]
    tables_md: str
    tables_csv: str
    plots: list[dict]
    plot_notes: list[str]
    flags: list[dict]
    findings: dict[str, list[dict]]     # by fold (findings_by_case)
    published: PublishedSection | None
    settings: reportspec.Report
    run_notes: list[str] = field(default_factory=list)   # imported, incomplete, unreadable lines
    run: Run | None = None
    search: dict | None = None      # a search's run: its answer and progress plot (search_section)
    why: list[dict] = field(default_factory=list)   # `iolab why` per part, with its plot


def relative(files: dict[str, Path], page: Path) -> dict[str, str]:
    """A plot's files ({format: path}) as the page links them: relative to it."""
    return {fmt: p.relative_to(page).as_posix() for fmt, p in files.items()}


def _plot_entry(plot: plots.Plot, out: Path) -> dict:
    rel = relative(plot.files, out)
    return {"title": plot.title, "png": rel.get("png"), "svg": rel.get("svg"), "notes": plot.notes,
            "rule": plot.spec.rule, "part": plot.spec.part, "metric": plot.spec.metric,
            "name": plot.spec.name, "alt": _alt(plot)}


def _alt(plot: plots.Plot) -> str:
    if plot.spec.kind == "heatmap":
        return f"Heatmap of the mean {plot.spec.metric} over {plot.xlabel} and {plot.ylabel}"
    return f"{plot.ylabel} against {plot.xlabel}"


def search_section(run: Run, staging: Path, prefix: str = "") -> dict | None:
    """A search's run (`iolab search`): the answer as `iolab search-report` prints it, and the
    objective of each job against the search's progress (progress.search_progress_plot).
    None for a run that is not a search's."""
    from ..campaigns.search.answer import is_search_run, of_run
    from ..campaigns.search.observations import search_progress
    from .search import report_run

    if not is_search_run(run):
        return None
    try:
        text, _found = report_run(run)
        search, space, unit = of_run(run)
    except IolabError as exc:
        return {"answer": "", "error": str(exc), "plot": None, "notes": []}
    rounds = [r.run_id for r in chain_of(run)]
    steps = search_progress(search, space, run.records, rounds)
    plot = progress.search_progress_plot(steps, search.objective, unit, search.maximize,
                                      staging / PLOTS_DIR, prefix)
    entry = None
    if plot is not None:
        rel = relative(plot.files, staging)
        entry = {"title": plot.title, "png": rel.get("png"), "svg": rel.get("svg"),
                 "notes": plot.notes, "alt": f"{plot.ylabel} of each job against "
                 "the order the search ran them, with the best mean so far"}
    notes = [] if plot is not None else ([plots.MISSING_MATPLOTLIB] if steps else
                                         ["no plot: the search has run no job yet"])
    return {"answer": text, "error": "", "plot": entry, "notes": notes, "jobs": len(steps),
            "rounds": len(rounds)}


def run_report(path: Path, staging: Path, project_root: Path, experiment_id: str,
               prefix: str = "", set_aside: bool = False, columns: dict[str, str] | None = None) -> RunReport:
    run = load_chain(path, project_root)
    run_notes.vouch(run, set_aside)
    if not run.reading.total:
        raise IolabError(f"run {path.name} has no readable records", hint=run_state.of(run).describe())
    made_of = asrun.of(run)
    settings = made_of.report
    tables = tables_from(run.digest, None, settings, kept_at(run), made_of.matrix_order)
    made, notes = plots.make_plots(run, staging / PLOTS_DIR, prefix=prefix, tables=tables)
    if columns and any(columns.values()):      # asked columns: in the tables, not the plots
        tables = run_tables(run, None, columns)
    link = settings.study()
    published = published_comparison(run, link, project_root) if link else None
    drifts = drift.notes(drift.of_run(run))
    return RunReport(provenance(run), [html_table(t) for t in tables],
                     render(tables, "md", run, drifts), render(tables, "csv"),
                     [_plot_entry(p, staging) for p in made], notes, flags_by_case(run.digest),
                     findings_by_case(run.digest), published, settings, run_notes.of(run) + drifts, run,
                     search_section(run, staging, prefix), why_section(run, staging, prefix))


def why_section(run: Run, staging: Path, prefix: str = "") -> list[dict]:
    """Each part's `iolab why`, its plot's files relative to the page."""
    from . import why

    out = []
    for entry in why.section(run, staging / PLOTS_DIR, prefix):
        plot = entry["plot"]
        if plot is not None:
            rel = relative(plot.pop("files"), staging)
            plot.update(png=rel.get("png"), svg=rel.get("svg"))
        out.append(entry)
    return out


def _csv_with_runs(reports: list[RunReport]) -> str:
    """One run: `iolab table --format csv` as is. Several: a leading run column."""
    if len(reports) == 1:
        return reports[0].tables_csv
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for i, rep in enumerate(reports):
        if i:
            writer.writerow([])
        for row in csv.reader(io.StringIO(rep.tables_csv)):
            if not row:
                writer.writerow([])
            elif row[:2] == ["part", "case_id"]:
                writer.writerow(["run"] + row)
            else:
                writer.writerow([rep.provenance["run_id"]] + row)
    return buf.getvalue()


def experiment_info(experiment_id: str, runs: list[Run]) -> dict:
    """The experiment as last run (else as it is now): description, source, tags."""
    made = asrun.of(runs[-1]) if runs else None
    exp = (made.experiment or made.now) if made else None
    shas = sorted({r.manifest.experiment_sha256 for r in runs if r.manifest.experiment_sha256})
    return {"id": experiment_id, "description": " ".join(str(exp.description or "").split()) if exp else "",
            "source": (exp.source or "") if exp else "", "tags": list(exp.tags) if exp else [],
            "yaml_differs": len(shas) > 1}


def build_context(experiment_id: str, reports: list[RunReport]) -> dict:
    runs = [r.run for r in reports if r.run is not None]
    link = asrun.of(runs[-1]).report.study() if runs else None
    return {
        "experiment": experiment_info(experiment_id, runs),
        "runs": reports,
        "legend": LEGEND,
        "plot_rules": plots.describe_rules(),
        "study_link": link,
        "iolab_version": __version__,
        "multiple": len(reports) > 1,
        # per findings fold: whether any run has one
        "has_findings": {fold: any(r.findings.get(fold) for r in reports)
                         for fold, _key in findings_folds()},
        "has_search": any(r.search for r in reports),
        # runs of other sites (RUN@SITE): a Site column, and the sites side by side
        "sites": any(r.provenance["site"] for r in reports),
        "side_by_side": sites_side_by_side(runs),
    }


def sites_side_by_side(runs: list[Run]) -> list[dict]:
    """Where the page shows runs of two sites or more (this one's and imported RUN@SITE): the
    first run set against each run of another site, as `iolab compare ID RUN_A RUN_B` prints
    it (analysis/sites.py): what differed between the systems, the cases, drift, the verdicts."""
    if len({site_of(r.path) for r in runs}) < 2:
        return []
    out = []
    for other in runs[1:]:
        if site_of(other.path) == site_of(runs[0].path):
            continue
        title = f"A = run {run_name(runs[0].path)} against B = run {run_name(other.path)}"
        try:
            blocks = site_blocks(compare_sites(Side("A", runs[0]), Side("B", other)))[2:]  # no title
        except IolabError as exc:
            out.append({"title": title, "error": str(exc), "blocks": [], "markdown": ""})
            continue
        out.append({"title": title, "error": "", "blocks": doc.as_dicts(blocks),
                    "markdown": doc.markdown(blocks, shift=1)})
    return out


@dataclass
class Published:
    out: Path
    files: list[str]
    runs: list[str]
    plots: int
    notes: list[str]


def publish(experiment_id: str, out: Path, runs: list[str] | None = None, *, force: bool = False,
            project_root: Path | None = None, results: Path | None = None,
            include_imported: bool = False, set_aside: bool = False,
            columns: dict[str, str] | None = None) -> Published:
    """Write the static report of an experiment's run(s) into `out` (see the module docstring).
    `results` defaults to results.results_root (IOLAB_RESULTS, else <project>/results);
    `columns`: the columns its tables add, as `iolab table` takes them (columns.run_tables)."""
    from ..project import project_root as default_root
    from ..results.runfiles import results_root

    root = project_root or default_root()
    res = results or results_root(root)
    shown_out = Path(out)
    out = real_out(shown_out, res)
    paths = list(dict.fromkeys(run_dir(res, experiment_id, r, include_imported) for r in (runs or [None])))
    previous = previous_files(out, force)
    with tempfile.TemporaryDirectory(prefix="iolab-publish-") as tmp:
        staging = Path(tmp)
        reports = [run_report(p, staging, root, experiment_id,
                              prefix=f"{run_name(p)}-" if len(paths) > 1 else "",
                              set_aside=set_aside, columns=columns)
                   for p in paths]
        context = build_context(experiment_id, reports)
        files = {
            "index.html": render_template("report/index.html.j2", **context),
            "report.md": render_template("report/report.md.j2", **context),
            "tables.md": "\n".join(r.tables_md for r in reports),
            "tables.csv": _csv_with_runs(reports),
        }
        for name, text in files.items():
            (staging / name).write_text(text, encoding="utf-8")
        written = install(staging, out, previous)
    marker = {"tool": f"iolab {__version__}", "experiment": experiment_id,
              "runs": [run_name(p) for p in paths], "files": written,
              "written": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    target = OutDir(out)
    try:
        target.write(MARKER, (json.dumps(marker, indent=2) + "\n").encode())
    finally:
        target.close()
    notes = [f"run {r.provenance['run_id']}: {n}" for r in reports for n in r.run_notes]
    notes += [n for r in reports for n in r.plot_notes]
    return Published(shown_out, written, [run_name(p) for p in paths],
                     sum(len(r.plots) + sum(w["plot"] is not None for w in r.why) for r in reports),
                     notes)
