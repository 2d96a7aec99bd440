"""Shared pieces of the shipped ReFrame configurations (reframe/config/*.py import this).

No ReFrame import here at load: configuration files must stay plain data (a setting refused is
ReFrame's ConfigError, imported then: config_error). Site facts live in each system's config
file, in the partition's extras['iolab'].
"""

from __future__ import annotations

import os
import re
import sys
import time

from ..layers.registry import sections_from_env, site_from_env
from ..project import project_root
from ..stack import SPACK_ENV_NOTE
from . import allocation

# ReFrame's own output (stage dirs, logs, reports); iolab's results go to results/.
OUTPUT = os.environ.get("IOLAB_RFM_OUTPUT", str(project_root() / "reframe" / "output"))

# Open MPI refuses to run as root unless told; set these only when we are root.
RUN_AS_ROOT = ([["OMPI_ALLOW_RUN_AS_ROOT", "1"], ["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"]]
               if os.geteuid() == 0 else [])


# One stage and output directory per ReFrame process: two runs at the same time never share a
# case's files (ReFrame names a case's stage directory after the test alone).
SESSION = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}"


def stage_dirs(name: str) -> dict:
    base = os.path.join(OUTPUT, name, "runs", SESSION)
    return {"stagedir": os.path.join(base, "stage"), "outputdir": os.path.join(base, "output")}


def storage() -> list:
    """ReFrame's own results database (off by default in 4.10), for --performance-compare.
    iolab's records under results/ stay the source of truth for tables."""
    return [{"enable": True, "sqlite_db_file": os.path.join(OUTPUT, "results.db")}]


def general(local: bool = False) -> list:
    # Without -c, ReFrame looks for the experiments' tests in the checkout's reframe/ (recursively)
    out = {"report_file": os.path.join(OUTPUT, "reports", "run-report-{sessionid}.json"),
           "check_search_path": [str(project_root() / "reframe")], "check_search_recursive": True}
    if local:
        # Polling a local process costs a waitpid: poll often, so that a case's end is noticed
        # within 25 ms (ReFrame's default starts at 100 ms and decays towards 10 s), never slower
        # than every 0.5 s. Schedulers keep ReFrame's defaults: their queries load the controller.
        out.update(poll_rate_max=40, poll_rate_min=2)
    return [out]


LOG_LEVELS = ("info", "verbose", "debug", "debug2")     # ReFrame's, from least to most


def config_error(message: str) -> Exception:
    """A setting of the configuration refused: ReFrame's ConfigError, which `reframe` reports in one
    line ("failed to load configuration: ...", exit 1) where any other exception is a traceback;
    a ValueError outside ReFrame."""
    try:
        from reframe.core.exceptions import ConfigError
    except ImportError:
        return ValueError(message)
    return ConfigError(message)


def log_level(argv: list[str] | None = None, environ=None) -> str:
    """The level of ReFrame's log file: info, unless debug is asked for, by IOLAB_RFM_LOG=debug or
    by ReFrame's own -v (--verbose, RFM_VERBOSE), which then also reaches the terminal. At debug
    level ReFrame logs every step of every case: megabytes a run, and seconds for `reframe -l`
    of a thousand cases."""
    argv = sys.argv[1:] if argv is None else argv
    environ = os.environ if environ is None else environ
    wanted = environ.get("IOLAB_RFM_LOG", "").strip().lower()
    if wanted:
        if wanted not in LOG_LEVELS:
            raise config_error(f"IOLAB_RFM_LOG={wanted!r}: give one of {', '.join(LOG_LEVELS)}")
        return wanted
    verbose = any(a == "--verbose" or re.fullmatch(r"-v+", a) for a in argv)
    if verbose or environ.get("RFM_VERBOSE", "0").strip() not in ("", "0"):
        return "debug"
    return "info"


def logging() -> list:
    os.makedirs(OUTPUT, exist_ok=True)
    level = log_level()
    return [{
        "level": level,
        "handlers": [
            {"type": "stream", "name": "stdout", "level": "info", "format": "%(message)s"},
            {"type": "file", "name": os.path.join(OUTPUT, "reframe.log"), "level": level,
             "format": "[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s", "append": True},
        ],
        "handlers_perflog": [{
            "type": "filelog",
            "prefix": "%(check_system)s/%(check_partition)s",
            "basedir": os.path.join(OUTPUT, "perflogs"),
            "level": "info",
            "format": ("%(check_job_completion_time)s|%(check_info)s|%(check_case)s|"
                       "%(check_repetition)s|%(check_perfvalues)s"),
            "format_perfvars": "%(check_perf_var)s=%(check_perf_value)s %(check_perf_unit)s|",
            "append": True,
        }],
    }]


OPENMPI_ENVIRON = {"name": "openmpi", "features": ["iolab", "mpi"],
                   "cc": "mpicc", "cxx": "mpicxx", "ftn": "mpif90"}


def use_slurm_conf(state_dir: str) -> None:
    """Point ReFrame's sbatch/squeue/sacct (and srun in the jobs, which inherit it) at the config
    of the local Slurm in state_dir, when it exists: scripts/slurm-local and scripts/cluster-local
    can run side by side, and /etc/slurm/slurm.conf belongs to only one of them."""
    conf = os.path.join(state_dir, "etc", "slurm.conf")
    if os.path.isfile(conf):
        os.environ["SLURM_CONF"] = conf




def stack_from_env() -> dict:
    """A hand-built stack (bin/, lib/) named by IOLAB_STACK_PREFIX; IOLAB_STACK=spack: spack.yaml
    built by Spack during the run, with Debian 12's packages as externals
    (reframe/config/spack/debian12.yaml, or the file IOLAB_SPACK_CONFIG names); a Spack
    environment built before (IOLAB_SPACK_ENV, else the one scripts/setup built for this checkout;
    IOLAB_SPACK_ENV= empty turns that off); else whatever is on PATH."""
    prefix = os.environ.get("IOLAB_STACK_PREFIX")
    if prefix:
        return {"provider": "prefix", "prefix": prefix}
    if os.environ.get("IOLAB_STACK") == "spack":
        return {"provider": "spack", "spack_config": os.environ.get("IOLAB_SPACK_CONFIG", "debian12")}
    env = os.environ.get("IOLAB_SPACK_ENV")
    if env is None:
        try:
            env = (project_root() / SPACK_ENV_NOTE).read_text().strip()
        except OSError:
            env = ""
    if env:
        return {"provider": "spack", "env": env}
    return {"provider": "path"}


def system_profile(choices: list, exp_profiles: list[str]) -> str | None:
    """The profile the system's partitions name (each a name, or names in order of preference,
    e.g. ['cluster', 'local']): the first that the experiment has. Partitions that disagree
    choose nothing."""
    named = {tuple([c] if isinstance(c, str) else c) for c in choices if c}
    if len(named) != 1:
        return None
    return next((p for p in named.pop() if p in exp_profiles), None)


# The profile the local systems run (`iolab plan` shows it by default).
LOCAL_PROFILE = "local"


def local_system(name: str, mpi_flavour: str, descr: str) -> dict:
    """This machine, no scheduler, Open MPI's mpirun: a whole site configuration."""
    return {
        "systems": [{
            "name": name,
            "descr": descr,
            "hostnames": [".*"],
            "modules_system": "nomod",
            **stage_dirs(name),
            "partitions": [{
                "name": "default",
                "descr": "Local processes launched with mpirun",
                "scheduler": "local",
                "launcher": "mpirun",
                "environs": ["openmpi"],
                # One job at a time: cases of one experiment must not measure each other.
                "max_jobs": 1,
                "features": ["iolab"],
                "env_vars": RUN_AS_ROOT,
                "extras": {
                    "iolab": {
                        **site_from_env(),
                        "cores_per_node": os.cpu_count(),
                        "profile": LOCAL_PROFILE,
                        "mpi_flavour": mpi_flavour,
                        "stack": stack_from_env(),
                        # each layer's section (Darshan's: IOLAB_DARSHAN)
                        **sections_from_env(),
                    },
                },
            }],
        }],
        "environments": [OPENMPI_ENVIRON],
        "general": general(local=True),
        "logging": logging(),
        "storage": storage(),
    }


def slurm_partition(name: str, launcher: str, descr: str, env_vars: list, launcher_options: list,
                    cores_per_node: int, mpi_flavour: str, profile: str | list = "local") -> dict:
    """A partition of a local Slurm (scripts/slurm-local, scripts/cluster-local); profile: the
    experiments' profile it runs, or profiles in order of preference. IOLAB_IN_ALLOCATION=1: the
    same partition run as steps of the allocation this runs in (allocation.py)."""
    return allocation.partition({
        "name": name,
        "descr": descr,
        "scheduler": "slurm",
        "launcher": launcher,
        "access": [f"--partition={name}"],
        "environs": ["openmpi"],
        # One job at a time: cases of one experiment must not measure each other.
        "max_jobs": 1,
        "features": ["iolab"],
        "env_vars": env_vars,
        "extras": {
            "iolab": {
                **site_from_env(),      # where the case directories are, from the layers
                "cores_per_node": cores_per_node,
                "profile": profile,
                "mpi_flavour": mpi_flavour,
                "launcher_options": launcher_options,
                # A campaign on a cluster fails on a case it could not run, never skips it.
                "strict": True,
                "stack": stack_from_env(),
                # each layer's section (Darshan's: IOLAB_DARSHAN)
                **sections_from_env(),
            },
        },
    }, config_error)


def in_allocation(partition: dict) -> dict:
    """A hand-written Slurm partition (reframe/config/example-cluster.py), run as steps of the
    allocation this runs in when IOLAB_IN_ALLOCATION=1 asks for it; else unchanged."""
    return allocation.partition(partition, config_error)


def slurm_system(name: str, descr: str, partition: dict) -> dict:
    return {"name": name, "descr": descr, "hostnames": [".*"], "modules_system": "nomod",
            **stage_dirs(name), "partitions": [partition]}
