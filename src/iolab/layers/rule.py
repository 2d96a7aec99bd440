"""What a rule of thumb is (issue 39): a pattern the field's tools and guides warn of, such as
Drishti's small writes or the ROMIO guides' aggregators per node, checked on one case's evidence
(results/evidence.py: name -> Series over its ok repetitions) and parameters.

A layer declares the rules its evidence and parameters speak of (Layer.rules(), as it declares
its evidence_specs), each with where it comes from and its thresholds with their units; the rest
of iolab asks the registry for them and knows none by name (analysis/rules.py says, over the
cases of a run, where each applies and whether it separates the best case from the rest).

A rule is checked on each repetition of a case on its own. It reads only what that repetition
recorded: a piece of evidence without a value makes the repetition "cannot check", with the
reason it is missing and what the rule needs to be checked, and no threshold is ever set
against a value that was not measured. The case's state comes from its checked repetitions:
"applies" (the pattern is there in every one), "does not apply" (in none), "mixed" (in some);
"cannot check" where no repetition could be checked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .. import units

APPLIES, CLEAR, MIXED, CANNOT = "applies", "does not apply", "mixed", "cannot check"
STATES = (APPLIES, CLEAR, MIXED, CANNOT)


@dataclass(frozen=True)
class Limit:
    """One threshold of a rule: its value and unit, and what it bounds in words."""

    name: str
    value: float
    unit: str
    what: str

    def shown(self) -> str:
        return shown(self.value, self.unit)


@dataclass(frozen=True)
class Reading:
    """One value a rule read of a repetition: a piece of evidence (by its name) or a parameter
    of the case (by its key), with its unit."""

    name: str
    value: object
    unit: str = ""

    def shown(self) -> str:
        return f"{self.name} {shown(self.value, self.unit)}".strip()


@dataclass(frozen=True)
class Finding:
    """The rule applies to a repetition: what it says, and every value it read to say so."""

    text: str
    readings: tuple[Reading, ...] = ()


@dataclass(frozen=True)
class Clear:
    """The rule does not apply to a repetition: why, and the values that say so."""

    text: str
    readings: tuple[Reading, ...] = ()


@dataclass(frozen=True)
class CannotCheck:
    """A repetition the rule cannot be checked on: the evidence missing, each with the reason it
    was not recorded, and what the rule needs (how to record it)."""

    missing: tuple[tuple[str, str], ...]
    needs: str

    @property
    def text(self) -> str:
        what = "; ".join(f"{name}: {why}" for name, why in self.missing)
        return f"not recorded ({what}); needs {self.needs}"


class Missing(Exception):
    """A rule asked for evidence a repetition has no value of."""

    def __init__(self, name: str, why: str):
        super().__init__(f"{name}: {why}")
        self.name, self.why = name, why


class Values:
    """One repetition of a case as a rule reads it: each value read is kept (`readings`), so a
    finding names every value that made it."""

    def __init__(self, evidence: Mapping, index: int, params: dict):
        self._evidence, self._index, self.params = evidence, index, params
        self.readings: list[Reading] = []

    def __call__(self, name: str) -> float:
        """The value of a piece of evidence; Missing where it was not recorded."""
        series = self._evidence.get(name)
        if series is None:
            raise Missing(name, "declared by none of this case's layers and benchmark")
        value = series.values[self._index]
        if value is None:
            raise Missing(name, series.why[self._index] or "not recorded")
        self.readings.append(Reading(name, value, series.unit))
        return value

    def optional(self, name: str) -> float | None:
        """The value of a piece of evidence, or None where it was not recorded: for what a rule
        can do without (it branches on None, and sets no threshold against it)."""
        try:
            return self(name)
        except Missing:
            return None

    def param(self, key: str, unit: str = ""):
        """A parameter of the case (None where it has none), kept as a reading when set."""
        value = self.params.get(key)
        if value is not None:
            self.readings.append(Reading(key, value, unit))
        return value


@dataclass(frozen=True)
class CaseCheck:
    """A rule over one case's repetitions: its state and each repetition's outcome."""

    rule: str
    state: str
    outcomes: tuple[tuple[int, Finding | Clear | CannotCheck], ...]

    def first(self, kind: type):
        """The first repetition's outcome of a kind (Finding, Clear, CannotCheck), or None."""
        return next((o for _rep, o in self.outcomes if isinstance(o, kind)), None)

    @property
    def text(self) -> str:
        """The case's state in words: the first outcome that shows it, and how many of the
        repetitions it holds for."""
        n = len(self.outcomes)
        kinds = {APPLIES: Finding, CLEAR: Clear, CANNOT: CannotCheck}
        if self.state == MIXED:
            hits = [rep for rep, o in self.outcomes if isinstance(o, Finding)]
            return (f"applies in {len(hits)} of {n} repetitions ({', '.join(map(str, hits))}): "
                    f"{self.first(Finding).text}")
        if not self.outcomes:
            return "no ok repetition to check"
        same = sum(isinstance(o, kinds[self.state]) for _rep, o in self.outcomes)
        return self.first(kinds[self.state]).text + ("" if same == n else f" ({same} of {n} "
                                                     "repetitions; the others cannot be checked)")


@dataclass(frozen=True)
class Rule:
    """A rule of thumb as its layer declares it. `test(values, rule)` reads a repetition through
    `values` (a Values) and gives a Finding or a Clear; a value it asks for that was not recorded
    ends the check as "cannot check" before any threshold is set against it."""

    name: str
    title: str
    source: str                         # where it comes from, cited (file, section, page)
    limits: tuple[Limit, ...]
    needs: str                          # what must be recorded to check it, and how to record it
    help: str
    test: Callable = field(compare=False, repr=False)
    owner: str = ""                     # the layer that declares it (the registry sets it)

    def limit(self, name: str) -> float:
        for lim in self.limits:
            if lim.name == name:
                return lim.value
        raise KeyError(f"rule {self.name} declares no threshold {name!r}")

    def check_repetition(self, evidence: Mapping, index: int, params: dict):
        """Finding, Clear or CannotCheck of the repetition at `index` of the case's Series."""
        values = Values(evidence, index, params)
        try:
            got = self.test(values, self)
        except Missing as exc:
            return CannotCheck(((exc.name, exc.why),), self.needs)
        return type(got)(got.text, tuple(values.readings))

    def check(self, evidence: Mapping, params: dict) -> CaseCheck:
        """The rule over a case: evidence is name -> Series (reps, values, why, unit) of its ok
        repetitions, params its parameters."""
        reps = next(iter(evidence.values())).reps if evidence else []
        outcomes = tuple((rep, self.check_repetition(evidence, i, params)) for i, rep in enumerate(reps))
        checked = [o for _rep, o in outcomes if not isinstance(o, CannotCheck)]
        hits = sum(isinstance(o, Finding) for o in checked)
        state = CANNOT if not checked else APPLIES if hits == len(checked) else CLEAR if not hits \
            else MIXED
        return CaseCheck(self.name, state, outcomes)


def shown(value, unit: str = "") -> str:
    """A value a rule read, with its unit, as its sentences show it: bytes as 4MiB where whole
    (else 1.5 MiB), other numbers as a table cell shows them."""
    if unit == "B" and isinstance(value, (int, float)) and not isinstance(value, bool):
        whole = float(value).is_integer()
        return units.shown(int(value), size=True) if whole else units.format_bytes_human(value)
    return f"{units.shown(value, units.CELL)} {unit}".strip()
