"""What is wrong with an experiment's file, said once per problem with its file, line and key:
the text rule (control characters), the JSON Schema's errors in words, and the nearest names
for a misspelt one."""

from __future__ import annotations

import difflib
import re

from . import schema as schemas
from ..errors import IolabError, IolabErrors
from ..units import DURATION_HELP, SIZE_HELP, OutOfRange
from .yamlpos import CONTROL, Located, brief, char_name


def suggest(word, choices) -> str | None:
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


class Found:
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


def structure_problems(doc: Located) -> list[IolabError]:
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
                                          hint=suggest(key, list(known))))
                for key in extra] or [(path, doc.error(path, err.message))]
    return [(path, explain(doc, err, base))]


def explain(doc: Located, err, base) -> IolabError:
    path = tuple(base) + tuple(err.absolute_path)
    v = err.validator
    if v == "oneOf" and err.context:
        # Prefer the branch whose error is deepest: it is the one the user meant.
        best = max(err.context, key=lambda e: len(e.absolute_path))
        return explain(doc, best, base)
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
