"""Several runs read as one result set: a run with its continuations (a chain: a record re-run
ok later replaces a failed one), or runs pooled by case where their provenance agrees
(load_chain, pool_runs), and some of a run's records as a run (restricted).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from . import asrun
from .chain import chain_paths
from .record import Record
from .run import Run, Sources, load_run, run_of
from .runfiles import run_name, site_of


# the last is the site a run was imported from ("here": this site's): two sites' systems may
# share a name (local:default), and their binaries and lock too, and still be two machines
PROVENANCE_KEYS = ("system", "binary sha256", "binary version", "spack.lock", "site")


def provenance_key(rec: Record, site: str | None = None) -> tuple:
    """What must agree for repetitions of a case from two runs to be pooled (`site`: where the
    record's run was imported from; None: this site's)."""
    prov = rec.provenance
    return (prov.system, prov.binary_sha256, prov.binary_version, prov.stack.get("spack_lock_sha256"),
            site or "here")


def load_chain(path, project_root: Path | None = None) -> Run:
    """A run with its continuations (`iolab resume`) as one result set: every record keeps
    its run id and provenance; a failed or aborted record whose job a later run of the chain
    recorded ok is left out (and counted in the notes)."""
    paths = chain_paths(Path(path))
    if len(paths) == 1:
        return load_run(paths[0], project_root)
    runs = [load_run(p, project_root) for p in paths]
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
    out = _of_runs(kept, runs, project_root)
    out.sources = Sources("chain", runs, superseded)
    out.reading.unsaved = [u for r in runs for u in r.reading.unsaved]
    return out


def pool_runs(paths, project_root: Path | None = None) -> Run:
    """Repetitions of the same case ids from several runs (each with its continuations), as
    one result set: a case's records of a run whose provenance differs from the first run's
    that has the case (system, binary, Spack lock) are not pooled, and its row says so."""
    runs = [load_chain(p, project_root) for p in paths]
    ref: dict[tuple, tuple] = {}
    kept: list[Record] = []
    notes: dict[tuple, list[str]] = {}
    for run in runs:
        site = site_of(run.path)
        for rec in run.records:
            key = (rec.part, rec.case_id)
            got = provenance_key(rec, site)
            want = ref.setdefault(key, got)
            if got == want:
                kept.append(rec)
                continue
            why = "; ".join(f"{k} {a} vs {b}" for k, a, b in zip(PROVENANCE_KEYS, want, got) if a != b)
            note = f"run {run_name(run.path)} not pooled: {why}"
            if note not in notes.setdefault(key, []):
                notes[key].append(note)
    kept = [dataclasses.replace(r, flags=list(r.flags) + notes[(r.part, r.case_id)])
            if (r.part, r.case_id) in notes else r for r in kept]
    out = _of_runs(kept, runs, project_root)
    out.sources = Sources("pool", runs)
    return out


def _of_runs(records: list[Record], runs: list[Run], project_root: Path | None) -> Run:
    """Records of several runs as one, under the first run's manifest and experiment."""
    out = run_of(records, runs[0].manifest, runs[0].path, project_root)
    out.reading.unreadable = [b for r in runs for b in r.reading.unreadable]
    asrun.share(runs[0], out)
    return out


def restricted(run: Run, records: list[Record]) -> Run:
    """The same run restricted to some of its records (a part, picked cases)."""
    out = run_of(records, run.manifest, run.path, run.project_root)
    asrun.share(run, out)
    return out
