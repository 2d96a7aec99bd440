"""A results run, typed: its manifest, its records, the experiment as it was run, and whether the
run is whole. The one way report, plots, compare, publish and the CLI read a run.

`Run.load(path)` reads results/<id>/<run-id>/ (results.py does the storage) and re-loads the
experiment from the manifest's copy of its YAML through load.py, the only YAML reader. A copy the
current schema refuses (an old run) leaves `experiment` None and says why in `notes()`; the
tables then fall back to the benchmark's defaults and the published pairing of the experiment as
it is now.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import fnmatch
import gc
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from . import cache, digest, integrity, manifests, recordcache
from ..experiment import reportspec
from ..errors import IolabError
from .record import STATUSES, Manifest, Record
from .runfiles import check_plain_name
from .decoding import BadLine
from .lock import Lock, read_lock
from .manifests import manifest_sha, manifest_whole
from .rundir import FALLBACK_NAME
from .runfiles import MANIFEST, RECORDS


def _clock(seconds: float) -> str:
    seconds = int(max(0, seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def progress_text(done: int, planned: int | None, counts: dict, elapsed: float, eta: bool = True) -> str:
    """'7/12 jobs recorded (1 failed), 0:03:10 elapsed, ETA 0:02:16' (ETA from the pace so far;
    none for a run that will not go on)."""
    bad = ", ".join(f"{counts[s]} {s}" for s in ("failed", "aborted", "skipped") if counts.get(s))
    text = f"{done}/{planned if planned is not None else '?'} jobs recorded" + (f" ({bad})" if bad else "")
    text += f", {_clock(elapsed)} elapsed"
    if eta and planned and 0 < done < planned:
        text += f", ETA {_clock(elapsed / done * (planned - done))}"
    return text


PROVENANCE_KEYS = ("system", "binary sha256", "binary version", "spack.lock")


def provenance_key(rec: Record) -> tuple:
    """What must agree for repetitions of a case from two runs to be pooled."""
    prov = rec.provenance
    return (prov.system, prov.binary_sha256, prov.binary_version, prov.stack.get("spack_lock_sha256"))


MAX_CHAIN = 10_000      # runs in one chain (a campaign's resumes, a search's rounds)


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


@dataclass
class ChainIndex:
    """Every run of one experiment's directory with its `parent`, read once: a listing of a long
    chain asks it for each run's chain instead of reading every manifest again per run."""

    parents: dict[str, str | None]
    children: dict[str, list[Path]]
    roots: dict[str, str] = field(default_factory=dict)        # run -> its chain's first run
    chains: dict[str, list[Path]] = field(default_factory=dict)    # first run -> its chain

    @classmethod
    def of(cls, base: Path) -> ChainIndex:
        parents: dict[str, str | None] = {}
        children: dict[str, list[Path]] = {}
        for p in sorted(base.iterdir()):
            if p.is_dir() and os.path.lexists(p / MANIFEST):
                parent = parents[p.name] = _parent_of(p)
                if parent and parent != p.name:
                    children.setdefault(parent, []).append(p)
        return cls(parents, children)


def _parent_of(p: Path) -> str | None:
    try:
        parent = manifests.read_typed(p)[1].get("parent")
    except IolabError:
        return None
    return parent if isinstance(parent, str) else None


def chain_paths(path: Path, index: ChainIndex | None = None) -> list[Path]:
    """A run's chain: its first run (following `parent` in the manifests) and every run that
    continues it, oldest first. Runs live side by side in results/<id>/. A chain that loops (a
    run that is its own ancestor: an edited `parent`) or holds more than MAX_CHAIN runs is an
    error, never a walk without end. `index`: the directory's runs read once (ChainIndex.of),
    for a caller that asks for many runs' chains."""
    base = path.parent
    index = index or ChainIndex.of(base)
    if path.name in index.roots:          # a chain this index walked already, for another run
        return list(index.chains[index.roots[path.name]])

    def parent_of(p: Path) -> str | None:
        return index.parents[p.name] if p.name in index.parents else _parent_of(p)

    root, seen = path, [path.name]
    while (parent := parent_of(root)) and (base / parent).is_dir():
        # a run beside it, never "../other-experiment/RUN"
        check_plain_name(parent, f"run {root.name}: its manifest's parent")
        if parent in seen:
            loop = seen[seen.index(parent):] + [parent]
            raise IolabError(f"run {path.name}: its chain of parents loops ({' -> '.join(loop)}): "
                             "a run cannot continue itself (was a manifest's parent edited?)",
                             file=str(root / MANIFEST))
        if len(seen) >= MAX_CHAIN:
            raise _too_long(path)
        root = base / parent
        seen.append(parent)
    children = index.children
    out, todo, visited = [], [root], set()
    while todo:      # a tree below a root without a parent: visited only guards the walk
        p = todo.pop(0)
        if p.name in visited:
            continue
        visited.add(p.name)
        out.append(p)
        if len(out) > MAX_CHAIN:
            raise _too_long(path)
        todo += children.get(p.name, [])
    if path in out:     # kept for the chain's other runs (a run below no root is not)
        index.chains[root.name] = out
        index.roots.update((p.name, root.name) for p in out)
    return out


def _too_long(path: Path) -> IolabError:
    return IolabError(f"run {path.name}: its chain holds more than {MAX_CHAIN} runs "
                      "(run.MAX_CHAIN); iolab reads no longer chain")


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
class Run:
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
        """A run with its continuations (`iolab resume`) as one result set: every record keeps
        its run id and provenance; a failed or aborted record whose job a later run of the chain
        recorded ok is left out (and counted in the notes)."""
        paths = chain_paths(Path(path))
        if len(paths) == 1:
            return cls.load(paths[0], project_root)
        runs = [cls.load(p, project_root) for p in paths]
        ok_at: dict[tuple, int] = {}
        for i, run in enumerate(runs):
            for rec in run.records:
                if rec.ok:
                    ok_at.setdefault(rec.job, i)
        kept, superseded = [], 0
        for i, run in enumerate(runs):
            for rec in run.records:
                if not rec.ok and ok_at.get(rec.job, -1) > i:
                    superseded += 1
                    continue
                kept.append(rec)
        out = cls._of_runs(kept, runs, project_root)
        out.chain, out.superseded = runs, superseded
        out.unsaved = [u for r in runs for u in r.unsaved]
        return out

    @classmethod
    def pooled(cls, paths, project_root: Path | None = None) -> Run:
        """Repetitions of the same case ids from several runs (each with its continuations), as
        one result set: a case's records of a run whose provenance differs from the first run's
        that has the case (system, binary, Spack lock) are not pooled, and its row says so."""
        runs = [cls.load_chain(p, project_root) for p in paths]
        ref: dict[tuple, tuple] = {}
        kept: list[Record] = []
        notes: dict[tuple, list[str]] = {}
        for run in runs:
            for rec in run.records:
                key = (rec.part, rec.case_id)
                want, got = ref.setdefault(key, provenance_key(rec)), provenance_key(rec)
                if got == want:
                    kept.append(rec)
                    continue
                why = "; ".join(f"{k} {a} vs {b}" for k, a, b in zip(PROVENANCE_KEYS, want, got) if a != b)
                note = f"run {run.run_id} not pooled: {why}"
                if note not in notes.setdefault(key, []):
                    notes[key].append(note)
        kept = [dataclasses.replace(r, flags=list(r.flags) + notes[(r.part, r.case_id)])
                if (r.part, r.case_id) in notes else r for r in kept]
        out = cls._of_runs(kept, runs, project_root)
        out.pool = runs
        return out

    @classmethod
    def _of_runs(cls, records: list[Record], runs: list[Run], project_root: Path | None) -> Run:
        """Records of several runs as one, under the first run's manifest and experiment."""
        out = cls.of(records, runs[0].manifest, runs[0].path, project_root)
        out.unreadable = [b for r in runs for b in r.unreadable]
        if "_loaded" in runs[0].__dict__:
            out.__dict__["_loaded"] = runs[0].__dict__["_loaded"]
        return out

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

    # ----------------------------------------------------------------------- the experiment
    @cached_property
    def _loaded(self):
        from ..experiment import load

        text = self.manifest.experiment_yaml
        if not text:
            return None, "the manifest has no copy of the experiment"
        shown = f"{self.path / 'manifest.json'}: experiment_yaml"

        def loaded():
            return load.load_text(text, Path(f"{self.manifest.experiment}.yaml"),
                                  self.manifest.profile, shown)
        try:
            if not self.cache_key:
                return loaded(), None
            # a campaign's table reads it each time; checked once per YAML, profile and iolab
            key = cache.key_of([text, self.manifest.profile or ""])
            return cache.memo(self.path / MANIFEST, "experiment", key, loaded, load.Experiment), None
        except IolabError as exc:
            return None, str(exc).splitlines()[0]

    @property
    def experiment(self):
        """The experiment as run (load.Experiment), or None when its copy no longer loads."""
        return self._loaded[0]

    @cached_property
    def experiment_now(self):
        """The experiment as it is now in the project (experiments/<id>.yaml), or None."""
        if self.project_root is None:
            return None
        from ..experiment import load

        try:
            return load.load_experiment(self.project_root / "experiments" / f"{self.experiment_id}.yaml")
        except IolabError:
            return None

    @cached_property
    def report(self) -> reportspec.Report:
        """The experiment's `report:` section as run; for a run whose copy no longer loads, the
        current experiment's published pairing (the studies it is set against) and defaults."""
        if self.experiment is not None:
            return self.experiment.report
        if self.experiment_now is not None:
            return reportspec.Report(published=self.experiment_now.report.published)
        return reportspec.Report()

    @cached_property
    def matrix_order(self) -> dict:
        """The order of the experiment's matrix (as run, else as it is now), which tables'
        rows follow (experiment.matrix.matrix_order); {} when neither loads or expands."""
        from ..experiment.matrix import matrix_order

        for exp in (self.experiment, self.experiment_now):
            if exp is not None:
                try:
                    return matrix_order(exp)
                except IolabError:
                    continue
        return {}

    def zip_groups(self, part: str) -> list[set]:
        """Parameter groups the experiment varies together (its `zip`s) in a part."""
        exp = self.experiment
        for p in exp.parts if exp is not None else ():
            if p.name == part:
                return [set(z) for z in p.zips]
        return []

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

    @property
    def state(self) -> str:
        """complete | incomplete (ended, with jobs missing or interrupted) | unfinished (no end)."""
        if self.planned is not None and self.finished is None:
            return "unfinished"
        if self.finished is not None and (not self.finished.get("complete") or self.missing):
            if (self.finished.get("complete_once_merged") is True and not self.missing
                    and not self.unsaved):      # its fallback records are merged back
                return "complete"
            return "incomplete"
        if self.finished is None and self.counts.get("aborted"):
            return "incomplete"
        return "complete"

    @property
    def complete(self) -> bool:
        return self.state == "complete"

    def counts_text(self) -> str:
        shown = [f"{n} {s}" for s, n in self.counts.items() if n or s == "ok"]
        total = sum(self.counts.values())
        return f"{total} record{'s' * (total != 1)}: " + ", ".join(shown)

    def describe(self) -> str:
        """complete | incomplete: N of M jobs have no record (interrupted by SIGTERM) | unfinished ..."""
        state = self.state
        missing = (f"{len(self.missing)} of {self.planned} jobs have no record"
                   if self.missing and self.planned is not None else "")
        if state == "unfinished":
            return self._unfinished() + (f": {missing}" if missing else "")
        if state == "incomplete":
            bits = [missing] if missing else []
            if self.counts.get("aborted"):
                bits.append(f"{self.counts['aborted']} aborted")
            reason = (self.finished or {}).get("reason")
            text = "incomplete: " + (", ".join(bits) or "the run says so")
            return text + (f" ({reason})" if reason else "")
        return "complete" if self.planned is not None else "complete as recorded"

    @property
    def writer(self) -> Lock | None:
        """The lock of the run (for a chain: of its latest run holding one), if any."""
        locks = [lock for r in self.chain or [self] if (lock := read_lock(r.path)) is not None]
        return locks[-1] if locks else None

    @property
    def writer_gone(self) -> bool:
        """An unfinished run whose writer is known to be dead (it will never finish)."""
        lock = self.writer
        return self.state == "unfinished" and lock is not None and lock.alive is False

    def _unfinished(self) -> str:
        """An unfinished run by its lock: still running, killed, or (no lock) either."""
        lock = self.writer
        if lock is None:
            return "unfinished (killed or still running)"
        alive = lock.alive
        if alive:
            return lock.doing if not lock.role else f"unfinished, {lock.doing}"
        if alive is False:
            return f"unfinished (killed: its writer, {lock.who}, is gone)"
        return (f"unfinished (locked by {lock.who}; this host cannot tell whether it still "
                "runs)" if lock.pid else "unfinished (its lock cannot be read)")

    def notes(self) -> list[str]:
        """Lines for tables and reports; none for a complete measured run read in full."""
        out = []
        if self.pool:
            out.append(f"repetitions pooled from runs {', '.join(r.run_id for r in self.pool)} "
                       "where the provenance agrees (system, binary, Spack lock)")
        if self.chain:
            ids = [r.run_id for r in self.chain]
            if len(ids) > 4:        # a search's rounds: the first, the last and how many between
                ids = [ids[0], ids[1], f"{len(ids) - 3} more", ids[-1]]
            out.append(f"runs {' + '.join(ids)} as one result set"
                       + (" (the rounds of iolab search)" if self.manifest.get("search_round")
                          is not None else " (continued with iolab resume)")
                       + (f"; {self.superseded} failed or aborted record(s) re-run ok later are "
                          "left out" if self.superseded else ""))
        if self.origin == "imported":
            label = self.manifest.label
            out.append("imported run: outputs of runs made outside iolab"
                       + (f" ({label})" if label else "") + ", not measured by iolab")
        if not self.complete:
            out.append(f"run {self.describe()}; {self.counts_text()}")
        if self.unreadable:
            lines = ", ".join(f"{b.line} ({b.reason})" for b in self.unreadable[:3])
            more = f" and {len(self.unreadable) - 3} more" if len(self.unreadable) > 3 else ""
            out.append(f"{len(self.unreadable)} unreadable line(s) in {RECORDS} skipped: "
                       f"line {lines}{more}")
        if self.unsaved:
            out.append(f"records not merged yet: {', '.join(self.unsaved)} (`cat FILE >> "
                       f"{RECORDS} && rm FILE` once there is space)")
        if self.raw_errors:
            out.append(f"{self.raw_errors} record(s) with raw outputs that could not be stored "
                       "(raw.errors)")
        out += self.integrity_notes()
        why = self._loaded[1]
        if self.manifest.experiment_yaml and why:
            out.append(f"the experiment as run no longer loads ({why}): default report settings")
        return out

    # ------------------------------------------------------------------------------- integrity
    def runs_read(self) -> list[Run]:
        """The runs whose records.jsonl this one's records come from (itself, its chain, a pool)."""
        if self.pool:
            return [r for run in self.pool for r in run.runs_read()]
        return self.chain or [self]

    def problems(self) -> list[tuple[Run, integrity.Problem]]:
        """What the records' checks found (integrity.py), run by run, in line order."""
        return [(r, p) for r in self.runs_read() if r.verdict for p in r.verdict.problems]

    def vouch(self, set_aside: bool = False) -> None:
        """Refuse records that fail the checks: one line naming the file, line and reason.
        With set_aside, the records that pass are used and notes() names the others."""
        # lines missing from the end of a run with a fallback file beside it: the file says
        # where they are (a note), the records there are whole
        found = [(r, p) for r, p in self.problems() if not (p.unmerged and r.unsaved)]
        if found and not set_aside:
            run, first = found[0]
            more = f"{len(found) - 1} more problem(s); " if len(found) > 1 else ""
            raise IolabError(f"{first.where(run.path / RECORDS)}: {first.reason}",
                             hint=f"{more}`iolab verify {self.experiment_id} {run.run_id}` lists "
                                  "them; --set-aside shows the other records")

    def integrity_notes(self, into: str = "the tables") -> list[str]:
        """What was set aside (and left out of `into`), and which runs are unverified (said once)."""
        out = []
        found = self.problems()
        several = len(self.runs_read()) > 1
        aside = [(r, p) for r, p in found if p.set_aside]
        if aside:
            shown = "; ".join(f"{f'run {r.run_id} ' if several else ''}{RECORDS}:{p.line} ({p.reason})"
                              for r, p in aside[:3])
            more = f"; and {len(aside) - 3} more" if len(aside) > 3 else ""
            out.append(f"{len(aside)} record line(s) set aside, not in {into}: {shown}{more}")
        for r, p in found:
            if not p.set_aside:
                out.append(f"{'run ' + r.run_id + ' ' if several else ''}"
                           f"{p.where(RECORDS)}: {p.reason}")
        old = [r.run_id for r in self.runs_read() if r.verdict and r.verdict.state == "unverified"]
        if old:
            out.append(f"{'runs ' + ', '.join(old) if several else 'run'} unverified: written before "
                       "records carried a digest chain (other checks made)")
        return out

    def progress(self, now: float) -> str:
        """How far the run (or chain) is, for `iolab status`."""
        runs = self.chain or [self]
        start = runs[0].manifest.created_unix or now
        end = now
        ended = (self.finished or {}).get("ended")
        if isinstance(ended, str):
            try:
                end = datetime.datetime.fromisoformat(ended.replace("Z", "+00:00")).timestamp()
            except ValueError:
                pass
        # a run whose writer is dead will not go on: no ETA, and its time ends at its last record
        gone = self.writer_gone
        if gone:
            starts = [t for r in self.records if (t := r.started) is not None]
            end = max(starts, default=end)
        return progress_text(sum(self.counts.values()), self.planned, self.counts, end - start,
                             eta=not gone)

    def as_json(self) -> dict:
        return {"run_id": self.run_id, "origin": self.origin, "state": self.state,
                "describe": self.describe(), "planned": self.planned, "counts": self.counts,
                "missing": len(self.missing), "unreadable_lines": [b.line for b in self.unreadable],
                "notes": self.notes()}
