"""`iolab import`: file outputs of runs made outside iolab as a new results run, marked imported."""

from __future__ import annotations

import os
from pathlib import Path

from .benchmarks import get as get_benchmark
from .errors import IolabError
from .load import type_param_text
from .matrix import case_id, defaults
from .record import SCHEMA, Manifest, Observed, Provenance, Record
from .render import project_root
from .results import (MAX_IMPORT_BYTES, RunDir, check_experiment_id, host_info, new_run_id, open_regular,
                      results_root, sha256_file, utcnow)


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


def reconcile(benchmark: str, given: dict, files: list[Path], parsed: list, trust: bool = False) -> dict:
    """The imported case's parameters: what --param gives, the rest from what the benchmark says
    it ran (its echo), else the defaults. A --param the benchmark contradicts is refused unless
    `trust`; files that ran different parameters cannot be one case."""
    from .echo import differences
    from .matrix import Case

    adapter = get_benchmark(benchmark)
    full = {**defaults(benchmark), **given}
    told: dict = {}
    for path, result in zip(files, parsed):
        for ek, pk in adapter.echo_params.items():
            if ek not in result.echo:
                continue
            said = result.echo[ek]
            if pk in told and told[pk][1] != said:
                raise IolabError(f"{told[pk][0].name} and {path.name} ran different {ek} ({told[pk][1]} "
                                 f"and {said}): import them as separate cases")
            told.setdefault(pk, (path, said))
    for pk, (_path, said) in told.items():
        if pk not in given:
            full[pk] = said
    if not trust:
        for path, result in zip(files, parsed):
            case = Case("", benchmark, benchmark, "", full)
            diffs = differences(adapter.requested_echo(case, None), result.echo)
            # only what was asked (--param) or derived from it is checked; unreported is fine here
            diffs = [d for d in diffs if " not reported" not in d]
            if diffs:
                raise IolabError(f"{path.name}: the benchmark says it ran otherwise than --param says: "
                                 + "; ".join(diffs), hint="fix --param, or pass --trust-params to "
                                 "import the values as given")
    return full


def import_files(benchmark: str, files: list[Path], into: str, params: list[str],
                 label: str | None = None, trust_params: bool = False) -> RunDir:
    check_experiment_id(into, "--into")
    adapter = get_benchmark(benchmark)
    given = type_params(benchmark, params)
    for path in files:      # a FIFO or a device would block the parser; a huge file fill memory
        if os.path.lexists(path):       # a missing one: the parser says which output it is
            os.close(open_regular(path, MAX_IMPORT_BYTES))
    # Parse everything first: a bad file fails the import before anything is written.
    parsed = adapter.parse_files(files)
    full = reconcile(benchmark, given, files, parsed, trust_params)
    cid = case_id(benchmark, full)
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
                "binary": {"name": adapter.executable, "path": None, "version": result.version}}),
        ))
    return run
