"""Write the job scripts of every shipped experiment on every shipped system, as `reframe
--dry-run` generates them, into one directory per system, with the paths and ids of the run
replaced by fixed words, so that two checkouts can be compared with `diff -r`:

    python -m tests.tools.jobscripts OUT_DIR [SYSTEM ...]

A case that ReFrame could not set up has, in place of its script, the reason ReFrame printed.
A restructuring that must not change what runs compares the directories before and after.

The Slurm systems are also written in allocation mode (IOLAB_IN_ALLOCATION=1, each case a step
of an allocation), as SYSTEM+allocation: the steps' scripts, from a fixed allocation id.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{6}")
RFM_RUN = re.compile(r"runs/\d{8}T\d{6}-\d+")


# the systems whose partitions turn into steps of an allocation (rfm/allocation.py)
ALLOCATION = "+allocation"
IN_ALLOCATION = ("example-cluster", "localcluster", "localslurm")


def systems() -> list[str]:
    return sorted([p.stem for p in (REPO / "reframe" / "config").glob("*.py")]
                  + [s + ALLOCATION for s in IN_ALLOCATION])


def mode_env(system: str) -> tuple[str, dict]:
    """(the configuration's name, the variables of its mode): job mode, whatever the caller's
    shell has, or the steps of an allocation with a fixed id."""
    env = {k: v for k, v in os.environ.items() if k not in ("IOLAB_IN_ALLOCATION", "SLURM_JOB_ID")}
    if system.endswith(ALLOCATION):
        return system.removesuffix(ALLOCATION), {**env, "IOLAB_IN_ALLOCATION": "1",
                                                 "SLURM_JOB_ID": "1000"}
    return system, env


# A template's hostnames match no machine here and its modules system may be absent: it is read
# through a config that takes its first system as it is, found on any host, without modules.
TEMPLATE = """
import importlib.util
spec = importlib.util.spec_from_file_location("template", {path!r})
template = importlib.util.module_from_spec(spec)
spec.loader.exec_module(template)
site_configuration = template.site_configuration
for system in site_configuration["systems"]:
    system.update(hostnames=[".*"], modules_system="nomod")
"""


def config_for(system: str, tmp: Path) -> str:
    path = REPO / "reframe" / "config" / f"{system}.py"
    if "hostnames" not in path.read_text():
        return str(path)
    wrapper = tmp / f"{system}.py"
    wrapper.write_text(TEMPLATE.format(path=str(path)))
    return str(wrapper)


def normalize(text: str, prefix: Path) -> str:
    text = text.replace(str(prefix), "{prefix}").replace(str(REPO), "{repo}")
    return RFM_RUN.sub("runs/{rfm-run}", RUN_ID.sub("{run-id}", text))


def scripts_or_reasons(stdout: str) -> bool:
    return "[       OK ]" in stdout or "[     FAIL ]" in stdout or "[  SKIP  ]" in stdout


def dump(system: str, out: Path) -> int:
    config, env = mode_env(system)
    with tempfile.TemporaryDirectory() as tmp:
        prefix = Path(tmp)
        env.update(IOLAB_RESULTS=str(prefix / "results"), RFM_COLORIZE="n",
                   IOLAB_RFM_OUTPUT=str(prefix / "rfm"))
        proc = subprocess.run(
            ["reframe", "-C", config_for(config, prefix), "-c", "reframe/", "-R", "--dry-run"],
            cwd=REPO, env=env, capture_output=True, text=True,
            timeout=600)
        if not scripts_or_reasons(proc.stdout):
            raise SystemExit(f"{system}: reframe --dry-run set up nothing:\n{proc.stdout[-3000:]}"
                             f"{proc.stderr[-3000:]}")
        target = out / system
        target.mkdir(parents=True, exist_ok=True)
        scripts = sorted((prefix / "rfm").rglob("rfm_job.sh"))
        for script in scripts:
            (target / f"{script.parent.name}.sh").write_text(normalize(script.read_text(), prefix))
        # why the cases that have no script could not be set up, in ReFrame's words
        reasons = re.findall(r"^\s*\* Rerun with '-n /(\w+).*\n\s*\* Reason: (.*)$",
                             proc.stdout, re.M)
        (target / "not-set-up.txt").write_text("".join(
            f"{h}: {normalize(r, prefix)}\n" for h, r in sorted(reasons)))
        return len(scripts)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out = Path(argv[0])
    for system in argv[1:] or systems():
        print(f"{system}: {dump(system, out)} job scripts")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
