"""The experiment schema's checks as jsonschema runs them: iolab's formats (size, time-limit,
duration), strict integers, ECMA patterns and byte bounds. Its own module so that jsonschema is
imported only by what validates (schema.validator, the site config), not by every reader."""

from __future__ import annotations

import jsonschema

from ...units import OutOfRange, format_size, is_size, parse_duration, parse_size, parse_time_limit
from ..yamlpos import brief
from . import ecma_regex

FORMATS = jsonschema.FormatChecker()

# JSON Schema counts 3.0 as an integer; iolab must not (IOR would get "-i 3.0", and the case id
# of iterations 3.0 would differ from that of 3). YAML gives a float only when one was written.
_STRICT_TYPES = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool))


def _pattern(validator, pattern, instance, schema):
    if validator.is_type(instance, "string") and not ecma_regex(pattern).search(instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


@FORMATS.checks("size", raises=ValueError)
def _check_size(value) -> bool:
    if isinstance(value, bool):
        return False
    parse_size(value)     # its ValueError says why (negative, over 1 EiB, not a size)
    return True


@FORMATS.checks("time-limit", raises=ValueError)
def _check_time_limit(value) -> bool:
    try:
        parse_time_limit(value)
    except OutOfRange:
        raise
    except ValueError:
        pass      # how it is written is the pattern's to say
    return True


@FORMATS.checks("duration", raises=ValueError)
def _check_duration(value) -> bool:
    parse_duration(value)     # its ValueError says why (not a duration, negative, over a week)
    return True


# Bounds on sizes, checked in bytes whatever the spelling ("0k", 0, "1.5m"): x-minBytes and
# x-multipleOfBytes; x-allowed says in words what is allowed (editors ignore x- keywords).
def _allowed(schema, default: str) -> str:
    return schema.get("x-allowed", default)


def _min_bytes(validator, minimum, instance, schema):
    if is_size(instance) and not isinstance(instance, bool) and parse_size(instance) < minimum:
        yield jsonschema.ValidationError(
            f"{brief(instance)} is not allowed: "
            + _allowed(schema, f"give at least {format_size(minimum)}"))


def _multiple_of_bytes(validator, unit, instance, schema):
    if is_size(instance) and not isinstance(instance, bool) and parse_size(instance) % unit:
        yield jsonschema.ValidationError(
            f"{brief(instance)} ({parse_size(instance)} bytes) is not allowed: "
            + _allowed(schema, f"give a multiple of {format_size(unit)}"))


def _not(validator, not_schema, instance, schema):
    """'not' with x-allowed: the message says what is allowed instead of quoting the schema."""
    for error in _DRAFT_NOT(validator, not_schema, instance, schema):
        if "x-allowed" in schema:
            error.message = f"{brief(instance)} is not allowed: {schema['x-allowed']}"
        yield error


_DRAFT_NOT = jsonschema.Draft202012Validator.VALIDATORS["not"]
Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, type_checker=_STRICT_TYPES,
    validators={"pattern": _pattern, "x-minBytes": _min_bytes,
                "x-multipleOfBytes": _multiple_of_bytes, "not": _not})
