"""The only YAML reader: validate an experiment against the schema, then build typed objects.

Every error names the file, the line and the key path, and exits 2 without a traceback.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import reportspec
from . import schema as schemas
from ..errors import IolabError, IolabErrors
from ..units import DURATION_HELP, SIZE_HELP, OutOfRange
from .yamlpos import CONTROL, Located, brief, char_name, decode, dotted, load_yaml

PARAM_SECTIONS = ("fixed", "matrix", "zip", "exclude")


def class_name(experiment_id: str) -> str:
    """The name of an experiment's ReFrame test, and of its generated shim: '-' is no Python."""
    return experiment_id.replace("-", "_")


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
class Darshan:
    enabled: bool = False
    dxt: bool = False


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
    darshan: Darshan | None = None      # None: the system config decides
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


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _required_file_system(doc, data: dict) -> tuple[str | None, tuple[str, ...]]:
    """require_file_system, with the older `require_lustre: true` read as `lustre` (a note says
    so); two different file systems asked for is an error."""
    from ..layers.storage.base import file_systems

    required, notes = data.get("require_file_system"), ()
    if data.get("require_lustre"):
        if required not in (None, "lustre"):
            raise doc.error(("require_lustre",), f"require_lustre: true and require_file_system: "
                            f"{brief(required)} ask for two file systems", hint="keep one")
        where = f"{doc.file}:{doc.line(('require_lustre',))}: require_lustre"
        notes = (f"{where}: the older spelling of require_file_system: lustre, read as that; "
                 "write require_file_system: lustre",)
        required = "lustre"
    if required is not None:
        known = [fs.name for fs in file_systems()]
        if required not in known:
            raise doc.error(("require_file_system",),
                            f"no file system {brief(required)} (known: {', '.join(known)})")
    return required, notes


def load_experiment(path, profile: str | None = None,
                    choose_profile: Callable[[list[str]], str | None] | None = None) -> Experiment:
    """The experiment at path, with profile applied. choose_profile, when given, picks the
    profile from the experiment's profiles instead (one read of the file where a caller must
    see the profiles before choosing: the ReFrame loader)."""
    path = Path(path)
    shown = _shown(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        known = sorted(p.stem for p in path.parent.glob("*.yaml")) if path.parent.is_dir() else []
        near = difflib.get_close_matches(path.stem, known, n=1)
        raise IolabError("no such experiment file", file=shown,
                         hint=((f"did you mean {near[0]!r}? " if near else "")
                               + f"experiments: {', '.join(known)}") if known else None) from None
    except OSError as exc:
        raise IolabError(f"cannot read: {exc.strerror}", file=shown) from None
    return load_text(decode(raw, shown), path, profile, shown, choose_profile)


def load_text(text: str, path, profile: str | None = None, shown: str | None = None,
              choose_profile: Callable[[list[str]], str | None] | None = None) -> Experiment:
    """An experiment from its text (a run's copy of its YAML): `path` gives its id (the stem) and
    project root; errors name `shown` (default: the path)."""
    path = Path(path)
    shown = shown or _shown(path)
    doc = load_yaml(text, shown)
    if not isinstance(doc.data, dict):
        raise doc.error((), "an experiment must be a mapping of keys (id, description, benchmark, ...)")
    # Every problem of the file is reported at once: the schema's, then each parameter's where
    # the document's shape lets them be checked.
    found = _Found(_structure_problems(doc))
    try:
        return _build(doc, path, text, profile, shown, choose_profile, found)
    except (KeyError, TypeError, AttributeError, ValueError):
        if not found.errors:
            raise
        found.raise_all()       # a part the schema refused could not be read further
        raise


def _build(doc: Located, path: Path, text: str, profile: str | None, shown: str,
           choose_profile, found: _Found) -> Experiment:
    data = doc.data
    if found.errors and not (isinstance(data.get("id"), str) and (
            isinstance(data.get("parts"), dict) or isinstance(data.get("benchmark"), str))):
        found.raise_all()       # too broken to read its parameters

    if data["id"] != path.stem:
        found.add(doc.error(("id",), f"id {brief(data['id'])} differs from the file name",
                            hint=f"rename the file to {data['id']}.yaml or set id: {path.stem}"))
    has_parts = "parts" in data
    if has_parts == ("benchmark" in data):
        found.add(doc.error((), "give either 'benchmark' (one benchmark) or 'parts' (several), "
                            "not " + ("both" if has_parts else "neither"),
                            hint=f"benchmarks: {', '.join(schemas.benchmarks())}"))
        found.raise_all()
    if has_parts:
        for key in ("scale", "job", "drift") + PARAM_SECTIONS:
            if key in data:
                found.add(doc.error((key,), f"with 'parts', put '{key}' inside each part"))

    # Part name -> (benchmark, path of its section in the document)
    parts_at = ({name: (p["benchmark"], ("parts", name)) for name, p in data["parts"].items()}
                if has_parts else {"main": (data["benchmark"], ())})

    # Type every parameter where it is written, so errors point at the right line,
    # and bring each section to one canonical form (scale folded into fixed/matrix).
    known = schemas.benchmarks()      # another benchmark: the schema said so already
    base = {name: _canonical(doc, bench, at, _get(data, at), found)
            for name, (bench, at) in parts_at.items() if bench in known}
    overrides: dict[str, dict[str, dict]] = {}
    for pname, prof in data.get("profiles", {}).items():
        if "parts" in prof and not has_parts:
            found.add(doc.error(("profiles", pname, "parts"), "this experiment has no 'parts'"))
        if has_parts:
            # Otherwise these would be silently ignored: overrides are per part.
            for key in ("scale", "job") + PARAM_SECTIONS:
                if key in prof:
                    found.add(doc.error(("profiles", pname, key), f"with 'parts', put '{key}' "
                                        f"inside profiles.{pname}.parts.<part name>",
                                        hint=f"parts: {', '.join(parts_at)}"))
        for name in prof.get("parts", {}):
            if name not in parts_at:
                found.add(doc.error(("profiles", pname, "parts", name), f"no part named "
                                    f"{brief(name)}", hint=_suggest(name, parts_at)))
        overrides[pname] = {}
        for name, (bench, _at) in parts_at.items():
            if bench not in known:
                continue
            ppath = ("profiles", pname, "parts", name) if has_parts else ("profiles", pname)
            try:
                section = _get(data, ppath)
            except KeyError:
                continue
            overrides[pname][name] = _canonical(doc, bench, ppath, section, found, profile=True)
            if name in base:
                _check_drops(doc, base[name], overrides[pname][name], found)

    # after the problems above: a mistyped key to drop would show here as a second request
    for pname in [None, *overrides] if not found.errors else []:
        for name, (_bench, at) in parts_at.items():
            if name not in base:
                continue
            section = base[name]
            where = at
            if pname and name in overrides[pname]:
                section = _apply_profile(section, overrides[pname][name])
                where = ("profiles", pname, "parts", name) if has_parts else ("profiles", pname)
            found.keep(_one_file_system, doc, where, section, pname)
    allow = found.keep(_allow, doc, data, parts_at, has_parts, default=()) if not found.errors else ()
    found.raise_all()

    if choose_profile is not None:
        profile = choose_profile(list(overrides))
    if profile is not None and profile not in overrides:
        known = ", ".join(overrides) or "none"
        raise IolabError(f"no profile {profile!r} in this experiment (profiles: {known})", file=shown)
    prof = data["profiles"][profile] if profile else {}

    parts = []
    for name, (bench, _at) in parts_at.items():
        section = base[name]
        if profile and name in overrides[profile]:
            section = _apply_profile(section, overrides[profile][name])
        parts.append(Part(name=name, benchmark=bench, job=Job(**section["job"]),
                          fixed=section["fixed"], matrix=section["matrix"],
                          zips=section["zips"], exclude=section["exclude"],
                          drift=_drift(doc, bench, _at, _get(data, _at).get("drift"))))

    required_fs, notes = _required_file_system(doc, data)
    repetitions = prof.get("repetitions", data.get("repetitions", 1))
    search = _search(doc, data["search"], parts, repetitions) if "search" in data else None
    return Experiment(
        id=data["id"], description=data["description"], source=data.get("source"),
        path=path, sha256=sha256_text(text), text=text, profile=profile,
        profiles=list(data.get("profiles", {})),
        repetitions=repetitions,
        keep_data=prof.get("keep_data", data.get("keep_data", False)),
        tags=list(data.get("tags", [])), parts=parts, raw=data,
        require_file_system=required_fs, notes=notes, verify=Verify(**data.get("verify", {})),
        darshan=Darshan(**data["darshan"]) if "darshan" in data else None,
        report=reportspec.from_doc(data.get("report") or {}), search=search, allow=allow,
        order=data.get("order", "blocks"),
    )


def _drift(doc: Located, bench: str, at: tuple, raw: dict | None) -> DriftReference | None:
    """A part's `drift:` typed (the schema checked its shape; which case it names is checked
    once the cases are known: matrix.reference_cases)."""
    if raw is None:
        return None
    where = at + ("drift", "case")
    params = {k: _param(doc, bench, where + (k,), k, v) for k, v in raw["case"].items()}
    return DriftReference(params, raw["every"], (doc.file, doc.line(where), dotted(where)))


def _search(doc: Located, raw: dict, parts: list[Part], repetitions: int) -> Search:
    """`search:` typed; what the schema cannot say (the objective is a metric of every benchmark,
    the direction agrees with it, halving has repetitions to halve over) said here."""
    from ..benchmarks import get as get_benchmark

    for part in parts:
        if part.drift is not None:
            # a search picks its cases and repetitions round by round: a reference's extra jobs
            # would be counted as the case's repetitions, and their numbers could collide
            at = ("drift",) if "drift" in doc.data else ("parts", part.name, "drift")
            raise doc.error(at, "a drift reference and search: do not combine (a search's rounds "
                            "choose the cases and repetitions)",
                            hint="run the search without drift:, then the chosen cases with it")
    objective = raw["objective"]
    better = set()
    for part in parts:
        spec = get_benchmark(part.benchmark).metric(objective)
        if spec is None:
            known = ", ".join(m.name for m in get_benchmark(part.benchmark).metrics)
            raise doc.error(("search", "objective"), f"{part.benchmark} reports no metric "
                            f"{brief(objective)}", hint=f"{part.benchmark} metrics: {known}")
        better.add(spec.better)
    implied = {"higher": "max", "lower": "min"}
    direction = raw.get("direction")
    if direction is None:
        if len(better) != 1 or None in better:
            raise doc.error(("search",), f"missing required key 'direction': {objective} is not "
                            "better higher or lower by itself", hint="direction: max or min")
        direction = implied[better.pop()]
    elif len(better) == 1 and None not in better and implied[next(iter(better))] != direction:
        side = next(iter(better))
        raise doc.error(("search", "direction"), f"{direction} of {objective}, which is better "
                        f"{side}", hint=f"direction: {implied[side]}")
    reps = raw.get("repetitions", repetitions)
    strategy = raw.get("strategy", "model")
    if strategy == "halving" and reps < 2:
        at = ("search", "repetitions") if "repetitions" in raw else ("search", "strategy")
        raise doc.error(at, f"halving needs at least 2 repetitions to halve over, got {reps}",
                        hint="set search.repetitions (e.g. 4) or choose strategy model, bayes or random")
    budget = raw["budget"]
    initial = raw.get("initial", default_initial(budget))
    if initial > budget:
        raise doc.error(("search", "initial"), f"{initial} random cases are more than the budget "
                        f"of {budget}", hint=f"at most {budget}")
    return Search(objective=objective, direction=direction, budget=budget, strategy=strategy,
                  repetitions=reps, seed=raw.get("seed", 0), initial=initial,
                  at=(doc.file, doc.line(("search", "objective"))))


def _allow(doc: Located, data: dict, parts_at: dict, has_parts: bool) -> tuple[str, ...]:
    """`allow:` typed (each name a guarded option of one of the experiment's benchmarks), and
    every guarded option the experiment's parameters set checked against it where it is written:
    one not allowed is refused there, naming it and what it does."""
    from ..benchmarks import get as get_benchmark

    benches = {bench: get_benchmark(bench) for bench, _at in parts_at.values()}
    known = {name: why for b in benches.values() for name, why in b.guarded_options.items()}
    allow = tuple(data.get("allow", []))
    for i, name in enumerate(allow):
        if name not in known:
            raise doc.error(("allow", i), f"{brief(name)} is not an option iolab guards for "
                            f"{', '.join(benches)}, so there is nothing to allow",
                            hint=_suggest(name, known) if known else None)
    for bench, at in parts_at.values():
        sections = [at] + [("profiles", p, "parts", at[-1]) if has_parts else ("profiles", p)
                           for p in data.get("profiles", {})]
        for spath in sections:
            try:
                section = _get(data, spath)
            except KeyError:
                continue
            for where, key, value in _values(section, spath):
                for index, name in benches[bench].guarded(key, value):
                    if name in allow:
                        continue
                    shown = value if index is None else value[index]
                    raise doc.error(where + (() if index is None else (index,)),
                                    f"{brief(shown)} sets {bench}'s {name}, which "
                                    f"{benches[bench].guarded_options[name]}: an experiment does that "
                                    "only where it says so", hint=f"allow: [{name}]")
    return allow


def where_set(exp: Experiment, key: str, part: str | None = None, value=None) -> tuple[str, int | None]:
    """The file and line where the experiment sets `key`, for a check made once its cases are
    known: a top-level key (part None), or a parameter of `part`, its profile's setting first
    and the line of `value` where the value is one of several."""
    doc = load_yaml(exp.text, _shown(exp.path))
    if part is None:
        return doc.file, doc.line((key,))
    at = ("parts", part) if "parts" in doc.data else ()
    first = None
    for spath in ([("profiles", exp.profile) + at] if exp.profile else []) + [at]:
        try:
            section = _get(doc.data, spath)
        except (KeyError, TypeError):
            continue
        for path, name, raw in _values(section, spath):
            if name == key and raw == value:
                return doc.file, doc.line(path)
            if name == key and first is None:
                first = path
    return doc.file, doc.line(first) if first else None


def _values(section: dict, at: tuple):
    """(path, key, value) of every value a parameter takes in a section: fixed, matrix, zip."""
    for key, value in (section.get("fixed") or {}).items():
        if value is not None:           # a profile's null drops the parameter
            yield at + ("fixed", key), key, value
    for key, values in (section.get("matrix") or {}).items():
        for i, value in enumerate(values or ()):
            yield at + ("matrix", key, i), key, value
    raw_zip = section.get("zip") or []
    groups = [(at + ("zip", gi), g) for gi, g in enumerate(raw_zip)] if isinstance(raw_zip, list) \
        else [(at + ("zip",), raw_zip)]
    for gpath, group in groups:
        for key, values in group.items():
            for i, value in enumerate(values):
                yield gpath + (key, i), key, value


def _shown(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def _get(data, path):
    for p in path:
        data = data[p]
    return data


def _suggest(word, choices) -> str | None:
    choices = [str(c) for c in choices]
    word = str(word)
    close = nearest(word, choices)
    allowed = ", ".join(choices)
    if close:
        return f"did you mean {' or '.join(map(repr, close))}? allowed: {allowed}"
    return f"allowed: {allowed}"


# Free text that never reaches a shell or an input file: the only strings that may hold newlines
# and tabs. No other key or string value may hold a control character (yamlpos.CONTROL).
FREE_TEXT = (("description",), ("source",), ("profiles", "*", "description"),
             ("report", "plots", "*", "title"))
_FREE_TEXT_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_WHERE_FREE = "description, source, profiles.*.description and report.plots[].title"


def _free_text(path) -> bool:
    return any(len(f) == len(path) and all(a in ("*", b) for a, b in zip(f, path)) for f in FREE_TEXT)


def control_character(text: str, free_text: bool = False, free_where: str | None = _WHERE_FREE) -> str | None:
    """What is wrong with this string, if it holds a control character (see FREE_TEXT; free_where:
    where newlines and tabs may go instead, if anywhere)."""
    found = (_FREE_TEXT_CONTROL if free_text else CONTROL).search(text)
    if not found:
        return None
    char = found.group()
    where = ("ends with" if found.end() == len(text)
             else f"has at character {found.start() + 1}")
    message = f"{where} {char_name(char)}: control characters are not allowed here"
    if char in "\t\n" and free_where:
        message += f"; newlines and tabs only in {free_where}"
    return message


def _control_characters(doc: Located) -> list[tuple[tuple, IolabError]]:
    """Every key and string value holding a control character: (path, error)."""
    found = []
    todo = [((), doc.data)]
    while todo:
        path, value = todo.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                problem = control_character(key)
                if problem:
                    found.append((path + (key,), doc.error(path + (key,), f"the key {problem}")))
                else:
                    todo.append((path + (key,), item))
        elif isinstance(value, list):
            todo.extend((path + (i,), item) for i, item in enumerate(value))
        elif isinstance(value, str):
            problem = control_character(value, _free_text(path))
            if problem:
                hint = ("in a block scalar, |- drops the last newline"
                        if problem.startswith("ends with a newline") else None)
                found.append((path, doc.error(path, problem, hint=hint)))
    return found


class _Found:
    """The problems of one file, gathered to be reported at once, one line each, by line."""

    def __init__(self, errors: list[IolabError]):
        self.errors = list(errors)

    def add(self, error: IolabError) -> None:
        """Keep `error`, unless a problem at the same key was said already (the schema's)."""
        if str(error) not in map(str, self.errors) and not (
                error.key and any(e.key == error.key for e in self.errors)):
            self.errors.append(error)

    def keep(self, check, *args, default=None):
        """check(*args), or `default` with its error kept."""
        try:
            return check(*args)
        except IolabErrors as exc:
            for error in exc.errors:
                self.add(error)
        except IolabError as exc:
            self.add(exc)
        return default

    def raise_all(self) -> None:
        if self.errors:
            problems = sorted(self.errors, key=lambda e: (e.line or 0, len(e.key or ""), str(e)))
            raise problems[0] if len(problems) == 1 else IolabErrors(problems)


def _structure_problems(doc: Located) -> list[IolabError]:
    """The text rule's and the JSON Schema's problems, one each, by line."""
    found: dict[str, tuple] = {}
    flagged = _control_characters(doc)
    for _path, problem in flagged:
        found.setdefault(str(problem), (problem.line or 0, len(problem.key or ""), problem))
    for err in schemas.validator().iter_errors(doc.data):
        for path, problem in _explain_all(doc, err):
            if not any(path[:len(at)] == at for at, _ in flagged):   # else said already, better
                found.setdefault(str(problem), (problem.line or 0, len(problem.key or ""), problem))
    return [p for *_, p in sorted(found.values(), key=lambda t: t[:2] + (str(t[2]),))]


def _explain_all(doc: Located, err, base=()) -> list[tuple[tuple, IolabError]]:
    """(path, readable error) per problem: a mapping's unknown keys are one each."""
    path = tuple(base) + tuple(err.absolute_path)
    if err.validator == "additionalProperties":
        known = err.schema.get("properties", {})
        patterns = [schemas.ecma_regex(p) for p in err.schema.get("patternProperties", {})]
        extra = [k for k in err.instance if k not in known and not any(p.search(k) for p in patterns)]
        return [(path + (key,), doc.error(path + (key,), f"unknown key {brief(key)}",
                                          hint=_suggest(key, list(known))))
                for key in extra] or [(path, doc.error(path, err.message))]
    return [(path, _explain(doc, err, base))]


def _explain(doc: Located, err, base) -> IolabError:
    path = tuple(base) + tuple(err.absolute_path)
    v = err.validator
    if v == "oneOf" and err.context:
        # Prefer the branch whose error is deepest: it is the one the user meant.
        best = max(err.context, key=lambda e: len(e.absolute_path))
        return _explain(doc, best, base)
    if v == "additionalProperties":
        return _explain_all(doc, err, base)[0][1]
    if v == "required":
        missing = err.message.split("'")[1] if "'" in err.message else err.message
        return doc.error(path, f"missing required key {missing!r}")
    if v == "enum":
        allowed = ", ".join(str(x) for x in err.validator_value)
        return doc.error(path, f"{brief(err.instance)} is not allowed", hint=f"allowed: {allowed}")
    if v == "type":
        want = err.validator_value
        want = [_TYPE_WORDS.get(w, w) for w in (want if isinstance(want, list) else [want])]
        want = " or ".join(want)
        return doc.error(path, f"expected {want}, got {_describe(err.instance)}")
    if v == "format":
        cause = err.cause if isinstance(err.cause, OutOfRange) else None
        if cause:   # well written, but too large (or, for a time limit, zero)
            return doc.error(path, str(cause))
        if err.validator_value == "size":
            return doc.error(path, f"{brief(err.instance)} is not a size", hint=f"use {SIZE_HELP}")
        if err.validator_value == "duration":
            return doc.error(path, f"{brief(err.instance)} is not a duration", hint=f"use {DURATION_HELP}")
    if v == "maxLength":
        return doc.error(path, f"{brief(err.instance)} is longer than {err.validator_value} characters")
    if v in ("minProperties", "minItems"):
        what = "mapping" if v == "minProperties" else "list"
        return doc.error(path, f"empty {what}: give at least one entry, or remove the key")
    if v == "pattern":
        return doc.error(path, f"{brief(err.instance)} does not match {err.validator_value}")
    if v in ("minimum", "maximum"):
        if "x-allowed" in err.schema:
            return doc.error(path, f"{brief(err.instance)} is not allowed: {err.schema['x-allowed']}")
        return doc.error(path, f"{brief(err.instance)} is out of range ({v} {err.validator_value})")
    # jsonschema's own words quote the whole value, which may be a megabyte long
    return doc.error(path, err.message if len(err.message) < 200 else err.message[:200] + "...")


# JSON Schema type names in the words _describe uses for YAML values
_TYPE_WORDS = {"array": "list", "object": "mapping"}


def _describe(value) -> str:
    kind = {bool: "boolean", int: "integer", float: "number", str: "string",
            list: "list", dict: "mapping"}.get(type(value), type(value).__name__)
    if value is None:
        return "nothing (null)"
    return f"{kind} {brief(value)}" if not isinstance(value, (list, dict)) else kind


def _param(doc: Located, bench: str, path: tuple, key, value):
    """Check one parameter value against its schema and return it typed."""
    spec = _param_key(doc, bench, path, key)
    errors = list(schemas.validator(spec).iter_errors(value))
    if errors:
        raise _explain(doc, errors[0], path)
    return schemas.typed(spec, value)


def _unset_or_param(doc: Located, bench: str, path: tuple, key, value):
    """In matrix and zip lists, null means "this parameter is not set" (e.g. a hint set without
    that hint); the case then has no such parameter at all. In exclude, null matches "not set"."""
    return None if value is None else _param(doc, bench, path, key, value)


def _canonical(doc: Located, bench: str, at: tuple, section: dict, found: _Found,
               profile: bool = False) -> dict:
    """Typed {fixed, matrix, zips, exclude, job, drop} for one part or one profile override; each
    problem is kept in `found` (its value left out) and the next one checked. In a profile, null
    as a parameter's value in fixed or matrix drops it (drop: key -> where it is written)."""
    fixed: dict[str, Any] = {}
    matrix: dict[str, list] = {}
    zips: list[dict[str, list]] = []
    seen: dict[str, tuple] = {}
    drop: dict[str, tuple] = {}

    def claim(key, path) -> bool:
        if key in seen:
            found.add(doc.error(path, f"{brief(key)} is set twice (also at {dotted(seen[key])})"))
            return False
        seen[key] = path
        return True

    def known(key, path) -> bool:
        return found.keep(_param_key, doc, bench, path, key) is not None

    def typed(path, key, value):
        return found.keep(_unset_or_param, doc, bench, path, key, value)

    for k, v in section.get("scale", {}).items():
        key = f"scale.{k}"
        claim(key, at + ("scale", k))
        if isinstance(v, list):
            matrix[key] = v
        else:
            fixed[key] = v
    for k, v in section.get("fixed", {}).items():
        if v is None and not profile:
            found.add(doc.error(at + ("fixed", k), "null drops a parameter only in a profile",
                                hint="leave the key out to keep the benchmark's default"))
        elif v is None:
            if known(k, at + ("fixed", k)) and claim(k, at + ("fixed", k)):
                drop[k] = at + ("fixed", k)
        elif claim(k, at + ("fixed", k)):
            fixed[k] = found.keep(_param, doc, bench, at + ("fixed", k), k, v)
    for k, values in section.get("matrix", {}).items():
        if known(k, at + ("matrix", k)) and claim(k, at + ("matrix", k)):
            if values is None:
                drop[k] = at + ("matrix", k)
            else:
                matrix[k] = [typed(at + ("matrix", k, i), k, v) for i, v in enumerate(values)]
    raw_zip = section.get("zip", [])
    listed = isinstance(raw_zip, list)
    for gi, group in enumerate(raw_zip if listed else [raw_zip]):
        gpath = at + (("zip", gi) if listed else ("zip",))
        lengths = {k: len(v) for k, v in group.items()}
        if len(set(lengths.values())) > 1:
            detail = ", ".join(f"{k}: {n}" for k, n in lengths.items())
            found.add(doc.error(gpath, f"zip lists must have equal lengths ({detail})"))
        lists = {}
        for k, values in group.items():
            if known(k, gpath + (k,)) and claim(k, gpath + (k,)):
                lists[k] = [typed(gpath + (k, i), k, v) for i, v in enumerate(values)]
        zips.append(lists)
    exclude = []
    for i, entry in enumerate(section.get("exclude", [])):
        exclude.append({k: typed(at + ("exclude", i, k), k, v) for k, v in entry.items()})
    out = {"fixed": fixed, "matrix": matrix, "zips": zips, "job": dict(section.get("job", {})),
           "drop": drop, "at": seen}
    if "exclude" in section:
        out["exclude"] = exclude
    else:
        out["exclude"] = []
        out["_no_exclude"] = True
    return out


def _param_key(doc, bench, path, key) -> dict:
    spec = schemas.param_spec(bench, key)
    if spec is None:
        raise doc.error(path, f"unknown parameter {brief(key)} for {bench}",
                        hint=_suggest_param(bench, key))
    return spec


def nearest(word: str, names) -> list[str]:
    """The names nearest a mistyped one (difflib), at most three: those as near as the nearest
    but for a little. A name is also read without its layer's prefix (`stripe_count` for
    `lustre.stripe_count`), and a two-letter typo of a two-letter name (`bz`, `bs`) is near."""
    if len(word) >= 200:
        return []
    word = word.lower()

    def score(name: str) -> float:
        return max(difflib.SequenceMatcher(None, word, n.lower()).ratio()
                   for n in {name, name.rsplit(".", 1)[-1]})

    scored = sorted(((score(n), n) for n in names), key=lambda sn: -sn[0])
    best = scored[0][0] if scored else 0
    return [n for sc, n in scored if sc >= max(best - 0.05, 0.5)][:3]


def _suggest_param(bench: str, key: str) -> str:
    """The nearest parameters, then every one this benchmark takes, grouped by who owns it: the
    benchmark, each layer of the stack, the scale."""
    from ..layers.registry import owner

    names = list(schemas.param_specs(bench))
    groups: dict[str, list[str]] = {bench: []}
    for name in names:
        layer = owner(name)
        group = "scale" if name.startswith("scale.") else layer.name if layer else bench
        groups.setdefault(group, []).append(name)
    near = nearest(str(key), names)
    listed = "; ".join(f"{group}: {', '.join(ks)}" for group, ks in groups.items() if ks)
    mean = f"did you mean {' or '.join(map(repr, near))}? " if near else ""
    return f"{mean}allowed: {listed}"


def type_param_text(bench: str, key: str, text: str, where: str):
    """Type one parameter given as text outside a YAML file (`iolab import --param KEY=TEXT`),
    read as a YAML scalar would be ("4MiB", "true", "[1, 2]")."""
    return type_param(bench, key, load_yaml(text, f"{where} {key}").data, where)


def type_param(bench: str, key: str, value, where: str):
    """Type one parameter given outside a YAML file (e.g. `iolab import --param`)."""
    doc = Located({}, {}, where)
    problem = control_character(value) if isinstance(value, str) else None
    if problem:
        raise doc.error((key,), problem)
    return _param(doc, bench, (key,), key, value)


def _set_keys(section: dict) -> set[str]:
    """The parameters a typed section sets: fixed, matrix and zip."""
    keys = set(section["fixed"]) | set(section["matrix"])
    for group in section["zips"]:
        keys |= set(group)
    return keys


def _check_drops(doc: Located, base: dict, override: dict, found: _Found) -> None:
    """A profile's null drops a parameter the experiment sets, and leaves no exclude entry of the
    experiment naming it (such an entry would silently match nothing any more)."""
    keys = _set_keys(base)
    for key, where in override["drop"].items():
        if key not in keys:
            found.add(doc.error(where, f"null drops {brief(key)}, which the experiment does not "
                                "set here", hint="remove the key from the profile"))
        elif override.get("_no_exclude"):
            named = [i for i, entry in enumerate(base["exclude"]) if key in entry]
            if named:
                found.add(doc.error(where, f"dropping {brief(key)} leaves the experiment's exclude "
                                    f"entr{'y' if len(named) == 1 else 'ies'} "
                                    f"{', '.join(map(str, named))} matching nothing",
                                    hint="give the profile its own exclude (exclude: [] for none)"))


def _one_file_system(doc: Located, at: tuple, section: dict, profile: str | None) -> None:
    """A part's cases ask for the layout of one file system at most: a case directory is on one,
    so a request for another could never be applied."""
    from ..layers.storage.base import file_systems

    keys = _set_keys(section)
    named = [(fs, sorted(k for k in keys if k.startswith(fs.prefix))) for fs in file_systems()]
    named = [(fs, ks) for fs, ks in named if ks]
    required = doc.data.get("require_file_system")
    for fs, ks in named:
        if required in {f.name for f in file_systems()} - {fs.name}:
            # every case would be skipped (or fail, strict) on the one file system it may run on
            raise doc.error(section["at"].get(ks[0], at),
                            f"a {fs.title} layout, but require_file_system is {required}: no case "
                            "can run as asked", hint=f"drop the {fs.prefix}* keys, or require_file_system")
        for req in _layouts(section, fs):
            problem = fs.check(req)
            if problem:
                # the message names the key first ("cephfs.object_size 1MiB is not ...")
                key = problem.split(" ", 1)[0]
                raise doc.error(section["at"].get(key, at), problem)
    if len(named) > 1:
        (a, ka), (b, kb) = named[:2]
        how = (f"drop one with null in profile {profile}" if profile
               else "keep one, or move the other into a profile")
        raise doc.error(at, f"asks for a {a.title} layout ({', '.join(ka)}) and a {b.title} layout "
                        f"({', '.join(kb)}): a case directory is on one file system, so one "
                        "request could never be applied", hint=how)


def _layouts(section: dict, fs) -> list[dict]:
    """Every layout of one file system the section's cases ask for (its keys only, without the
    prefix): the cross product of its matrix lists and zip groups, over its fixed values."""
    import itertools

    def own(params: dict) -> dict:
        return {k: v for k, v in params.items() if k.startswith(fs.prefix)}

    dims = [[{k: v} for v in vs] for k, vs in own(section["matrix"]).items()]
    for group in section["zips"]:
        mine = own(group)
        if mine:
            dims.append([dict(zip(mine, row)) for row in zip(*mine.values())])
    out = []
    for combo in itertools.product(*dims):
        params = dict(own(section["fixed"]))
        for piece in combo:
            params.update(piece)
        req = fs.requested({k: v for k, v in params.items() if v is not None})
        if req and req not in out:
            out.append(req)
    return out


def _apply_profile(base: dict, override: dict) -> dict:
    """A key the profile sets (fixed, matrix or zip) replaces the base's setting of it; a key it
    drops (null) is removed from the base's fixed, matrix and zip groups."""
    keys = _set_keys(override) | set(override.get("drop", ()))
    fixed = {k: v for k, v in base["fixed"].items() if k not in keys}
    matrix = {k: v for k, v in base["matrix"].items() if k not in keys}
    zips = []
    for group in base["zips"]:
        kept = {k: v for k, v in group.items() if k not in keys}
        if kept:
            zips.append(kept)
    fixed.update(override["fixed"])
    matrix.update(override["matrix"])
    zips += override["zips"]
    exclude = base["exclude"] if override.get("_no_exclude") else override["exclude"]
    return {"fixed": fixed, "matrix": matrix, "zips": zips, "exclude": exclude,
            "job": {**base["job"], **override["job"]},
            "at": {**{k: v for k, v in base.get("at", {}).items() if k not in keys},
                   **override.get("at", {})}}
