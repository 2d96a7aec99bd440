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
    from .adapters import get_adapter
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
    for part in dict.fromkeys(c.part for c in cases):
        pcases = [c for c in cases if c.part == part]
        keys = varied_keys(pcases)
        for c in pcases:
            nbytes = get_adapter(c.benchmark).bytes_written(c)
            total += nbytes * exp.repetitions
            rows.append([c.case_id, c.benchmark, str(c.num_tasks), format_bytes_human(nbytes),
                         describe(c, keys) or "-"])
    header = ["case", "bench", "tasks", "writes/case", "parameters"]
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    print()
    print(f"cases: {len(cases)}  jobs: {len(cases) * exp.repetitions}  "
          f"bytes written: {format_bytes_human(total)} ({total} B)")
    return 0


def cmd_render(args) -> int:
    from .render import sync_shims

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


def _tables(exp_id: str, run: str | None, metrics):
    from .report import build_tables, report_settings
    from .results import RunDir, find_run, results_root

    path = find_run(results_root(_root()), exp_id, run)
    rundir = RunDir(path)
    records = rundir.records()
    if not records:
        raise IolabError(f"run {path.name} has no records yet")
    return path, build_tables(records, metrics, report_settings(rundir.manifest()))


def cmd_table(args) -> int:
    from .report import render

    metrics = args.metrics.split(",") if args.metrics else None
    path, tables = _tables(args.experiment, args.run, metrics)
    sys.stdout.write(render(tables, args.format))
    return 0


def cmd_compare(args) -> int:
    from .report import compare_tables

    metrics = args.metrics.split(",") if args.metrics else None
    pa, ta = _tables(args.experiment, args.run_a, metrics)
    pb, tb = _tables(args.experiment, args.run_b, metrics)
    print(compare_tables(ta, tb, "A", "B"))
    print(f"A = {pa.name}\nB = {pb.name}")
    return 0


def cmd_parse(args) -> int:
    from .adapters import get_adapter
    from .errors import ParseError

    adapter = get_adapter(args.benchmark)
    status = 0
    for name in args.files:
        try:
            (parsed,) = adapter.parse_files([Path(name)])
        except ParseError as exc:
            print(f"iolab: {name}: {exc}", file=sys.stderr)
            status = 1
            continue
        for m in parsed.metrics:
            print(json.dumps({"file": name, **m.as_dict(), "version": parsed.version}))
    return status


def cmd_import(args) -> int:
    from .importer import import_files

    run = import_files(args.benchmark, [Path(f) for f in args.files], args.into,
                       params=args.param or [], label=args.label)
    print(f"imported {len(args.files)} file(s) into {run.path}")
    return 0


def cmd_runs(args) -> int:
    from .results import RunDir, list_runs, results_root

    for path in list_runs(results_root(_root()), args.experiment):
        run = RunDir(path)
        recs = run.records()
        ok = sum(r.get("status") == "ok" for r in recs)
        m = run.manifest()
        print(f"{path.name}  {m.get('origin', '?'):9}  {m.get('system') or '-':20}  "
              f"records={len(recs)} ok={ok}")
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
    s.set_defaults(func=cmd_plan)

    s = sub.add_parser("render", help="(re)generate the ReFrame shims in reframe/generated/")
    s.add_argument("--check", action="store_true", help="only report stale shims (exit 1)")
    s.set_defaults(func=cmd_render)

    s = sub.add_parser("table", help="print a run's comparison table")
    s.add_argument("experiment", metavar="ID")
    s.add_argument("--run", help="run id (or a unique prefix/suffix); default: the latest")
    s.add_argument("--format", choices=["md", "csv", "json"], default="md")
    s.add_argument("--metrics", help="comma-separated metric names, e.g. write_bw,write_bw_max")
    s.set_defaults(func=cmd_table)

    s = sub.add_parser("compare", help="two runs of an experiment side by side")
    s.add_argument("experiment", metavar="ID")
    s.add_argument("run_a", metavar="RUN_A")
    s.add_argument("run_b", metavar="RUN_B")
    s.add_argument("--metrics")
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
    s.set_defaults(func=cmd_import)

    s = sub.add_parser("runs", help="list an experiment's results runs")
    s.add_argument("experiment", metavar="ID")
    s.set_defaults(func=cmd_runs)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except IolabError as exc:
        print(f"iolab: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
