"""How a launcher hands the benchmark's environment to its ranks: one policy per (MPI runtime,
ReFrame launcher), in one table.

Open MPI's mpirun passes a variable to remote ranks only when named with -x, MPICH's (Hydra)
with -genvlist; srun exports the whole environment; a launcher iolab does not know gets the
preload as a prefix of the command. Variables reach the ranks this way, LD_PRELOAD (Darshan)
reaches the benchmark alone, never the job's shell or mpirun.
"""

from __future__ import annotations

from dataclasses import dataclass

MPIRUN_NAMES = ("mpirun", "mpiexec", "mpirun-openmpi")


@dataclass(frozen=True)
class Policy:
    forward: str = "inherit"          # -x | -genvlist | inherit: how named variables reach ranks
    preload: str = "prefix"           # -x | -genv | srun-export | prefix | assign: how LD_PRELOAD does
    oversubscribe: tuple[str, ...] = ()   # options that allow more ranks than cores

    def forward_options(self, names) -> list[str]:
        names = sorted(names)
        if not names:
            return []
        if self.forward == "-x":
            return [o for name in names for o in ("-x", name)]
        if self.forward == "-genvlist":
            return ["-genvlist", ",".join(names)]
        return []

    def preload_options(self, lib_word: str) -> tuple[list[str], str | None]:
        """(launcher options, a prefix for the command) that preload lib_word in the benchmark."""
        if self.preload == "-x":
            return ["-x", f"LD_PRELOAD={lib_word}"], None
        if self.preload == "-genv":
            return ["-genv", "LD_PRELOAD", lib_word], None
        if self.preload == "srun-export":
            return [f"--export=ALL,LD_PRELOAD={lib_word}"], None
        if self.preload == "assign":        # the shell runs the program itself
            return [], f"LD_PRELOAD={lib_word}"
        return [], f"env LD_PRELOAD={lib_word}"


OPENMPI_MPIRUN = Policy(forward="-x", preload="-x", oversubscribe=("--oversubscribe",))
HYDRA = Policy(forward="-genvlist", preload="-genv")
SRUN = Policy(preload="srun-export")
UNKNOWN = Policy()
# a program that is not MPI, run by the job's shell without a launcher
UNLAUNCHED = Policy(preload="assign")


def policy(runtime: str, launcher: str) -> Policy:
    """The policy of a ReFrame launcher name for an MPI runtime (mpiio.Flavour.runtime)."""
    if launcher in ("srun", "srunalloc"):     # srunalloc: a step of an allocation (allocation.py)
        return SRUN
    if launcher in MPIRUN_NAMES:
        return OPENMPI_MPIRUN if runtime == "openmpi" else HYDRA if runtime == "mpich" else UNKNOWN
    return UNKNOWN
