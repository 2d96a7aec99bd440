"""BTIO (wkliao/BTIO): the NAS BT I/O pattern through MPI-IO or PnetCDF. Input deck from a template.

`btio inputbt.data` reads mode, method, time steps, grid and directory from the deck. A write
leaves <dir>/btio.mpi (methods 0, 1) or <dir>/btio.nc (methods 2, 3); a read case reads the file
of the write case with the same data key (see produces/consumes) from that case's directory.
BTIO exits 0 when it fails: the parser requires the `I/O bandwidth` line.
"""

from __future__ import annotations

import math
from pathlib import Path

from ..parsers.echo import replayed
from ..errors import IolabError, ParseError
from ..parsers import btio_text
from ..shell import has_variables
from .base import Benchmark, MetricSpec, RunSpec, read_output

DECK = "inputbt.data"
METHODS = ("mpi_collective", "mpi_independent", "pnetcdf_blocking", "pnetcdf_nonblocking")  # 0..3
MIN_CELL = 3        # make_set.f90: 'Cell size too small. Min size is 3', then MPI_Abort
_PATH_MAX = 512 - len("/btio.mpi")   # character(len=512) dir_path // '/btio.mpi'

def layout_key(case) -> str:
    """':storage=scratch:lustre.stripe_count=4...': the file-placement part of a data key. The
    layers name the parameters that decide where a file lives and how it is laid out when it is
    created: a read must name the same ones as its write, or it would measure another write's
    file."""
    from ..layers.registry import registry

    keys = [k for layer in registry() for k in layer.placement_keys(case.params)]
    return "".join(f":{k}={case.params[k]}" for k in keys if k in case.params)


def family(case) -> str:
    """'mpiio' or 'pnetcdf': a read needs a file written by the same family."""
    return "mpiio" if METHODS.index(case.params["io_method"]) < 2 else "pnetcdf"


class Btio(Benchmark):
    name = "btio"
    executable = "btio"
    binaries = ("btio",)
    spack_package = "btio"
    links = ("parallel-netcdf",)
    table_metrics = ("write_bw", "read_bw")
    size_params = ("grid", "time_steps")
    metrics = (
        MetricSpec("*_bw", "MiB/s", "higher", "BTIO's reported bandwidth"),
        MetricSpec("*_amount", "MiB", None, "data moved"),
        MetricSpec("*_time", "s", "lower", "seconds of the phase (open, post, wait, total)"),
    )

    def check(self, case) -> str | None:
        ranks = case.num_tasks
        side = math.isqrt(ranks)
        if side * side != ranks:
            return (f"BTIO needs a square number of ranks; {ranks} is not "
                    f"(try {side * side} or {(side + 1) ** 2})")
        small = [n for n in case.params["grid"] if n // side < MIN_CELL]
        if small:
            return (f"grid {'x'.join(map(str, case.params['grid']))} is too small for {ranks} ranks: BTIO "
                    f"cuts each axis into {side} cells of at least {MIN_CELL} points, so every grid "
                    f"size must be at least {MIN_CELL * side}")
        return None

    def bytes_written(self, case) -> int:
        p = case.params
        if p["mode"] != "write":
            return 0
        x, y, z = p["grid"]
        return x * y * z * btio_text.BYTES_PER_POINT * p["time_steps"]

    def through_mpi_io(self, case) -> bool:
        return True     # methods 0/1 call MPI-IO directly; PnetCDF opens through MPI-IO

    def data_key(self, case) -> str:
        """The file a write leaves and a read needs: method family, grid, time steps, placement.

        The rank count is not part of it: the file holds the global array whatever the
        decomposition, so a read may use another square rank count than its write.
        """
        x, y, z = case.params["grid"]
        return f"btio:{family(case)}:{x}x{y}x{z}:steps={case.params['time_steps']}{layout_key(case)}"

    def produces(self, case) -> str | None:
        return self.data_key(case) if case.params["mode"] == "write" else None

    def consumes(self, case) -> str | None:
        return self.data_key(case) if case.params["mode"] == "read" else None

    def run_spec(self, case, case_dir: str, hints: dict | None = None, show_hints: bool = False,
                 keep_files: bool = False, input_dir: str | None = None) -> RunSpec:
        """hints reach BTIO only through the environment: ROMIO_HINTS and the like from the hints
        layer, plus PNETCDF_HINTS for the PnetCDF methods (PnetCDF passes them to MPI_File_open)."""
        from ..render import render_template

        p = case.params
        if p["mode"] == "read":
            if not input_dir:
                raise IolabError(f"BTIO read case {case.case_id} needs the directory of its write case "
                                 f"(input_dir)")
            directory = input_dir
        else:
            directory = case_dir
        if len(directory) > _PATH_MAX or "\n" in directory:
            raise IolabError(f"BTIO's directory holds at most {_PATH_MAX} characters on one line; "
                             f"{directory[:40]!r}... has {len(directory)}")
        deck = render_template("btio/inputbt.data.j2", case=case, params=p, directory=directory,
                               mode=p["mode"][0], method=METHODS.index(p["io_method"]))
        env = {}
        if hints and family(case) == "pnetcdf":
            bad = [f"{k}={v}" for k, v in hints.items() if any(c in f"{k}{v}" for c in ";=")]
            if bad:
                raise IolabError(f"hint {bad[0]!r} contains ';' or '=', which PNETCDF_HINTS uses as "
                                 f"separators")
            env["PNETCDF_HINTS"] = ";".join(f"{k}={v}" for k, v in hints.items())
        # BTIO reads its directory from the deck literally: for a job-time directory
        # ($DW_JOB_STRIPED/...) the job writes the deck, the path expanded as mkdir's
        job_files = {DECK: (directory, _PATH_MAX)} if has_variables(directory) else {}
        return RunSpec(self.executable, [DECK], env=env, files={DECK: deck}, outputs=[DECK], mpi=True,
                       job_files=job_files)

    def parse_outputs(self, stage: Path, spec: RunSpec):
        stdout = read_output(stage / "rfm_job.out", "stdout")
        parsed = btio_text.parse(stdout, "rfm_job.out")
        # the deck as BTIO read it: the job's own where it wrote it (a job-time directory)
        deck = read_output(stage / DECK, DECK) if DECK in spec.job_files else spec.files.get(DECK)
        if deck is not None:
            # A test stand-in's replay ran in the directory of its recording, which it echoes;
            # everything else must still be this deck's (the case is flagged as a replay).
            err = stage / "rfm_job.err"
            replay = replayed(stdout, err.read_text() if err.is_file() else "")
            _check_against_deck(parsed, deck, skip=("path",) if replay else ())
        return parsed

    echo_params = {"mode": "mode", "io_method": "io_method", "iterations": "time_steps", "grid": "grid"}

    def requested_echo(self, case, spec) -> dict:
        return {"ranks": case.num_tasks, **super().requested_echo(case, spec)}

    def error_lines(self, stdout, stderr, spec):
        return btio_text.failures(stdout) + btio_text.failures(stderr)

    def parse_files(self, paths):
        return [btio_text.parse(read_output(Path(p), "BTIO output"), Path(p).name) for p in paths]


def read_deck(text: str) -> dict:
    """The five items of an inputbt.data, as BTIO reads them."""
    lines = text.splitlines()
    if len(lines) < 5:
        raise ParseError(f"{DECK} has {len(lines)} lines, BTIO reads 5")
    return {"mode": {"w": "write", "r": "read"}.get(lines[0].split()[0], lines[0].split()[0]),
            "io_method": METHODS[int(lines[1].split()[0])],
            "iterations": int(lines[2].split()[0]),
            "grid": [int(v) for v in lines[3].split()[:3]],
            "path": lines[4].rstrip()}


def _check_against_deck(parsed, deck_text: str, skip: tuple[str, ...] = ()) -> None:
    """BTIO echoes what it ran: it must be what the deck asked for (PnetCDF reads even take the
    grid from the file, so a read of another grid's file shows here)."""
    asked = read_deck(deck_text)
    for key, want in asked.items():
        if key in skip:
            continue
        got = parsed.details.get(key)
        if got != want:
            raise ParseError(f"rfm_job.out: BTIO ran {key} {got!r}, but {DECK} asked for {want!r}")


BENCHMARK = Btio()
