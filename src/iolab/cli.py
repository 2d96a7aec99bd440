"""iolab command line: argument parsing and printing only; the logic lives in the modules."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import __version__
from .errors import IolabError


def _root() -> Path:
    from .render import project_root

    return project_root()


def _experiment_path(ref: str) -> Path:
    """Accept a path to a YAML or a bare experiment id."""
    path = Path(ref)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return path
    return _root() / "experiments" / f"{ref}.yaml"


def cmd_validate(args) -> int:
    from .load import load_experiment
    from .matrix import expand

    failed = 0
    for ref in args.files:
        try:
            exp = load_experiment(_experiment_path(ref))
            counts = [f"{len(expand(exp))} cases"]
            for profile in exp.profiles:
                counts.append(f"{profile}: {len(expand(load_experiment(exp.path, profile)))}")
            print(f"ok: {exp.path} ({', '.join(counts)})")
        except IolabError as exc:
            failed += 1
            print(f"error: {exc}", file=sys.stderr)
    return 2 if failed else 0


def cmd_plan(args) -> int:
    from .benchmarks import get as get_benchmark
    from .load import load_experiment
    from .matrix import describe, expand, varied_keys
    from .units import format_bytes_human

    exp = load_experiment(_experiment_path(args.experiment), args.profile)
    cases = expand(exp)
    print(f"{exp.id}: {exp.description.strip()}")
    if exp.source:
        print(f"source: {exp.source}")
    print(f"profile: {exp.profile or '(base)'}  repetitions: {exp.repetitions}")
    print()
    rows = []
    total = 0
    parts = list(dict.fromkeys(c.part for c in cases))
    # Keys that vary anywhere in the experiment (storage between parts, say): two cases of two
    # parts never look the same.
    keys = varied_keys(cases)
    for c in cases:
        nbytes = get_benchmark(c.benchmark).bytes_written(c)
        total += nbytes * exp.repetitions
        rows.append([c.case_id, *([c.part] if len(parts) > 1 else []), c.benchmark, str(c.num_tasks),
                     format_bytes_human(nbytes), describe(c, keys) or "-"])
    header = ["case", *(["part"] if len(parts) > 1 else []), "bench", "tasks", "writes/case", "parameters"]
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    print()
    print(f"cases: {len(cases)}  jobs: {len(cases) * exp.repetitions}  "
          f"bytes written: {format_bytes_human(total)} ({total} B)")
    if args.suggest_reps:
        from .report import render_rep_suggestions, report_settings, suggest_reps
        from .results import list_runs, results_root

        if args.target_ci <= 0:
            raise IolabError(f"--target-ci {args.target_ci}: must be a positive percentage")
        runs = list_runs(results_root(_root()), exp.id)
        chosen = report_settings({"experiment_yaml": exp.text}).get("metrics")
        rows = suggest_reps(runs, cases, exp.repetitions, args.target_ci,
                            {b: chosen for b in exp.benchmarks} if chosen else None)
        print()
        print(render_rep_suggestions(rows, exp.id, len(runs), args.target_ci, exp.repetitions))
    return 0


def cmd_render(args) -> int:
    from .shims import sync_shims

    root = _root()
    changes = sync_shims(root / "experiments", root / "reframe" / "generated", check_only=args.check)
    for line in changes:
        print(line)
    if args.check and changes:
        print("shims are out of date: run `iolab render`", file=sys.stderr)
        return 1
    if not changes:
        print("all shims up to date")
    return 0


def _run_state(exp_id: str, run: str | None, include_imported: bool):
    """The chosen run's state (manifest, records, completeness); a run without a readable
    record is an error."""
    from .results import find_run, results_root, run_state

    state = run_state(find_run(results_root(_root()), exp_id, run, include_imported))
    if not state.records:
        why = f" ({len(state.unreadable)} unreadable line(s) skipped)" if state.unreadable else ""
        raise IolabError(f"run {state.run_id} of {exp_id!r} has no readable records{why}",
                         hint=f"{state.describe()}; see `iolab runs {exp_id}`")
    return state


def _tables(state, metrics, darshan_columns: str | None = None):
    from .report import DARSHAN, build_tables, default_metrics, report_settings, with_darshan_columns

    records = state.records
    settings = report_settings(state.manifest)
    if darshan_columns:
        from .darshan import parse_columns

        columns = parse_columns(darshan_columns)
        records = with_darshan_columns(records, columns)
        if metrics is None:
            bench = records[0]["benchmark"]
            metrics = list(settings.get("metrics") or default_metrics(bench))
            present = {m["name"] for r in records for m in r.get("metrics", [])}
            metrics = [m for m in metrics if m in present]
        metrics = metrics + [DARSHAN + c for c in columns]
    return build_tables(records, metrics, settings)


def _print_run_notes(state, label: str = "") -> None:
    for note in state.notes():
        print(f"iolab: note: {label}{note}", file=sys.stderr)


def cmd_table(args) -> int:
    from .report import render

    metrics = args.metrics.split(",") if args.metrics else None
    state = _run_state(args.experiment, args.run, args.include_imported)
    tables = _tables(state, metrics, args.darshan)
    if args.format == "csv":
        _print_run_notes(state)     # CSV readers get the table only
    sys.stdout.write(render(tables, args.format, state))
    if args.format == "md":         # an experiment tagged io500: its phase table and score
        from . import io500

        if io500.applies(state.manifest):
            sys.stdout.write(io500.render(state.records))
    return 0


def cmd_compare(args) -> int:
    from .compare import Side, compare_by_param, compare_runs, render_comparison
    from .published import PREFIX, load_study
    from .studies import compare_study, render_study

    metrics = args.metrics.split(",") if args.metrics else None
    runs = list(args.runs)

    def side(run, label):
        state = _run_state(args.experiment, run, args.include_imported)
        _print_run_notes(state, f"run {state.run_id}: ")
        return Side(label, state.path, state.manifest, state.records)

    study = runs.pop() if runs and runs[-1].startswith(PREFIX) else None
    if args.by or study:
        if len(runs) > 1:
            raise IolabError("give one run (or none for the latest) with --by or published:STUDY")
        one = side(runs[0] if runs else None, "run")
        if study:
            result = compare_study(one, load_study(study, _root()), args.experiment, metric=args.metric,
                                   where=args.where, ignore=args.ignore, pick=args.pick,
                                   table=args.table, exact=args.exact)
            print(render_study(result))
            return 0
        if args.baseline is None:
            raise IolabError("--by needs --baseline VALUE, e.g. --by lustre.stripe_count --baseline 1")
        print(render_comparison(compare_by_param(one, args.by, args.baseline, metrics)))
        return 0
    if len(runs) != 2:
        raise IolabError("compare two runs (ID RUN_A RUN_B), one run by a parameter "
                         "(ID [RUN] --by KEY --baseline VALUE) or a run with a study (ID RUN published:NAME)")
    a, b = side(runs[0], "A"), side(runs[1], "B")
    print(render_comparison(compare_runs(a, b, metrics)))
    return 0


def cmd_parse(args) -> int:
    from .benchmarks import get as get_benchmark
    from .errors import ParseError

    adapter = get_benchmark(args.benchmark)
    status = 0
    for name in args.files:
        try:
            (parsed,) = adapter.parse_files([Path(name)])
        except (ParseError, OSError) as exc:
            print(f"iolab: {name}: {exc}", file=sys.stderr)
            status = 1
            continue
        for m in parsed.metrics:
            print(json.dumps({"file": name, **m.as_dict(), "version": parsed.version}))
    return status


def cmd_import(args) -> int:
    from .importer import import_files

    run = import_files(args.benchmark, [Path(f) for f in args.files], args.into,
                       params=args.param or [], label=args.label, trust_params=args.trust_params)
    print(f"imported {len(args.files)} file(s) into {run.path}")
    print(f"an imported run: `iolab table {args.into}` shows the latest measured run; add "
          f"--include-imported or --run {run.run_id} for this one")
    return 0


def cmd_darshan(args) -> int:
    from . import darshan
    from .darshan import view
    from .results import RunDir, find_run, is_experiment_id, results_root

    out_dir = Path(args.html) if args.html else None
    shown = []
    status = 0
    target = args.targets[0]
    if len(args.targets) > 1 or Path(target).exists() or not is_experiment_id(target):
        # Any Darshan logs, e.g. from production jobs. Every log is shown; one that cannot be
        # read makes the exit status 1.
        for target in args.targets:
            summary = darshan.summarize(target)
            found = darshan.findings(summary, {}) if summary["status"] == "ok" else []
            shown.append({"log": target, "summary": summary, "findings": found})
            if summary["status"] != "ok":
                print(f"iolab: {target}: {summary['status']}: {summary.get('reason')}", file=sys.stderr)
                status = 1
            elif out_dir:
                shown[-1]["html"] = str(darshan.html_report(target, out_dir))
    else:
        run = RunDir(find_run(results_root(_root()), target, args.run, args.include_imported))
        recs = [r for r in run.records() if (r.get("observed") or {}).get("darshan")
                and (args.case is None or r["case_id"].startswith(args.case)
                     or (len(r["case_id"]) == 8 and args.case.startswith(r["case_id"])))]
        if not recs:
            raise IolabError(f"run {run.run_id} has no Darshan data"
                             + (f" for case {args.case}" if args.case else ""),
                             hint="enable it with darshan: {enabled: true} or IOLAB_DARSHAN=1")
        work = view.scratch_dir()
        for rec in recs:
            dar = rec["observed"]["darshan"]
            item = {"case_id": rec["case_id"], "repetition": rec["repetition"],
                    "summary": dar.get("summary") or {"status": dar["status"], "reason": dar.get("reason")},
                    "findings": dar.get("findings", []), "aggregators": dar.get("aggregators")}
            log = view.stored_log(run.path, rec)
            if out_dir and log is not None and dar.get("status") == "ok":
                item["html"] = str(darshan.html_report(view.readable_copy(log, work),
                                                       out_dir / f"{rec['case_id']}-rep{rec['repetition']}"))
            shown.append(item)
    if args.json:
        print(json.dumps(shown, indent=2, default=str))
        return status
    for item in shown:
        title = item.get("log") or f"case {item['case_id']} rep {item['repetition']}"
        print(view.render(title, item["summary"], item["findings"], item.get("aggregators")))
        if item.get("html"):
            print(f"   job summary: {item['html']}")
    return status


def cmd_runs(args) -> int:
    from .results import list_runs, no_runs_error, results_root, run_state

    root = results_root(_root())
    paths = list_runs(root, args.experiment)
    if not paths:
        raise no_runs_error(root, args.experiment)
    status = 0
    for path in paths:
        try:
            state = run_state(path)
        except IolabError as exc:      # one bad run does not hide the others
            print(f"{path.name}  unreadable: {exc}")
            status = 1
            continue
        line = (f"{path.name}  {state.origin:8}  {state.system or '-':20}  {state.counts_text()}  "
                f"{state.describe()}")
        if state.unreadable:
            line += f"; {len(state.unreadable)} unreadable line(s) skipped"
        if state.unsaved:
            line += f"; unmerged: {', '.join(state.unsaved)}"
        print(line)
        if args.stack:
            from .results import load_records
            from .stack import summarize

            for text in summarize(load_records(path)) or ["stack: not recorded"]:
                print(f"    {text}")
    if status:
        print(f"iolab: error: some runs of {args.experiment!r} are unreadable (see above)", file=sys.stderr)
    return status


def cmd_publish(args) -> int:
    from .publish import publish

    done = publish(args.experiment, Path(args.out), args.runs, force=args.force,
                   include_imported=args.include_imported)
    for note in done.notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"published {args.experiment} (run{'s' if len(done.runs) > 1 else ''} "
          f"{', '.join(done.runs)}): {len(done.files)} files, {done.plots} plot(s) in {done.out}")
    print(f"open {done.out / 'index.html'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="iolab", description=__doc__)
    p.add_argument("--version", action="version", version=f"iolab {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("validate", help="check experiment YAMLs against the schema")
    s.add_argument("files", nargs="+", metavar="YAML")
    s.set_defaults(func=cmd_validate)

    s = sub.add_parser("plan", help="list an experiment's cases, jobs and bytes written")
    s.add_argument("experiment", metavar="YAML|ID")
    s.add_argument("--profile")
    s.add_argument("--suggest-reps", action="store_true",
                   help="suggest repetitions per case from earlier runs of the same case ids")
    s.add_argument("--target-ci", type=float, default=5.0, metavar="PERCENT",
                   help="target 95%% CI half-width as a percentage of the mean (default 5)")
    s.set_defaults(func=cmd_plan)

    s = sub.add_parser("render", help="(re)generate the ReFrame shims in reframe/generated/")
    s.add_argument("--check", action="store_true", help="only report stale shims (exit 1)")
    s.set_defaults(func=cmd_render)

    s = sub.add_parser("table", help="print a run's comparison table")
    s.add_argument("experiment", metavar="ID")
    s.add_argument("--run", help="run id (or a unique prefix/suffix); default: the latest")
    s.add_argument("--format", choices=["md", "csv", "json"], default="md")
    s.add_argument("--metrics", help="comma-separated metric names, e.g. write_bw,write_bw_max")
    s.add_argument("--darshan", metavar="COLUMNS",
                   help="add Darshan columns, e.g. small_write_pct,agg_ranks,posix_write_time")
    s.add_argument("--include-imported", action="store_true",
                   help="let 'latest' be an imported run too (default: the latest measured run)")
    s.set_defaults(func=cmd_table)

    s = sub.add_parser("compare", help="two runs, two values of a parameter, or a run and a published study",
                       description="iolab compare ID RUN_A RUN_B | ID [RUN] --by KEY --baseline VALUE | "
                                   "ID RUN published:STUDY")
    s.add_argument("experiment", metavar="ID")
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
    s.set_defaults(func=cmd_compare)

    s = sub.add_parser("parse", help="print metrics parsed from benchmark outputs as JSON lines")
    s.add_argument("benchmark")
    s.add_argument("files", nargs="+", metavar="FILE")
    s.set_defaults(func=cmd_parse)

    s = sub.add_parser("import", help="import outputs of runs made outside iolab into a results run")
    s.add_argument("benchmark")
    s.add_argument("files", nargs="+", metavar="FILE")
    s.add_argument("--into", required=True, metavar="ID", help="experiment id to file the run under")
    s.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="a parameter of the imported case (repeatable), e.g. lustre.stripe_count=4")
    s.add_argument("--label", help="free text stored in the manifest, e.g. the source system")
    s.add_argument("--trust-params", action="store_true",
                   help="import --param values even where the benchmark's output says it ran otherwise")
    s.set_defaults(func=cmd_import)

    s = sub.add_parser("darshan", help="Darshan summary and findings of a run's cases, or of any logs")
    s.add_argument("targets", nargs="+", metavar="ID|LOG")
    s.add_argument("--run", help="run id (or a unique prefix/suffix); default: the latest")
    s.add_argument("--case", help="a case id (or its prefix)")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.add_argument("--html", metavar="DIR", help="also write PyDarshan's HTML job summary into DIR")
    s.add_argument("--include-imported", action="store_true",
                   help="let 'latest' be an imported run too (default: the latest measured run)")
    s.set_defaults(func=cmd_darshan)

    s = sub.add_parser("runs", help="list an experiment's results runs: origin, system, records by "
                       "status, complete or not")
    s.add_argument("experiment", metavar="ID")
    s.add_argument("--stack", action="store_true",
                   help="also show what supplied each run's benchmarks: provider, spack.lock sha256, "
                        "binaries and their versions")
    s.set_defaults(func=cmd_runs)

    s = sub.add_parser("publish", help="write a self-contained report folder (HTML, Markdown, CSV, plots)",
                       description="iolab publish ID [--runs RUN ...] --out DIR: index.html with the "
                                   "experiment, provenance, tables, plots, requested vs applied, Darshan "
                                   "findings and the published study; tables.md, tables.csv, report.md, "
                                   "plots/. Results are only read.")
    s.add_argument("experiment", metavar="ID")
    s.add_argument("--runs", nargs="+", metavar="RUN",
                   help="run ids (or unique prefixes/suffixes); default: the latest")
    s.add_argument("--out", required=True, metavar="DIR", help="a new or empty directory")
    s.add_argument("--force", action="store_true",
                   help="replace the files an earlier `iolab publish` wrote in DIR (others are left alone)")
    s.add_argument("--include-imported", action="store_true",
                   help="let 'latest' be an imported run too (default: the latest measured run)")
    s.set_defaults(func=cmd_publish)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except IolabError as exc:
        print(f"iolab: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        # An input or output iolab could not use (permissions, a vanished file): one line.
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"iolab: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
