"""`iolab list`: the experiments, one line each."""

from __future__ import annotations

from ..errors import IolabError
from .common import project_dir

VERB = "list"
EXAMPLES = ["iolab list"]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="the experiments, one line each: profiles, parts, last run")
    s.set_defaults(func=run)


def run(args) -> int:
    """The experiments of this project, one line each: profiles, parts, last run."""
    from ..experiment.load import load_experiment
    from ..results.choose import latest_run_text

    root = project_dir()
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
        last = latest_run_text(root, exp.id)
        print(f"{exp.id}  profiles: {', '.join(exp.profiles) or '-'}  parts: {parts}  {last}")
    return 0
