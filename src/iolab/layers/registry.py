"""The layers of the I/O stack, in the order they act: storage places and stripes the case's
directory, MPI-IO hints are given to the benchmark, Darshan watches the run (and reads back what
the other two applied)."""

from __future__ import annotations

from functools import cache

from .base import Layer


@cache
def registry() -> tuple[Layer, ...]:
    from .darshan.layer import DarshanLayer
    from .mpiio.layer import MpiioLayer
    from .storage.layer import StorageLayer

    return (StorageLayer(), MpiioLayer(), DarshanLayer())


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


def special_value(key: str, value) -> str | None:
    """How a parameter's value reads where it means something other than its number."""
    layer = owner(key)
    return layer.special_value(key, value) if layer else None


def axes(kind: str) -> tuple[str, ...]:
    """The layers' parameters of one kind: "preferred_axes" (a plot groups by them first),
    "effective_axes" (a plot draws their value in effect)."""
    return tuple(k for layer in registry() for k in getattr(layer, kind))

