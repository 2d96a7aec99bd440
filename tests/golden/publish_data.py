"""Results runs for the publish and plot tests, built as the ReFrame session writes them, with
metrics parsed from real recorded IOR 4.0.0 outputs (tests/data/ior), like test_golden.py.

Shared by tests/unit/test_plots.py, tests/unit/test_publish.py, tests/golden/test_publish_golden.py
and tests/integration/test_publish_browser.py.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from iolab.benchmarks.ior import parse_any
from iolab.parsers import Metric
from iolab.results.record import Observed, Provenance, Record
from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand, varied_keys
from iolab.results.rundir import RunDir

REPO = Path(__file__).resolve().parents[2]
IOR = REPO / "tests" / "data" / "ior"
# write_bw 1382 to 1578 MiB/s; the last is 7882 MiB/s (POSIX file per process)
FIXTURES = ["ior_hdf5_coll_4r_t512k_b8m.summary.json", "ior_mpiio_indep_4r_t64k_b4m.summary.json",
            "ior_mpiio_coll_4r_t256k_b8m.txt", "ior_hdf5_coll_4r_t512k_b8m.txt",
            "ior_mpiio_coll_4r_t256k_b8m.summary.json", "ior_mpiio_indep_4r_t64k_b4m.txt",
            "ior_posix_fpp_4r_t1m_b16m.summary.json"]
STRIPING_FLAG = "striping not applied: ext4: no striping"
DARSHAN_FINDINGS = [
    {"rule": "no_aggregation", "text": "all 4 ranks wrote 1 shared file: no aggregation",
     "numbers": {"ranks": 4}},
    {"rule": "small_requests", "text": "100% of write requests are under 1MiB",
     "numbers": {"op": "write", "pct": 100.0}},
]

_PARSED: dict[str, list[Metric]] = {}


def metrics_of(name: str) -> list[Metric]:
    if name not in _PARSED:
        _PARSED[name] = list(parse_any(IOR / name).metrics)
    return list(_PARSED[name])


def experiment(exp_id: str, profile: str | None = "local"):
    return load_experiment(REPO / "experiments" / f"{exp_id}.yaml", profile)


def published_links() -> dict:
    """Shipped experiment id -> the published study its `report.published` pairs it with."""
    out = {}
    for path in sorted((REPO / "experiments").glob("*.yaml")):
        link = load_experiment(path).report.study()
        if link is not None:
            out[path.stem] = link
    return out


def _observed(case, rep: int, *, effective_cb_nodes: int | None, darshan: bool) -> tuple[dict, list]:
    observed: dict = {"storage": {"target": "scratch", "path": f"/scratch/{case.case_id}"}}
    flags = []
    striping = {k.removeprefix("lustre."): v for k, v in case.params.items() if k.startswith("lustre.")}
    if striping:
        observed["lustre"] = {"fs_type": "ext4", "requested": striping, "applied": False,
                              "reason": "ext4: no striping"}
        flags.append(STRIPING_FLAG)
    if effective_cb_nodes is not None and "mpiio.cb_nodes" in case.params:
        want = str(case.params["mpiio.cb_nodes"])
        got = str(effective_cb_nodes)
        status = "applied" if want == got else "changed"
        observed["mpiio_hints"] = {
            "flavour": "openmpi-romio", "verify": "romio-print", "requested": {"cb_nodes": want},
            "effective": {"cb_nodes": got, "cb_buffer_size": "16777216", "romio_cb_write": "automatic"},
            "comparison": [{"key": "cb_nodes", "requested": want, "effective": got, "status": status}],
            "echo": {}, "notes": []}
        if status == "changed":
            flags.append(f"hint cb_nodes: requested {want}, effective {got}")
    if darshan:
        if rep == 1:
            observed["darshan"] = {"status": "ok", "log": f"cases/{case.case_id}/rep1/darshan.log",
                                   "findings": DARSHAN_FINDINGS}
        else:
            reason = "truncated log (darshan-parser: unexpected end of file)"
            observed["darshan"] = {"status": "unreadable", "reason": reason,
                                   "log": f"cases/{case.case_id}/rep{rep}/darshan.log"}
            flags.append(f"Darshan log unreadable: {reason}")
    return observed, flags


def records(exp, run_id: str, *, reps: int = 3, effective_cb_nodes: int | None = None,
            darshan_cases: int = 0, system: str = "local:default", fail_last: bool = False) -> list[Record]:
    """One record per case and repetition, metrics from the fixtures in rotation."""
    cases = expand(exp)
    out = []
    for i, case in enumerate(cases):
        varied = varied_keys([c for c in cases if c.part == case.part])
        for rep in range(1, reps + 1):
            observed, flags = _observed(case, rep, effective_cb_nodes=effective_cb_nodes,
                                        darshan=i < darshan_cases)
            name = FIXTURES[(i + rep) % (len(FIXTURES) - 1)]
            if rep == reps and i % 4 == 0:
                name = FIXTURES[-1]
            rec = Record(
                experiment=exp.id, experiment_sha256=exp.sha256, profile=exp.profile, run_id=run_id,
                case_id=case.case_id, part=case.part, benchmark=case.benchmark, repetition=rep,
                params=case.params, varied=varied, observed=Observed.from_json(observed),
                metrics=metrics_of(name), status="ok", recorded="2026-11-21T00:00:00Z",
                provenance=Provenance("reframe", system, {
                    "git": "0123456789abcdef0123456789abcdef01234567", "dirty": False,
                    "reframe": "4.10.4",
                    "binary": {"name": "ior", "path": "/opt/stack/bin/ior", "sha256": "ab" * 32,
                               "version": "4.0.0"},
                    "stack": {"provider": "spack", "supplied_by": "spack", "spack_lock_sha256": "cd" * 32}}))
            # the writer's flags are the observed part's (record.Observed.flags)
            assert sorted(rec.flags) == sorted(flags), (rec.flags, flags)
            out.append(rec)
    if fail_last:
        out[-1] = failed(out[-1])
    return out


def failed(rec: Record, error: str = "ior exited with status 1") -> Record:
    return dataclasses.replace(rec, status="failed", metrics=[], error=error)


def make_run(results: Path, exp, run_id: str, recs: list[Record], **manifest) -> Path:
    base = {"schema": 1, "experiment": exp.id, "experiment_sha256": exp.sha256,
            "experiment_yaml": exp.text, "profile": exp.profile, "origin": "reframe",
            "created": "2026-11-21T00:00:00Z", "iolab": "0.1.0", "reframe": "4.10.4",
            "system": "local:default", "git": "0123456789abcdef0123456789abcdef01234567",
            "dirty": False, "run_id": run_id, "host": {"hostname": "testhost"},
            "system_extras": {}}
    run = RunDir.create(results, exp.id, run_id, {**base, **manifest})
    for rec in recs:
        run.append(rec)
    return run.path
