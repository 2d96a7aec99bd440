"""`iolab import`: file outputs of runs made outside iolab as a new results run, marked imported."""

from __future__ import annotations

import os
from pathlib import Path

from ..benchmarks import get as get_benchmark
from ..units import shown
from ..errors import IolabError
from ..experiment.params import type_param_text
from ..experiment.matrix import case_id, defaults
from .record import SCHEMA, Manifest, Observed, Provenance, Record
from ..project import project_root
from .provenance import host_info, sha256_file, utcnow
from .runfiles import check_experiment_id, new_run_id
from . import recordcache
from .files import MAX_IMPORT_BYTES, readable_file
from .rundir import RunDir
from .runfiles import results_root


def type_params(benchmark: str, pairs: list[str]) -> dict:
    """KEY=VALUE pairs typed as in a YAML; a key the benchmark does not have is refused (with the
    nearest valid one), and so is a key given twice."""
    out = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep:
            raise IolabError(f"--param {pair!r}: expected KEY=VALUE")
        if key in out:
            raise IolabError(f"--param {key} is given twice")
        out[key] = type_param_text(benchmark, key, raw, "--param")
    return out


# What a benchmark's output calls its number of processes (IOR, mdtest, h5bench and BTIO).
_TASKS = ("numTasks", "tasks", "ranks")


def reconcile(benchmark: str, given: dict, files: list[Path], parsed: list, trust: bool = False) -> dict:
    """The imported case's parameters: what --param gives, the rest from what the benchmark says
    it ran (its echo: summary, options, command line). A parameter neither gives is unknown:
    None, never the default. A --param the benchmark contradicts is refused, naming both
    values, unless `trust`; files that ran different parameters cannot be one case."""
    adapter = get_benchmark(benchmark)
    mapping = {**adapter.echo_params, **adapter.imported_echo}
    told: dict = {}
    for path, result in zip(files, parsed):
        for ek, pk in mapping.items():
            if ek not in result.echo:
                continue
            said = result.echo[ek]
            if pk in told and told[pk][1] != said:
                raise IolabError(f"{told[pk][0].name} and {path.name} ran different {ek} "
                                 f"({shown(told[pk][1])} and {shown(said)}): import them as "
                                 "separate cases")
            told.setdefault(pk, (path, said))
    full = {key: None for key in defaults(benchmark)}
    full.update({pk: said for pk, (_path, said) in told.items()})
    full.update(given)
    full.update(_scale(benchmark, full, parsed))
    if not trust:
        for path, result in zip(files, parsed):
            diffs = contradictions(adapter, full, given, result.echo)
            if diffs:
                raise IolabError(f"{path.name}: the benchmark says it ran otherwise than --param "
                                 "says: " + "; ".join(diffs), hint="fix --param, or pass "
                                 "--trust-params to import the values as given")
    return full


def contradictions(adapter, full: dict, given: dict, echo: dict) -> list[str]:
    """Where the output says otherwise than the parameters: 'fsync true, requested false'. Only
    what the output states counts; the check's case fills unknown parameters with defaults only
    to derive what the output must say of the known ones (IOR's numTasks, fio's io_bytes)."""
    from ..experiment.matrix import Case

    known = {k: v for k, v in full.items() if v is not None}
    case = Case("", adapter.name, adapter.name, "", {**defaults(adapter.name), **known})
    want = {ek: v for ek, v in adapter.requested_echo(case, None).items()
            if adapter.echo_params.get(ek, "") in known or ek not in adapter.echo_params}
    want.update({ek: known[pk] for ek, pk in adapter.imported_echo.items() if pk in known})
    mapping = {**adapter.echo_params, **adapter.imported_echo}
    out = []
    for ek, value in want.items():
        if ek in echo and echo[ek] != value:
            pk = mapping.get(ek)
            named = f" (--param {pk}={shown(given[pk])})" if pk in given and pk != ek else ""
            out.append(f"{ek} {shown(echo[ek])}, requested {shown(value)}{named}")
    return out


def _scale(benchmark: str, full: dict, parsed: list) -> dict:
    """scale.nodes and scale.tasks_per_node from the output's count of processes and nodes, or
    from one of them given; an output that names neither count is of one process (fio, never
    launched by MPI). Refused when the split over nodes cannot be known."""
    nodes, per_node = full.get("scale.nodes"), full.get("scale.tasks_per_node")
    if nodes is not None and per_node is not None:
        return {}
    totals = {r.echo[k] for r in parsed for k in _TASKS if isinstance(r.echo.get(k), int)}
    if not totals:
        if benchmark == "fio":
            return {"scale.nodes": nodes or 1, "scale.tasks_per_node": per_node or 1}
        raise IolabError("the output does not say how many processes ran: give --param "
                         "scale.nodes=N and --param scale.tasks_per_node=M")
    total = max(totals)
    if nodes is None and per_node is None:
        if total != 1:
            raise IolabError(f"the output says {total} processes but not on how many nodes: "
                             "give --param scale.nodes=N (scale.tasks_per_node follows)")
        return {"scale.nodes": 1, "scale.tasks_per_node": 1}
    known = nodes if nodes is not None else per_node
    if known <= 0 or total % known:
        return {}           # the check below names the contradiction
    other = "scale.tasks_per_node" if nodes is not None else "scale.nodes"
    return {other: total // known}


def import_files(benchmark: str, files: list[Path], into: str, params: list[str],
                 label: str | None = None, trust_params: bool = False) -> RunDir:
    check_experiment_id(into, "--into")
    adapter = get_benchmark(benchmark)
    given = type_params(benchmark, params)
    for path in files:      # a FIFO or a device would block the parser; a huge file fill memory
        if os.path.lexists(path):       # a missing one: the parser says which output it is
            readable_file(path, MAX_IMPORT_BYTES)
    # Parse everything first: a bad file fails the import before anything is written.
    parsed = adapter.parse_files(files)
    full = reconcile(benchmark, given, files, parsed, trust_params)
    unknown = sorted(k for k, v in full.items() if v is None)
    # the case id of what is known: an imported case is the planned case whose known
    # parameters it shares (an unknown one distinguishes nothing)
    cid = case_id(benchmark, {k: v for k, v in full.items() if v is not None})
    run_id = new_run_id(str(files))
    manifest = Manifest(experiment=into, origin="imported", created=utcnow(), label=label,
                        host=host_info(), schema=SCHEMA,
                        extra={"run_id": run_id,
                               "imported_files": {str(f): sha256_file(f) for f in files}})
    run = RunDir.create(results_root(project_root()), into, run_id, manifest.to_json())
    for rep, (path, result) in enumerate(zip(files, parsed), 1):
        raw = run.store_raw(cid, rep, [path])
        run.append(Record(
            experiment=into, case_id=cid, benchmark=benchmark, status="ok", part=benchmark,
            repetition=rep, params=dict(sorted(full.items())), varied=sorted(given),
            metrics=list(result.metrics), observed=Observed(benchmark=result.echo), raw=raw,
            recorded=utcnow(), run_id=run_id,
            provenance=Provenance("imported", extra={
                "file": str(path), "label": label, "params_trusted": trust_params,
                "params_unknown": unknown,
                "binary": {"name": adapter.executable, "path": None, "version": result.version}}),
        ))
    # its end, as a run's: the chain's count and last digest, so a line removed later is found
    run.finish({"complete": True, "reason": None, "ended": utcnow(), "imported": len(files),
                "counts": {"ok": len(files)}})
    try:        # the records folded by case, for tables; without it they read records.jsonl
        recordcache.write_run_digest(run.path)
    except (IolabError, OSError, ValueError):
        pass
    return run
