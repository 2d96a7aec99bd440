"""A benchmark's parameters as an experiment writes them, typed where they are written ("4MiB"
-> 4194304) so that an error points at its line, and each section brought to one form."""

from __future__ import annotations

from typing import Any

from . import schema as schemas
from .yamlpos import Located, brief, dotted, load_yaml
from .problems import Found, control_character, explain, nearest


def param(doc: Located, bench: str, path: tuple, key, value):
    """Check one parameter value against its schema and return it typed."""
    spec = _param_key(doc, bench, path, key)
    errors = list(schemas.validator(spec).iter_errors(value))
    if errors:
        raise explain(doc, errors[0], path)
    return schemas.typed(spec, value)


def _unset_or_param(doc: Located, bench: str, path: tuple, key, value):
    """In matrix and zip lists, null means "this parameter is not set" (e.g. a hint set without
    that hint); the case then has no such parameter at all. In exclude, null matches "not set"."""
    return None if value is None else param(doc, bench, path, key, value)


def canonical(doc: Located, bench: str, at: tuple, section: dict, found: Found,
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
            fixed[k] = found.keep(param, doc, bench, at + ("fixed", k), k, v)
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
    return param(doc, bench, (key,), key, value)


def values_of(section: dict, at: tuple):
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


def get_at(data, path):
    for p in path:
        data = data[p]
    return data
