"""Several runs read as one result set: a run with its continuations (a chain: a record re-run
ok later replaces a failed one), or runs pooled by case where their provenance agrees. `cls` is
run.Run, passed in (Run.load_chain, Run.pooled): this module does not import it back.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from .chain import chain_paths
from .record import Record


PROVENANCE_KEYS = ("system", "binary sha256", "binary version", "spack.lock")


def provenance_key(rec: Record) -> tuple:
    """What must agree for repetitions of a case from two runs to be pooled."""
    prov = rec.provenance
    return (prov.system, prov.binary_sha256, prov.binary_version, prov.stack.get("spack_lock_sha256"))


def load_chain(cls, path, project_root: Path | None = None):
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
    out = _of_runs(cls, kept, runs, project_root)
    out.chain, out.superseded = runs, superseded
    out.unsaved = [u for r in runs for u in r.unsaved]
    return out


def pooled(cls, paths, project_root: Path | None = None):
    """Repetitions of the same case ids from several runs (each with its continuations), as
    one result set: a case's records of a run whose provenance differs from the first run's
    that has the case (system, binary, Spack lock) are not pooled, and its row says so."""
    runs = [load_chain(cls, p, project_root) for p in paths]
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
    out = _of_runs(cls, kept, runs, project_root)
    out.pool = runs
    return out


def _of_runs(cls, records: list[Record], runs: list, project_root: Path | None):
    """Records of several runs as one, under the first run's manifest and experiment."""
    out = cls.of(records, runs[0].manifest, runs[0].path, project_root)
    out.unreadable = [b for r in runs for b in r.unreadable]
    if "_loaded" in runs[0].__dict__:
        out.__dict__["_loaded"] = runs[0].__dict__["_loaded"]
    return out
