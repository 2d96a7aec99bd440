"""The order a run's jobs run in: a randomized complete block design by default.

`order: blocks` (the default): repetition k of every case runs before repetition k+1 of any
(a block per repetition), and within a block the cases are shuffled from the run's seed, so a
slow hour of a shared file system lands on every case alike instead of on a block of
neighbouring cases, where it would look like a parameter's effect. `order: matrix`: the cases in
the matrix's order, each case's repetitions one after another (iolab's order before blocks).

Either way a read runs after the write whose data it reads (same repetition): a read that the
shuffle put before its write runs right after it, the others keep their places.

A drift reference (`drift: {case, every}` in the experiment, per part) adds jobs of that case:
one before the first job, one after every N jobs of the run (all parts counted) and one after the
last; they are repetitions after the experiment's (repetitions + 1, + 2, ...), and their records
carry the role drift-reference (ROLE), kept out of the case's table statistics.

The order is a function of the cases, the number of repetitions, the seed and the references,
which a run's manifest records (`order: {by, seed, repetitions, reference}`), so `jobs`
re-derives it from them; `iolab resume` and `iolab search` run their jobs in the order of the
run they continue.
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass

BLOCKS, MATRIX = "blocks", "matrix"
ROLE = "drift-reference"       # provenance.role of a reference job's record
KINDS = (BLOCKS, MATRIX)
SEED_BITS = 32


@dataclass(frozen=True)
class Order:
    by: str = BLOCKS
    seed: int | None = None         # blocks only: the shuffles' seed
    repetitions: int = 1            # how many blocks the order was made for
    reference: tuple = ()           # ((part, case id, every), ...): drift reference cases

    @classmethod
    def new(cls, by: str, repetitions: int, reference=()) -> Order:
        """A run's order: blocks get a fresh seed."""
        return cls(by, secrets.randbits(SEED_BITS) if by == BLOCKS else None, repetitions,
                   tuple(tuple(r) for r in reference))

    def as_dict(self) -> dict:
        out = {"by": self.by, "seed": self.seed, "repetitions": self.repetitions}
        if self.reference:
            out["reference"] = [list(r) for r in self.reference]
        return out

    @classmethod
    def from_dict(cls, data: dict) -> Order:
        """An order as a manifest or a continuation holds it; ValueError when it is not one."""
        if not isinstance(data, dict) or data.get("by") not in KINDS:
            raise ValueError(f"not a run order: {data!r}")
        seed, reps = data.get("seed"), data.get("repetitions", 1)
        if data["by"] == BLOCKS and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise ValueError(f"a blocks order without an integer seed: {data!r}")
        if not isinstance(reps, int) or isinstance(reps, bool) or reps < 1:
            raise ValueError(f"a run order's repetitions must be a positive integer: {data!r}")
        reference = data.get("reference", [])
        if not isinstance(reference, list) or not all(
                isinstance(r, list) and len(r) == 3 and isinstance(r[0], str)
                and isinstance(r[1], str) and type(r[2]) is int and r[2] >= 1 for r in reference):
            raise ValueError(f"a run order's reference must be [[part, case id, every], ...]: "
                             f"{data!r}")
        return cls(data["by"], seed if data["by"] == BLOCKS else None, reps,
                   tuple(tuple(r) for r in reference))

    def describe(self) -> str:
        text = ("matrix order" if self.by == MATRIX else
                f"blocks by repetition, shuffled with seed {self.seed}")
        for part, cid, every in self.reference:
            text += f"; drift reference {cid} ({part}) at the start, every {every} jobs and the end"
        return text

    def role(self, part: str, case_id: str, repetition: int) -> str | None:
        """ROLE for a reference job (a reference case's repetition after the order's), else None."""
        if repetition > self.repetitions and any(
                (p, c) == (part, case_id) for p, c, _ in self.reference):
            return ROLE
        return None

    def jobs(self, cases, producer: dict[str, str] | None = None,
             repetitions: int | None = None) -> list[tuple[str, str, int]]:
        """Every (part, case id, repetition) of `cases` (in the matrix's order) in run order;
        producer: read case id -> write case id (matrix.producers)."""
        reps = repetitions or self.repetitions
        part = {c.case_id: c.part for c in cases}
        ids = list(part)
        if self.by == MATRIX:
            order = [(cid, rep) for cid in ids for rep in range(1, reps + 1)]
        else:
            rng = random.Random(self.seed)
            order = [(cid, rep) for rep in range(1, reps + 1) for cid in _shuffled(ids, rng)]
        jobs = [(part[cid], cid, rep) for cid, rep in _after_writes(order, producer or {})]
        return self._with_references(jobs, reps) if self.reference else jobs

    def _with_references(self, jobs: list[tuple[str, str, int]], reps: int) -> list[tuple[str, str, int]]:
        """`jobs` with each reference case's job before the first, after every N and after the
        last (once, where the last is an N-th), numbered reps + 1, reps + 2, ..."""
        out: list[tuple[str, str, int]] = []
        done = {(p, c): reps for p, c, _ in self.reference}

        def reference(p, c):
            done[(p, c)] += 1
            out.append((p, c, done[(p, c)]))

        for i, job in enumerate(jobs):
            for p, c, every in self.reference:
                if i % every == 0:
                    reference(p, c)
            out.append(job)
        for p, c, _every in self.reference:
            reference(p, c)
        return out


def reference_jobs(jobs: int, every: int) -> int:
    """How many jobs a reference adds to a run of `jobs` jobs (Order._with_references)."""
    return -(-jobs // every) + 1


def _shuffled(items: list, rng: random.Random) -> list:
    """Fisher-Yates from rng.random() alone, whose sequence Python keeps the same for a seed
    across versions (random.shuffle's use of it may change)."""
    out = list(items)
    for i in range(len(out) - 1, 0, -1):
        j = int(rng.random() * (i + 1))
        out[i], out[j] = out[j], out[i]
    return out


def _after_writes(order: list[tuple[str, int]], producer: dict[str, str]) -> list[tuple[str, int]]:
    """`order` with each read moved, where it came before its write (same repetition), to just
    after it; everything else keeps its place."""
    present = set(order)
    done: set[tuple[str, int]] = set()
    waiting: dict[tuple[str, int], list[tuple[str, int]]] = {}
    out: list[tuple[str, int]] = []

    def place(job):
        writer = producer.get(job[0])
        need = (writer, job[1]) if writer else None
        if need is not None and need in present and need not in done:
            waiting.setdefault(need, []).append(job)
            return
        out.append(job)
        done.add(job)
        for reader in waiting.pop(job, []):
            place(reader)

    for job in order:
        place(job)
    return out
