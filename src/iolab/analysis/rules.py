"""The field's rules of thumb over the cases of a run (issue 39, item 3): for each rule, where it
applies, where it does not, where it cannot be checked, and whether it separates the best case
from the rest. `iolab why` speaks from it beside its statistics (association.py).

The rules are the layers' (layers/rule.py says what one is; registry.rules() lists them, each
with where it comes from and its thresholds): Drishti's triggers on the Darshan evidence, the
ROMIO guides' aggregators per node, the stripe guides' request sizes. Each is checked on each
ok repetition of a case from what that repetition recorded, never from a value it did not.

Separating the best case from the rest means: every case was checked, and the rule applies to
the best case and to none of the others, or to all of the others and not to the best case. A
rule of thumb warns of a pattern that costs performance, so the second is what it predicts (the
best case avoided the pattern the others have); the first goes against it. A case where the rule
applies in some repetitions and not in others ("mixed") or cannot be checked leaves the answer
open (None), unless the cases that were checked already rule it out (the rule applies to the
best case and to one of the rest, or to two of the rest and not a third).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..layers import registry
from ..layers.rule import APPLIES, CANNOT, CLEAR, MIXED, CaseCheck, Rule

BEST_ONLY, ALL_BUT_BEST = "best only", "all but the best"


@dataclass(frozen=True)
class Separation:
    """Whether a rule separates the best case from the rest: True, False, or None where some
    case's state leaves it open; `direction` (BEST_ONLY, ALL_BUT_BEST) where it does, and the
    answer in words."""

    separates: bool | None
    text: str
    direction: str | None = None


@dataclass(frozen=True)
class RuleOverCases:
    """One rule over the cases given: each case's check (CaseCheck: its state, and each
    repetition's Finding, Clear or CannotCheck with the values read), in the order given."""

    rule: Rule
    checks: dict[str, CaseCheck]
    separation: Separation | None       # None where no best case was named

    def where(self, state: str) -> list[str]:
        """The case ids in a state (layers.rule: APPLIES, CLEAR, MIXED, CANNOT)."""
        return [case for case, check in self.checks.items() if check.state == state]

    @property
    def applies(self) -> list[str]:
        return self.where(APPLIES)

    @property
    def does_not_apply(self) -> list[str]:
        return self.where(CLEAR)

    @property
    def mixed(self) -> list[str]:
        return self.where(MIXED)

    @property
    def cannot_check(self) -> list[str]:
        return self.where(CANNOT)


def over_cases(cases: Iterable, best: str | None = None,
               rules: tuple[Rule, ...] | None = None) -> list[RuleOverCases]:
    """Every rule (or `rules`) over `cases`: the cases of one part of a run's digest
    (results/digest.CaseFacts, or anything with `case_id`, `params` and `evidence`, name ->
    Series), with `best` the case id of the best case (None: no separation is asked)."""
    cases = list(cases)
    if best is not None and best not in {c.case_id for c in cases}:
        raise ValueError(f"best case {best!r} is not among the cases given")
    out = []
    for rule in registry.rules() if rules is None else rules:
        checks = {c.case_id: rule.check(c.evidence, c.params) for c in cases}
        out.append(RuleOverCases(rule, checks, None if best is None else separation(checks, best)))
    return out


def separation(checks: dict[str, CaseCheck], best: str) -> Separation:
    """Whether the rule separates `best` from the other cases (the module's docstring says what
    that means)."""
    rest = {case: check.state for case, check in checks.items() if case != best}
    if not rest:
        return Separation(None, "one case: nothing to separate it from")
    mine = checks[best].state
    if APPLIES in rest.values() and CLEAR in rest.values():
        return Separation(False, f"applies to {_count(rest, APPLIES)} of the other cases and "
                                 f"not to {_count(rest, CLEAR)}")
    if mine in (APPLIES, CLEAR) and mine in rest.values():
        word = "applies" if mine == APPLIES else "does not apply"
        return Separation(False, f"{word} to the best case and to {_count(rest, mine)} of the "
                                 f"{len(rest)} others alike")
    if mine in (MIXED, CANNOT) or any(s in (MIXED, CANNOT) for s in rest.values()):
        said = [f"the best case: {mine}"] if mine in (MIXED, CANNOT) else []
        said += [f"{_count(rest, state)} of the {len(rest)} others: {state}"
                 for state in (MIXED, CANNOT) if state in rest.values()]
        return Separation(None, "cannot say: " + "; ".join(said))
    if mine == APPLIES:
        return Separation(True, f"applies to the best case and to none of the {len(rest)} others",
                          BEST_ONLY)
    return Separation(True, f"applies to all {len(rest)} other cases and not to the best one",
                      ALL_BUT_BEST)


def _count(states: dict, state: str) -> str:
    return str(sum(s == state for s in states.values()))
