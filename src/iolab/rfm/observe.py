"""After a case's job: what happened, read from the files its job left in the stage directory.

The exit status (or the reason the job stopped before the benchmark), the benchmark's own error
lines, its outputs through its parser, its echo against the request, the layout and the hints
in effect, Darshan's view; then the verdict the experiment's `verify` policy gives. Nothing here
needs ReFrame: a stage directory and the case's plan are enough.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..parsers import echo
from . import failure
from ..layers.storage import lustre
from ..layers import mpiio
from .. import shell
from ..errors import IolabError
from ..results.record import Observed
from ..layers.darshan import preload as darshan
from . import jobscript


@dataclass
class Outcome:
    status: str                       # ok | failed
    error: str | None
    parsed: object | None
    observed: dict
    flags: list[str] = field(default_factory=list)


def read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def observed(stage: Path, case, hints: dict | None, darshan_info: dict | None,
             own_files: list[str]) -> dict:
    """What the job saw: storage, layout, hints in effect, Darshan; a replay said as such."""
    out = {"storage": {"target": case.get("storage", "scratch"),
                       "path": read(stage / jobscript.CASEDIR_FILE)}}
    out["lustre"] = lustre.observed(stage, case.striping)
    stdout, stderr = read(stage / "rfm_job.out"), read(stage / "rfm_job.err")
    replay = echo.replayed(stderr, stdout)
    if replay:
        out["replayed"] = replay       # a test stand-in's replay: never a measurement
    if hints:
        text = (stdout or "") + "\n" + (stderr or "")
        log_hints = ((darshan_info or {}).get("env") or {}).get("DARSHAN_LOGHINTS")
        effective = mpiio.effective_hints(text, hints["flavour"], log_hints)
        out["mpiio_hints"] = {
            "flavour": hints["flavour"], "verify": hints["verify"], "requested": hints["requested"],
            "effective": effective,
            "comparison": mpiio.compare_hints(hints["requested"], effective, mpiio.not_applicable(
                hints["requested"], out["lustre"].get("fs_type"))),
            "echo": mpiio.parse_ior_showhints(text), "notes": hints["notes"]}
    if darshan_info is not None:
        out["darshan"] = darshan.observe(darshan_info, stage, own_files, case, out)
    return out


def failing(observed: dict, verify) -> str | None:
    """A difference that the experiment's `verify` says must fail the case."""
    lay = observed.get("lustre", {})
    if verify.layout == "fail" and lay.get("mismatches"):
        return f"Lustre layout not as requested: {lay['reason']}"
    hints = observed.get("mpiio_hints") or {}
    changed = [c for c in hints.get("comparison", []) if c["status"] in ("changed", "missing")]
    if verify.hints == "fail" and changed:
        return "MPI-IO hints not applied: " + "; ".join(
            f"{c['key']} requested {c['requested']}, effective {c['effective']}" for c in changed)
    return None


def outcome(stage: Path, case, bench, spec, verify, hints: dict | None, darshan_info: dict | None,
            own_files: list[str]) -> Outcome:
    """The case's result: ok with its metrics, or failed with the reason in the benchmark's own
    words where it gave any."""
    seen = observed(stage, case, hints, darshan_info, own_files)
    allowed = bench.guarded_in(case.params)
    if allowed:     # options the experiment's allow: let through (they run programs, name paths)
        seen["allowed"] = allowed
    parsed = None
    try:
        code = read(stage / jobscript.EXIT_FILE)
        if code is None:
            raise IolabError(read(stage / shell.JOB_ERROR_FILE) or
                             "the job did not reach the end of its script (no exit code)"
                             + _last_line(stage / "rfm_job.err"))
        if code != "0":
            out, err = read(stage / "rfm_job.out") or "", read(stage / "rfm_job.err") or ""
            raise IolabError(failure.explain(spec.executable, code, bench.error_lines(out, err, spec),
                                             out, err))
        parsed = bench.parse_outputs(stage, spec)
        seen["benchmark"] = parsed.echo
        problem = bench.check_echo(parsed, case, spec) or failing(seen, verify)
        if problem:
            raise IolabError(problem)
    except IolabError as exc:
        return Outcome("failed", str(exc), parsed, seen, _flags(seen))
    return Outcome("ok", None, parsed, seen, _flags(seen))


def _flags(seen: dict) -> list[str]:
    return Observed.from_json(seen).flags() + [f"allowed by the experiment: {name} ({why})"
                                               for name, why in seen.get("allowed", {}).items()]


def _last_line(path: Path) -> str:
    text = read(path)
    return f": {failure.shorten(text.splitlines()[-1])}" if text else ""
