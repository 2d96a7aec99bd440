"""`iolab reproduce`: one recorded case re-run, or another site's study re-run from its bundle."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import IolabError
from ..results.bundle import SUFFIXES
from ..results.runfiles import is_experiment_id
from .common import ID_HELP, error, project_dir

VERB = "reproduce"
EXAMPLES = ["iolab reproduce quickstart RUN CASE", "iolab reproduce --record line.json",
            "iolab reproduce quickstart.tar.gz --system local      # a site's bundle, its whole study",
            "iolab reproduce q.tar.gz RUN --system local-romio --dry-run"]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="re-run one recorded case from what its run stored (the YAML "
                       "as run, profile, system), or another site's study from its bundle on a "
                       "system here, and compare the result with the original",
                       description="iolab reproduce ID RUN CASE [--rep N] | --record FILE|- | "
                                   "FILE [RUN] --system SYSTEM [--site NAME] [--dry-run]")
    s.add_argument("experiment", nargs="?", metavar="ID|FILE",
                   help=ID_HELP + "; or a bundle (`iolab bundle`: NAME.tar, .tar.gz or .tgz) whose "
                   "study to re-run; or give --record")
    s.add_argument("run", nargs="?", metavar="RUN", help="the run id (or a unique prefix/suffix); "
                   "with a bundle, one of its runs: the experiment as that run ran it")
    s.add_argument("case", nargs="?", metavar="CASE", help="a case id (or a unique prefix)")
    s.add_argument("--rep", type=int, help="one of the repetitions the run has or planned for the "
                   "case (default: every one it has)")
    s.add_argument("--record", metavar="FILE|-", help="a records.jsonl line (a UTF-8 JSON object; the "
                   "first line of FILE) instead of ID RUN CASE")
    s.add_argument("--config", metavar="PATH", help="ReFrame configuration (default: the one the run used)")
    g = s.add_argument_group("a site's bundle: its study re-run here (FILE [RUN] --system SYSTEM)")
    g.add_argument("--system", metavar="SYSTEM", help="the system to run it on: "
                   "reframe/config/SYSTEM.py, as `scripts/run ID SYSTEM` takes it")
    g.add_argument("--site", metavar="NAME", help="the site to file the bundle's runs under "
                   "(default: the bundle's), as `iolab import-bundle --site`")
    g.add_argument("--dry-run", action="store_true", help="check the bundle and the system and "
                   "say what would run; store and run nothing")
    s.set_defaults(func=run)


def is_bundle(arg: str | None) -> bool:
    """Whether ID|FILE names a bundle: a name `iolab bundle --out` takes, or a file an
    experiment id (kebab-case, never a '.' or '/') cannot name."""
    return arg is not None and (arg.endswith(SUFFIXES) or (not is_experiment_id(arg)
                                                          and Path(arg).is_file()))


RECORD_FIELDS = {"experiment": str, "run_id": str, "case_id": str, "repetition": int}


MAX_RECORD_LINE = 16 << 20     # bytes: a record line is a few KiB; more is not one


def _record_arg(spec: str) -> dict:
    """The first line of FILE (or of stdin for -) as a record: a UTF-8 JSON object naming its
    experiment, run, case and repetition."""
    name = "--record " + ("-" if spec == "-" else spec)
    if spec == "-":
        data = sys.stdin.buffer.readline(MAX_RECORD_LINE + 1)
    else:
        from ..results.files import MAX_RECORDS_BYTES, open_regular

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


def run(args) -> int:
    """Re-run one recorded case from what its run stored, then set the new result against it."""
    from ..campaigns import campaign
    from ..analysis.compare import render_comparison
    from ..results.runfiles import results_root
    from ..results import notes as run_notes
    from ..results.run import load_run, run_dir

    if is_bundle(args.experiment):
        return rerun_bundle(args)
    given = [o for o, v in (("--system", args.system), ("--site", args.site),
                            ("--dry-run", args.dry_run)) if v]
    if given:
        raise IolabError(f"{', '.join(given)}: for a bundle's study; give the bundle's FILE "
                         f"(NAME{', NAME'.join(SUFFIXES)}) first",
                         hint="iolab reproduce FILE [RUN] --system SYSTEM")
    root = project_dir()
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
    run = load_run(run_dir(res, exp_id, run_id, True), root)
    run_notes.vouch(run)     # the original is what the reproduction is set against: its records must hold
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
        error(f"reframe made no run (exit status {status})")
        return status or 1
    print(render_comparison(job.compared(load_run(new, root))))
    return status


def rerun_bundle(args) -> int:
    """Another site's study from its bundle: checked as `iolab import-bundle` checks it, the
    system asked whether it can run every case, the runs stored, the experiment as run run here,
    then each of the bundle's runs compared with the new one as `iolab compare` compares them."""
    import tempfile

    from ..campaigns import rerun
    from ..results.runfiles import check_site, results_root
    from ..results.unbundle import verified
    from .import_bundle import print_stored

    given = [o for o, v in (("CASE", args.case), ("--rep", args.rep is not None),
                            ("--record", args.record), ("--config", args.config)) if v]
    if given:
        raise IolabError(f"{', '.join(given)}: for one case of a run here; a bundle's study is "
                         "re-run whole: iolab reproduce FILE [RUN] --system SYSTEM")
    root = project_dir()
    if not args.system:
        raise IolabError(f"{args.experiment}: a bundle's study runs on a system here: give "
                         "--system SYSTEM", hint=f"the systems: {rerun.systems(root)}")
    config = rerun.configuration(root, args.system)
    site = check_site(args.site, "--site") if args.site else None
    res = results_root(root)
    with tempfile.TemporaryDirectory(prefix="iolab-rerun-") as tmp:
        with verified(Path(args.experiment), root) as bundle:     # its copy gone before the run
            site = site or bundle.contents.site
            job = rerun.Rerun.of(bundle, args.run, site, Path(tmp) / "project", root, res,
                                 args.system, config)
            study = job.study
            print(f"{args.experiment}: sha256 {bundle.sha256}; every file and chain verified")
            print(f"re-running {study.experiment} as {', '.join(f'{r}@{site}' for r in study.runs)} "
                  f"ran it ({study.describe()}) on {args.system}")
            if args.dry_run:
                job.dry_run()
                return 0
            stored = bundle.store(res, site)
        print_stored(stored)
        status, new = job.run(stored)
    if new is None:
        error(f"reframe made no run of {study.experiment} (exit status {status})")
        return status or 1
    for first in study.firsts:
        _compare(study.experiment, f"{first}@{site}", new.name)
    if status:
        error(f"reframe ended with exit status {status}: run {new.name} is not all the study "
              f"(`iolab runs {study.experiment} {new.name}` says what it holds)")
    return status


def _compare(experiment: str, original: str, again: str) -> None:
    """`iolab compare ID ORIGINAL AGAIN`, printed as that verb prints it: its own parser and
    handler, so what it shows of two runs (and of two sites) is shown here too."""
    from . import compare

    parser = argparse.ArgumentParser(prog="iolab")
    compare.add_parser(parser.add_subparsers())
    print(f"\n$ iolab compare {experiment} {original} {again}")
    compare.run(parser.parse_args([compare.VERB, experiment, original, again]))
