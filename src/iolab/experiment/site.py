"""A system partition's site facts, extras['iolab'] of a ReFrame configuration, as a typed object.

One schema (schema/site.v1.json, `additionalProperties: false` at every level) and one loader:
an unknown or misspelt key, or a value of the wrong type, is an error naming the configuration
file and the key (`reframe/config/x.py: extras['iolab'].cores_per_nodes: unknown key (did you
mean 'cores_per_node'?)`), never a silent default. What a run recorded of them (the manifest's
`system_extras`) is history, not configuration: `recorded` reads it leniently.
"""

from __future__ import annotations

import os

import difflib
import functools
import json
import re
from dataclasses import dataclass, field
from importlib import resources

from ..layers import registry as layers
from ..errors import IolabError, IolabErrors
from ..layers import registry
from .problems import control_character
from .schema import _Validator
from ..software import Stack, from_extras
from .yamlpos import brief

ROOT = "extras['iolab']"


@functools.cache
def schema() -> dict:
    """site.v1.json, with what the layers know of its keys (the MPI flavours as mpi_flavour's
    enum: base.Layer.site_properties)."""
    out = json.loads(resources.files("iolab.experiment.schema").joinpath("site.v1.json").read_text())
    for key, keywords in layers.site_properties().items():
        out["properties"].setdefault(key, {}).update(keywords)
    return out


@functools.cache
def _validator():
    return _Validator(schema())


@dataclass(frozen=True)
class SiteConfig:
    """What iolab reads of a partition; every field has the default of an absent key."""

    scratch: str = "/tmp/iolab-scratch"
    burst_buffer: str | None = None
    node_local: str = "/tmp"
    cores_per_node: int | None = None
    profile: tuple[str, ...] = ()            # names in order of preference
    mpi_flavour: str = "openmpi-ompio"
    launcher_options: tuple[str, ...] = ()
    stack: Stack = field(default_factory=Stack)
    # the layers' sections (layers.base.Layer.section), typed by each, by layer name
    sections: dict = field(default_factory=lambda: registry.sections({}, absent_too=True))
    same_machine_as: tuple[str, ...] = ()
    strict: bool = False                     # a case that cannot run fails the run, not skipped
    raw: dict = field(default_factory=dict, compare=False)   # as written: the manifest records it

    @property
    def strict_now(self) -> bool:
        """Whether a case that cannot run as asked fails the run instead of being skipped: the
        system's `strict`, or IOLAB_STRICT=1 (scripts/run --strict) for any system."""
        return self.strict or os.environ.get("IOLAB_STRICT") == "1"

    @property
    def mpi_runtime(self) -> str:
        """Which MPI runtime launches the ranks (how its mpirun passes variables), as the layer
        that reads mpi_flavour says."""
        runtime = layers.mpi_runtime(self)
        if runtime is None:
            raise IolabError(f"no layer knows the MPI runtime of mpi_flavour {self.mpi_flavour!r}",
                             key="mpi_flavour")
        return runtime

    def root(self, target: str) -> str | None:
        """The root of a storage target's case directories: scratch, burst_buffer, node_local."""
        return {"scratch": self.scratch, "burst_buffer": self.burst_buffer,
                "node_local": self.node_local}[target]


def _typed(data: dict) -> SiteConfig:
    profile = data.get("profile") or ()
    return SiteConfig(
        **{k: data[k] for k in ("scratch", "burst_buffer", "node_local", "cores_per_node",
                                "mpi_flavour", "strict") if k in data},
        profile=(profile,) if isinstance(profile, str) else tuple(profile),
        launcher_options=tuple(data.get("launcher_options", ())),
        stack=from_extras(data),
        sections=registry.sections(data, absent_too=True),
        same_machine_as=tuple(data.get("same_machine_as", ())),
        raw=data)


def load(extras, *, file: str | None = None, source: str | None = None) -> SiteConfig:
    """The typed site facts of extras['iolab'] (None or absent: every default); every problem
    is an IolabError naming file (as shown; source: where to read it, to name the line) and key
    (IolabErrors when there are several)."""
    data = {} if extras is None else extras
    if not isinstance(data, dict):
        raise IolabError(f"{brief(data)} is {_kind(data)}, expected a dict", file=file, key=ROOT)
    text = _read(source or file)
    errors = [_error(e, file, text) for e in
              sorted(_validator().iter_errors(data), key=lambda e: [str(p) for p in e.path])]
    errors += [IolabError(problem, file=file, line=_line(text, key), key=key)
               for key, problem in _control_characters(data)]
    if not errors:
        try:
            return _typed(data)
        except IolabError as exc:
            key = (exc.key or "").replace("extras.iolab", ROOT)
            errors = [IolabError(exc.message, file=file, line=_line(text, key), key=key,
                                 hint=exc.hint)]
    raise errors[0] if len(errors) == 1 else IolabErrors(errors)


def recorded(extras) -> SiteConfig:
    """The site facts a run's manifest recorded (`system_extras`), read leniently: a key iolab
    no longer knows, or a value it would now refuse, is left out (read as its default)."""
    data = dict(extras) if isinstance(extras, dict) else {}
    if isinstance(data.get("same_machine_as"), str):     # written so by hand in early runs
        data["same_machine_as"] = [data["same_machine_as"]]
    kept = {k: v for k, v in data.items()
            if k in schema()["properties"] and _validator().is_valid({k: v})}
    try:
        out = _typed(kept)
    except IolabError:
        out = _typed({k: v for k, v in kept.items() if k != "stack"})
    return SiteConfig(**{f: getattr(out, f) for f in out.__dataclass_fields__ if f != "raw"},
                      raw=data)


def _control_characters(value, path=()) -> list[tuple[str, str]]:
    """(key, problem) of every string holding a control character: a path or an option with a
    newline reaches every job script, where it breaks the job (problems.control_character)."""
    if isinstance(value, dict):
        return [found for k, v in value.items() for found in _control_characters(v, (*path, k))]
    if isinstance(value, (list, tuple)):
        return [found for i, v in enumerate(value) for found in _control_characters(v, (*path, i))]
    problem = control_character(value, free_where=None) if isinstance(value, str) else None
    return [(_key(path), f"{brief(value)} {problem}")] if problem else []


# ------------------------------------------------------------------------------ messages

_KINDS = {"string": "a string", "integer": "an integer", "number": "a number",
          "boolean": "True or False", "array": "a list", "object": "a dict", "null": "None"}


def _kind(value) -> str:
    if isinstance(value, bool):
        return "a bool"
    for name, kind in (("integer", int), ("number", float), ("string", str),
                       ("array", (list, tuple)), ("object", dict), ("null", type(None))):
        if isinstance(value, kind):
            return _KINDS[name]
    return f"a {type(value).__name__}"


def _expected(types) -> str:
    types = [types] if isinstance(types, str) else list(types)
    return " or ".join(_KINDS.get(t, t) for t in types)


def _key(path) -> str:
    out = ROOT
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _error(err, file: str | None, text: str | None) -> IolabError:
    path, value, kind = list(err.absolute_path), err.instance, err.validator
    hint = None
    if kind == "additionalProperties":
        known = list(err.schema.get("properties", {}))
        unknown = sorted(set(value) - set(known))[0]
        path.append(unknown)
        near = difflib.get_close_matches(str(unknown), known, n=1)
        message = "unknown key"
        hint = f"did you mean {near[0]!r}?" if near else f"keys: {', '.join(known)}"
    elif kind == "type":
        message = f"{brief(value)} is {_kind(value)}, expected {_expected(err.validator_value)}"
    elif kind == "enum":
        allowed = [str(v) for v in err.validator_value]
        near = difflib.get_close_matches(str(value), allowed, n=1)
        message = f"{brief(value)} is not allowed"
        hint = (f"did you mean {near[0]!r}? " if near else "") + f"allowed: {', '.join(allowed)}"
    elif kind == "oneOf" and [e for e in err.context if e.validator != "type"]:
        # of one branch's type ([] for a list of strings): what that branch says of it
        return _error(next(e for e in err.context if e.validator != "type"), file, text)
    elif kind == "oneOf":
        message = (f"{brief(value)} is {_kind(value)}, expected "
                   + " or ".join(_describe(s) for s in err.validator_value))
    elif kind == "minimum":
        message = f"{brief(value)} is below the least allowed, {err.validator_value}"
    elif kind == "minItems":
        message = f"{brief(value)} is empty: give at least one"
    else:
        message = err.message
    key = _key(path)
    return IolabError(message, file=file, line=_line(text, key), key=key, hint=hint)


def _describe(spec: dict) -> str:
    if spec.get("type") == "array":
        return f"a list of {spec.get('items', {}).get('type', 'value')}s"
    return _expected(spec.get("type", "value"))


def _read(file: str | None) -> str | None:
    try:
        return open(file, encoding="utf-8").read() if file else None
    except (OSError, UnicodeDecodeError):
        return None


def _line(text: str | None, key: str) -> int | None:
    """The line of the configuration file where the key is written, where that is one line:
    the shipped configs build most of extras['iolab'] in iolab.rfm.systems, so often none."""
    name = key.rsplit(".", 1)[-1].split("[")[0]
    if not text or not name or name == ROOT:
        return None
    found = [i for i, line in enumerate(text.splitlines(), 1)
             if re.search(rf"""['"]{re.escape(name)}['"]""", line)]
    return found[0] if len(found) == 1 else None


def reference_table() -> str:
    """docs/systems.md's table of the keys (a test keeps the two equal): one row per key of the schema."""
    rows = ["| `extras['iolab']` key | meaning |", "|---|---|"]
    rows += [f"| `{key}` | {spec['description']} |" for key, spec in schema()["properties"].items()]
    return "\n".join(rows)
