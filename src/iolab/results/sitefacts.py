"""What a run recorded of the system it ran on, as facts to set beside another run's (a site's
against another's: analysis/sites.py lists the ones that differ).

- From the manifest: the system, its settings as the run recorded them (`system_extras`, each
  key as a system configuration writes it in extras['iolab']), the MPI runtime they imply, the
  code that ran it (iolab and its commit, ReFrame), the experiment's profile, and the host that
  ran ReFrame.
- From the spack.lock kept with the run (else the copy in its manifest): every package's
  version, and the MPI the stack's specs link.
- From the records: the stack's provider and lock, each benchmark's version as it printed it,
  the nodes the jobs ran on, and what each layer's witnesses saw beyond the request
  (layers.base.SystemFact: the file system and the layout it chose, the MPI-IO hints in
  effect). A fact that took several values in one run reads "a / b".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .. import software
from ..errors import IolabError
from ..layers import registry as layers
from ..units import format_bytes_human
from . import cache
from .files import read_regular
from .run import Run, kept_at

LOCK = "spack.lock"
MAX_LOCK_BYTES = 64 << 20       # a spack.lock of a few hundred specs is a few MiB
SEVERAL = " / "


@dataclass(frozen=True)
class Fact:
    group: str          # its kind: said once where the other run recorded nothing of it
    key: str            # as a difference reads: "<key>: A vs B"
    value: str


def of(run: Run) -> list[Fact]:
    """Every fact the run recorded of its system, in a stable order."""
    return _manifest_facts(run) + _lock_facts(run) + [Fact(*f) for f in _kept_record_facts(run)]


def by_key(facts: list[Fact]) -> dict[str, Fact]:
    return {f.key: f for f in facts}


# ------------------------------------------------------------------------------ the manifest

def _manifest_facts(run: Run) -> list[Fact]:
    from ..experiment import site as system

    m = run.manifest        # another site's: any JSON, so every value is made text
    out = [Fact("system", "system", _text(m.system or m.label))] if (m.system or m.label) else []
    site = system.recorded(m.system_extras)
    # as recorded (its `raw`), never a default in place of what a run did not record
    out += [Fact("system settings", key, value) for key, value in _flat(site.raw)]
    if site.raw.get("mpi_flavour") == site.mpi_flavour:     # one iolab knows
        runtime = layers.mpi_runtime(site)
        if runtime:
            out.append(Fact("MPI", "MPI runtime", runtime))
    if m.iolab:
        out.append(Fact("code", "iolab", _text(m.iolab)
                        + (f" (commit {_text(m.git)[:12]})" if m.git else "")))
    if m.get("reframe"):
        out.append(Fact("code", "ReFrame", _text(m.get("reframe"))))
    out.append(Fact("profile", "experiment profile", _text(m.profile or "(base)")))
    for key, name in (("hostname", "host"), ("platform", "host platform"), ("cpus", "host CPUs"),
                      ("mem_total_kib", "host memory")):
        value = m.host.get(key)
        if value in (None, ""):
            continue
        if key == "mem_total_kib" and type(value) is int:
            value = format_bytes_human(value * 1024)
        out.append(Fact("host that ran ReFrame", name, _text(value)))
    return out


def _flat(value, prefix: str = "") -> list[tuple[str, str]]:
    """A dict's leaves as (dotted key, text), lists as comma-separated text."""
    if isinstance(value, dict):
        return [kv for k in sorted(value, key=str)
                for kv in _flat(value[k], f"{prefix}.{k}" if prefix else str(k))]
    if isinstance(value, (list, tuple)):
        return [(prefix, ", ".join(map(_text, value)))] if prefix else []
    return [(prefix, _text(value))] if prefix else []


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


# ------------------------------------------------------------------------------- the stack

def lock_of(run: Run) -> dict | None:
    """The spack.lock the run kept beside its manifest (bundles carry it), else the one its
    manifest holds; None without either or for one that is unreadable."""
    path = Path(run.path) / LOCK
    try:
        return json.loads(read_regular(path, MAX_LOCK_BYTES, within=Path(run.path)))
    except (IolabError, ValueError):
        pass
    kept = run.manifest.get("spack_lock")
    return kept if isinstance(kept, dict) else None


def _lock_facts(run: Run) -> list[Fact]:
    lock = lock_of(run)
    packages = software.lock_packages(lock)
    if not packages:
        return []

    def shown(name: str) -> str:
        spec = packages[name]
        return _text(spec["version"]) + (" (external)" if spec["external"] else "")
    out = [Fact("MPI", "MPI library (spack.lock)", ", ".join(f"{n} {shown(n)}" for n in
                                                             software.lock_providers(lock, "mpi")
                                                             if n in packages))]
    out = [f for f in out if f.value]
    return out + [Fact("Spack packages (spack.lock)", f"package {name}", shown(name))
                  for name in sorted(packages)]


# ----------------------------------------------------------------------------- the records

def _kept_record_facts(run: Run) -> list[tuple[str, str, str]]:
    """_record_facts, kept beside the run's cached digest (a campaign's records are decoded
    once)."""
    return cache.of_run(kept_at(run), "system-facts", [], lambda: _record_facts(run), list)


def _record_facts(run: Run) -> list[tuple[str, str, str]]:
    seen: dict[tuple[str, str], set[str]] = {}

    def add(group: str, key: str, value) -> None:
        if value not in (None, ""):
            seen.setdefault((group, key), set()).add(str(value))
    nodes: set[str] = set()
    for rec in run.records:
        prov = rec.provenance
        stack = prov.stack
        if stack.get("provider"):
            supplied = stack.get("supplied_by")
            add("stack", "stack provider", stack["provider"] + (
                f" (binaries from {supplied})" if supplied and supplied != stack["provider"] else ""))
        add("stack", "spack.lock sha256", (stack.get("spack_lock_sha256") or "")[:12])
        if rec.benchmark and prov.binary_version:
            add("benchmark versions", f"{rec.benchmark} version", prov.binary_version)
        for package, version in software.runtime_versions(rec.observed, stack, hashes=False):
            add("benchmark versions", f"{package} version", version)
        nodes.update(prov.nodelist)
        if rec.status != "skipped":
            add("nodes", "nodes per job", rec.nodes)
        for fact in layers.system_facts(rec.observed):
            add(fact.group, fact.key, fact.value)
    if nodes:
        add("nodes", "nodes the jobs ran on", len(nodes))
    return [(group, key, SEVERAL.join(sorted(values, key=_natural)))
            for (group, key), values in seen.items()]


def _natural(text: str):
    return (0, int(text), "") if text.isdigit() else (1, 0, text)
