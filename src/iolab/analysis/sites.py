"""Two runs side by side, of two sites or of one (`iolab compare ID RUN_A RUN_B`, where either may
be another site's RUN@SITE, imported from its bundle):

- what differed between the two systems: every fact each run recorded of its system
  (results/sitefacts.py) that the other's does not match, as "key: A vs B", "not recorded"
  where one run lacks it; "same system" where none differs;
- the cases: matched by case id, and those only one run has, listed with their settings (never
  dropped silently);
- each run's drift notes (every drift test that ran, drift or not);
- the run-vs-run comparison of the matched cases (compare.compare_runs), with its verdict rule.

compare_sites() is what `iolab compare` with two runs prints; a re-run of another site's study
here is set against that site's runs with it too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from . import doc
from .compare import (Comparison, Side, compare_runs, head_blocks, method_blocks,
                      table_blocks)
from ..experiment.matrix import show_value
from ..results import sitefacts
from ..results.upgrade import current_ids


@dataclass
class Cases:
    """One part's cases in the two runs: how many both have, and those only one has."""
    part: str
    both: int
    only: dict[str, list[tuple[str, str]]] = field(default_factory=dict)   # label -> (id, setting)


@dataclass
class SiteComparison:
    runs: Comparison                # the matched cases, compare.compare_runs
    differences: list[str]          # "key: A vs B"; [] where no recorded fact differs
    compared: int                   # facts either run recorded
    cases: list[Cases]
    drift: dict[str, list[str]]     # label -> its drift tests, in words
    labels: tuple[str, str] = ("A", "B")
    experiment: list[str] = field(default_factory=list)     # how the experiments as run differ

    @property
    def same_system(self) -> bool:
        return not self.differences


def compare_sites(a: Side, b: Side, metrics: list[str] | None = None) -> SiteComparison:
    """Run A against run B (Side.load(path, "A"), or Side("A", run)): what differed between
    their systems, their cases matched by id, each one's drift, and the comparison of the
    cases both have (compare_runs, whose verdict rule it keeps). IolabError where no case has
    values on both sides."""
    runs = compare_runs(a, b, metrics)
    fa, fb = sitefacts.of(a.run), sitefacts.of(b.run)
    return SiteComparison(runs, differences(fa, fb), len({f.key for f in fa + fb}),
                          match_cases(a, b), {s.label: drift_lines(s) for s in (a, b)},
                          (a.label, b.label), _experiments(a, b))


def _experiments(a: Side, b: Side) -> list[str]:
    """A line where the two runs ran the experiment from different YAML."""
    sa, sb = a.manifest.experiment_sha256, b.manifest.experiment_sha256
    if sa == sb:
        return []
    return [f"the experiment as run differs: {a.label}'s YAML sha256 {(sa or 'not recorded')[:12]}, "
            f"{b.label}'s {(sb or 'not recorded')[:12]} (cases are matched by id, which their "
            "parameters make)"]


def differences(fa: list[sitefacts.Fact], fb: list[sitefacts.Fact]) -> list[str]:
    """Each fact the two runs do not share, "key: A vs B"; where one run recorded nothing of a
    group that the other has several facts of (no MPI-IO hints printed, no spack.lock), one
    line for the group."""
    ka, kb = sitefacts.by_key(fa), sitefacts.by_key(fb)
    groups = ({f.group for f in fa}, {f.group for f in fb})
    out, said = [], set()
    for key in dict.fromkeys([*ka, *kb]):
        x, y = ka.get(key), kb.get(key)
        if x is not None and y is not None:
            if x.value != y.value:
                out.append(f"{key}: {x.value} vs {y.value}")
            continue
        fact, mine = (x, fa) if x is not None else (y, fb)
        alone = [f for f in mine if f.group == fact.group]
        if fact.group not in groups[x is not None] and len(alone) > 1:     # the other's groups
            if fact.group not in said:
                said.add(fact.group)
                cut = _common_words(f.key for f in alone)
                listed = ", ".join(f"{f.key[cut:]} {f.value}" for f in alone)
                out.append(f"{fact.group}: " + (f"{listed} vs not recorded" if x is not None
                                                 else f"not recorded vs {listed}"))
            continue
        out.append(f"{key}: {x.value} vs not recorded" if x is not None
                   else f"{key}: not recorded vs {y.value}")
    return out


def _common_words(keys) -> int:
    """The length of the words all keys start with ("MPI-IO "), to list them without."""
    keys = list(keys)
    common = os.path.commonprefix(keys)
    return len(common[:common.rfind(" ") + 1]) if all(len(k) > len(common) for k in keys) else 0


def match_cases(a: Side, b: Side) -> list[Cases]:
    """Per part of either run, the cases both have (by case id, an old 8-digit id paired with
    its 16-digit one) and those only one has, with their settings."""
    pa, pb = a.run.digest.parts, b.run.digest.parts
    out = []
    for part in dict.fromkeys([*pa, *pb]):
        of_a = pa[part].cases if part in pa else {}
        of_b = pb[part].cases if part in pb else {}
        in_b, in_a = current_ids(of_b), current_ids(of_a)
        only_a = [c for c in of_a if in_b(c) is None]
        only_b = [c for c in of_b if in_a(c) is None]
        found = Cases(part, len(of_a) - len(only_a))
        for side, facts, only in ((a, pa, only_a), (b, pb, only_b)):
            if only:
                found.only[side.label] = [(c, _setting(facts[part], c)) for c in only]
        out.append(found)
    return out


def _setting(part, case_id: str) -> str:
    params = part.cases[case_id].params
    return ", ".join(f"{k}={show_value(part.benchmark, k, params[k])}"
                     for k in part.varied if k in params) or "no parameter varied"


def drift_lines(side: Side) -> list[str]:
    """Every drift test the run's values allowed, in words (drift.py), drift or not."""
    return [d.text() for d in side.drifts] or [
        "no drift test ran: too few ok repetitions with a start time in any part"]


# ------------------------------------------------------------------------------------- rendering

def system_lines(c: SiteComparison) -> list[str]:
    if c.same_system:
        return [f"Same system: none of the {c.compared} facts the two runs recorded of their "
                "systems differs."]
    la, lb = c.labels
    return [f"{len(c.differences)} of the {c.compared} facts the runs recorded of their systems "
            f"differ ({la} vs {lb}; \"not recorded\": that run has no record of it):", "",
            *(f"- {d}" for d in c.differences)]


def case_lines(c: SiteComparison) -> list[str]:
    out = []
    for part in c.cases:
        only = "; ".join(f"{len(ids)} only in {label}" for label, ids in part.only.items())
        out.append(f"{part.part}: {part.both} case(s) in both runs"
                   + (f", compared below; {only}, not compared:" if only else ", compared below."))
        out += [f"- only in {label}: {case_id} ({setting})"
                for label, ids in part.only.items() for case_id, setting in ids]
    return out


def site_blocks(c: SiteComparison) -> list[doc.Block]:
    """The side-by-side as doc blocks (Markdown for the terminal, HTML on a published page)."""
    runs = c.runs
    out = head_blocks(runs, runs.context[:2] + c.experiment + runs.left_out)
    out += [doc.heading("What differed between the two systems", 3), doc.line(),
            *map(doc.line, system_lines(c)), doc.line()]
    out += [doc.heading("Cases", 3), doc.line(), *map(doc.line, case_lines(c)), doc.line()]
    out += [doc.heading("Drift", 3), doc.line()]
    out += [doc.line(f"- {label}: {text}") for label, lines in c.drift.items() for text in lines]
    return out + [doc.line()] + table_blocks(runs) + method_blocks()


def render_sites(c: SiteComparison) -> str:
    return doc.markdown(site_blocks(c))
