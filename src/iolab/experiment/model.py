"""What an experiment is once loaded: typed, checked, and never a YAML again (load.py builds it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import reportspec


@dataclass(frozen=True)
class Job:
    time_limit: str = "10m"
    exclusive: bool = False
    extra_directives: tuple = ()       # '#DW ...' lines, emitted verbatim by the scheduler
    resources: dict = field(default_factory=dict)  # partition resources: name -> placeholders

    def __post_init__(self):
        object.__setattr__(self, "extra_directives", tuple(self.extra_directives))

    @property
    def time_limit_seconds(self) -> int:
        from ..units import parse_time_limit

        return parse_time_limit(self.time_limit)


@dataclass(frozen=True)
class Verify:
    layout: str = "fail"    # a Lustre layout that differs from the request fails the case
    hints: str = "warn"     # effective MPI-IO hints that differ are flagged (or fail the case)


@dataclass(frozen=True)
class Search:
    """`search:`: run at most `budget` x `repetitions` jobs (random: `budget` cases) of the
    matrix, chosen by `strategy`, optimising `objective` in `direction` (campaigns/search/)."""

    objective: str
    direction: str                      # max or min
    budget: int
    strategy: str = "model"            # model, bayes, halving or random
    repetitions: int = 1
    seed: int = 0
    initial: int = 2
    # the file and line of `objective`, for what is checked once the cases are known
    # (matrix.check_objective)
    at: tuple = field(default=(None, None), compare=False, repr=False)

    @property
    def maximize(self) -> bool:
        return self.direction == "max"


def default_initial(budget: int) -> int:
    """Random cases before the model: about a third of the budget, at least 2, at most 10."""
    return max(1, min(budget, max(2, min(10, budget // 3))))


@dataclass
class Part:
    """One benchmark's slice of an experiment. Flat experiments have one part, named 'main'."""

    name: str
    benchmark: str
    job: Job
    fixed: dict[str, Any]
    matrix: dict[str, list]
    zips: list[dict[str, list]]
    exclude: list[dict[str, Any]]
    drift: DriftReference | None = None


@dataclass(frozen=True)
class DriftReference:
    """`drift: {case: {param: value}, every: N}`: the case those parameters name runs once more
    at the start of the run, after every N jobs and at the end (experiment/order.py)."""

    params: dict[str, Any]              # typed like fixed
    every: int
    # the file, line and key of `case`, for what is checked once the cases are known
    # (matrix.reference_cases)
    at: tuple = field(default=(None, None, None), compare=False, repr=False)


@dataclass
class Experiment:
    id: str
    description: str
    source: str | None
    path: Path
    sha256: str
    text: str
    profile: str | None
    profiles: list[str]
    repetitions: int
    keep_data: bool
    tags: list[str]
    parts: list[Part]
    raw: dict = field(repr=False, default_factory=dict)
    require_file_system: str | None = None  # a storage module's name: cases elsewhere are refused
    notes: tuple[str, ...] = ()         # what validate says of the file that is not an error
    verify: Verify = field(default_factory=Verify)
    # the layers' top-level sections (layers.base.Layer.section), typed by each, by layer name;
    # one not written is absent (the system config decides)
    sections: dict[str, Any] = field(default_factory=dict)
    report: reportspec.Report = field(default_factory=reportspec.Report)
    search: Search | None = None
    allow: tuple[str, ...] = ()         # guarded benchmark options extra_args may pass
    order: str = "blocks"               # the jobs' run order (order.py): blocks or matrix

    @property
    def benchmarks(self) -> list[str]:
        return sorted({p.benchmark for p in self.parts})

    @property
    def root(self) -> Path:
        """The project directory: experiments/<id>.yaml lives in it."""
        return self.path.resolve().parent.parent
