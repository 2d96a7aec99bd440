"""After a case's job: what happened, read from the files its job left in the stage directory.

The exit status (or the reason the job stopped before the benchmark), the benchmark's own error
lines, its outputs through its parser, its echo against the request, the layout and the hints
in effect, Darshan's view; then the verdict the experiment's `verify` policy gives. Nothing here
needs ReFrame: a stage directory and the case's plan are enough.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import shell
from ..errors import IolabError
from ..layers.base import JobView
from ..layers.registry import registry
from ..parsers import echo
from ..results.record import Observed
from . import failure, jobscript


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


def observed(stage: Path, case, starts: dict, env: dict, own_files: list[str]) -> dict:
    """What the job saw, layer by layer (each reads what the ones before it saw); a replay said
    as such."""
    stdout, stderr = read(stage / "rfm_job.out"), read(stage / "rfm_job.err")
    job = JobView(stage, stdout, stderr, env, own_files, read(stage / jobscript.CASEDIR_FILE))
    out: dict = {}
    for layer in registry():
        out.update(layer.observe(case, starts.get(layer.name), job, out))
        job = replace(job, fs_type=job.fs_type or layer.file_system(out))
    replay = echo.replayed(stderr, stdout)
    if replay:
        out["replayed"] = replay       # a test stand-in's replay: never a measurement
    return out


def observed_files(stage: Path, case) -> dict:
    """What the layers can tell from the stage directory alone (a job that gave no outcome)."""
    out: dict = {}
    for layer in registry():
        out.update(layer.observe_files(case, stage))
    return out


def failing(observed: dict, verify) -> str | None:
    """A difference that the experiment's `verify` says must fail the case."""
    for layer in registry():
        problem = layer.failing(observed, verify)
        if problem:
            return problem
    return None


def outcome(stage: Path, case, bench, plan, verify) -> Outcome:
    """The case's result: ok with its metrics, or failed with the reason in the benchmark's own
    words where it gave any."""
    spec = plan.spec
    seen = observed(stage, case, plan.starts, plan.env_values, plan.own_files)
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
