"""The experiment JSON Schema, shipped with the package, and lookups into its parameter definitions."""

from __future__ import annotations

import copy
import functools
import json
import re
from importlib import resources
from typing import TYPE_CHECKING

from ...units import OutOfRange, format_size, is_size, parse_duration, parse_size, parse_time_limit
from ..yamlpos import brief

if TYPE_CHECKING:
    import jsonschema

# jsonschema is imported at the first validation (_checkers), not with this module: the verbs
# that only read results (table, compare, publish) take parameter specs from here and validate
# nothing, and its import was a third of a warm table's time.


@functools.cache
def ecma_regex(pattern: str) -> re.Pattern:
    """A schema pattern as ECMA-262 (and so every editor) reads it: '$' is the end of the text.
    Python's '$' also matches before a final newline, which let "name\\n" pass '^[a-z]+$'."""
    return re.compile(re.sub(r"(?<!\\)\$", r"\\Z", pattern))


def _pattern(validator, pattern, instance, schema):
    if validator.is_type(instance, "string") and not ecma_regex(pattern).search(instance):
        import jsonschema

        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def _check_size(value) -> bool:
    if isinstance(value, bool):
        return False
    parse_size(value)     # its ValueError says why (negative, over 1 EiB, not a size)
    return True


def _check_time_limit(value) -> bool:
    try:
        parse_time_limit(value)
    except OutOfRange:
        raise
    except ValueError:
        pass      # how it is written is the pattern's to say
    return True


def _check_duration(value) -> bool:
    parse_duration(value)     # its ValueError says why (not a duration, negative, over a week)
    return True


# Bounds on sizes, checked in bytes whatever the spelling ("0k", 0, "1.5m"): x-minBytes and
# x-multipleOfBytes; x-allowed says in words what is allowed (editors ignore x- keywords).
def _allowed(schema, default: str) -> str:
    return schema.get("x-allowed", default)


def _min_bytes(validator, minimum, instance, schema):
    if is_size(instance) and not isinstance(instance, bool) and parse_size(instance) < minimum:
        import jsonschema

        yield jsonschema.ValidationError(
            f"{brief(instance)} is not allowed: "
            + _allowed(schema, f"give at least {format_size(minimum)}"))


def _multiple_of_bytes(validator, unit, instance, schema):
    if is_size(instance) and not isinstance(instance, bool) and parse_size(instance) % unit:
        import jsonschema

        yield jsonschema.ValidationError(
            f"{brief(instance)} ({parse_size(instance)} bytes) is not allowed: "
            + _allowed(schema, f"give a multiple of {format_size(unit)}"))


def _not(validator, not_schema, instance, schema):
    """'not' with x-allowed: the message says what is allowed instead of quoting the schema."""
    import jsonschema

    draft_not = jsonschema.Draft202012Validator.VALIDATORS["not"]
    for error in draft_not(validator, not_schema, instance, schema):
        if "x-allowed" in schema:
            error.message = f"{brief(instance)} is not allowed: {schema['x-allowed']}"
        yield error


@functools.cache
def _checkers():
    """jsonschema's format checker with iolab's formats, and its validator class with iolab's
    keywords and types; made once, at the first validation."""
    import jsonschema

    formats = jsonschema.FormatChecker()
    formats.checks("size", raises=ValueError)(_check_size)
    formats.checks("time-limit", raises=ValueError)(_check_time_limit)
    formats.checks("duration", raises=ValueError)(_check_duration)
    # JSON Schema counts 3.0 as an integer; iolab must not (IOR would get "-i 3.0", and the case
    # id of iterations 3.0 would differ from that of 3). YAML gives a float only when one was written.
    strict = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool))
    cls = jsonschema.validators.extend(
        jsonschema.Draft202012Validator, type_checker=strict,
        validators={"pattern": _pattern, "x-minBytes": _min_bytes,
                    "x-multipleOfBytes": _multiple_of_bytes, "not": _not})
    return formats, cls


def __getattr__(name: str):
    """_FORMATS and _Validator (site.py's) as before, made when first asked for."""
    if name == "_FORMATS":
        return _checkers()[0]
    if name == "_Validator":
        return _checkers()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def experiment_schema() -> dict:
    """experiment.v1.json with the parameters every benchmark takes from the stack layers'
    fragments ($defs.params.common, and the $defs they add), each benchmark's parameters
    ($defs.params.<name>) and the list of benchmarks ($defs.benchmark) taken from the benchmark
    descriptors (iolab.benchmarks); the layers' derived columns join the report's."""
    from ... import benchmarks
    from ...layers.registry import derived_columns, registry

    schema = json.loads(resources.files(__package__).joinpath("experiment.v1.json").read_text())
    common = schema["$defs"]["params"]["common"]
    for layer in registry():
        fragment = layer.schema()
        common["properties"].update(fragment.get("properties", {}))
        common["patternProperties"].update(fragment.get("patternProperties", {}))
        schema["$defs"].update(fragment.get("$defs", {}))
    schema["$defs"]["report"]["properties"]["derived"]["items"]["enum"] += list(derived_columns())
    for name, bench in benchmarks.registry().items():
        schema["$defs"]["params"][name] = bench.params_schema
    schema["$defs"]["benchmark"]["enum"] = list(benchmarks.registry())
    return schema


def validator(schema: dict | None = None) -> jsonschema.protocols.Validator:
    root = experiment_schema()
    if schema is None:
        schema = root
    else:
        schema = dict(schema)
        schema.setdefault("$defs", root["$defs"])
    formats, cls = _checkers()
    return cls(schema, format_checker=formats)


def resolve(schema: dict) -> dict:
    """Follow one level of local $ref, keeping sibling keywords (title, default...)."""
    ref = schema.get("$ref")
    if not ref:
        return schema
    node = experiment_schema()
    for part in ref.lstrip("#/").split("/"):
        node = node[part]
    merged = copy.deepcopy(node)
    merged.update({k: v for k, v in schema.items() if k != "$ref"})
    return merged


@functools.cache
def param_specs(benchmark: str) -> dict[str, dict]:
    """name -> resolved schema for every parameter valid with this benchmark."""
    params = experiment_schema()["$defs"]["params"]
    specs = {}
    for group in ("common", "scale", benchmark):
        for name, spec in params[group]["properties"].items():
            specs[name] = resolve(spec)
    return specs


@functools.cache
def param_patterns(benchmark: str) -> list[tuple[re.Pattern, dict]]:
    params = experiment_schema()["$defs"]["params"]
    out = []
    for group in ("common", "scale", benchmark):
        for pattern, spec in params[group].get("patternProperties", {}).items():
            out.append((ecma_regex(pattern), resolve(spec)))
    return out


def param_spec(benchmark: str, key: str) -> dict | None:
    """The schema of one parameter (named, or matching a pattern such as mpiio.*), else None."""
    spec = param_specs(benchmark).get(key)
    if spec is not None:
        return spec
    for pattern, spec in param_patterns(benchmark):
        if pattern.match(key):
            return spec
    return None


def benchmarks() -> list[str]:
    return list(experiment_schema()["$defs"]["benchmark"]["enum"])


def is_size_param(spec: dict) -> bool:
    return spec.get("format") == "size"


def is_duration_param(spec: dict) -> bool:
    return spec.get("format") == "duration"


def typed(spec: dict, value):
    """A validated value with every size in it (nested ones too) turned into bytes."""
    spec = resolve(spec)
    if is_size_param(spec) and is_size(value):
        return parse_size(value)
    if is_duration_param(spec) and not isinstance(value, bool) and isinstance(value, (int, str)):
        return parse_duration(value)
    for branch in spec.get("oneOf", []):
        if validator(branch).is_valid(value):
            return typed(branch, value)
    if isinstance(value, list) and "items" in spec:
        return [typed(spec["items"], v) for v in value]
    if isinstance(value, dict) and "properties" in spec:
        return {k: typed(spec["properties"].get(k, {}), v) for k, v in value.items()}
    return value
