"""Turn experiment YAMLs into ReFrame tests at load time.

Both the stable loader (reframe/experiments.py) and each generated shim call in here; whichever
module ReFrame imports first registers an experiment, so each is registered exactly once, and
its YAML is read once. Only the experiments the run can select are built (select.py).
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from pathlib import Path

import reframe as rfm
from reframe.core import builtins
from reframe.core.logging import getlogger
from reframe.core.meta import make_test

from . import site
from .systems import system_profile
from ..errors import IolabError
from ..experiment.load import load_experiment
from ..experiment.matrix import expand, jobs_per_case, producers, reference_cases, varied_keys
from ..experiment.load import class_name
from .shims import ensure_current, shim_path, sync_shims
from . import continuation, internals, session
from .base import IolabTest
from .broken import BrokenExperiment
from .select import Selection, as_written, from_command_line
from .spack import build_iolab_stack

_REGISTERED: dict[str, str] = {}     # experiment id -> module that registered it
_BROKEN: set[str] = set()           # test names of experiments that could not be loaded
_BROKEN_IDS: set[str] = set()
_LOADED: dict[Path, object] = {}    # resolved YAML path -> Experiment (profile applied)


def selected_profile(exp_profiles: list[str]) -> str | None:
    """IOLAB_PROFILE wins; else the system config's extras['iolab']['profile']; else none.

    An experiment without profiles runs as written whatever is chosen; one that has profiles
    but not the one named in IOLAB_PROFILE is an error (a typo must not run the wrong sizes).
    """
    wanted = os.environ.get("IOLAB_PROFILE")
    if wanted:
        return wanted if exp_profiles else None
    return system_profile([site.of(p).profile for p in _partitions()], exp_profiles)


def _partitions() -> list:
    """The partitions of this session's system (none outside a ReFrame session)."""
    try:
        from reframe.core.runtime import runtime

        return list(runtime().system.partitions)
    except Exception:  # noqa: BLE001 - outside a ReFrame session
        return []


def _check_site() -> None:
    """The site facts of this session's system (extras['iolab']) must be right before any
    experiment is built: a misspelt key fails its experiments' tests, never defaults silently."""
    problem = site.problem(_partitions())
    if problem is not None:
        raise problem


def _system_uses_spack() -> bool:
    """Whether a partition builds spack.yaml during the run (not one that names a built env)."""
    return any(site.of(p).stack.provider == "spack" and not site.of(p).stack.built_env
               for p in _partitions())


def _load(yaml_path: Path):
    """The experiment, with the profile this session selects (a rerun's: its source's, none
    included): each YAML is read once per process (the loader and the experiment's shim both
    ask for it)."""
    key = yaml_path.resolve()
    if key not in _LOADED:
        fixed, profile = continuation.profile(yaml_path.stem)
        _LOADED[key] = load_experiment(yaml_path, profile) if fixed else load_experiment(
            yaml_path, choose_profile=selected_profile)
    return _LOADED[key]


def _register(module_name: str, exp) -> None:
    if exp.id in _REGISTERED:
        return
    cases = expand(exp)
    producer = producers(cases)
    # a continuation may name later repetitions than the experiment's (a search's rounds run
    # search.repetitions of each case): those tests exist too, the others are skipped at load
    cont = continuation.current(exp.id)
    repetitions = max([exp.repetitions] + [int(j[2]) for j in (cont.jobs if cont else [])])
    # a drift reference case's extra jobs are its repetitions after the experiment's
    references = tuple((part, cid, every) for part, (cid, every) in reference_cases(exp, cases).items())
    jobs = jobs_per_case(exp, cases)          # the plan's count too (analysis/planning.py)
    reference_reps = {cid: jobs[cid] for _part, cid, _every in references}
    consumers: dict[str, list[str]] = {}
    for reader, writer in producer.items():
        consumers.setdefault(writer, []).append(reader)
    body = {
        "case": builtins.parameter([c.case_id for c in cases], loggable=True),
        "repetition": builtins.parameter(
            list(range(1, max([repetitions, *reference_reps.values()]) + 1)), type=int, loggable=True),
        "iolab_experiment": builtins.variable(str, value=exp.id, loggable=True),
        "iolab_profile": builtins.variable(str, value=exp.profile or "", loggable=True),
        "_iolab_exp": exp,
        "_iolab_cases": {c.case_id: c for c in cases},
        "_iolab_varied": {part: varied_keys([c for c in cases if c.part == part])
                          for part in dict.fromkeys(c.part for c in cases)},
        "_iolab_producer": producer,
        "_iolab_consumers": consumers,
        "_iolab_repetitions": repetitions,      # the run order's blocks (experiment/order.py)
        "_iolab_references": references,        # (part, case id, every) of each drift reference
        "_iolab_reference_reps": reference_reps,    # its case id -> its last repetition
    }
    # Each varied parameter as a loggable variable (stripe_count, cb_nodes...), so ReFrame's
    # results database can group by it: reframe --performance-compare=.../mean:+stripe_count/...
    param_vars = {}
    for key in dict.fromkeys(k for part in body["_iolab_varied"].values() for k in part):
        name = key.split(".")[-1]
        if name in param_vars or hasattr(IolabTest, name) or name in body:
            name = "iolab_" + key.replace(".", "_")
        types = _variable_types(cases, key)
        param_vars[name] = (key, types[0] is str)
        body[name] = builtins.variable(*types, value=None, loggable=True)
    body["_iolab_param_vars"] = param_vars
    if _system_uses_spack():
        # Built once per partition and programming environment, before any case runs there
        # (ReFrame allows only run-only fixtures at partition scope; hpctestlib builds at this one).
        body["iolab_stack"] = builtins.fixture(build_iolab_stack, scope="environment")
    cls = make_test(class_name(exp.id), (IolabTest,), body, module=module_name)
    rfm.simple_test(cls)
    _REGISTERED[exp.id] = module_name


def _variable_types(cases, key: str) -> tuple:
    """The Python type(s) a parameter keeps as a ReFrame variable: typed as at load (an int stays
    an int, a flag a bool), None where a case does not set it; mixed or list values as text."""
    kinds = {type(c.params[key]) for c in cases if c.params.get(key) is not None}
    kind = kinds.pop() if len(kinds) == 1 else None
    return (kind if kind in (int, float, bool, str) else str, type(None))


def registered() -> list[str]:
    """Experiment ids with tests in this process (and those that could not be loaded)."""
    return sorted(set(_REGISTERED) | _BROKEN_IDS)


def _broken(module_name: str, yaml_path: Path, exc: BaseException) -> None:
    """An experiment that cannot be loaded becomes a test that fails with the reason, named as
    the experiment's test would be: `-n <id>` selects it and the run exits non-zero, while the
    other experiments load and run as usual."""
    message = str(exc) if isinstance(exc, IolabError) else \
        f"{yaml_path.name}: iolab could not build its tests: {type(exc).__name__}: {exc}"
    if not isinstance(exc, IolabError):
        getlogger().verbose("".join(traceback.format_exception(exc)))
    getlogger().warning(f"iolab: experiment {yaml_path.stem} cannot run: {message}")
    name = class_name(yaml_path.stem)
    name = re.sub(r"\W", "_", name)
    if not name.isidentifier():
        name = "x" + name
    if name in {class_name(i) for i in _REGISTERED} or name in _BROKEN:
        return
    _BROKEN.add(name)
    _BROKEN_IDS.add(yaml_path.stem)
    cls = make_test(name, (BrokenExperiment,), {"iolab_error": message},
                    module=module_name)
    rfm.simple_test(cls)


_SELECTION: Selection | None = None


def selection(experiments_dir: Path) -> Selection:
    """The experiments this process builds tests for, from IOLAB_EXPERIMENTS and ReFrame's -n/-x
    (see select.py); decided once per process."""
    global _SELECTION
    if _SELECTION is None:
        known = {p.stem for p in experiments_dir.glob("*.yaml")}
        _SELECTION = from_command_line(sys.argv, os.environ, known)
        _names_as_written(known)
    return _SELECTION


def _names_as_written(known: set[str]) -> None:
    """ReFrame's -n/-x filters (built after the tests load) read an experiment id written with
    hyphens as its tests' class name: `-n cp2k-aggregators` selects what `-n cp2k_aggregators`
    does, instead of nothing."""
    known = set(known)
    internals.rewrite_name_filters(lambda pattern: as_written(pattern, known))


def register_experiment(module_name: str, module_file: str, yaml_relpath: str, sha256: str) -> None:
    """Called by a generated shim. A stale shim is rewritten before its tests are registered."""
    shim = Path(module_file)
    yaml_path = (shim.parent / yaml_relpath).resolve()
    if not yaml_path.is_file():
        getlogger().warning(f"iolab: {shim} is an orphan: {yaml_relpath} is gone; `iolab render` removes it")
        return
    if not selection(yaml_path.parent).wants(yaml_path.stem):
        return
    try:
        _check_site()
        exp = _load(yaml_path)
        if exp.sha256 != sha256 and ensure_current(shim, yaml_path, exp.id, exp.sha256):
            getlogger().info(f"iolab: regenerated {shim.name}: {yaml_path.name} changed")
        _register(module_name, exp)
    except Exception as exc:  # noqa: BLE001 - any failure becomes a failing test, never a silent skip
        _broken(module_name, yaml_path, exc)


def register_all(module_name: str, module_file: str) -> None:
    """Called by reframe/experiments.py: new or stale shims are regenerated, and every experiment
    is registered, so adding an experiment needs only its YAML."""
    session.install(lambda check: isinstance(check, IolabTest), registered)
    root = Path(module_file).resolve().parent.parent
    experiments, generated = root / "experiments", root / "reframe" / "generated"
    paths = sorted(experiments.glob("*.yaml"))
    chosen = selection(experiments)
    for name in chosen.unknown:
        _broken(module_name, experiments / f"{name}.yaml", IolabError(
            f"IOLAB_EXPERIMENTS names {name!r}, which is not an experiment in {experiments}",
            hint=f"experiments: {', '.join(p.stem for p in paths) or 'none'}"))
    for yaml_path in paths:
        if not chosen.wants(yaml_path.stem):
            continue
        try:
            _check_site()
            exp = _load(yaml_path)
            target = shim_path(generated, exp.id)
            if ensure_current(target, yaml_path, exp.id, exp.sha256):
                getlogger().info(f"iolab: wrote {target.relative_to(root)} for {yaml_path.name}")
            _register(module_name, exp)
        except Exception as exc:  # noqa: BLE001 - any failure becomes a failing test, never a silent skip
            _broken(module_name, yaml_path, exc)


__all__ = ["register_all", "register_experiment", "sync_shims"]
