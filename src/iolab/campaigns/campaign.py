"""Campaigns: a run continued by more runs (`iolab resume`) until every planned job is ok.

A continuation runs only the jobs of a chain (run.Run.load_chain) that have no ok record, as a
new run whose manifest names its `parent`. It is refused when what the jobs would run differs
from what the chain ran (the experiment's YAML, the Spack lock, a benchmark binary), unless the
user allows it; then the differences are recorded in the continuation's manifest.

The ReFrame side reads the continuation (rfm/continuation.py) from the file IOLAB_RESUME names.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import IolabError
from ..results import asrun
from ..results.combine import restricted
from ..results.run import Run, chain_of
from ..rfm.continuation import RESUME_ENV, Continuation


def order_of(chain: Run | None) -> dict | None:
    """The run order of a chain's first run, as its manifest records it (None: no chain, or a
    run made before runs recorded their order)."""
    if chain is None:
        return None
    first = chain_of(chain)[0]
    order = first.manifest.get("order")
    return order if isinstance(order, dict) else None


def run_reframe(root: Path, cont: Continuation, config: Path, system: str | None,
                reframe_args=(), dry_run: bool = False, cwd: Path | None = None,
                env_changes: dict | None = None, log: Path | None = None) -> tuple[int, Path | None]:
    """ReFrame on only the continuation's jobs, in `cwd` (default: the project) with
    `env_changes` (None removes a variable), its output to the terminal or into `log`; (exit
    status, the new run's directory or None)."""
    import subprocess
    import sys
    import tempfile

    from ..results.lookup import list_runs
    from ..results.lock import holding
    from ..results.runfiles import results_root
    from ..experiment.load import class_name

    res = results_root(root)
    writing_to(res, cont, take_over=not dry_run)
    before = {p.name for p in list_runs(res, cont.experiment)}
    with tempfile.TemporaryDirectory(prefix=f"iolab-{cont.kind}-") as tmp:
        env = reframe_env(cont, cont.write(Path(tmp) / "continuation.json"), log, env_changes)
        sibling = Path(sys.executable).parent / "reframe"
        cmd = [str(sibling) if sibling.is_file() else "reframe", "-C", str(Path(config).resolve()),
               "-c", "reframe/", "-R", "-r", "-n", f"^{class_name(cont.experiment)}\\b"]
        if system:
            cmd += ["--system", system]
        cmd += list(reframe_args)
        if dry_run:
            print("would run: " + " ".join(cmd))
            return 0, None
        continued = (holding(res / cont.experiment / cont.parent, cont.kind)
                     if cont.parent and cont.kind != "reproduce" else contextlib.nullcontext())
        with continued, (open(log, "w") if log else contextlib.nullcontext()) as out:
            # one continuation of a chain at a time
            status = subprocess.run(cmd, cwd=cwd or root, env=env, stdout=out,
                                    stderr=subprocess.STDOUT if out else None).returncode
    new = [p for p in list_runs(res, cont.experiment) if p.name not in before]
    return status, (new[-1] if new else None)


def reframe_env(cont: Continuation, cont_file: Path, log: Path | None = None,
                env_changes: dict | None = None) -> dict:
    """The environment ReFrame runs a continuation in: this one, the continuation file, its
    profile, and `env_changes` (None removes a variable)."""
    import sys

    env = dict(os.environ, **{RESUME_ENV: str(cont_file)})
    if cont.profile:
        env["IOLAB_PROFILE"] = cont.profile
    if "RFM_COLORIZE" not in env and (log or not sys.stdout.isatty()):
        env["RFM_COLORIZE"] = "n"     # colour codes only for a terminal (as scripts/run)
    for name, value in (env_changes or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def writing_to(results: Path, cont: Continuation, take_over: bool) -> None:
    """One writer per campaign: a continuation (or a reproduction) of runs that a live process
    still writes is refused by name; a dead writer's lock is taken over (results/lock.check_not_running)."""
    import sys

    from ..results.chain import chain_paths
    from ..results.lock import check_not_running

    if not cont.parent:         # a search's first round: no run yet
        return
    base = Path(results) / cont.experiment
    paths = [base / cont.parent] if cont.kind == "reproduce" else chain_paths(base / cont.root)
    check_not_running(paths, take_over=take_over,
                      say=lambda text: print(f"iolab: note: {text}", file=sys.stderr))


def refuse_if_running(chain: Run) -> None:
    """Before proposing anything from a chain: refused while a live process writes one of its
    runs (run_reframe takes over a dead one's lock)."""
    from ..results.lock import check_not_running

    check_not_running([r.path for r in chain_of(chain)], take_over=False)


def jobs_to_resume(chain: Run, failed_only: bool = False, missing_only: bool = False) -> list[tuple]:
    """Planned jobs of the chain without an ok record: missing ones (never recorded) and those
    whose last record failed or was aborted (a skipped job is one the system could not run)."""
    refuse_if_running(chain)
    if chain.reading.planned is None:
        raise IolabError(f"run {chain.run_id} has no plan in its manifest (an imported run, or one "
                         "written before runs listed their jobs): there is nothing to resume from")
    root = chain_of(chain)[0]
    planned = [(j.get("part") or "main", str(j.get("case_id")), j.get("repetition"))
               for j in root.manifest.planned if isinstance(j, dict)]
    last: dict[tuple, str] = {}
    for rec in chain.records:
        if last.get(rec.job) != "ok":
            last[rec.job] = rec.status
    out = []
    for job in dict.fromkeys(planned):
        status = last.get(job)
        if status == "ok":
            continue
        if status is None and failed_only:
            continue
        if status is not None and missing_only:
            continue
        out.append(job)
    return out


def with_producers(chain: Run, jobs: list[tuple]) -> tuple[list[tuple], list[str]]:
    """A read needs the data its write case made, which is gone after the run: the write case
    of the same repetition runs again with it."""
    from ..experiment.matrix import expand, producers

    exp = asrun.of(chain).experiment
    if exp is None:
        return jobs, []
    cases = {c.case_id: c for c in expand(exp)}
    producer = producers(list(cases.values()))
    out, why = list(jobs), []
    for _part, case_id, rep in jobs:
        writer = producer.get(case_id)
        if writer and (cases[writer].part, writer, rep) not in out:
            out.append((cases[writer].part, writer, rep))
            why.append(f"write case {writer} rep {rep} runs again: read case {case_id} needs its data")
    return out, why


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def changes(chain: Run, project_root: Path) -> list[str]:
    """What a continuation would run differently from the chain, in words."""
    yaml_path = project_root / "experiments" / f"{chain.experiment_id}.yaml"
    try:
        text = yaml_path.read_text()
    except OSError as exc:
        return [f"experiments/{yaml_path.name} cannot be read: {exc.strerror}"]
    first = chain_of(chain)[0]
    man = first.manifest
    out = []
    now = hashlib.sha256(text.encode()).hexdigest()
    if man.experiment_sha256 and now != man.experiment_sha256:
        diff = [line for line in difflib.unified_diff(
            (man.experiment_yaml or "").splitlines(), text.splitlines(), "as run", "now", lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]
        shown = "; ".join(diff[:6]) + (f"; … {len(diff) - 6} more" if len(diff) > 6 else "")
        out.append(f"experiments/{yaml_path.name} changed since run {first.run_id} "
                   f"(sha256 {man.experiment_sha256[:12]} -> {now[:12]}): {shown}")
    return out + stack_changes(chain, project_root)


def stack_changes(chain: Run, project_root: Path) -> list[str]:
    """What the stack here would run differently from the chain: spack.lock, a benchmark binary."""
    out = []
    lock_then = chain_of(chain)[0].manifest.get("spack_lock_sha256")
    lock_now = _sha256(project_root / "spack.lock")
    if lock_then and lock_now and lock_then != lock_now:
        out.append(f"spack.lock changed (sha256 {lock_then[:12]} -> {lock_now[:12]})")
    seen = set()
    for rec in chain.records:
        binary = rec.provenance.binary
        name, sha = binary.get("name"), binary.get("sha256")
        if not name or not sha or name in seen:
            continue
        seen.add(name)
        found = _which(name)
        if found is None:
            continue            # the job says so when it runs
        sha_now = _sha256(found)
        if sha_now and sha_now != sha:
            out.append(f"{name}: {found} has sha256 {sha_now[:12]}, the chain ran {sha[:12]} "
                       f"({binary.get('path')})")
    return out


def _which(name: str) -> Path | None:
    prefix = os.environ.get("IOLAB_STACK_PREFIX")
    if prefix and (Path(prefix) / "bin" / name).is_file():
        return Path(prefix) / "bin" / name
    found = shutil.which(name)
    return Path(found) if found else None


def config_for(chain: Run, project_root: Path) -> tuple[Path, str | None]:
    """The ReFrame configuration and --system the chain ran with (the manifest's system)."""
    system = chain.manifest.system or ""
    recorded = chain.manifest.get("reframe_config")
    if isinstance(recorded, str) and (project_root / recorded).is_file():
        return project_root / recorded, system or None
    name = system.split(":")[0]
    for path in sorted((project_root / "reframe" / "config").glob("*.py")):
        text = path.read_text()
        if f"'{name}'" in text or f'"{name}"' in text:
            return path, system or None
    raise IolabError(f"no ReFrame configuration under reframe/config defines system {name!r}, "
                     f"which run {chain.run_id} ran on", hint="give it with --config PATH")


def reproduction_project(run: Run, checkout: Path, into: Path) -> Path:
    """A project of its own for re-running a run's case: the experiment YAML exactly as run, with
    the checkout's ReFrame loader and configurations."""
    text = run.manifest.experiment_yaml
    if not text:
        raise IolabError(f"run {run.run_id} has no copy of its experiment YAML: it cannot be reproduced")
    return project_for(run.experiment_id, text, checkout, into, lock=False)


def project_for(experiment_id: str, text: str, checkout: Path, into: Path, lock: bool = True) -> Path:
    """A project holding one experiment YAML (`text`, as a run recorded it) and the checkout's
    ReFrame loader and configurations, with `lock` its spack.lock too (a run's manifest records
    the project's, as for `scripts/run`): a run made in it never reads or writes the checkout's
    experiments/."""
    (into / "experiments").mkdir(parents=True)
    (into / "experiments" / f"{experiment_id}.yaml").write_text(text, encoding="utf-8")
    (into / "reframe").mkdir()
    shutil.copy(checkout / "reframe" / "experiments.py", into / "reframe" / "experiments.py")
    shutil.copytree(checkout / "reframe" / "config", into / "reframe" / "config")
    if lock and (checkout / "spack.lock").is_file():
        shutil.copy(checkout / "spack.lock", into / "spack.lock")
    return into


def reproduce_differences(run: Run, checkout: Path) -> list[str]:
    """What a re-run here cannot keep as it was: the code, the host, a binary."""
    from ..results.provenance import git_state, host_info

    out = []
    then, now = run.manifest.git, git_state(checkout).get("git")
    if then and now and then != now:
        out.append(f"another iolab commit: the run used {then[:12]}, this checkout is {now[:12]}")
    host_then, host_now = run.manifest.host.get("hostname"), host_info().get("hostname")
    if host_then and host_then != host_now:
        out.append(f"another host: the run was on {host_then}, this is {host_now}")
    return out + stack_changes(run, checkout)


@dataclass
class Reproduction:
    """One recorded case of a run (some of its repetitions) to re-run in a project of its own
    (`iolab reproduce`), and the records the new result is set against."""

    run: Run
    records: list               # the case's records in the run
    part: str
    case_id: str
    reps: list[int]

    @classmethod
    def of(cls, run: Run, case_id: str, reps: list[int] | None, what: str = "--rep") -> Reproduction:
        """The case `case_id` (or a unique prefix) names, and `reps` of it (None: every repetition
        the run recorded or planned); `what` names the source of `reps` in an error."""
        recs = [r for r in run.records if r.case_id == case_id or r.case_id.startswith(case_id)]
        if not {r.case_id for r in recs}:
            raise IolabError(f"run {run.run_id} has no case {case_id!r}",
                             hint="cases: " + ", ".join(sorted({r.case_id for r in run.records}))[:300])
        if len({r.case_id for r in recs}) > 1:
            raise IolabError(f"case {case_id!r} is ambiguous in run {run.run_id}: give more digits")
        part, case_id = recs[0].part, recs[0].case_id
        # recorded, or planned without a record yet
        has = sorted({r.repetition for r in recs}
                     | {rep for _p, cid, rep in run.reading.missing if cid == case_id and type(rep) is int})
        reps = reps or has
        for rep in reps:
            if rep not in has:
                raise IolabError(f"{what}: repetition {rep} is not one of run {run.run_id}'s for case "
                                 f"{case_id} (it has {', '.join(map(str, has))})")
        return cls(run, recs, part, case_id, reps)

    def continuation(self, differences: list[str]) -> Continuation:
        run = self.run
        return Continuation(run.experiment_id, run.run_id, run.run_id, run.manifest.profile,
                            [[self.part, self.case_id, r] for r in self.reps], differences,
                            kind="reproduce")

    def rerun(self, checkout: Path, results: Path, cont: Continuation, config: Path,
              system: str | None) -> tuple[int, Path | None]:
        """ReFrame on the jobs, in a project made for it (reproduction_project) that writes to
        `results`; (exit status, the new run's directory or None)."""
        import tempfile

        with tempfile.TemporaryDirectory(prefix="iolab-reproduce-") as tmp:
            project = reproduction_project(self.run, checkout, Path(tmp) / "project")
            return run_reframe(checkout, cont, config, system, cwd=project,
                               env_changes={"IOLAB_RESULTS": str(results), "IOLAB_ROOT": None})

    def compared(self, again: Run):
        """The original records of the case against the reproduced run."""
        from ..analysis.compare import Side, compare_runs

        return compare_runs(Side("original", restricted(self.run, self.records)),
                            Side("reproduced", again))
