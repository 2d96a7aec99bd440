"""iolab command line: argument parsing and printing only; the logic lives in the modules."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from . import __version__
from .errors import IolabError


def _root() -> Path:
    from .project import project_root

    return project_root()


def _experiment_path(ref: str) -> Path:
    """Accept a path to a YAML or a bare experiment id."""
    path = Path(ref)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return path
    return _root() / "experiments" / f"{ref}.yaml"


def cmd_validate(args) -> int:
    from .experiment.load import load_experiment
    from .experiment.matrix import expand

    failed = 0
    for ref in args.files:
        try:
            exp = load_experiment(_experiment_path(ref))
            for note in exp.notes:
                print(f"iolab: note: {note}", file=sys.stderr)
            counts = [f"{len(expand(exp))} cases"]
            for profile in exp.profiles:
                counts.append(f"{profile}: {len(expand(load_experiment(exp.path, profile)))}")
            print(f"ok: {exp.path} ({', '.join(counts)})")
        except IolabError as exc:
            failed += 1
            print(f"iolab: error: {exc}", file=sys.stderr)
    return 2 if failed else 0


def _default_profile(given: str | None):
    """The profile a run would use: --profile, else IOLAB_PROFILE, else the one the default
    system (`local`) runs where the experiment has it; else the experiment as written."""
    from .rfm.systems import LOCAL_PROFILE, system_profile

    def choose(profiles: list[str]) -> str | None:
        wanted = given or os.environ.get("IOLAB_PROFILE")
        if wanted:
            return wanted if profiles or given else None
        return system_profile([LOCAL_PROFILE], profiles)

    return choose


def cmd_list(args) -> int:
    """The experiments of this project, one line each: profiles, parts, last run."""
    from .experiment.load import load_experiment
    from .results.lookup import list_runs, reproduces
    from .results.store import read_manifest_shared, results_root

    root = _root()
    paths = sorted((root / "experiments").glob("*.yaml"))
    if not paths:
        raise IolabError(f"no experiments in {root / 'experiments'}",
                         hint="an experiment is experiments/<id>.yaml (README, docs/extending.md)")
    for path in paths:
        try:
            exp = load_experiment(path)
        except IolabError as exc:
            print(f"{path.stem}  does not load: {str(exc).splitlines()[0]}")
            continue
        parts = ", ".join(p.benchmark if p.name == "main" else f"{p.name} ({p.benchmark})"
                          for p in exp.parts)
        try:        # a reproduction of one case is no run of the experiment's
            runs = [p for p in list_runs(results_root(root), exp.id) if reproduces(p) is None]
        except IolabError:
            runs = []
        last = "never run"
        if runs:
            finished = read_manifest_shared(runs[-1], whole=False).get("finished") or {}
            by_status = sorted((finished.get("counts") or {}).items())
            counts = ", ".join(f"{n} {status}" for status, n in by_status)
            state = ("complete" if finished.get("complete") else "not complete") if finished else "unfinished"
            last = f"last run {runs[-1].name} ({state}{': ' + counts if counts else ''})"
        print(f"{exp.id}  profiles: {', '.join(exp.profiles) or '-'}  parts: {parts}  {last}")
    return 0


def cmd_plan(args) -> int:
    from .analysis import planning
    from .experiment.load import load_experiment
    from .experiment.matrix import expand, varied_keys
    from .results.lookup import list_runs
    from .results.store import results_root

    if not 0 < args.target_ci <= 100:            # false for nan too
        raise IolabError(f"--target-ci {args.target_ci:g}: give a percentage above 0, at most 100")
    if args.budget is not None and not 0 < args.budget < math.inf:
        raise IolabError(f"--budget {args.budget:g}: give a positive number of node-hours")
    exp = load_experiment(_experiment_path(args.experiment), choose_profile=_default_profile(args.profile))
    cases = expand(exp)
    # Keys that vary anywhere in the experiment (storage between parts, say), in one order
    keys = varied_keys(cases)
    note = "" if args.profile else (" (IOLAB_PROFILE)" if os.environ.get("IOLAB_PROFILE") else
                                    " (what the default system, local, runs; --profile to choose)")
    # One write for the table: a print per case costs a system call each where stdout is unbuffered.
    sys.stdout.write(planning.overview(exp, cases, keys, note if exp.profile else ""))
    try:
        runs = list_runs(results_root(_root()), exp.id)
    except IolabError:
        runs = []
    spent = planning.plan_cost(exp, cases, runs)
    for line in spent.lines(len(cases)):
        print(line)
    planning.check_budget(exp, cases, keys, spent, args.budget)
    if args.suggest_reps:
        runs = list_runs(results_root(_root()), exp.id)
        print()
        print(planning.suggestions(exp, cases, runs, args.target_ci))
    return 0


def cmd_render(args) -> int:
    from .rfm.shims import sync_shims

    root = _root()
    changes = sync_shims(root / "experiments", root / "reframe" / "generated", check_only=args.check)
    for line in changes:
        print(line)
    if args.check and changes:
        print("iolab: error: shims are out of date: run `iolab render`", file=sys.stderr)
        return 1
    if not changes:
        print("all shims up to date")
    return 0


def _run_state(exp_id: str, run: str | None, include_imported: bool, set_aside: bool = False):
    """The chosen run's state (manifest, records, completeness); a run without a readable
    record is an error, and so is one whose records fail the checks (integrity.py) unless
    `set_aside`."""
    from .results.lookup import find_run
    from .results.store import results_root
    from .results.run import Run

    state = Run.load_chain(find_run(results_root(_root()), exp_id, run, include_imported), _root())
    state.vouch(set_aside)
    if not state.record_count:
        why = f" ({len(state.unreadable)} unreadable line(s) skipped)" if state.unreadable else ""
        raise IolabError(f"run {state.run_id} of {exp_id!r} has no readable records{why}",
                         hint=f"{state.describe()}; see `iolab runs {exp_id}`")
    return state


def _columns_asked(args) -> dict[str, str]:
    """The columns asked for with each source's `--<name>` option (add_column_options)."""
    from .analysis.columns import column_sources

    return {src.name: getattr(args, f"columns_{src.name}") for src in column_sources()}


def _pooled(exp_id: str, runs: list[str] | None, since: str | None, include_imported: bool,
            set_aside: bool = False):
    """Several runs (each with its continuations) pooled: named ones, or every run since a date
    (YYYY-MM-DD or a UTC time) or a run id."""
    from .results.lookup import find_run, list_runs, reproduces
    from .results.store import results_root
    from .results.run import ChainIndex, Run, chain_paths

    res = results_root(_root())
    paths = [find_run(res, exp_id, r, include_imported) for r in runs or []]
    if since:       # every run since: of the experiment's, so no reproduction of one case
        every = [p for p in list_runs(res, exp_id) if reproduces(p) is None
                 and (include_imported or Run.load(p).origin == "measured")]
        named = [p for p in every if p.name == since or p.name.startswith(since)]
        if named:
            paths += every[every.index(named[0]):]
        else:
            stamp = since.replace("-", "").replace(":", "")
            if not stamp[:8].isdigit():
                raise IolabError(f"--since {since!r}: give a date (2026-11-21), a UTC time "
                                 "(2026-11-21T10:00) or a run id")
            paths += [p for p in every if p.name[:len(stamp)] >= stamp]
    index = ChainIndex.of(paths[0].parent) if paths else None
    roots = list(dict.fromkeys(chain_paths(p, index)[0] for p in paths))
    if not roots:
        raise IolabError(f"no run of {exp_id!r} since {since!r}")
    state = Run.pooled(roots, _root())
    state.vouch(set_aside)
    if not state.record_count:
        raise IolabError(f"the runs of {exp_id!r} have no readable records")
    return state


def _metrics_arg(text: str | None, *states) -> list[str] | None:
    """--metrics a,b: names, each one that some record of the runs reports."""
    if text is None:
        return None
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise IolabError(f"--metrics {text!r}: an empty name; give names separated by commas, "
                         "e.g. write_bw,write_bw_max")
    present = set().union(*(pf.present for st in states for pf in st.digest.parts.values()))
    unknown = [n for n in names if n not in present]
    if unknown:
        raise IolabError(f"--metrics: no record reports {', '.join(map(repr, unknown))}",
                         hint="the records report " + (", ".join(sorted(present)) or "no metric"))
    return names


def _print_run_notes(state, label: str = "") -> None:
    for note in state.notes():
        print(f"iolab: note: {label}{note}", file=sys.stderr)


def cmd_table(args) -> int:
    from .analysis.columns import run_tables
    from .analysis.report import render

    if args.runs or args.since:
        if args.run:
            raise IolabError("give --run, or --runs/--since to pool several runs, not both")
        state = _pooled(args.experiment, args.runs, args.since, args.include_imported, args.set_aside)
    else:
        state = _run_state(args.experiment, args.run, args.include_imported, args.set_aside)
    from .analysis import drift

    metrics = _metrics_arg(args.metrics, state)
    tables = run_tables(state, metrics, _columns_asked(args))
    drifts = drift.notes(drift.of_run(state))
    if args.format == "csv":
        _print_run_notes(state)     # CSV readers get the table only
        for note in drifts:
            print(f"iolab: note: {note}", file=sys.stderr)
    sys.stdout.write(render(tables, args.format, state, drifts))
    if args.format == "md":         # an experiment tagged io500: its phase table and score
        from .analysis import io500

        if io500.applies(state):
            sys.stdout.write(io500.render(state.records))
    if args.summary:
        from .analysis.report import run_summary

        print(run_summary(state))
    return 0


def cmd_compare(args) -> int:
    from .results.run import no_gc

    with no_gc():       # thousands of pairs, no cycles: a third of compare_by_param's time
        return _compare(args)


def _compare(args) -> int:
    from .analysis.compare import Side, compare_by_param, compare_runs, render_comparison
    from .analysis.published.study import PREFIX, load_study

    runs = list(args.runs)

    def side(run, label):
        state = _run_state(args.experiment, run, args.include_imported, args.set_aside)
        _print_run_notes(state, f"run {state.run_id}: ")
        return Side(label, state)

    study = runs.pop() if runs and runs[-1].startswith(PREFIX) else None
    if args.by or study:
        if len(runs) > 1:
            raise IolabError("give one run (or none for the latest) with --by or published:STUDY")
        one = side(runs[0] if runs else None, "run")
        if study:
            from .analysis.published.studies import compare_study, render_study   # jsonschema with it

            result = compare_study(one, load_study(study, _root()), metric=args.metric,
                                   where=args.where, ignore=args.ignore, pick=args.pick,
                                   table=args.table, exact=args.exact)
            print(render_study(result))
            return 0
        if args.baseline is None:
            raise IolabError("--by needs --baseline VALUE, e.g. --by lustre.stripe_count --baseline 1")
        print(render_comparison(compare_by_param(one, args.by, args.baseline,
                                                 _metrics_arg(args.metrics, one.run))))
        return 0
    if len(runs) == 1:
        one = _run_state(args.experiment, runs[0], args.include_imported, args.set_aside)
        varied = sorted({k for rec in one.records for k in rec.varied})
        raise IolabError(f"one run ({one.run_id}): give another to compare it with (ID RUN_A RUN_B), "
                         "or compare its cases by a parameter with --by KEY --baseline VALUE",
                         hint=f"its cases vary {', '.join(varied)}" if varied else None)
    if len(runs) != 2:
        raise IolabError("compare two runs (ID RUN_A RUN_B), one run by a parameter "
                         "(ID [RUN] --by KEY --baseline VALUE) or a run with a study (ID RUN published:NAME)")
    from .results.lookup import find_run
    from .results.store import results_root

    path_a, path_b = (find_run(results_root(_root()), args.experiment, r, args.include_imported)
                      for r in runs)
    if path_a == path_b:
        raise IolabError(f"{runs[0]} and {runs[1]} are the same run, {path_a.name}: compare two runs, "
                         "or one run's cases by a parameter (--by KEY --baseline VALUE)")
    a, b = side(runs[0], "A"), side(runs[1], "B")
    print(render_comparison(compare_runs(a, b, _metrics_arg(args.metrics, a.run, b.run))))
    return 0


def cmd_trend(args) -> int:
    from .analysis import trend
    from .analysis.compare import direction
    from .analysis.report import param_label
    from . import units
    from .results.lookup import list_runs, no_runs_error, reproduces
    from .results.run import ChainIndex, Run, chain_paths
    from .results.store import results_root

    if not trend.available():
        raise IolabError(trend.MISSING)
    if not 0 < args.penalty < math.inf:      # false for nan too: a change at every run, or never
        raise IolabError(f"--penalty {args.penalty:g}: give a positive finite number (default "
                         f"{trend.DEFAULT_PENALTY:g}; larger finds fewer changes)")
    if args.all_systems and args.system:
        raise IolabError("give --system S or --all-systems, not both")
    root = results_root(_root())
    paths = list_runs(root, args.experiment)
    if not paths:
        raise no_runs_error(root, args.experiment)
    paths = [p for p in paths if reproduces(p) is None]     # the experiment's runs, in time
    if args.since:
        stamp = args.since.replace("-", "").replace(":", "")
        if not stamp[:8].isdigit():
            raise IolabError(f"--since {args.since!r}: give a date (2026-11-21) or a UTC time "
                             "(2026-11-21T10:00)")
        paths = [p for p in paths if p.name[:len(stamp)] >= stamp]
    runs = []
    index = ChainIndex.of(paths[0].parent) if paths else None
    for path in dict.fromkeys(chain_paths(p, index)[0] for p in paths):
        run = Run.load_chain(path, _root())
        run.vouch(args.set_aside)
        if run.origin == "measured" or args.include_imported:
            runs.append(run)
            for note in run.integrity_notes("the trend") if run.problems() else ():
                # each line left out named, as `table --set-aside` names it
                print(f"iolab: note: run {run.run_id}: {note}", file=sys.stderr)

    def label(rec) -> str:
        shown = [(param_label(k, rec.benchmark), rec.params[k]) for k in rec.varied if k in rec.params]
        return ", ".join(f"{name}={units.shown(v, units.CELL, divisor=divisor)}"
                         for (name, divisor), v in shown)

    aside: list = []
    series = trend.series_of(runs, args.metric, args.system, args.all_systems, args.cases, label, aside)
    if not series:
        what = f"metric {args.metric!r}" if args.metric else "a metric"
        raise IolabError(f"no ok record of {args.experiment!r} has {what}"
                         + (f" on system {args.system!r}" if args.system else "")
                         + (f" since {args.since}" if args.since else "")
                         + (f" for cases {' '.join(args.cases)}" if args.cases else ""),
                         hint=f"{len(runs)} run(s) read; see `iolab runs {args.experiment}`")
    changes = trend.find_changes(series, args.penalty)
    print(trend.render(series, changes, args.experiment, args.penalty,
                       lambda m, u: direction(m, u, None), aside))
    if args.plot:
        from .present.plots import MISSING_MATPLOTLIB
        from .present.progress import trend_plot

        files = trend_plot(series, Path(args.plot))
        if files is None:
            raise IolabError(MISSING_MATPLOTLIB.replace("no plots", "no trend plot"))
        print("plot: " + ", ".join(str(f) for f in files.values()))
    return 0


def cmd_parse(args) -> int:
    from .benchmarks import get as get_benchmark
    from .results.store import MAX_IMPORT_BYTES, readable_file

    adapter = get_benchmark(args.benchmark)
    status = 0
    for name in args.files:
        try:
            if Path(name).is_symlink() or Path(name).exists():   # a FIFO or a device would block
                readable_file(Path(name), MAX_IMPORT_BYTES)          # the parser (as import)
            (parsed,) = adapter.parse_files([Path(name)])
        except (IolabError, OSError) as exc:      # ParseError too: each file answers for itself
            print(f"iolab: error: {name}: {exc}", file=sys.stderr)
            status = 1
            continue
        for m in parsed.metrics:
            print(json.dumps({"file": name, **m.as_dict(), "version": parsed.version}))
    return status


def cmd_import(args) -> int:
    from .results.importer import import_files

    run = import_files(args.benchmark, [Path(f) for f in args.files], args.into,
                       params=args.param or [], label=args.label, trust_params=args.trust_params)
    print(f"imported {len(args.files)} file(s) into {run.path}")
    print(f"an imported run: `iolab table {args.into}` shows the latest measured run; add "
          f"--include-imported or --run {run.run_id} for this one")
    return 0


def _looks_like_run_id(text: str) -> bool:
    import re

    return re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{6}", text) is not None


def cmd_darshan(args) -> int:
    from .present import darshan
    from .results.lookup import find_run
    from .results.runfiles import is_experiment_id
    from .results.store import results_root
    from .results.run import Run

    out_dir = Path(args.html) if args.html else None
    status = 0
    target = args.targets[0]
    if len(args.targets) == 1 and not Path(target).exists() and _looks_like_run_id(target):
        owners = sorted(p.parent.name for p in results_root(_root()).glob(f"*/{target}"))
        raise IolabError(f"{target} is a run id, not a Darshan log",
                         hint=f"iolab darshan {owners[0] if len(owners) == 1 else 'EXPERIMENT'} "
                              f"--run {target}")
    if len(args.targets) > 1 or Path(target).exists() or not is_experiment_id(target):
        # Any Darshan logs, e.g. from production jobs. Every log is shown; one that cannot be
        # read makes the exit status 1.
        shown, status = darshan.of_logs(args.targets, out_dir, lambda line: print(line, file=sys.stderr))
    else:
        run = Run.load(find_run(results_root(_root()), target, args.run, args.include_imported))
        shown = darshan.of_run(run, args.case, out_dir)
    if args.json:
        print(json.dumps(shown, indent=2, default=str))
        return status
    for text in darshan.render(shown):
        print(text)
    return status


def cmd_runs(args) -> int:
    from .analysis import drift
    from .results.lookup import list_runs, no_runs_error
    from .results.store import results_root
    from .results.run import ChainIndex, Run, chain_paths

    root = results_root(_root())
    paths = list_runs(root, args.experiment)
    if not paths:
        raise no_runs_error(root, args.experiment)
    if args.run:
        from .results.lookup import find_run

        paths = [find_run(root, args.experiment, args.run, include_imported=True)]
    status = 0
    index = ChainIndex.of(paths[0].parent)     # every run's parent, read once for all the lines
    for path in paths:
        try:
            state = Run.load(path)
            links = chain_paths(path, index)   # a chain that loops is refused here
            chain = (Run.load_chain(path) if not state.parent
                     and any(Run.load(p).parent for p in links[1:2]) else None)
        except IolabError as exc:      # one bad run (or chain) does not hide the others
            print(f"{path.name}  unreadable: {exc}")
            status = 1
            continue
        line = (f"{path.name}  {state.origin:8}  {state.system or '-':20}  {state.counts_text()}  "
                f"{state.describe()}")
        original = state.manifest.get("reproduces")
        if isinstance(original, dict):
            line += f"; reproduces {original.get('run')} (never the default 'latest')"
        if state.parent:
            line += f"; continues {state.parent}"
        elif chain is not None:
            line += (f"; with continuations {', '.join(r.run_id for r in chain.chain[1:])}: "
                     f"chain {chain.describe()}, {chain.counts_text()}")
        if state.unreadable:
            line += f"; {len(state.unreadable)} unreadable line(s) skipped"
        line += _integrity_text(state)
        line += _flags_text(state)
        line += "".join(f"; {d.short()}" for d in drift.of_run(state) if d.drifts)
        if state.unsaved:
            line += f"; unmerged: {', '.join(state.unsaved)}"
        order = _order_text(state)
        if order:
            line += f"; {order}"
        print(line)
        if args.run:
            _print_run_order(state)
        if args.stack:
            from .software import summarize

            for text in summarize(state.records) or ["stack: not recorded"]:
                print(f"    {text}")
    if status:
        print(f"iolab: error: some runs of {args.experiment!r} are unreadable (see above)", file=sys.stderr)
    return status


def _flags_text(run) -> str:
    """What was asked and not applied or not run (a setting ext4 ignored, Darshan without its
    runtime...): how many records, and the most frequent flag, from the run's digest."""
    kinds: dict[str, int] = {}
    for flags in run.digest.flags.values():
        for text, reps in flags.items():
            kinds[text] = kinds.get(text, 0) + len(reps)
    if not kinds:
        return ""
    text, count = max(kinds.items(), key=lambda kv: kv[1])
    more = f"; and {len(kinds) - 1} other flag(s)" if len(kinds) > 1 else ""
    return f"; flagged: {text} ({count} record{'s' if count != 1 else ''}){more}"


def _order_text(run) -> str | None:
    """How a run ordered its jobs, from its manifest (experiment/order.py)."""
    from .experiment.order import Order

    data = run.manifest.get("order")
    if data is None:
        return None
    try:
        return Order.from_dict(data).describe()
    except ValueError:
        return "run order unreadable"


def _print_run_order(run) -> None:
    """`iolab runs ID RUN`: the run's jobs in the order they ran, each with its last record."""
    planned = [j for j in run.manifest.planned or [] if isinstance(j, dict)]
    if not planned:
        print("    no plan in the manifest (an imported run, or one older than plans)")
        return
    status = {}
    for rec in run.records:
        status[(rec.case_id, rec.repetition)] = rec.status
    print(f"    {len(planned)} jobs in the order they ran:")
    for n, job in enumerate(planned, 1):
        key = (str(job.get("case_id")), job.get("repetition"))
        print(f"    {n:4}  {job.get('part') or 'main'}  {key[0]}  rep {key[1]}  "
              f"{status.get(key, 'no record')}")


MAX_WATCH = 86400.0        # seconds: --watch reads a run again at least once a day


def _seconds(option: str, text) -> float:
    """A positive finite number of seconds, at most MAX_WATCH."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_WATCH:      # false for nan too
        raise IolabError(f"{option} {text}: give a positive number of seconds, at most "
                         f"{MAX_WATCH:g} (e.g. {option} 5)")
    return value


def _integrity_text(run) -> str:
    """For `runs` and `status`: what the records' checks set aside (counted as tables count)."""
    from .results.store import RECORDS

    found = run.problems()
    if not found:
        return ""
    aside = sum(p.set_aside for _r, p in found)
    first = found[0][1]
    return (f"; {aside} record line(s) set aside, {len(found)} problem(s) (first: "
            f"{first.where(RECORDS)}: {first.reason}; `iolab verify`)")


def cmd_verify(args) -> int:
    """Check a run's records (and its continuations'): the digest chain and every record."""
    from .results.lookup import find_run
    from .results.store import RECORDS, results_root
    from .results.run import Run

    path = find_run(results_root(_root()), args.experiment, args.run, True)
    whole = Run.load_chain(path, _root())
    found = whole.problems()
    for run in whole.runs_read():
        print(f"{args.experiment} run {run.run_id}: {run.record_count} record(s); "
              f"{run.verdict.describe()}")
        for b in run.unreadable:
            print(f"  {RECORDS}:{b.line}: unreadable, skipped: {b.reason}")
        for p in run.verdict.problems:
            print(f"  {p.where(RECORDS)}: {p.reason}"
                  + ("" if p.set_aside else " (no record of it is left out)"))
    if found:
        run, first = found[0]
        raise IolabError(f"{first.where(run.path / RECORDS)}: {first.reason}",
                         hint=f"{len(found)} problem(s) in all, listed above")
    if args.write_digest:
        from .results.recordcache import write_run_digest

        for run in whole.runs_read():
            print(f"{args.experiment} run {run.run_id}: digest written: {write_run_digest(run.path)}")
    return 0


def cmd_status(args) -> int:
    """How far a run (with its continuations) is; --watch repeats until it ends."""
    import time

    from .results.lookup import find_run
    from .results.store import results_root
    from .results.run import Run

    watch = _seconds("--watch", args.watch) if args.watch is not None else None
    res = results_root(_root())
    path = find_run(res, args.experiment, args.run, True)
    tty = sys.stdout.isatty()
    while True:
        run = Run.load_chain(path)
        # a dead writer's run is said to be so (killed), never 'unfinished ... ETA'
        state = run.describe() if run.writer_gone else run.state
        line = (f"{args.experiment} run {run.run_id}: {state}: {run.progress(time.time())}"
                + _integrity_text(run))
        if not watch or run.state != "unfinished" or run.writer_gone:
            print(("\r" if tty and watch else "") + line)
            if watch and run.writer_gone:      # it will never end: say so, do not wait
                raise IolabError(f"run {run.run_id} will not finish: {run.describe()}",
                                 hint=f"`iolab resume {args.experiment} {run.run_id}` continues it")
            return 0 if run.state != "unfinished" or not watch else 1
        print(("\r" + line + "\033[K") if tty else line, end="" if tty else "\n", flush=True)
        time.sleep(watch)


RECORD_FIELDS = {"experiment": str, "run_id": str, "case_id": str, "repetition": int}
MAX_RECORD_LINE = 16 << 20     # bytes: a record line is a few KiB; more is not one


def _record_arg(spec: str) -> dict:
    """The first line of FILE (or of stdin for -) as a record: a UTF-8 JSON object naming its
    experiment, run, case and repetition."""
    name = "--record " + ("-" if spec == "-" else spec)
    if spec == "-":
        data = sys.stdin.buffer.readline(MAX_RECORD_LINE + 1)
    else:
        from .results.store import MAX_RECORDS_BYTES, open_regular

        try:
            Path(spec).stat()
        except OSError as exc:
            raise IolabError(f"{name}: {exc.strerror}") from None
        try:        # the shared reader: checked on the opened file, never waiting on a FIFO
            fd = open_regular(Path(spec), MAX_RECORDS_BYTES)
        except IolabError:
            raise IolabError(f"{name}: not a regular file; give a records.jsonl (or one of its "
                             "lines) or - for stdin") from None
        with open(fd, "rb") as f:
            data = f.readline(MAX_RECORD_LINE + 1)
    if len(data) > MAX_RECORD_LINE:
        raise IolabError(f"{name}: the first line is over {MAX_RECORD_LINE >> 20} MiB: not a record")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IolabError(f"{name}: not UTF-8 text (byte {exc.start + 1} of its first line): "
                         "not a record line") from None
    if not text.strip():
        raise IolabError(f"{name}: the first line is empty: give a records.jsonl line")
    try:
        wanted = json.loads(text)
    except ValueError as exc:
        raise IolabError(f"{name}: the first line is not JSON ({exc})") from None
    if not isinstance(wanted, dict):
        raise IolabError(f"{name}: the first line is a JSON {type(wanted).__name__}, not a record "
                         "(a JSON object)")
    for key, kind in RECORD_FIELDS.items():
        if key not in wanted:
            raise IolabError(f"{name}: the record has no {key}")
        if type(wanted[key]) is not kind or (kind is str and not wanted[key]):
            raise IolabError(f"{name}: the record's {key} is {json.dumps(wanted[key])[:40]}, not "
                             + ("a whole number" if kind is int else "a non-empty string"))
    return wanted


def cmd_reproduce(args) -> int:
    """Re-run one recorded case from what its run stored, then set the new result against it."""
    from .analysis import campaign
    from .analysis.compare import render_comparison
    from .results.lookup import find_run
    from .results.store import results_root
    from .results.run import Run

    root = _root()
    res = results_root(root)
    if args.record:
        if args.experiment or args.rep is not None:
            raise IolabError("give --record FILE|- (the record names its run, case and repetition) "
                             "or ID RUN CASE [--rep N], not both")
        wanted = _record_arg(args.record)
        exp_id, run_id, case_id = wanted["experiment"], wanted["run_id"], wanted["case_id"]
        reps = [wanted["repetition"]]
    else:
        if not (args.experiment and args.run and args.case):
            raise IolabError("give ID RUN CASE (and --rep N), or --record FILE|- with a record line")
        exp_id, run_id, case_id = args.experiment, args.run, args.case
        reps = [args.rep] if args.rep is not None else None
    run = Run.load(find_run(res, exp_id, run_id, True), root)
    run.vouch()     # the original is what the reproduction is set against: its records must hold
    job = campaign.Reproduction.of(run, case_id, reps, "the record" if args.record else "--rep")
    differ = campaign.reproduce_differences(run, root)
    for line in differ:
        print(f"iolab: warning: {line}", file=sys.stderr)
    config, system = (Path(args.config), None) if args.config else campaign.config_for(run, root)
    cont = job.continuation(differ)
    print(f"reproducing {exp_id} run {run.run_id} case {job.case_id} rep {', '.join(map(str, job.reps))} "
          f"on {system or config.stem}, profile {run.manifest.profile or '(base)'}")
    status, new = job.rerun(root, res, cont, config, system)
    if new is None:
        print(f"iolab: error: reframe made no run (exit status {status})", file=sys.stderr)
        return status or 1
    print(render_comparison(job.compared(Run.load(new, root))))
    return status


def cmd_resume(args) -> int:
    """Run the jobs of a run's chain that have no ok record, as a continuation of it."""

    from .analysis import campaign
    from .results.lookup import find_run
    from .results.store import results_root
    from .results.run import Run
    from .rfm.leftovers import CANCEL_ENV

    root = _root()
    res = results_root(root)
    chain = Run.load_chain(find_run(res, args.experiment, args.run), root)
    chain.vouch(args.set_aside)
    if args.failed_only and args.missing_only:
        raise IolabError("give --failed-only or --missing-only, not both")
    jobs = campaign.jobs_to_resume(chain, args.failed_only, args.missing_only)
    last = chain.chain[-1] if chain.chain else chain
    if not jobs:
        print(f"nothing to resume: every planned job of run {chain.run_id} "
              f"{'and its continuations ' if chain.chain else ''}has an ok record"
              + (" (or none matches the filter)" if args.failed_only or args.missing_only else ""))
        return 0
    jobs, added = campaign.with_producers(chain, jobs)
    changed = campaign.changes(chain, root)
    if changed and not args.allow_changes:
        raise IolabError("refusing to resume: what the jobs would run differs from the chain:\n  "
                         + "\n  ".join(changed),
                         hint="undo the change, or pass --allow-changes to run anyway and record "
                              "the differences in the new run's manifest")
    config, system = (Path(args.config), None) if args.config else campaign.config_for(chain, root)
    cont = campaign.Continuation(chain.experiment_id, last.run_id, chain.run_id, chain.manifest.profile,
                                 [list(j) for j in jobs], changed, added,
                                 order=campaign.order_of(chain))
    print(f"resuming {chain.experiment_id} run {chain.run_id}: {len(jobs)} job(s) "
          f"({', '.join(f'{c} rep {r}' for _p, c, r in jobs[:6])}{', …' if len(jobs) > 6 else ''})")
    for line in added + [f"allowed change: {c}" for c in changed]:
        print(f"  {line}")
    # jobs a killed session left running are waited for (or cancelled) before the first job
    status, new = campaign.run_reframe(root, cont, config, None if args.config else system,
                                       args.reframe_args, args.dry_run,
                                       env_changes={CANCEL_ENV: "1"} if args.cancel_stale else None)
    if args.dry_run:
        return 0
    if new is None:
        print(f"iolab: error: reframe made no continuation run (exit status {status})", file=sys.stderr)
        return status or 1
    whole = Run.load_chain(new, root)
    print(f"continuation run {new.name} of {chain.run_id}: chain {whole.describe()}; "
          f"{whole.counts_text()}")
    return status


def cmd_search(args) -> int:
    """Rounds of a search through ReFrame, then its answer."""
    from .analysis import campaign
    from .experiment.load import load_experiment
    from .results.lookup import find_run
    from .results.store import results_root
    from .results.run import Run
    from .analysis.search import report_run, run_search, search_chain

    if args.batch < 1 or (args.rounds is not None and args.rounds < 1):
        raise IolabError("--batch and --rounds count cases and rounds: give 1 or more")
    root = _root()
    exp = load_experiment(_experiment_path(args.experiment), args.profile)
    if args.config:
        config, system = Path(args.config), None
    else:
        chain = None if args.new else search_chain(root, exp.id)
        config, system = (campaign.config_for(chain, root) if chain is not None
                          else (root / "reframe" / "config" / "local.py", None))
    from .rfm.systems import OUTPUT

    status = run_search(root, exp, config, system, args.batch, args.rounds, args.new,
                        args.allow_changes, args.reframe_args, args.dry_run,
                        log_dir=Path(OUTPUT) / "search")
    if args.dry_run:
        return status
    chain = search_chain(root, exp.id)
    if chain is None:
        return status
    text, found = report_run(Run.load_chain(find_run(results_root(root), exp.id, chain.run_id, True),
                                            root))
    sys.stdout.write(text)
    return status or (0 if found else 1)


def cmd_search_report(args) -> int:
    """A search's answer: the best setting found with its interval, the runner-up, the model."""
    from .results.lookup import find_run
    from .results.store import results_root
    from .results.run import Run
    from .analysis.search import report_run

    root = _root()
    run = Run.load_chain(find_run(results_root(root), args.experiment, args.run, True), root)
    run.vouch(args.set_aside)
    _print_run_notes(run)
    text, found = report_run(run, args.objective)
    sys.stdout.write(text)
    return 0 if found else 1


def cmd_publish(args) -> int:
    from .present.publish import publish

    done = publish(args.experiment, Path(args.out), args.runs, force=args.force,
                   include_imported=args.include_imported, set_aside=args.set_aside,
                   columns=_columns_asked(args))
    for note in done.notes:
        print(f"iolab: note: {note}", file=sys.stderr)
    print(f"published {args.experiment} (run{'s' if len(done.runs) > 1 else ''} "
          f"{', '.join(done.runs)}): {len(done.files)} files, {done.plots} plot(s) in {done.out}")
    print(f"open {done.out / 'index.html'}")
    return 0


DESCRIPTION = """\
Parallel I/O experiments made reproducible: check and plan an experiment YAML, run it with
`scripts/run ID SYSTEM` (ReFrame), then read its results as tables, comparisons and pages."""

# A few lines a user can copy, per verb; `iolab VERB --help` ends with them, and the generated
# CLI reference shows them (a test keeps every verb covered). They work with fio alone, as after
# `scripts/setup --no-spack` with fio installed; one that needs another benchmark says so.
EXAMPLES = {
    "validate": ["iolab validate experiments/quickstart.yaml", "iolab validate experiments/*.yaml"],
    "list": ["iolab list"],
    "plan": ["iolab plan quickstart", "iolab plan kaust-stripe-count --profile full --budget 50",
             "iolab plan quickstart --suggest-reps --target-ci 5"],
    "render": ["iolab render", "iolab render --check"],
    "table": ["iolab table quickstart", "iolab table quickstart --format csv",
              "iolab table quickstart --since 2026-11-01 --metrics write_bw,write_iops",
              "iolab table cephfs-striping --storage osds,objects"],
    "compare": ["iolab compare quickstart RUN_A RUN_B",
                "iolab compare quickstart --by bs --baseline 4KiB",
                "iolab compare archer-fpp-vs-ssf RUN published:archer-fpp-ssf   # an IOR experiment"],
    "trend": ["iolab trend quickstart", "iolab trend quickstart --metric write_iops --since 2026-11-01",
              "iolab trend quickstart --system local:default --cases 3cf5ac1a --plot trend/"],
    "parse": ["iolab parse fio fio.json", "iolab parse ior ior-summary.json"],
    "import": ["iolab import ior out/*.json --into kaust-stripe-count --param lustre.stripe_count=4"],
    "darshan": ["iolab darshan quickstart", "iolab darshan quickstart --case 3f2a --html page/",
                "iolab darshan job.darshan"],
    "runs": ["iolab runs quickstart", "iolab runs quickstart --stack", "iolab runs quickstart RUN"],
    "verify": ["iolab verify quickstart", "iolab verify quickstart RUN",
               "iolab verify quickstart RUN --write-digest"],
    "reproduce": ["iolab reproduce quickstart RUN CASE", "iolab reproduce --record line.json"],
    "status": ["iolab status quickstart", "iolab status quickstart --watch 10"],
    "resume": ["iolab resume quickstart RUN --failed-only",
               "iolab resume quickstart --missing-only --dry-run"],
    "search": ["iolab search fio-search", "iolab search fio-search --rounds 2 --batch 4"],
    "search-report": ["iolab search-report fio-search"],
    "publish": ["iolab publish quickstart --out quickstart-page",
                "iolab publish quickstart --runs RUN_A RUN_B --out page --force"],
}
SESSION = """\
a first session:
  scripts/run quickstart local            run the quickstart on this machine, print its table
  iolab list                              the experiments and their last runs
  iolab plan kaust-stripe-count           cases, jobs, bytes and node-hours, before you spend them
  iolab compare quickstart RUN_A RUN_B    what changed between two runs, with a verdict
  iolab publish quickstart --out page     a page with provenance, tables and plots

`iolab VERB --help` shows a verb's options and examples; docs/ has the rest."""


ID_HELP = "the experiment's id: the stem of experiments/ID.yaml, its runs in results/ID/"
YAML_HELP = "an experiment YAML, or the id of one in experiments/"
BENCHMARK_HELP = "the benchmark that wrote the files, named as an experiment names it (fio, ior...)"


class _Parser(argparse.ArgumentParser):
    """argparse's own errors in iolab's one form, "iolab: error: ...", after the verb's usage
    (argparse writes "iolab VERB: error: ...")."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(2, f"iolab: error: {message}\n")


class _Formatter(argparse.HelpFormatter):
    """Descriptions wrapped as usual; the examples kept line by line."""

    def _fill_text(self, text, width, indent):
        if text.startswith(("examples:", "a first session:")):
            return "\n".join(indent + line for line in text.splitlines())
        return super()._fill_text(text, width, indent)


def add_column_options(s) -> None:
    """One `--<name> COLUMNS` option per column source (analysis.columns.column_sources), its
    help every column it has and what each shows: the sources' own words, so --help and the
    CLI reference name every column there is."""
    from .analysis.columns import column_sources

    for src in column_sources():
        known = "; ".join(f"{name}: {text}" for name, text in src.column_help().items())
        kind = "words beside the parameters" if src.text else "numbers, as metrics over the repetitions"
        s.add_argument(f"--{src.name}", metavar="COLUMNS", dest=f"columns_{src.name}",
                       help=f"add {src.title} columns ({kind}), comma-separated: "
                            + known.replace("%", "%%"))


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="iolab", description=DESCRIPTION, epilog=SESSION, formatter_class=_Formatter)
    p.add_argument("--version", action="version", version=f"iolab {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("validate", help="check experiment YAMLs against the schema")
    s.add_argument("files", nargs="+", metavar="YAML", help=YAML_HELP)
    s.set_defaults(func=cmd_validate)

    s = sub.add_parser("list", help="the experiments, one line each: profiles, parts, last run")
    s.set_defaults(func=cmd_list)

    s = sub.add_parser("plan", help="list an experiment's cases, jobs and bytes written")
    s.add_argument("experiment", metavar="YAML|ID", help=YAML_HELP)
    s.add_argument("--profile", help="the profile to plan (default: IOLAB_PROFILE, else the one the "
                   "local system runs where the experiment has it)")
    s.add_argument("--suggest-reps", action="store_true",
                   help="suggest repetitions per case from earlier runs of the same case ids")
    s.add_argument("--target-ci", type=float, default=5.0, metavar="PERCENT",
                   help="target 95%% CI half-width as a percentage of the mean (default 5; above 0, "
                        "at most 100)")
    s.add_argument("--budget", type=float, metavar="NODE_HOURS",
                   help="refuse a plan whose node-hours (at the time limits) exceed this, and say "
                        "what to trim")
    s.set_defaults(func=cmd_plan)

    s = sub.add_parser("render", help="(re)generate the ReFrame shims in reframe/generated/")
    s.add_argument("--check", action="store_true", help="only report stale shims (exit 1)")
    s.set_defaults(func=cmd_render)

    s = sub.add_parser("table", help="print a run's comparison table")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("--run", help="run id (or a unique prefix/suffix); default: the latest")
    s.add_argument("--runs", nargs="+", metavar="RUN",
                   help="pool the repetitions of these runs where their provenance agrees")
    s.add_argument("--since", metavar="DATE|RUN",
                   help="pool every run from this date (2026-11-21, UTC) or run id on")
    s.add_argument("--format", choices=["md", "csv", "json"], default="md",
                   help="Markdown tables with footnotes (default md), CSV (the notes go to stderr) or JSON")
    s.add_argument("--metrics", help="comma-separated metric names, e.g. write_bw,write_bw_max")
    add_column_options(s)
    s.add_argument("--summary", action="store_true",
                   help="end with one line: how many jobs ran, how many were skipped and why")
    s.add_argument("--include-imported", action="store_true",
                   help="let 'latest' be an imported run too (default: the latest measured run)")
    s.add_argument("--set-aside", action="store_true",
                   help="show the records that pass the integrity checks and name the others in a "
                        "note (default: refuse a run with records that fail them)")
    s.set_defaults(func=cmd_table)

    s = sub.add_parser("compare", help="two runs, two values of a parameter, or a run and a published study",
                       description="iolab compare ID RUN_A RUN_B | ID [RUN] --by KEY --baseline VALUE | "
                                   "ID RUN published:STUDY")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("runs", nargs="*", metavar="RUN",
                   help="run ids (or unique prefixes/suffixes); published:STUDY for a study "
                        "in results/published/")
    s.add_argument("--metrics", help="comma-separated metric names (run comparisons)")
    s.add_argument("--by", metavar="KEY", help="pair each case with the baseline case differing only in KEY")
    s.add_argument("--baseline", metavar="VALUE", help="the baseline value of --by, e.g. 1 or 1MiB")
    s.add_argument("--metric", help="the run's metric to set against the study's (default: the study's)")
    s.add_argument("--where", action="append", metavar="COLUMN=VALUE", default=[],
                   help="use only the study's rows with this value (repeatable)")
    s.add_argument("--ignore", action="append", metavar="COLUMN", default=[],
                   help="do not match on this study column, e.g. scale.num_tasks at another scale "
                        "(repeatable)")
    s.add_argument("--pick", action="append", metavar="KEY=VALUE", default=[],
                   help="use only the run's cases with this value, where several match one study row "
                        "(repeatable), e.g. scale.tasks_per_node=2")
    s.add_argument("--table", metavar="NAME",
                   help="only this group of the study's rows (its table column)")
    s.add_argument("--exact", action="store_true",
                   help="match every study column as written: no automatic alignment of process "
                        "counts and problem sizes, and several cases for one row are 'ambiguous'")
    s.add_argument("--include-imported", action="store_true",
                   help="let 'latest' be an imported run too (default: the latest measured run)")
    s.add_argument("--set-aside", action="store_true",
                   help="show the records that pass the integrity checks and name the others in a "
                        "note (default: refuse a run with records that fail them)")
    s.set_defaults(func=cmd_compare)

    s = sub.add_parser("trend", help="a metric over all runs of an experiment in time order, per "
                       "case and system, with the runs where it changed (change points, ruptures)")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("--metric", help="the metric (default: the benchmark's first table metric)")
    s.add_argument("--since", metavar="DATE", help="only runs from this UTC date or time on, e.g. "
                   "2026-11-21 or 2026-11-21T10:00")
    s.add_argument("--system", metavar="S", help="only runs of this system (as `iolab runs` shows it)")
    s.add_argument("--all-systems", action="store_true",
                   help="one series per case over every system's runs (default: each system apart)")
    s.add_argument("--cases", nargs="+", metavar="CASE", help="only these case ids (or prefixes)")
    s.add_argument("--penalty", type=float, default=3.0, metavar="P",
                   help="change-point penalty, in units of the run-to-run noise squared times "
                        "ln(runs); larger finds fewer changes (default 3)")
    s.add_argument("--plot", metavar="DIR", help="also draw the series into DIR/trend.{png,svg} "
                   "(needs matplotlib)")
    s.add_argument("--include-imported", action="store_true",
                   help="also read imported runs (default: measured runs only)")
    s.add_argument("--set-aside", action="store_true",
                   help="use the records that pass the checks of a run whose records fail them")
    s.set_defaults(func=cmd_trend)

    s = sub.add_parser("parse", help="print metrics parsed from benchmark outputs as JSON lines")
    s.add_argument("benchmark", help=BENCHMARK_HELP)
    s.add_argument("files", nargs="+", metavar="FILE", help="the benchmark's output files")
    s.set_defaults(func=cmd_parse)

    s = sub.add_parser("import", help="import outputs of runs made outside iolab into a results run")
    s.add_argument("benchmark", help=BENCHMARK_HELP)
    s.add_argument("files", nargs="+", metavar="FILE", help="the benchmark's output files to import")
    s.add_argument("--into", required=True, metavar="ID", help="experiment id to file the run under")
    s.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="a parameter of the imported case (repeatable), e.g. lustre.stripe_count=4")
    s.add_argument("--label", help="free text stored in the manifest, e.g. the source system")
    s.add_argument("--trust-params", action="store_true",
                   help="import --param values even where the benchmark's output says it ran otherwise")
    s.set_defaults(func=cmd_import)

    s = sub.add_parser("darshan", help="Darshan summary and findings of a run's cases, or of any logs")
    s.add_argument("targets", nargs="+", metavar="ID|LOG",
                   help="an experiment id (the cases of its run), or Darshan logs of any job")
    s.add_argument("--run", help="run id (or a unique prefix/suffix); default: the latest")
    s.add_argument("--case", help="a case id (or its prefix)")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.add_argument("--html", metavar="DIR", help="also write PyDarshan's HTML job summary into DIR")
    s.add_argument("--include-imported", action="store_true",
                   help="let 'latest' be an imported run too (default: the latest measured run)")
    s.set_defaults(func=cmd_darshan)

    s = sub.add_parser("runs", help="list an experiment's results runs: origin, system, records by "
                       "status, complete or not, the order its jobs ran in")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("run", nargs="?", metavar="RUN",
                   help="only this run, with its jobs in the order they ran (the order and its "
                        "seed are in the run's manifest)")
    s.add_argument("--stack", action="store_true",
                   help="also show what supplied each run's benchmarks: provider, spack.lock sha256, "
                        "binaries and their versions")
    s.set_defaults(func=cmd_runs)

    s = sub.add_parser("verify", help="check a run's records: the digest chain (an edited, inserted, "
                       "duplicated, reordered or removed line is named) and every record's fields")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("run", nargs="?", metavar="RUN", help="default: the latest")
    s.add_argument("--write-digest", action="store_true",
                   help="once the records verify, write each run's records.digest anew from them "
                        "(after moving a fallback file's records back, say)")
    s.set_defaults(func=cmd_verify)

    s = sub.add_parser("reproduce", help="re-run one recorded case from what its run stored (the YAML "
                       "as run, profile, system) and compare the result with the original")
    s.add_argument("experiment", nargs="?", metavar="ID", help=ID_HELP + "; or give --record")
    s.add_argument("run", nargs="?", metavar="RUN", help="the run id (or a unique prefix/suffix)")
    s.add_argument("case", nargs="?", metavar="CASE", help="a case id (or a unique prefix)")
    s.add_argument("--rep", type=int, help="one of the repetitions the run has or planned for the "
                   "case (default: every one it has)")
    s.add_argument("--record", metavar="FILE|-", help="a records.jsonl line (a UTF-8 JSON object; the "
                   "first line of FILE) instead of ID RUN CASE")
    s.add_argument("--config", metavar="PATH", help="ReFrame configuration (default: the one the run used)")
    s.set_defaults(func=cmd_reproduce)

    s = sub.add_parser("status", help="how far a run is: jobs recorded of planned, failures, elapsed, ETA")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("run", nargs="?", metavar="RUN", help="default: the latest")
    s.add_argument("--watch", metavar="SECONDS", nargs="?", const="5",
                   help="read the run again every SECONDS (default 5; more than 0, at most a day) "
                        "until it ends")
    s.set_defaults(func=cmd_status)

    s = sub.add_parser("resume", help="run the jobs of a run that have no ok record (missing, failed, "
                       "aborted) as a continuation of it; tables then show the run and its continuations")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("run", nargs="?", metavar="RUN", help="a run of the chain (default: the latest)")
    s.add_argument("--failed-only", action="store_true", help="only jobs recorded failed or aborted")
    s.add_argument("--missing-only", action="store_true", help="only planned jobs with no record")
    s.add_argument("--allow-changes", action="store_true",
                   help="run even if the experiment YAML, spack.lock or a binary changed; the new run's "
                        "manifest lists what changed")
    s.add_argument("--config", metavar="PATH", help="ReFrame configuration (default: the one the run used)")
    s.add_argument("--dry-run", action="store_true", help="print what would run and stop")
    s.add_argument("--cancel-stale", action="store_true",
                   help="cancel the jobs a killed session left queued or running on the system "
                        "(default: wait for them to end; IOLAB_MEASURE_WAIT=0 refuses instead)")
    s.add_argument("reframe_args", nargs="*", metavar="-- REFRAME_ARG",
                   help="more ReFrame options after --, e.g. -- --exec-policy=serial")
    s.add_argument("--set-aside", action="store_true",
                   help="show the records that pass the integrity checks and name the others in a "
                        "note (default: refuse a run with records that fail them)")
    s.set_defaults(func=cmd_resume)

    s = sub.add_parser("search", help="run an experiment's search: rounds of adaptively chosen cases "
                       "through ReFrame (each a continuation run) until the budget is spent, then its "
                       "answer; run again to resume")
    s.add_argument("experiment", metavar="YAML|ID", help=YAML_HELP)
    s.add_argument("--profile", help="the profile to search (default: the experiment as written)")
    s.add_argument("--config", metavar="PATH",
                   help="ReFrame configuration (default: the search's, or reframe/config/local.py)")
    s.add_argument("--batch", type=int, default=1, metavar="N", help="cases per round (default 1)")
    s.add_argument("--rounds", type=int, metavar="N", help="stop after N rounds (resume later)")
    s.add_argument("--new", action="store_true", help="start another search instead of continuing "
                   "the latest")
    s.add_argument("--allow-changes", action="store_true",
                   help="continue even if the experiment YAML, spack.lock or a binary changed")
    s.add_argument("--dry-run", action="store_true", help="print the first round and stop")
    s.add_argument("reframe_args", nargs="*", metavar="-- REFRAME_ARG",
                   help="more ReFrame options after --")
    s.set_defaults(func=cmd_search)

    s = sub.add_parser("search-report", help="a search's answer: the best setting found, its 95%% "
                       "interval, cases run of the grid, the runner-up (Welch) and the model's optimum")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("run", nargs="?", metavar="RUN", help="a run of the chain (default: the latest)")
    s.add_argument("--objective", metavar="METRIC",
                   help="the metric to answer for (default: the search's; needed for a run of the "
                        "whole grid)")
    s.add_argument("--set-aside", action="store_true",
                   help="show the records that pass the integrity checks and name the others in a "
                        "note (default: refuse a run with records that fail them)")
    s.set_defaults(func=cmd_search_report)

    s = sub.add_parser("publish", help="write a self-contained report folder (HTML, Markdown, CSV, plots)",
                       description="iolab publish ID [--runs RUN ...] --out DIR: index.html with the "
                                   "experiment, provenance, tables, plots, requested vs applied, Darshan "
                                   "findings and the published study; tables.md, tables.csv, report.md, "
                                   "plots/. Results are only read.")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("--runs", nargs="+", metavar="RUN",
                   help="run ids (or unique prefixes/suffixes); default: the latest")
    s.add_argument("--out", required=True, metavar="DIR", help="a new or empty directory")
    add_column_options(s)
    s.add_argument("--force", action="store_true",
                   help="replace the files an earlier `iolab publish` wrote in DIR (others are left alone)")
    s.add_argument("--include-imported", action="store_true",
                   help="let 'latest' be an imported run too (default: the latest measured run)")
    s.add_argument("--set-aside", action="store_true",
                   help="show the records that pass the integrity checks and name the others in a "
                        "note (default: refuse a run with records that fail them)")
    s.set_defaults(func=cmd_publish)
    for name, verb in sub.choices.items():
        verb.formatter_class = _Formatter
        verb.epilog = "examples:\n" + "\n".join(f"  {line}" for line in EXAMPLES.get(name, ()))
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:            # bare `iolab`: what there is, not "arguments are required: command"
        build_parser().print_help()
        return 2
    args = build_parser().parse_args(argv)
    try:
        from .results.cache import cache_dir

        cache_dir()         # a cache inside the results is refused before any verb runs
        return args.func(args)
    except IolabError as exc:
        print(f"iolab: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        # `iolab plan X | head`: the reader has all it wanted; Python's own flush at exit must
        # not complain either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        # An input or output iolab could not use (permissions, a vanished file): one line.
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"iolab: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
