"""What the tables, pages and reports of a run say about it besides its values: where its records
come from, what was left out and why; and `vouch`, which refuses records that fail the checks
(integrity.py) unless they are set aside. Functions of a run (run.py).
"""

from __future__ import annotations

from ..errors import IolabError
from . import asrun, state
from .run import Run
from .runfiles import RECORDS, run_name


def of(run: Run) -> list[str]:
    """What a table says about the run it shows (pooled, chained, imported, incomplete, lines
    unreadable or set aside, unverified): lines for tables and reports; none for a complete
    measured run read in full."""
    out = []
    sources, reading = run.sources, run.reading
    if sources and sources.kind == "pool":
        out.append(f"repetitions pooled from runs {', '.join(run_name(r.path) for r in sources.runs)} "
                   "where the provenance agrees (system, binary, Spack lock, site)")
    if sources and sources.kind == "chain":
        ids = [r.run_id for r in sources.runs]
        if len(ids) > 4:        # a search's rounds: the first, the last and how many between
            ids = [ids[0], ids[1], f"{len(ids) - 3} more", ids[-1]]
        out.append(f"runs {' + '.join(ids)} as one result set"
                   + (" (the rounds of iolab search)" if run.manifest.get("search_round")
                      is not None else " (continued with iolab resume)")
                   + (f"; {sources.superseded} failed or aborted record(s) re-run ok later are "
                      "left out" if sources.superseded else ""))
    if state.of(run).origin == "imported":
        label = run.manifest.label
        out.append("imported run: outputs of runs made outside iolab"
                   + (f" ({label})" if label else "") + ", not measured by iolab")
    stands = state.of(run)
    if not stands.complete:
        out.append(f"run {stands.describe()}; {stands.counts_text()}")
    if reading.unreadable:
        lines = ", ".join(f"{b.line} ({b.reason})" for b in reading.unreadable[:3])
        more = f" and {len(reading.unreadable) - 3} more" if len(reading.unreadable) > 3 else ""
        out.append(f"{len(reading.unreadable)} unreadable line(s) in {RECORDS} skipped: "
                   f"line {lines}{more}")
    if reading.unsaved:
        out.append(f"records not merged yet: {', '.join(reading.unsaved)} (`cat FILE >> "
                   f"{RECORDS} && rm FILE` once there is space)")
    if reading.raw_errors:
        out.append(f"{reading.raw_errors} record(s) with raw outputs that could not be stored "
                   "(raw.errors)")
    out += integrity(run)
    why = asrun.of(run).why_not
    if run.manifest.experiment_yaml and why:
        out.append(f"the experiment as run no longer loads ({why}): default report settings")
    return out


# ------------------------------------------------------------------------------- integrity
def runs_read(run: Run) -> list[Run]:
    """The runs whose records.jsonl this one's records come from (itself, its chain, a pool)."""
    if run.sources is None:
        return [run]
    if run.sources.kind == "pool":
        return [r for one in run.sources.runs for r in runs_read(one)]
    return run.sources.runs


def checked(path, project_root=None) -> tuple[Run, list[tuple]]:
    """A run read with its chain of continuations, and what the records' checks found: what
    `iolab verify` reports, and what `iolab bundle` and `import-bundle` refuse."""
    from .combine import load_chain

    whole = load_chain(path, project_root)
    return whole, problems(whole)


def problems(run: Run) -> list[tuple]:
    """What the records' checks found (integrity.py), run by run, in line order."""
    return [(r, p) for r in runs_read(run) if r.reading.verdict for p in r.reading.verdict.problems]


def vouch(run: Run, set_aside: bool = False) -> None:
    """Refuse records that fail the checks: one line naming the file, line and reason.
    With set_aside, the records that pass are used and of(run) names the others."""
    # lines missing from the end of a run with a fallback file beside it: the file says
    # where they are (a note), the records there are whole
    found = [(r, p) for r, p in problems(run) if not (p.unmerged and r.reading.unsaved)]
    if found and not set_aside:
        bad, first = found[0]
        more = f"{len(found) - 1} more problem(s); " if len(found) > 1 else ""
        raise IolabError(f"{first.where(bad.path / RECORDS)}: {first.reason}",
                         hint=f"{more}`iolab verify {run.experiment_id} {bad.run_id}` lists "
                              "them; --set-aside shows the other records")


def integrity(run: Run, into: str = "the tables") -> list[str]:
    """What was set aside (and left out of `into`), and which runs are unverified (said once)."""
    out = []
    found = problems(run)
    several = len(runs_read(run)) > 1
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
    old = [r.run_id for r in runs_read(run)
           if r.reading.verdict and r.reading.verdict.state == "unverified"]
    if old:
        out.append(f"{'runs ' + ', '.join(old) if several else 'run'} unverified: written before "
                   "records carried a digest chain (other checks made)")
    return out


def as_json(run: Run) -> dict:
    """The run as the JSON rows of a table carry it: where it stands and its notes."""
    stands, reading = state.of(run), run.reading
    return {"run_id": run.run_id, "origin": stands.origin, "state": stands.state,
            "describe": stands.describe(), "planned": reading.planned, "counts": reading.counts,
            "missing": len(reading.missing),
            "unreadable_lines": [b.line for b in reading.unreadable], "notes": of(run)}
