"""`iolab validate`: check experiment YAMLs against the schema."""

from __future__ import annotations


from ..errors import IolabError
from .common import YAML_HELP, error, experiment_path, note

VERB = "validate"
EXAMPLES = ["iolab validate experiments/quickstart.yaml", "iolab validate experiments/*.yaml"]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="check experiment YAMLs against the schema")
    s.add_argument("files", nargs="+", metavar="YAML", help=YAML_HELP)
    s.set_defaults(func=run)


def run(args) -> int:
    from ..experiment.load import load_experiment
    from ..experiment.matrix import expand

    failed = 0
    for ref in args.files:
        try:
            exp = load_experiment(experiment_path(ref))
            for text in exp.notes:
                note(text)
            counts = [f"{len(expand(exp))} cases"]
            for profile in exp.profiles:
                counts.append(f"{profile}: {len(expand(load_experiment(exp.path, profile)))}")
            print(f"ok: {exp.path} ({', '.join(counts)})")
        except IolabError as exc:
            failed += 1
            error(str(exc))
    return 2 if failed else 0
