"""The experiment JSON Schema, shipped with the package, and lookups into its parameter definitions."""

from __future__ import annotations

import copy
import functools
import json
import re
from importlib import resources

from ...units import is_size, parse_duration, parse_size


@functools.cache
def ecma_regex(pattern: str) -> re.Pattern:
    """A schema pattern as ECMA-262 (and so every editor) reads it: '$' is the end of the text.
    Python's '$' also matches before a final newline, which let "name\\n" pass '^[a-z]+$'."""
    return re.compile(re.sub(r"(?<!\\)\$", r"\\Z", pattern))


@functools.cache
def experiment_schema() -> dict:
    """experiment.v1.json with the parameters every benchmark takes from the stack layers'
    fragments ($defs.params.common, and the $defs they add), each benchmark's parameters
    ($defs.params.<name>) and the list of benchmarks ($defs.benchmark) taken from the benchmark
    descriptors (iolab.benchmarks)."""
    from ... import benchmarks
    from ...layers.registry import registry

    schema = json.loads(resources.files(__package__).joinpath("experiment.v1.json").read_text())
    common = schema["$defs"]["params"]["common"]
    for layer in registry():
        fragment = layer.schema()
        common["properties"].update(fragment.get("properties", {}))
        common["patternProperties"].update(fragment.get("patternProperties", {}))
        schema["$defs"].update(fragment.get("$defs", {}))
    for name, bench in benchmarks.registry().items():
        schema["$defs"]["params"][name] = bench.params_schema
    schema["$defs"]["benchmark"]["enum"] = list(benchmarks.registry())
    return schema


def validator(schema: dict | None = None):
    """A jsonschema validator of the experiment schema (or of a part of it, with its $defs).
    jsonschema is imported here, not with this module: reading results needs none of it."""
    from .checking import FORMATS, Validator

    root = experiment_schema()
    if schema is None:
        schema = root
    else:
        schema = dict(schema)
        schema.setdefault("$defs", root["$defs"])
    return Validator(schema, format_checker=FORMATS)


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
