"""`iolab compare`: two runs, a parameter's values, or a run and a study."""

from __future__ import annotations

from ..errors import IolabError
from ..layers.registry import example_param
from .common import (ID_HELP, add_include_imported, add_set_aside, metrics_arg, print_run_notes,
                    project_dir)

VERB = "compare"
EXAMPLES = [
    "iolab compare quickstart RUN_A RUN_B",
    "iolab compare quickstart RUN RUN_B@archer2     # against another site's run (import-bundle)",
    "iolab compare quickstart --by bs --baseline 4KiB",
    "iolab compare archer-fpp-vs-ssf RUN published:archer-fpp-ssf   # an IOR experiment",
]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="two runs, two values of a parameter, or a run and a published study",
                       description="iolab compare ID RUN_A RUN_B | ID [RUN] --by KEY --baseline VALUE | "
                                   "ID RUN published:STUDY")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("runs", nargs="*", metavar="RUN",
                   help="run ids (or unique prefixes/suffixes), RUN@SITE for another site's "
                        "(imported with import-bundle); published:STUDY for a study in "
                        "results/published/")
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
    add_include_imported(s)
    add_set_aside(s)
    s.set_defaults(func=run)


def run(args) -> int:
    from ..results.run import no_gc

    with no_gc():       # thousands of pairs, no cycles: a third of compare_by_param's time
        return _compare(args)


def _compare(args) -> int:
    from ..analysis.compare import Side, compare_by_param, render_comparison
    from ..analysis.published.study import PREFIX, load_study
    from ..results.choose import chosen_run

    runs = list(args.runs)

    def side(run, label):
        state = chosen_run(project_dir(), args.experiment, run, args.include_imported, args.set_aside)
        print_run_notes(state, f"run {state.run_id}: ")
        return Side(label, state)

    study = runs.pop() if runs and runs[-1].startswith(PREFIX) else None
    if args.by or study:
        if len(runs) > 1:
            raise IolabError("give one run (or none for the latest) with --by or published:STUDY")
        one = side(runs[0] if runs else None, "run")
        if study:
            from ..analysis.published.studies import compare_study, render_study   # jsonschema with it

            result = compare_study(one, load_study(study, project_dir()), metric=args.metric,
                                   where=args.where, ignore=args.ignore, pick=args.pick,
                                   table=args.table, exact=args.exact)
            print(render_study(result))
            return 0
        if args.baseline is None:
            example = example_param()
            raise IolabError("--by needs --baseline VALUE" + (
                f", e.g. --by {example.key} --baseline {example.baseline}" if example else ""))
        print(render_comparison(compare_by_param(one, args.by, args.baseline,
                                                 metrics_arg(args.metrics, one.run))))
        return 0
    if len(runs) == 1:
        one = chosen_run(project_dir(), args.experiment, runs[0], args.include_imported, args.set_aside)
        varied = sorted({k for rec in one.records for k in rec.varied})
        raise IolabError(f"one run ({one.run_id}): give another to compare it with (ID RUN_A RUN_B), "
                         "or compare its cases by a parameter with --by KEY --baseline VALUE",
                         hint=f"its cases vary {', '.join(varied)}" if varied else None)
    if len(runs) != 2:
        raise IolabError("compare two runs (ID RUN_A RUN_B), one run by a parameter "
                         "(ID [RUN] --by KEY --baseline VALUE) or a run with a study (ID RUN published:NAME)")
    from ..results.run import run_dir
    from ..results.runfiles import results_root

    path_a, path_b = (run_dir(results_root(project_dir()), args.experiment, r, args.include_imported)
                      for r in runs)
    if path_a == path_b:
        raise IolabError(f"{runs[0]} and {runs[1]} are the same run, {path_a.name}: compare two runs, "
                         "or one run's cases by a parameter (--by KEY --baseline VALUE)")
    from ..analysis.sites import compare_sites, render_sites

    a, b = side(runs[0], "A"), side(runs[1], "B")
    print(render_sites(compare_sites(a, b, metrics_arg(args.metrics, a.run, b.run))))
    return 0
