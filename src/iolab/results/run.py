"""A results run as read: its directory, its manifest, its records and their digest (folded by
case), and what reading them found. The one way report, plots, compare, publish and the CLI read
a run.

`load_run(path)` reads results/<id>/<run-id>/, `run_dir` finds a run's directory and `run_of`
makes a run of records in memory; combine.py reads several runs as one (load_chain, pool_runs)
or some records of one (restricted). What is derived from a run lives where it is derived,
as a function of the run: where it stands (state.of), what its tables say about it (notes.of,
notes.vouch) and the experiment as it was run (asrun.of). On disk, a run is rundir.py (writing
it), lock.py, manifests.py, chain.py and rundigest.py; its records are read through
recordcache.py.
"""

from __future__ import annotations

import contextlib
import fnmatch
import gc
import os
import stat
from collections.abc import Callable
from typing import TypeVar
from dataclasses import dataclass, field
from pathlib import Path

from . import cache, digest, integrity, manifests, recordcache
from .record import STATUSES, Manifest, Record
from .decoding import BadLine
from .files import open_regular
from .manifests import manifest_sha, manifest_whole
from .rundir import FALLBACK_NAME
from .runfiles import RECORDS


def _fallback_files(path: Path, manifest: Manifest) -> list[str]:
    """The run's fallback files that exist (records a full disk kept out of records.jsonl):
    those in the run directory by name, and those the manifest names elsewhere ($TMPDIR, the
    home directory: where they would go, from its creation, and where they went, from its end)
    by path."""
    here = sorted(p.name for p in path.glob(FALLBACK_NAME.format(pid="*")))
    groups = (manifest.get("fallback_files"), (manifest.finished or {}).get("unsaved"))
    named = [f for group in groups if isinstance(group, list) for f in group if isinstance(f, str)]
    # only this run's fallback names, and only regular files (a damaged manifest names no other)
    ours = f"iolab-{path.parent.name}-{path.name}-{FALLBACK_NAME.format(pid='*')}"
    return here + [f for f in dict.fromkeys(named) if Path(f).parent != path
                   and fnmatch.fnmatchcase(Path(f).name, ours) and _regular(f)]


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False



FREEZE_OVER = 5000


@contextlib.contextmanager
def no_gc():
    """Decoding a run builds millions of small objects and no cycles: the cyclic collector would
    scan them again and again while they are built (a third of a large run's load). So it is
    paused meanwhile; for a large run (FREEZE_OVER records) what was built is then moved out of
    its sight for good (gc.freeze), or every later collection would scan it again. The verbs
    that build tables and comparisons of a run pause it the same way (no cycles there either)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


PLAN_FORMAT = 1        # of _planned's answer, as cached


def _planned(manifest: Manifest, recorded) -> tuple[int | None, list[tuple]]:
    """The number of planned jobs (None: no plan) and those that `recorded(job)` says have no
    record."""
    if not isinstance(manifest.planned, list):
        return None, []
    jobs = list(dict.fromkeys([(j.get("part") or "main", str(j.get("case_id")), j.get("repetition"))
                               for j in manifest.planned if type(j) is dict]))
    return len(jobs), [j for j in jobs if not recorded(j)]


@dataclass
class Reading:
    """What reading a run's records found, beside the records: how many of each status, the
    planned jobs without a record, lines it could not read, fallback files not merged yet, and
    the records' checks."""
    counts: dict[str, int]                     # records by status
    planned: int | None = None                 # jobs in the manifest's plan; None: no plan
    missing: list[tuple] = field(default_factory=list)       # planned jobs without a record
    raw_errors: int = 0                        # records whose raw outputs were not all stored
    unreadable: list[BadLine] = field(default_factory=list)
    unsaved: list[str] = field(default_factory=list)         # fallback files not merged yet
    verdict: integrity.Verdict | None = None   # the records' checks (integrity.py); None: in memory
    # of the records' bytes (and the code reading them) when their digest is cached: what a
    # reader may key its own cached results of the digest on (None: not cached)
    key: str | None = None

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass
class Sources:
    """The runs a result set is read from when they are several: a run and its continuations
    (kind "chain", oldest first) or runs pooled by case (kind "pool", each a chain)."""
    kind: str
    runs: list[Run]
    superseded: int = 0                        # non-ok records a later run of the chain re-ran ok


T = TypeVar("T")


@dataclass(eq=False)
class Run:
    """A run as read. Its public names are few on purpose (tests/unit/test_structure.py lists
    them): what is derived from a run is a function of it, in the module that derives it."""
    path: Path                                 # results/<experiment>/<run-id>/
    manifest: Manifest
    reading: Reading
    sources: Sources | None = None             # None: one run, read alone
    project_root: Path | None = None           # for the pairing of runs whose YAML no longer loads
    _records: list[Record] | None = field(default=None, repr=False)  # None: not read yet
    _digest: digest.Digest | None = field(default=None, repr=False)  # the records folded by case
    _later: Callable[[], list[Record]] | None = field(default=None, repr=False)
    _derived: dict = field(default_factory=dict, repr=False)         # see derived()

    @property
    def records(self) -> list[Record]:
        """Every record, in file order; read from the cache on first use when the run was
        loaded from its digest alone."""
        if self._records is None:
            with no_gc():
                self._records = self._later()
            self._later = None
        return self._records

    @property
    def digest(self) -> digest.Digest:
        """The records folded by case: what tables and comparisons read."""
        if self._digest is None:
            self._digest = digest.fold(self.records)
        return self._digest

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def experiment_id(self) -> str:
        return self.manifest.experiment or (self.digest.experiment if self.reading.total else "")


def derived(run: Run, make: Callable[[Run], T]) -> T:
    """make(run), made once per Run object and kept with it: how asrun.of, state.of and other
    views of a run are cached without being Run's own attributes."""
    got = run._derived.get(make)
    if got is None:
        got = run._derived[make] = make(run)
    return got


# ----------------------------------------------------------------------------- getting a run
def load_run(path, project_root: Path | None = None) -> Run:
    path = Path(path)
    parsed, manifest = manifests.read_typed(path)
    sha = manifest_sha(path)
    # the records' checks need the plan: read only if records are decoded
    whole = None if manifest_whole(path) else (lambda: manifests.whole_manifest(path, sha))
    with no_gc():
        got = recordcache.open_run(path, manifest=parsed, manifest_key=sha or "", whole=whole)
        size = len(got.records) if got.records is not None else got.digest.records
        if size >= FREEZE_OVER:
            gc.freeze()
    if got.records is None:
        run = _of_digest(got.digest, got.later, manifest, path, project_root, got.key)
    else:
        run = run_of(got.records, manifest, path, project_root)
        run._digest = got.digest
    run.reading.unreadable = got.bad
    run.reading.verdict = got.verdict
    run.reading.unsaved = _fallback_files(path, manifest)
    return run


def run_dir(results: Path, experiment_id: str, run: str | None = None,
            include_imported: bool = False) -> Path:
    """The directory of an experiment's run under `results`: by id, a unique prefix or suffix,
    or None / "latest" (lookup.find_run says which run that is)."""
    from .lookup import find_run
    return find_run(results, experiment_id, run, include_imported)


def run_of(records, manifest: Manifest | dict | None = None, path=None,
           project_root: Path | None = None) -> Run:
    """A run from records in memory (Record objects or their JSON)."""
    records = [r if isinstance(r, Record) else Record.from_json(r) for r in records]
    if not isinstance(manifest, Manifest):
        manifest = Manifest.from_json(manifest or {})
    if not manifest.experiment and records:
        manifest.experiment = records[0].experiment
    path = Path(path) if path else Path(records[0].run_id if records else "run")
    counts = {s: 0 for s in STATUSES}
    recorded = set()
    for rec in records:
        counts[rec.status] = counts.get(rec.status, 0) + 1
        recorded.add(rec.job)
    planned, missing = _planned(manifest, recorded.__contains__)
    raw_errors = sum(bool(r.raw.get("errors")) for r in records)
    return Run(path, manifest, Reading(counts, planned, missing, raw_errors),
               project_root=project_root, _records=records)


def _of_digest(facts: digest.Digest, later, manifest: Manifest, path: Path,
               project_root: Path | None = None, key: str | None = None) -> Run:
    """A run from its records' digest; the records are read by `later` when first used.
    `key`: of the records' bytes, when the digest is cached: the jobs without a record
    are then kept too, for these records and this manifest."""
    if not manifest.experiment:
        manifest.experiment = facts.experiment
    sha = manifest_sha(path)
    if key and sha:
        planned, missing = cache.memo(Path(path) / RECORDS, "plan", f"{PLAN_FORMAT}-{sha}-{key}",
                                      lambda: _planned(manifest, facts.recorded), tuple)
    else:
        planned, missing = _planned(manifest, facts.recorded)
    reading = Reading(dict(facts.counts), planned, missing, facts.raw_errors, key=key)
    return Run(Path(path), manifest, reading, project_root=project_root, _digest=facts,
               _later=later)


# ------------------------------------------------------------------- what a run's files offer
def chain_of(run: Run) -> list[Run]:
    """The runs of a chain, oldest first; [run] for a run read alone (or a pool)."""
    return run.sources.runs if run.sources and run.sources.kind == "chain" else [run]


def kept_at(run: Run) -> tuple[Path, str] | None:
    """Where values derived from this run's digest alone may be kept in the cache: its
    records and their cache key (None: the digest is not cached, or the run is a chain or
    a pool of runs, folded in memory)."""
    return (run.path / RECORDS, run.reading.key) if run.reading.key else None


def raw_file(run: Run, record: Record, names, limit: int) -> Path | None:
    """The first of `names` stored with `record` (its raw outputs), if any: a regular file of
    at most `limit` bytes inside the run, else IolabError (files.open_regular)."""
    raw = record.raw
    for name in names:
        if name in raw.get("files", {}):
            path = run.path / str(raw.get("dir")) / name
            os.close(open_regular(path, limit, within=run.path))
            return path
    return None
