"""The only YAML reader: validate an experiment against the schema, then build typed objects.

Every error names the file, the line and the key path, and exits 2 without a traceback.
"""

from __future__ import annotations

import difflib
import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from . import reportspec
from . import schema as schemas
from ..errors import IolabError
from ..layers import registry
from .yamlpos import Located, brief, decode, dotted, load_yaml
from .model import DriftReference, Experiment, Job, Part, Search, Verify, default_initial
from .params import canonical, get_at, param, values_of
from .problems import Found, structure_problems, suggest

PARAM_SECTIONS = ("fixed", "matrix", "zip", "exclude")


def class_name(experiment_id: str) -> str:
    """The name of an experiment's ReFrame test, and of its generated shim: '-' is no Python."""
    return experiment_id.replace("-", "_")


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _required_file_system(doc, data: dict) -> tuple[str | None, tuple[str, ...]]:
    """require_file_system, or what a layer reads from an older spelling of it (with a note);
    a file system no layer lays out is an error."""
    from ..layers.registry import file_systems, older_spellings

    read, notes = older_spellings(doc, data)
    required = data.get("require_file_system", read.get("require_file_system"))
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
    found = Found(structure_problems(doc))
    try:
        return _build(doc, path, text, profile, shown, choose_profile, found)
    except (KeyError, TypeError, AttributeError, ValueError):
        if not found.errors:
            raise
        found.raise_all()       # a part the schema refused could not be read further
        raise


def _build(doc: Located, path: Path, text: str, profile: str | None, shown: str,
           choose_profile, found: Found) -> Experiment:
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
    base = {name: canonical(doc, bench, at, get_at(data, at), found)
            for name, (bench, at) in parts_at.items() if bench in known}
    overrides = _overrides(doc, parts_at, has_parts, base, found)
    # after the problems above: a mistyped key to drop would show here as a second request
    if not found.errors:
        _check_file_systems(doc, parts_at, has_parts, base, overrides, found)
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
                          drift=_drift(doc, bench, _at, get_at(data, _at).get("drift"))))

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
        sections=registry.sections(data, absent_too=False),
        report=reportspec.from_doc(data.get("report") or {}), search=search, allow=allow,
        order=data.get("order", "blocks"),
    )


def _overrides(doc: Located, parts_at: dict, has_parts: bool, base: dict,
               found: Found) -> dict[str, dict[str, dict]]:
    """Each profile's overrides, per part, typed where they are written."""
    data, known = doc.data, schemas.benchmarks()
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
                                    f"{brief(name)}", hint=suggest(name, parts_at)))
        overrides[pname] = {}
        for name, (bench, _at) in parts_at.items():
            if bench not in known:
                continue
            ppath = ("profiles", pname, "parts", name) if has_parts else ("profiles", pname)
            try:
                section = get_at(data, ppath)
            except KeyError:
                continue
            overrides[pname][name] = canonical(doc, bench, ppath, section, found, profile=True)
            if name in base:
                _check_drops(doc, base[name], overrides[pname][name], found)
    return overrides


def _check_file_systems(doc: Located, parts_at: dict, has_parts: bool, base: dict,
                        overrides: dict, found: Found) -> None:
    """One file system's layout per part, as written and under each profile."""
    for pname in [None, *overrides]:
        for name, (_bench, at) in parts_at.items():
            if name not in base:
                continue
            section = base[name]
            where = at
            if pname and name in overrides[pname]:
                section = _apply_profile(section, overrides[pname][name])
                where = ("profiles", pname, "parts", name) if has_parts else ("profiles", pname)
            found.keep(_one_file_system, doc, where, section, pname)


def _drift(doc: Located, bench: str, at: tuple, raw: dict | None) -> DriftReference | None:
    """A part's `drift:` typed (the schema checked its shape; which case it names is checked
    once the cases are known: matrix.reference_cases)."""
    if raw is None:
        return None
    where = at + ("drift", "case")
    params = {k: param(doc, bench, where + (k,), k, v) for k, v in raw["case"].items()}
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
                            hint=suggest(name, known) if known else None)
    for bench, at in parts_at.values():
        sections = [at] + [("profiles", p, "parts", at[-1]) if has_parts else ("profiles", p)
                           for p in data.get("profiles", {})]
        for spath in sections:
            try:
                section = get_at(data, spath)
            except KeyError:
                continue
            for where, key, value in values_of(section, spath):
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
            section = get_at(doc.data, spath)
        except (KeyError, TypeError):
            continue
        for path, name, raw in values_of(section, spath):
            if name == key and raw == value:
                return doc.file, doc.line(path)
            if name == key and first is None:
                first = path
    return doc.file, doc.line(first) if first else None


def _shown(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def _set_keys(section: dict) -> set[str]:
    """The parameters a typed section sets: fixed, matrix and zip."""
    keys = set(section["fixed"]) | set(section["matrix"])
    for group in section["zips"]:
        keys |= set(group)
    return keys


def _check_drops(doc: Located, base: dict, override: dict, found: Found) -> None:
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
    from ..layers.registry import file_systems

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
