"""Where runs live, what a run directory holds by name and which names are allowed: shared by
the results store, run lookup and the cache (which must never be put inside either), without
one importing the other."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import secrets
from pathlib import Path

from ..errors import IolabError

RECORDS = "records.jsonl"
MANIFEST = "manifest.json"
# The records folded by case, written by the run beside its records (recordcache.py)
DIGEST = "records.digest"
# Run ids, case ids: one path component, no dots in front ("..", hidden files).
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# Another site's runs (`iolab import-bundle`): results/<id>/@<site>/<run-id>/, named RUN@SITE.
# A run id never starts with "@", so a site's folder is never taken for a run of this site.
SITE_MARK = "@"
_SITE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def results_root(project_root: Path) -> Path:
    return Path(os.environ.get("IOLAB_RESULTS", project_root / "results"))


def inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (OSError, ValueError):
        return False
    return True


# ------------------------------------------------------------------------------------- names

def id_pattern() -> str:
    """Experiment ids, as the schema defines them (one place for `--into` and RunDir.create)."""
    from ..experiment.schema import experiment_schema

    return experiment_schema()["properties"]["id"]["pattern"]


def is_experiment_id(value) -> bool:
    return isinstance(value, str) and re.fullmatch(id_pattern(), value) is not None


def check_experiment_id(value, what: str = "experiment id") -> str:
    if not is_experiment_id(value):
        raise IolabError(f"{what} {value!r}: not an experiment id (lower-case letters and digits in "
                         "words joined by single hyphens, e.g. my-study)",
                         hint="results are filed by experiment id, never by a path")
    return value


def check_plain_name(value, what: str) -> str:
    """A run id or case id: one path component of letters, digits, '.', '_' and '-'."""
    if not isinstance(value, str) or not _PLAIN_NAME.fullmatch(value):
        raise IolabError(f"{what} {value!r} is not a plain name (letters, digits, '.', '_', '-', "
                         "starting with a letter or digit)")
    return value


def check_site(value, what: str = "site") -> str:
    """A site's name: one plain word of at most 64 characters (letters, digits, '.', '_', '-')."""
    if not isinstance(value, str) or not _SITE_NAME.fullmatch(value):
        raise IolabError(f"{what} {value!r} is not a site name (letters, digits, '.', '_', '-', "
                         "starting with a letter or digit, at most 64 characters)")
    return value


def site_dir(root: Path, experiment_id: str, site: str) -> Path:
    """Where another site's runs of an experiment live."""
    return Path(root) / check_experiment_id(experiment_id) / f"{SITE_MARK}{check_site(site)}"


def split_site(run: str | None) -> tuple[str | None, str | None]:
    """'RUN@SITE' -> (RUN, SITE); 'latest@SITE' and '@SITE' name that site's latest run."""
    if run is None or SITE_MARK not in run:
        return run, None
    name, _, site = run.rpartition(SITE_MARK)
    return (name or None), check_site(site, f"run {run!r}: its site")


def site_of(run_path: Path) -> str | None:
    """The site a run was imported from (results/<id>/@<site>/<run-id>/); None: this site's."""
    parent = Path(run_path).parent.name
    return parent[len(SITE_MARK):] if parent.startswith(SITE_MARK) else None


def run_name(run_path: Path) -> str:
    """A run as commands name it: RUN, or RUN@SITE for another site's."""
    site = site_of(run_path)
    return Path(run_path).name + (f"{SITE_MARK}{site}" if site else "")


def new_run_id(seed: str = "") -> str:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    short = hashlib.sha256(f"{seed}{secrets.token_hex(8)}".encode()).hexdigest()[:6]
    return f"{stamp}-{short}"
