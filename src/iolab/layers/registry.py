"""The layers of the I/O stack, found, not listed: every package of iolab.layers whose `layer`
module defines LAYER (a base.Layer) is one, and they act in the order of their `order` (storage
places and stripes the case's directory, MPI-IO hints are given to the benchmark, Darshan watches
the run and reads back what the other two applied). Adding a layer adds its package and edits
nothing else; everything outside layers/ asks here, by key or by role, never by a layer's name."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from .base import (DerivedColumn, Evidence, EvidenceSpec, Layer, ParamExample, RuntimeLibrary,
                   SystemFact)


@cache
def registry() -> tuple[Layer, ...]:
    """Every layer package's LAYER, in the order they act (then by name)."""
    from .. import layers

    found = []
    for info in pkgutil.iter_modules(layers.__path__):
        if not info.ispkg:
            continue
        module = importlib.import_module(f"{layers.__name__}.{info.name}.layer")
        layer = getattr(module, "LAYER", None)
        if isinstance(layer, Layer):
            found.append(layer)
    return tuple(sorted(found, key=lambda layer: (layer.order, layer.name)))


def get(name: str) -> Layer:
    for layer in registry():
        if layer.name == name:
            return layer
    raise KeyError(name)


def find(name: str) -> Layer | None:
    try:
        return get(name)
    except KeyError:
        return None


def owner(key: str) -> Layer | None:
    """The layer a parameter belongs to (None: the benchmark's, or the job's)."""
    for layer in registry():
        if layer.owns(key):
            return layer
    return None


def observed_keys() -> tuple[str, ...]:
    return tuple(k for layer in registry() for k in layer.observed_keys)


def prefixes() -> tuple[str, ...]:
    """Every layer's parameter prefixes ("<layer>." or "<file system>.")."""
    return tuple(p for layer in registry() for p in layer.prefixes)


def special_value(key: str, value) -> str | None:
    """How a parameter's value reads where it means something other than its number."""
    layer = owner(key)
    return layer.special_value(key, value) if layer else None


def axes(kind: str) -> tuple[str, ...]:
    """The layers' parameters of one kind: "preferred_axes" (a plot groups by them first),
    "effective_axes" (a plot draws their value in effect)."""
    return tuple(k for layer in registry() for k in getattr(layer, kind))


def mpi_io_keys(params) -> list[str]:
    """The parameters of a case that take effect only where the benchmark opens its files
    through MPI-IO: a benchmark that does not is refused them."""
    return [k for k in params if (layer := owner(k)) and layer.through_mpi_io]


def file_system_of(key: str) -> str | None:
    """The file system whose layout a parameter asks for (None: no file system's)."""
    layer = owner(key)
    return layer.file_system_of(key) if layer else None


def derived_columns() -> dict[str, DerivedColumn]:
    """Columns a report may add (`report: {derived: [...]}`) that a layer computes."""
    return {name: col for layer in registry() for name, col in layer.derived_columns().items()}


def sections(data: dict, *, absent_too: bool) -> dict:
    """Each layer's typed section of an experiment or a system's extras (`data`), by layer name;
    absent_too: a layer whose section is not written gets the value of an empty one."""
    return {layer.name: layer.section_value(data.get(layer.section) or {}) for layer in registry()
            if layer.section and (absent_too or layer.section in data)}


def sections_from_env() -> dict:
    """The layers' sections of a shipped system's extras['iolab'], as the environment sets them."""
    return {layer.section: layer.section_from_env() for layer in registry() if layer.section}


def runtime_libraries() -> tuple[RuntimeLibrary, ...]:
    """The libraries the layers preload, which the stack supplies like benchmarks."""
    return tuple(layer.runtime_library for layer in registry() if layer.runtime_library)


def stack_packages(kind: str) -> tuple[str, ...]:
    """The layers' needs of the built stack, of one kind ("view_files", "no_checksum")."""
    return tuple(name for layer in registry() for name in getattr(layer.stack_packages, kind))


def findings_folds() -> tuple[tuple[str, str], ...]:
    """(the digest's key for the fold, the part of `observed` folded) of each layer whose part
    plays the "findings" role, in the layers' order."""
    return tuple((layer.findings_fold, layer.observed_roles["findings"]) for layer in registry()
                 if layer.findings_fold and "findings" in layer.observed_roles)


def observed_part(observed, role: str):
    """The part of a record's `observed` that the layer playing `role` wrote (None where no layer
    plays it, or the record has none): the rest of iolab reads a layer's part by its role."""
    for layer in registry():
        key = layer.observed_roles.get(role)
        if key is not None:
            return observed.get(key)
    return None


def file_systems() -> tuple:
    """Every file system a layer lays out (base.Layer.file_systems)."""
    return tuple(fs for layer in registry() for fs in layer.file_systems())


def example_param() -> ParamExample | None:
    """The parameter --help examples show: the first layer's that offers one."""
    return next((layer.example_param for layer in registry() if layer.example_param), None)


def example_columns() -> tuple[str, str, str] | None:
    """(option, experiment, columns) of a columns example (`--<name> COLUMNS`): the first
    layer's that offers one."""
    return next(((f"--{layer.name}", *layer.example_columns) for layer in registry()
                 if layer.example_columns), None)


def private_data(case) -> str | None:
    """What keeps the data the case writes from another job, in words (None: nothing does)."""
    return next((why for layer in registry() if (why := layer.private_data(case))), None)


def preflight(items, say, locate) -> list:
    """Each layer's refusals of a session's cases (base.Layer.preflight), in their order."""
    items = list(items)
    return [problem for layer in registry() for problem in layer.preflight(items, say, locate)]


def older_spellings(doc, data: dict) -> tuple[dict, tuple[str, ...]]:
    """The experiment's settings read from older spellings, and their notes (every layer's)."""
    read: dict = {}
    notes: tuple[str, ...] = ()
    for layer in registry():
        settings, said = layer.older_spellings(doc, data)
        read.update(settings)
        notes += said
    return read, notes


def site_properties() -> dict[str, dict]:
    """What the layers add to the extras['iolab'] schema, by key."""
    out: dict[str, dict] = {}
    for layer in registry():
        for key, keywords in layer.site_properties().items():
            out.setdefault(key, {}).update(keywords)
    return out


def site_from_env() -> dict:
    """The shipped systems' extras['iolab'] settings the layers read from the environment."""
    return {k: v for layer in registry() for k, v in layer.site_from_env().items()}


def mpi_runtime(site) -> str | None:
    """Which MPI runtime launches a site's ranks: the first layer's that says."""
    return next((rt for layer in registry() if (rt := layer.mpi_runtime(site))), None)


def evidence_specs() -> tuple[EvidenceSpec, ...]:
    """Every layer's declared evidence, in the layers' order."""
    return tuple(spec for layer in registry() for spec in layer.evidence_specs())


def evidence_hint(source: str) -> str | None:
    """How to get a source's evidence recorded: the first layer's that says."""
    return next((h for layer in registry() if (h := layer.evidence_hint(source))), None)


def rules() -> tuple:
    """Every layer's rules of thumb (layers/rule.Rule), in the layers' order, each with the name
    of the layer that declares it."""
    from dataclasses import replace

    return tuple(replace(rule, owner=layer.name) for layer in registry() for rule in layer.rules())


def evidence(observed, params: dict) -> list[Evidence]:
    """What every layer measured of an ok record that may explain its result (base.Evidence)."""
    return [e for layer in registry() for e in layer.evidence(observed, params)]


def system_facts(observed) -> list[SystemFact]:
    """What every layer's part of a record says of the system beyond its case's request."""
    return [f for layer in registry() for f in layer.system_facts(observed)]
