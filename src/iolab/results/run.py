"""A results run as read: its manifest, its records and their digest (folded by case), and what
is derived from them. The one way report, plots, compare, publish and the CLI read a run.

`Run.load(path)` reads results/<id>/<run-id>/; `Run.load_chain` a run with its continuations and
`Run.pooled` several runs as one result set (combine.py). A Run is made of parts, each in its
own module: where it stands (state.py: state, describe, progress, writer, as_json), what its
tables say about it (notes.py: notes, vouch, problems), and the experiment as it was run
(asrun.py: experiment, report, matrix_order). On disk, a run is rundir.py (writing it),
lock.py, manifests.py, chain.py and rundigest.py; its records are read through recordcache.py.
"""

from __future__ import annotations

import contextlib
import fnmatch
import gc
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from . import cache, digest, integrity, manifests, recordcache
from .record import STATUSES, Manifest, Record
from .asrun import AsRun
from .decoding import BadLine
from .files import open_regular
from .manifests import manifest_sha, manifest_whole
from .notes import RunNotes
from .rundir import FALLBACK_NAME
from .runfiles import RECORDS
from .state import RunState, progress_text  # noqa: F401  (rfm/recording.py)


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
class Run(RunState, RunNotes, AsRun):
    path: Path
    manifest: Manifest
    _records: list[Record] | None              # None: not read yet (see records)
    unreadable: list[BadLine] = field(default_factory=list)
    planned: int | None = None                 # jobs in the manifest's plan; None: no plan
    counts: dict[str, int] = field(default_factory=dict)     # records by status
    missing: list[tuple] = field(default_factory=list)       # planned jobs without a record
    unsaved: list[str] = field(default_factory=list)         # fallback files not merged yet
    raw_errors: int = 0                        # records whose raw outputs were not all stored
    project_root: Path | None = None           # for the pairing of runs whose YAML no longer loads
    chain: list[Run] = field(default_factory=list)     # a run and its continuations, oldest first
    pool: list[Run] = field(default_factory=list)      # runs pooled into this one (table --runs)
    superseded: int = 0                        # non-ok records a later run of the chain re-ran ok
    _digest: digest.Digest | None = None       # the records folded by case (see digest)
    _later: Callable[[], list[Record]] | None = field(default=None, repr=False)
    verdict: integrity.Verdict | None = None   # the records' checks (integrity.py); None: in memory
    # of the records' bytes (and the code reading them) when their digest is cached: what a
    # reader may key its own cached results of the digest on (None: not cached)
    cache_key: str | None = None

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
    def record_count(self) -> int:
        return sum(self.counts.values())

    # ------------------------------------------------------------------------------- reading
    @classmethod
    def load(cls, path, project_root: Path | None = None) -> Run:
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
            run = cls.of_digest(got.digest, got.later, manifest, path, project_root, got.key)
        else:
            run = cls.of(got.records, manifest, path, project_root)
            run._digest = got.digest
        run.unreadable = got.bad
        run.verdict = got.verdict
        run.unsaved = _fallback_files(path, manifest)
        return run

    @classmethod
    def load_chain(cls, path, project_root: Path | None = None) -> Run:
        """A run with its continuations as one result set (combine.load_chain)."""
        from .combine import load_chain
        return load_chain(cls, path, project_root)

    @classmethod
    def pooled(cls, paths, project_root: Path | None = None) -> Run:
        """Runs pooled by case where their provenance agrees (combine.pooled)."""
        from .combine import pooled
        return pooled(cls, paths, project_root)

    @staticmethod
    def find(results: Path, experiment_id: str, run: str | None = None,
             include_imported: bool = False) -> Path:
        """The directory of an experiment's run under `results`: by id, a unique prefix or suffix,
        or None / "latest" (lookup.find_run says which run that is)."""
        from .lookup import find_run
        return find_run(results, experiment_id, run, include_imported)

    def raw_file(self, record: Record, names, limit: int) -> Path | None:
        """The first of `names` stored with `record` (its raw outputs), if any: a regular file of
        at most `limit` bytes inside the run, else IolabError (files.open_regular)."""
        raw = record.raw
        for name in names:
            if name in raw.get("files", {}):
                path = self.path / str(raw.get("dir")) / name
                os.close(open_regular(path, limit, within=self.path))
                return path
        return None

    @classmethod
    def of(cls, records, manifest: Manifest | dict | None = None, path=None,
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
        return cls(path, manifest, records, [], planned, counts, missing, [], raw_errors,
                   project_root)

    @classmethod
    def of_digest(cls, facts: digest.Digest, later, manifest: Manifest, path: Path,
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
        return cls(Path(path), manifest, None, [], planned, dict(facts.counts), missing, [],
                   facts.raw_errors, project_root, _digest=facts, _later=later, cache_key=key)

    def with_records(self, records: list[Record]) -> Run:
        """The same run restricted to some of its records (a part, picked cases)."""
        out = Run.of(records, self.manifest, self.path, self.project_root)
        if "_loaded" in self.__dict__:
            out.__dict__["_loaded"] = self.__dict__["_loaded"]
        return out

    def kept_at(self) -> tuple[Path, str] | None:
        """Where values derived from this run's digest alone may be kept in the cache: its
        records and their cache key (None: the digest is not cached, or the run is a chain or
        a pool of runs, folded in memory)."""
        return (self.path / RECORDS, self.cache_key) if self.cache_key else None

    # ------------------------------------------------------------------------- derived facts
    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def experiment_id(self) -> str:
        return self.manifest.experiment or (self.digest.experiment if self.record_count else "")

    @property
    def origin(self) -> str:
        return "imported" if self.manifest.origin == "imported" else "measured"

    @property
    def system(self) -> str | None:
        return self.manifest.system

    @property
    def finished(self) -> dict | None:
        """How the run ended; for a chain, how its last continuation ended."""
        return self.chain[-1].manifest.finished if self.chain else self.manifest.finished

    @property
    def parent(self) -> str | None:
        """The run this one continues (`iolab resume`), if any."""
        parent = self.manifest.get("parent")
        return parent if isinstance(parent, str) else None

    @cached_property
    def by_case(self) -> dict[tuple[str, str], list[Record]]:
        """Records by (part, case_id), in file order."""
        out: dict[tuple[str, str], list[Record]] = {}
        for rec in self.records:
            out.setdefault((rec.part, rec.case_id), []).append(rec)
        return out

    def binary_versions(self, part: str, case_id: str) -> frozenset:
        """The benchmark versions the ok records of a case name."""
        case = self.digest.case(part, case_id)
        return frozenset() if case is None else case.versions

