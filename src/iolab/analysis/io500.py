"""An IO500-style view of a run: the phase table and the score computed the IO500 way.

IO500 (io500.org) scores a storage system with IOR and mdtest phases in two groups: bandwidth
(the four IOR phases, GiB/s) and metadata (the mdtest phases and find, kIOPS). Each group's score
is the geometric mean of its phases; the total is the square root of the product of the two
(io500 application, src/main.c, calc_score). An experiment tagged `io500` whose parts are named
after IO500's benchmarks (ior-easy, ior-hard, mdtest-easy, mdtest-hard) gets this view in
`iolab table`. It is never an IO500 submission: the phases run as iolab cases (each benchmark
reads back right after it wrote), find is not run, and the io500 application's checks are not
made; the table says so. A phase without a result leaves the score uncomputed, with the reason:
the score is never taken over fewer phases than it names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

TAG = "io500"
LABEL = ("This score is NOT an official IO500 submission and not comparable with the IO500 "
         "lists (phases run as separate iolab cases, each reading back right after it wrote; no "
         "find phase; not run by the io500 application)")


@dataclass(frozen=True)
class Phase:
    name: str           # IO500's phase name
    part: str           # the experiment's part that runs it
    metric: str         # iolab's metric of that part
    group: str          # "BW" (GiB/s) or "MD" (kIOPS)


# IO500's scored phases in the order io500 runs them (find left out: iolab does not run it)
PHASES = (
    Phase("ior-easy-write", "ior-easy", "write_bw", "BW"),
    Phase("mdtest-easy-write", "mdtest-easy", "file_create_rate", "MD"),
    Phase("ior-hard-write", "ior-hard", "write_bw", "BW"),
    Phase("mdtest-hard-write", "mdtest-hard", "file_create_rate", "MD"),
    Phase("ior-easy-read", "ior-easy", "read_bw", "BW"),
    Phase("mdtest-easy-stat", "mdtest-easy", "file_stat_rate", "MD"),
    Phase("ior-hard-read", "ior-hard", "read_bw", "BW"),
    Phase("mdtest-hard-stat", "mdtest-hard", "file_stat_rate", "MD"),
    Phase("mdtest-easy-delete", "mdtest-easy", "file_remove_rate", "MD"),
    Phase("mdtest-hard-read", "mdtest-hard", "file_read_rate", "MD"),
    Phase("mdtest-hard-delete", "mdtest-hard", "file_remove_rate", "MD"),
)
NOT_RUN = {"find": "MD"}    # IO500 phases that are part of the score but have no iolab case
# iolab's unit -> IO500's, and the divisor
UNITS = {"BW": ("MiB/s", "GiB/s", 1024.0), "MD": ("ops/s", "kIOPS", 1000.0)}


def applies(run) -> bool:
    """Whether the run's experiment (run.Run: as run) asked for this view (tagged `io500`)."""
    from ..results import asrun

    exp = asrun.of(run).experiment
    return exp is not None and TAG in exp.tags


@dataclass
class PhaseResult:
    phase: Phase
    value: float | None         # in IO500's unit; None: no result
    n: int                      # repetitions averaged
    reason: str | None = None   # why there is no value


def phase_results(records) -> list[PhaseResult]:
    """Each phase's value in IO500's unit: the mean over the part's ok repetitions (a part must
    hold one case: IO500 has one configuration per phase)."""
    out = []
    for phase in PHASES:
        recs = [r for r in records if r.part == phase.part]
        cases = {r.case_id for r in recs}
        if len(cases) > 1:
            out.append(PhaseResult(phase, None, 0, f"part {phase.part} has {len(cases)} cases, IO500 one"))
            continue
        values, failed = [], []
        for rec in recs:
            metric = rec.metric(phase.metric)
            if not rec.ok or metric is None:
                failed.append(rec.error or f"no {phase.metric}")
                continue
            unit, _, divisor = UNITS[phase.group]
            if metric.unit != unit:
                failed.append(f"{phase.metric} is in {metric.unit}, not {unit}")
                continue
            values.append(metric.value / divisor)
        if not recs:
            out.append(PhaseResult(phase, None, 0, f"no case of part {phase.part} in this run"))
        elif failed:
            out.append(PhaseResult(phase, None, 0, f"{len(failed)} of {len(recs)} repetition(s) without "
                                                   f"a result: {failed[0]}"))
        else:
            out.append(PhaseResult(phase, sum(values) / len(values), len(values)))
    return out


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def score(results: list[PhaseResult]) -> tuple[dict | None, str | None]:
    """({"BW": GiB/s, "MD": kIOPS, "total": score}, None), or (None, why not)."""
    missing = [r for r in results if r.value is None]
    if missing:
        return None, "; ".join(f"{r.phase.name}: {r.reason}" for r in missing)
    zero = [r.phase.name for r in results if r.value <= 0]
    if zero:
        return None, f"{', '.join(zero)}: not a positive result"
    groups = {g: geometric_mean([r.value for r in results if r.phase.group == g]) for g in ("BW", "MD")}
    return {**groups, "total": math.sqrt(groups["BW"] * groups["MD"])}, None


def render(records) -> str:
    """The phase table and the score, as Markdown, labelled as not an official submission."""
    results = phase_results(records)
    lines = ["", "### io500-like phases and score", "", f"**{LABEL}.**", "",
             "| Phase | Group | Value | Unit | n | From |", "|---|---|---|---|---|---|"]
    for r in results:
        unit = UNITS[r.phase.group][1]
        value = f"{r.value:.6g}" if r.value is not None else f"- ({r.reason})"
        lines.append(f"| {r.phase.name} | {r.phase.group} | {value} | {unit} | {r.n} | "
                     f"{r.phase.part} {r.phase.metric} |")
    for name, group in NOT_RUN.items():
        lines.append(f"| {name} | {group} | not run (no iolab case) | {UNITS[group][1]} | 0 | - |")
    got, why = score(results)
    lines.append("")
    if got is None:
        lines.append(f"Score not computed: {why}.")
    else:
        md = len([p for p in PHASES if p.group == "MD"])
        bw = len([p for p in PHASES if p.group == "BW"])
        lines += [f"- BW: {got['BW']:.6g} GiB/s (geometric mean of {bw} phases)",
                  f"- MD: {got['MD']:.6g} kIOPS (geometric mean of {md} phases; IO500's also "
                  f"includes find, not run here)",
                  f"- io500-like score: {got['total']:.6g} (sqrt(BW x MD))"]
    return "\n".join(lines) + "\n"
