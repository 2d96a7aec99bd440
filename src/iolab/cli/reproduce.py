"""`iolab reproduce`: one recorded case re-run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import IolabError
from .common import ID_HELP, error, project_dir

VERB = "reproduce"
EXAMPLES = ["iolab reproduce quickstart RUN CASE", "iolab reproduce --record line.json"]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="re-run one recorded case from what its run stored (the YAML "
                       "as run, profile, system) and compare the result with the original")
    s.add_argument("experiment", nargs="?", metavar="ID", help=ID_HELP + "; or give --record")
    s.add_argument("run", nargs="?", metavar="RUN", help="the run id (or a unique prefix/suffix)")
    s.add_argument("case", nargs="?", metavar="CASE", help="a case id (or a unique prefix)")
    s.add_argument("--rep", type=int, help="one of the repetitions the run has or planned for the "
                   "case (default: every one it has)")
    s.add_argument("--record", metavar="FILE|-", help="a records.jsonl line (a UTF-8 JSON object; the "
                   "first line of FILE) instead of ID RUN CASE")
    s.add_argument("--config", metavar="PATH", help="ReFrame configuration (default: the one the run used)")
    s.set_defaults(func=run)


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
