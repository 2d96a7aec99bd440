"""What the tables, pages and reports of a run say about it besides its values: where its records
come from, what was left out and why; and `vouch`, which refuses records that fail the checks
(integrity.py) unless they are set aside.
"""

from __future__ import annotations

from ..errors import IolabError
from .runfiles import RECORDS


class RunNotes:
    """What a table says about the run it shows (pooled, chained, imported, incomplete, lines
    unreadable or set aside, unverified), and the refusal of records that fail the checks: part
    of Run (run.py)."""

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
    def runs_read(self) -> list:
        """The runs whose records.jsonl this one's records come from (itself, its chain, a pool)."""
        if self.pool:
            return [r for run in self.pool for r in run.runs_read()]
        return self.chain or [self]

    def problems(self) -> list[tuple]:
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
