"""The runs a reader asks for, loaded and vouched for: one run with its continuations, several
pooled (named, or every run since a date or a run id), an experiment's runs in time for a trend,
and a line saying how the latest run of an experiment ended (`iolab list`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import IolabError
from .chain import ChainIndex, chain_paths
from .lookup import find_run, list_runs, no_runs_error, reproduces
from .manifests import read_manifest_shared
from . import notes as run_notes, state as run_state
from .combine import load_chain, pool_runs
from .run import Run, load_run
from .runfiles import results_root


def chosen_run(project_root: Path, exp_id: str, run: str | None, include_imported: bool,
               set_aside: bool = False) -> Run:
    """The chosen run's state (manifest, records, completeness); a run without a readable
    record is an error, and so is one whose records fail the checks (integrity.py) unless
    `set_aside`."""
    state = load_chain(find_run(results_root(project_root), exp_id, run, include_imported),
                       project_root)
    run_notes.vouch(state, set_aside)
    if not state.reading.total:
        bad = state.reading.unreadable
        why = f" ({len(bad)} unreadable line(s) skipped)" if bad else ""
        raise IolabError(f"run {state.run_id} of {exp_id!r} has no readable records{why}",
                         hint=f"{run_state.of(state).describe()}; see `iolab runs {exp_id}`")
    return state


def pooled_runs(project_root: Path, exp_id: str, runs: list[str] | None, since: str | None,
                include_imported: bool, set_aside: bool = False) -> Run:
    """Several runs (each with its continuations) pooled: named ones, or every run since a date
    (YYYY-MM-DD or a UTC time) or a run id."""
    res = results_root(project_root)
    paths = [find_run(res, exp_id, r, include_imported) for r in runs or []]
    if since:       # every run since: of the experiment's, so no reproduction of one case
        every = [p for p in list_runs(res, exp_id) if reproduces(p) is None
                 and (include_imported or run_state.of(load_run(p)).origin == "measured")]
        named = [p for p in every if p.name == since or p.name.startswith(since)]
        if named:
            paths += every[every.index(named[0]):]
        else:
            stamp = since.replace("-", "").replace(":", "")
            if not stamp[:8].isdigit():
                raise IolabError(f"--since {since!r}: give a date (2026-11-21), a UTC time "
                                 "(2026-11-21T10:00) or a run id")
            paths += [p for p in every if p.name[:len(stamp)] >= stamp]
    # one index per directory: named runs may be of several sites (RUN@SITE), whose run ids
    # can be the same
    indexes = {base: ChainIndex.of(base) for base in dict.fromkeys(p.parent for p in paths)}
    roots = list(dict.fromkeys(chain_paths(p, indexes[p.parent])[0] for p in paths))
    if not roots:
        raise IolabError(f"no run of {exp_id!r} since {since!r}")
    state = pool_runs(roots, project_root)
    run_notes.vouch(state, set_aside)
    if not state.reading.total:
        raise IolabError(f"the runs of {exp_id!r} have no readable records")
    return state


def runs_in_time(project_root: Path, exp_id: str, since: str | None, include_imported: bool,
                 set_aside: bool, note: Callable[[Run, str], None]) -> list[Run]:
    """The experiment's runs (each with its continuations; no reproduction of one case) from
    `since` (a UTC date or time) on, in time order, measured ones unless `include_imported`;
    `note` is told each record line a run's checks leave out."""
    root = results_root(project_root)
    paths = list_runs(root, exp_id)
    if not paths:
        raise no_runs_error(root, exp_id)
    paths = [p for p in paths if reproduces(p) is None]     # the experiment's runs, in time
    if since:
        stamp = since.replace("-", "").replace(":", "")
        if not stamp[:8].isdigit():
            raise IolabError(f"--since {since!r}: give a date (2026-11-21) or a UTC time "
                             "(2026-11-21T10:00)")
        paths = [p for p in paths if p.name[:len(stamp)] >= stamp]
    runs = []
    index = ChainIndex.of(paths[0].parent) if paths else None
    for path in dict.fromkeys(chain_paths(p, index)[0] for p in paths):
        run = load_chain(path, project_root)
        run_notes.vouch(run, set_aside)
        if run_state.of(run).origin == "measured" or include_imported:
            runs.append(run)
            for text in run_notes.integrity(run, "the trend") if run_notes.problems(run) else ():
                note(run, text)
    return runs


def latest_run_text(project_root: Path, exp_id: str) -> str:
    """How the experiment's latest run (a reproduction of one case is none) ended, from its
    manifest: 'never run', or 'last run RUN (complete: 12 ok)'."""
    try:        # a reproduction of one case is no run of the experiment's
        runs = [p for p in list_runs(results_root(project_root), exp_id) if reproduces(p) is None]
    except IolabError:
        runs = []
    if not runs:
        return "never run"
    finished = read_manifest_shared(runs[-1], whole=False).get("finished") or {}
    by_status = sorted((finished.get("counts") or {}).items())
    counts = ", ".join(f"{n} {status}" for status, n in by_status)
    state = ("complete" if finished.get("complete") else "not complete") if finished else "unfinished"
    return f"last run {runs[-1].name} ({state}{': ' + counts if counts else ''})"
