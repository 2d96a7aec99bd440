"""Whether a system can run an experiment, asked before ReFrame starts: `iolab reproduce FILE
--system SYSTEM` must not store and start another site's study on a system that cannot run it.

The questions are the session's, answered by the same code: each case planned as its job would
be (plan.plan: a benchmark binary not found, an MPI flavour that cannot apply a hint, a storage
root the system lacks, a directive the scheduler would drop) and each layer's preflight
(layers.registry.preflight: what the live file system refuses), on the iolab partitions of the
configuration file, read as plain data (as `iolab submit` reads it), in the environment the
ReFrame process will have.
"""

from __future__ import annotations

import contextlib
import os
import re
import runpy
import socket
from collections.abc import Mapping
from pathlib import Path

from ..errors import IolabError
from ..experiment.load import where_set
from ..experiment.matrix import expand, producers
from ..experiment.site import load as load_site
from ..layers import registry as layers
from . import plan

FEATURE = "iolab"       # the partitions iolab's tests run on (IolabTest.valid_systems)


@contextlib.contextmanager
def _environment(environ: Mapping[str, str]):
    """os.environ as the ReFrame process will have it, for the block: the configuration file
    and the planner read it (the stack's prefix, the scratch root, PATH for the binaries)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def partitions(config: Path) -> list[tuple[plan.Partition, dict]]:
    """The iolab partitions of the configuration's system for this host (ReFrame's choice: the
    first whose hostnames match), each with the environment its jobs get."""
    try:
        site = runpy.run_path(str(config))["site_configuration"]
    except Exception as exc:  # noqa: BLE001 - a broken configuration, said in one line
        raise IolabError(f"{config}: cannot be loaded: {type(exc).__name__}: {exc}") from None
    host = socket.gethostname()
    system = next((s for s in site.get("systems", [])
                   if any(re.match(h, host) for h in s.get("hostnames", []))), None)
    if system is None:
        raise IolabError(f"{config}: none of its systems is for this host ({host})")
    out = []
    for part in system.get("partitions", []):
        if FEATURE not in part.get("features", []):
            continue
        facts = load_site((part.get("extras") or {}).get("iolab"), file=str(config))
        env = dict(os.environ)
        for name, value in part.get("env_vars", []):
            env[name] = os.path.expandvars(str(value))
        resources = {r["name"]: r.get("options", []) for r in part.get("resources", [])}
        out.append((plan.Partition(f"{system['name']}:{part['name']}", part["scheduler"],
                                   part["launcher"], facts, resources), env))
    if not out:
        raise IolabError(f"{config}: no partition has the feature {FEATURE!r}: iolab runs nothing there")
    return out


def refusals(exp, config: Path, environ: Mapping[str, str], stage: Path) -> list[str]:
    """Why the system of `config` cannot run `exp`, one reason per line with the cases it
    stops; [] when every case can run. `stage`: a scratch directory for the plans."""
    with _environment(environ):
        parts = partitions(config)
        cases = expand(exp)
        writer = producers(cases)
        found: dict[str, list[str]] = {}
        for partition, _env in parts:
            for case in cases:
                job = plan.plan(case, exp, repetition=1, run_id="preflight", stage=stage,
                                partition=partition, keep_data=False, dry_run=False,
                                producer_dir=str(stage / writer[case.case_id])
                                if case.case_id in writer else None,
                                consumed=case.case_id in writer.values())
                for reason in [*job.unrunnable, *([job.failure] if job.failure else [])]:
                    found.setdefault(f"{partition.name}: {reason}", []).append(case.case_id)
        live = layers.preflight(((exp, case, partition.site, env) for partition, env in parts
                                 for case in cases), lambda _line: None, where_set)
    lines = [f"{reason} ({len(ids)} of {len(cases)} cases)" for reason, ids in found.items()]
    return lines + [str(problem) for problem in live]
