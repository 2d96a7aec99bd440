"""Which runs make one result set on disk: a run and its continuations (`iolab resume`, a
search's rounds) are linked by `parent` in their manifests and live side by side in
results/<id>/.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from . import manifests
from ..errors import IolabError
from .runfiles import MANIFEST, check_plain_name

MAX_CHAIN = 10_000      # runs in one chain (a campaign's resumes, a search's rounds)


@dataclass
class ChainIndex:
    """Every run of one experiment's directory with its `parent`, read once: a listing of a long
    chain asks it for each run's chain instead of reading every manifest again per run."""

    parents: dict[str, str | None]
    children: dict[str, list[Path]]
    roots: dict[str, str] = field(default_factory=dict)        # run -> its chain's first run
    chains: dict[str, list[Path]] = field(default_factory=dict)    # first run -> its chain

    @classmethod
    def of(cls, base: Path) -> ChainIndex:
        parents: dict[str, str | None] = {}
        children: dict[str, list[Path]] = {}
        for p in sorted(base.iterdir()):
            if p.is_dir() and os.path.lexists(p / MANIFEST):
                parent = parents[p.name] = _parent_of(p)
                if parent and parent != p.name:
                    children.setdefault(parent, []).append(p)
        return cls(parents, children)


def _parent_of(p: Path) -> str | None:
    try:
        parent = manifests.read_typed(p)[1].get("parent")
    except IolabError:
        return None
    return parent if isinstance(parent, str) else None


def chain_paths(path: Path, index: ChainIndex | None = None) -> list[Path]:
    """A run's chain: its first run (following `parent` in the manifests) and every run that
    continues it, oldest first. Runs live side by side in results/<id>/. A chain that loops (a
    run that is its own ancestor: an edited `parent`) or holds more than MAX_CHAIN runs is an
    error, never a walk without end. `index`: the directory's runs read once (ChainIndex.of),
    for a caller that asks for many runs' chains."""
    base = path.parent
    index = index or ChainIndex.of(base)
    if path.name in index.roots:          # a chain this index walked already, for another run
        return list(index.chains[index.roots[path.name]])

    def parent_of(p: Path) -> str | None:
        return index.parents[p.name] if p.name in index.parents else _parent_of(p)

    root, seen = path, [path.name]
    while (parent := parent_of(root)) and (base / parent).is_dir():
        # a run beside it, never "../other-experiment/RUN"
        check_plain_name(parent, f"run {root.name}: its manifest's parent")
        if parent in seen:
            loop = seen[seen.index(parent):] + [parent]
            raise IolabError(f"run {path.name}: its chain of parents loops ({' -> '.join(loop)}): "
                             "a run cannot continue itself (was a manifest's parent edited?)",
                             file=str(root / MANIFEST))
        if len(seen) >= MAX_CHAIN:
            raise _too_long(path)
        root = base / parent
        seen.append(parent)
    children = index.children
    out, todo, visited = [], [root], set()
    while todo:      # a tree below a root without a parent: visited only guards the walk
        p = todo.pop(0)
        if p.name in visited:
            continue
        visited.add(p.name)
        out.append(p)
        if len(out) > MAX_CHAIN:
            raise _too_long(path)
        todo += children.get(p.name, [])
    if path in out:     # kept for the chain's other runs (a run below no root is not)
        index.chains[root.name] = out
        index.roots.update((p.name, root.name) for p in out)
    return out


def _too_long(path: Path) -> IolabError:
    return IolabError(f"run {path.name}: its chain holds more than {MAX_CHAIN} runs "
                      "(chain.MAX_CHAIN); iolab reads no longer chain")
