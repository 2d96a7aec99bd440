"""`iolab submit`: a campaign as one Slurm batch job, each of its jobs a step of it."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import IolabError
from .common import ID_HELP, project_dir

VERB = "submit"
EXAMPLES = ["iolab submit cp2k-aggregators localcluster --nodes 4 --time 30",
            "iolab submit cp2k-aggregators localcluster --nodes 4 --time 1:00:00 --resume",
            "iolab submit quickstart mycluster --nodes 1 --time 20 --dry-run"]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="submit one Slurm batch job that runs a whole campaign inside "
                       "it, each job an srun step (scripts/run --in-allocation); one queue wait")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("system", metavar="SYSTEM",
                   help="a Slurm system: the name of its configuration in reframe/config")
    s.add_argument("--nodes", type=int, required=True,
                   help="nodes the allocation holds: the largest node count of its cases")
    s.add_argument("--time", required=True, metavar="LIMIT",
                   help="the allocation's time limit, as Slurm takes it (30, 1:30:00, 1-12); a "
                        "job whose limit does not fit in what is left is not started (resume it)")
    s.add_argument("--resume", nargs="?", const="", metavar="RUN",
                   help="run the jobs of the run's chain that have no ok record (iolab resume), "
                        "default: its latest run")
    s.add_argument("--dry-run", action="store_true", help="write the batch script, print it, stop")
    s.set_defaults(func=run)


def run(args) -> int:
    from ..campaigns import submit
    from .common import experiment_path

    root = project_dir()
    submit.check(args.nodes, args.time)
    config = root / "reframe" / "config" / f"{args.system}.py"
    if not config.is_file():
        known = " ".join(sorted(p.stem for p in config.parent.glob("*.py")))
        raise IolabError(f"no system {args.system!r} (no reframe/config/{args.system}.py)",
                         hint=f"the systems: {known}")
    if not experiment_path(args.experiment).is_file():
        raise IolabError(f"no experiment {args.experiment!r} (no experiments/{args.experiment}.yaml)")
    batch = submit.Batch(args.experiment, args.system, args.nodes, args.time,
                         submit.partition_access(config), args.resume)
    out = Path(os.environ.get("IOLAB_RFM_OUTPUT", str(root / "reframe" / "output")))
    script = submit.write(batch, root, out)
    if args.dry_run:
        print(script.read_text(), end="")
        print(f"(written to {script}; not submitted)")
        return 0
    jobid = submit.submit(script)
    print(f"submitted batch job {jobid}: {args.experiment} on {args.system}, one allocation of "
          f"{args.nodes} node(s) for {args.time}; script {script}")
    print(f"  its output: {script.with_suffix('')}-{jobid}.out; then: iolab status {args.experiment}")
    return 0
