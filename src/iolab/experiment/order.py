"""The order a run's jobs run in: a randomized complete block design by default.

`order: blocks` (the default): repetition k of every case runs before repetition k+1 of any
(a block per repetition), and within a block the cases are shuffled from the run's seed, so a
slow hour of a shared file system lands on every case alike instead of on a block of
neighbouring cases, where it would look like a parameter's effect. `order: matrix`: the cases in
the matrix's order, each case's repetitions one after another (iolab's order before blocks).

Either way a read runs after the write whose data it reads (same repetition): a read that the
shuffle put before its write runs right after it, the others keep their places.

The order is a function of the cases, the number of repetitions and the seed, which a run's
manifest records (`order: {by, seed, repetitions}`), so `jobs` re-derives it from them; `iolab
resume` and `iolab search` run their jobs in the order of the run they continue.
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass

BLOCKS, MATRIX = "blocks", "matrix"
KINDS = (BLOCKS, MATRIX)
SEED_BITS = 32


@dataclass(frozen=True)
class Order:
    by: str = BLOCKS
    seed: int | None = None         # blocks only: the shuffles' seed
    repetitions: int = 1            # how many blocks the order was made for

    @classmethod
    def new(cls, by: str, repetitions: int) -> Order:
        """A run's order: blocks get a fresh seed."""
        return cls(by, secrets.randbits(SEED_BITS) if by == BLOCKS else None, repetitions)

    def as_dict(self) -> dict:
        return {"by": self.by, "seed": self.seed, "repetitions": self.repetitions}

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
        return cls(data["by"], seed if data["by"] == BLOCKS else None, reps)

    def describe(self) -> str:
        if self.by == MATRIX:
            return "matrix order"
        return f"blocks by repetition, shuffled with seed {self.seed}"

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
        return [(part[cid], cid, rep) for cid, rep in _after_writes(order, producer or {})]


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
