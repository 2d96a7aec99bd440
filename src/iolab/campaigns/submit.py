"""A whole campaign as one Slurm batch job (`iolab submit`): the job holds the nodes the
experiment's largest case needs for the time asked, and runs `scripts/run --in-allocation` (or
`iolab resume --in-allocation`) inside it, so that each case is a step of it (rfm/allocation.py)
and the campaign waits in the queue once.

The batch script is written beside ReFrame's output and kept: it is what was submitted. Every
value in it is checked (node count, time) or quoted (shell.py); the partition's `access` options
(its Slurm partition, account, QoS) come from the system's own configuration.
"""

from __future__ import annotations

import os
import re
import runpy
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import shell
from ..errors import IolabError
from ..rfm.allocation import ENV as ALLOCATION_ENV

# Slurm's --time forms: minutes, minutes:seconds, hours:minutes:seconds, days-hours,
# days-hours:minutes, days-hours:minutes:seconds
_TIME = re.compile(r"\d+(:\d{1,2}){0,2}|\d+-\d+(:\d{1,2}){0,2}")


@dataclass
class Batch:
    experiment: str
    system: str                   # a configuration of reframe/config (its file name's stem)
    nodes: int
    time: str
    access: list[str] = field(default_factory=list)   # the partition's sbatch options
    resume: str | None = None     # continue this run's chain instead ("" = the latest)

    def command(self) -> list[str]:
        if self.resume is not None:
            return ["iolab", "resume", self.experiment, *([self.resume] if self.resume else []),
                    "--in-allocation"]
        return ["scripts/run", "--in-allocation", self.experiment, self.system]

    def script(self, root: Path, output: str) -> str:
        directives = [f"--job-name=iolab-{self.experiment}", f"--nodes={self.nodes}",
                      f"--time={self.time}", "--exclusive", f"--output={output}", *self.access]
        for line in directives:
            shell.check_line(line, "sbatch option")
        return "\n".join([
            "#!/bin/bash",
            *(f"#SBATCH {d}" for d in directives),
            "# one allocation for the whole campaign: each job a step of it (docs/campaigns.md)",
            "set -eu",
            f"cd {shell.path_word(str(root), 'project directory')}",
            f"exec {shell.join(self.command(), 'command')}",
            "",
        ])


def check(nodes: int, limit: str) -> None:
    if nodes < 1:
        raise IolabError(f"--nodes: {nodes}: give a node count of at least 1")
    if not _TIME.fullmatch(limit):
        raise IolabError(f"--time: {limit!r} is not a Slurm time limit",
                         hint="minutes (90), hours:minutes:seconds (1:30:00) or days-hours (1-12)")


def partition_access(config: Path) -> list[str]:
    """The sbatch options of the first Slurm partition the configuration defines, loaded as
    ReFrame would (in job mode: IOLAB_IN_ALLOCATION is not set while it loads). The
    configuration may point Slurm's commands at its own cluster (SLURM_CONF): that stays set."""
    saved = os.environ.pop(ALLOCATION_ENV, None)
    try:
        site = runpy.run_path(str(config))["site_configuration"]
    except Exception as exc:  # noqa: BLE001 - a broken configuration, said in one line
        raise IolabError(f"{config}: cannot be loaded: {type(exc).__name__}: {exc}") from None
    finally:
        if saved is not None:
            os.environ[ALLOCATION_ENV] = saved
    for system in site.get("systems", []):
        for part in system.get("partitions", []):
            if part.get("scheduler") in ("slurm", "squeue"):
                return [str(a) for a in part.get("access", [])]
    raise IolabError(f"{config}: no partition of its systems is scheduled by Slurm",
                     hint="iolab submit needs a Slurm system (e.g. localcluster)")


def write(batch: Batch, root: Path, out_dir: Path) -> Path:
    """The batch script, kept under out_dir/submit/."""
    where = out_dir / "submit"
    where.mkdir(parents=True, exist_ok=True)
    stem = f"{batch.experiment}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}"
    path = where / f"{stem}.sh"
    path.write_text(batch.script(root, str(where / f"{stem}-%j.out")))
    return path


def submit(script: Path) -> str:
    """sbatch the script; the job's id."""
    try:
        out = subprocess.run(["sbatch", "--parsable", str(script)], capture_output=True, text=True,
                             timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        raise IolabError(f"sbatch: {exc}") from None
    if out.returncode != 0:
        raise IolabError(f"sbatch refused {script.name}: {' '.join(out.stderr.split())[:500]}")
    return out.stdout.strip().split(";")[0]
