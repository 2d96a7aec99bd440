"""Finding runs: the experiments with results, an experiment's runs in order, a run by id,
prefix, suffix or "latest"."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import IolabError
from .runfiles import (MANIFEST, SITE_MARK, check_experiment_id, is_experiment_id, site_dir,
                       split_site)
from .manifests import read_manifest_shared


def _run_dirs(base: Path) -> list[Path]:
    try:
        # a manifest that is not a regular file (a FIFO...) is listed, and refused when read
        return [p for p in base.iterdir() if os.path.lexists(p / MANIFEST)]
    except OSError:
        return []


def experiments_with_runs(root: Path) -> list[str]:
    try:
        names = sorted(p.name for p in Path(root).iterdir() if is_experiment_id(p.name))
    except OSError:
        return []
    return [n for n in names if _run_dirs(Path(root) / n)]


def list_runs(root: Path, experiment_id: str, site: str | None = None) -> list[Path]:
    """Oldest first. Run ids sort by second; the manifest's clock orders runs within a second.
    With `site`: that site's runs (imported from its bundles), never this site's."""
    check_experiment_id(experiment_id)
    base = site_dir(root, experiment_id, site) if site else Path(root) / experiment_id
    if not base.is_dir():
        return []

    def when(path: Path):
        try:
            return (read_manifest_shared(path, whole=False).get("created_unix", 0), path.name)
        except (IolabError, AttributeError):
            return (0, path.name)
    return sorted(_run_dirs(base), key=when)


def sites_with_runs(root: Path, experiment_id: str) -> list[str]:
    """The other sites whose runs of an experiment were imported here (results/<id>/@<site>/)."""
    try:
        found = sorted(p.name for p in (Path(root) / experiment_id).iterdir()
                       if p.name.startswith(SITE_MARK))
    except OSError:
        return []
    return [name[len(SITE_MARK):] for name in found if _run_dirs(Path(root) / experiment_id / name)]


def no_runs_error(root: Path, experiment_id: str) -> IolabError:
    """No runs for an id: say which experiments do have runs (and the nearest name)."""
    import difflib

    known = experiments_with_runs(root)
    if (Path(root) / experiment_id).is_dir():
        return IolabError(f"no results for experiment {experiment_id!r} under {root}: its directory "
                          "holds no runs", hint="run it with reframe first, or `iolab import`")
    from ..project import project_root

    defined = sorted(p.stem for p in (project_root() / "experiments").glob("*.yaml"))
    near = [n for n in difflib.get_close_matches(experiment_id, known or defined, n=2)
            if n != experiment_id][:1]      # never "did you mean" the name itself
    listed = (f"experiments with results: {', '.join(known)}" if known
              else "no experiment has results there yet"
              + (f"; experiments: {', '.join(defined)}" if defined else ""))
    return IolabError(f"no results for experiment {experiment_id!r} under {root}",
                      hint=(f"did you mean {near[0]!r}? " if near else "") + listed)


def _head(path: Path) -> dict:
    try:
        head = read_manifest_shared(path, whole=False)
    except IolabError:
        return {}
    return head if isinstance(head, dict) else {}


def _is_imported(path: Path) -> bool:
    return _head(path).get("origin") == "imported"


def reproduces(path: Path) -> str | None:
    """The run a run reproduces (`iolab reproduce`: one case, a run of its own kind), else None."""
    what = _head(path).get("reproduces")
    return str(what.get("run")) if isinstance(what, dict) else None


def find_run(root: Path, experiment_id: str, run: str | None, include_imported: bool = False) -> Path:
    """A run by id (or a unique prefix/suffix); None or "latest": the latest measured run (never
    a reproduction of one case: `iolab reproduce` sets it against its original itself), or the
    latest of all runs with include_imported. RUN@SITE (or latest@SITE) is a run of another
    site, imported from its bundle."""
    run, site = split_site(run)
    runs = list_runs(root, experiment_id, site)
    if site and not runs:
        known = sites_with_runs(root, experiment_id)
        raise IolabError(f"no runs of site {site!r} for experiment {experiment_id!r} under {root}",
                         hint=(f"sites with its runs: {', '.join(known)}; " if known else "")
                         + "`iolab import-bundle FILE` stores a site's runs")
    if not runs:
        raise no_runs_error(root, experiment_id)
    if site:
        include_imported = True       # a site's runs are all imported; none is "measured here"
    if run in (None, "latest"):
        pool = [p for p in runs if reproduces(p) is None]
        if not pool:
            raise IolabError(f"experiment {experiment_id!r} has only reproductions of one case "
                             f"({len(runs)}), and 'latest' means the latest full run",
                             hint=f"name a run: {', '.join(p.name for p in runs[-5:])}")
        measured = pool if include_imported else [p for p in pool if not _is_imported(p)]
        if not measured:
            raise IolabError(f"experiment {experiment_id!r} has only imported runs ({len(pool)}), and "
                             "'latest' means the latest measured run",
                             hint=f"pass --include-imported to use the latest imported run, "
                                  f"{pool[-1].name}, or name a run")
        return measured[-1]
    matches = [p for p in runs if p.name == run or p.name.startswith(run) or p.name.endswith(run)]
    if len(matches) != 1:
        known = ", ".join(p.name for p in runs[-5:])
        what = "no run" if not matches else "several runs"
        raise IolabError(f"{what} matching {run!r} for {experiment_id!r}", hint=f"recent runs: {known}")
    return matches[0]
