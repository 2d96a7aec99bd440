"""Replay keys and recordings for the test stand-ins in tests/bin.

A stand-in replays the real recording whose key is exactly the key of its own invocation: what
determines the benchmark's output, without paths. tests/tools/record_replays.py files real runs
under the same keys, computed by the same functions from the outputs a results run stores.

Standard library only: the stand-ins run under whatever python3 the job finds.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]          # the checkout
REPLAY = ROOT / "tests" / "data" / "replay"
INDEX = "index.json"
MARK = "IOLAB-STANDIN:"                             # src/iolab/parsers/echo.py reads this line back
PATH = "<path>"                                     # stands for a path in a key
# Variables that change what the MPI-IO layer does or prints: the component (ompio or ROMIO),
# ROMIO's printout of the hints in effect, hints for PnetCDF, HDF5's VOL connector (sync or
# async). ROMIO_HINTS names a file: its content is in the key, not its name.
ENV = ("OMPI_MCA_io", "ROMIO_PRINT_HINTS", "PNETCDF_HINTS", "HDF5_VOL_CONNECTOR")
HINTS_ENV = "ROMIO_HINTS"
# h5bench config keys whose value is a path
H5BENCH_PATHS = ("CSV_FILE", "ENV_METADATA_FILE")
HOW_TO_RECORD = ("record it with the real binary: run the case with the real stack on PATH, then "
                 "`python tests/tools/record_replays.py <results dir>` (tests/data/replay/README.md)")


def _lines(text: str | None) -> list[str] | None:
    """A hints file as a set of lines, in sorted order; None when the file is absent."""
    return None if text is None else sorted(line for line in text.splitlines() if line.strip())


def shape(ranks: int, nodes: int) -> dict:
    """The ranks, and the nodes they ran on where there were several: the node count decides
    ROMIO's aggregators (one per node by default). One node adds nothing, so the keys of runs
    on one machine stay as they were recorded."""
    return {"ranks": ranks, **({"nodes": nodes} if nodes != 1 else {})}


def environment(env: dict, read) -> dict:
    out = {name: env[name] for name in ENV if name in env}
    if HINTS_ENV in env:
        out[HINTS_ENV] = _lines(read(env[HINTS_ENV]))
    return out


def ior_key(argv: list[str], env: dict, ranks: int, read, nodes: int = 1) -> dict:
    """Every argument but the paths (the test file, the summary file, the hints file, whose
    content counts instead), the ranks and the MPI-IO environment."""
    args, hints = [], {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        name, eq, value = arg.partition("=")
        if arg == "-o" and nxt is not None:
            args += [arg, PATH]
            i += 2
            continue
        if arg == "-O" and nxt is not None and nxt.startswith("summaryFile="):
            args += [arg, f"summaryFile={PATH}"]
            i += 2
            continue
        if eq and name.startswith("--") and name.endswith(".hintsFileName"):
            args.append(f"{name}={PATH}")
            hints[name] = _lines(read(value))
        else:
            args.append(arg)
        i += 1
    return {"benchmark": "ior", "args": args, **shape(ranks, nodes), "hints_files": hints,
            "env": environment(env, read)}


def mdtest_key(argv: list[str], env: dict, ranks: int, read) -> dict:
    """Every argument but the paths (-d's directory, the per-rank CSV's name), the ranks and
    the MPI-IO environment."""
    args = []
    for i, arg in enumerate(argv):
        if i and argv[i - 1] == "-d":
            args.append(PATH)
        elif arg.startswith("--saveRankPerformanceDetails="):
            args.append(f"--saveRankPerformanceDetails={PATH}")
        else:
            args.append(arg)
    return {"benchmark": "mdtest", "args": args, "ranks": ranks, "env": environment(env, read)}


def read_btio_deck(text: str) -> dict:
    """The four items of an inputbt.data that decide a run (line 5 is the directory)."""
    lines = text.splitlines()
    if len(lines) < 5:
        raise ValueError(f"the input deck has {len(lines)} lines, BTIO reads 5")
    return {"mode": lines[0].split()[0], "method": int(lines[1].split()[0]),
            "steps": int(lines[2].split()[0]), "grid": [int(v) for v in lines[3].split()[:3]]}


def btio_key(argv: list[str], env: dict, ranks: int, read, nodes: int = 1) -> dict:
    deck = read(argv[0] if argv else "inputbt.data")
    if deck is None:
        raise ValueError("no input deck")
    return {"benchmark": "btio", **read_btio_deck(deck), **shape(ranks, nodes),
            "env": environment(env, read)}


def h5bench_key(kernel: str, argv: list[str], env: dict, ranks: int, read, nodes: int = 1) -> dict:
    """The config as the kernel reads it (comment lines skipped, order kept, path values out),
    the kernel, the ranks and the environment. The data file (argv[1]) is a path."""
    text = read(argv[0]) if argv else None
    if text is None:
        raise ValueError("no config file")
    config = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        key = line.partition("=")[0]
        config.append(f"{key}={PATH}" if key in H5BENCH_PATHS else line)
    return {"benchmark": "h5bench", "kernel": kernel, "config": config, **shape(ranks, nodes),
            "env": environment(env, read)}


def key_id(key: dict) -> str:
    text = json.dumps(key, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_index(replay: Path = REPLAY) -> dict:
    path = replay / INDEX
    return json.loads(path.read_text()) if path.is_file() else {}


# --- inside a stand-in ---

def ranks() -> int:
    return int(os.environ.get("OMPI_COMM_WORLD_SIZE") or os.environ.get("PMI_SIZE")
               or os.environ.get("SLURM_NTASKS") or 1)


def nodes() -> int:
    """The nodes of this job step (srun), else of the allocation (mpirun inside it), else 1."""
    for name in ("SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES"):
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 1


def rank() -> int:
    return int(os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ.get("PMI_RANK")
               or os.environ.get("SLURM_PROCID") or 0)


def read_here(name: str) -> str | None:
    """A file the benchmark was given, relative to its working directory."""
    try:
        return Path(name).read_text()
    except OSError:
        return None


def replay(name: str, key: dict, outputs: dict[str, Path] | None = None):
    """Replay the recording of `key` byte for byte and exit with its exit code: rank 0 names it
    on stderr, prints its stdout and stderr, and writes its other files where the benchmark
    writes them (outputs: role -> path); the other ranks print nothing. No recording: exit 1,
    naming the key."""
    kid = key_id(key)
    entry = load_index().get(key["benchmark"], {}).get(kid)
    if entry is None:
        if rank() == 0:
            print(f"{name} stand-in: no recording for replay key {kid} "
                  f"{json.dumps(key, sort_keys=True)}; {HOW_TO_RECORD}", file=sys.stderr)
        sys.exit(1)
    if rank() == 0:
        where = REPLAY / key["benchmark"] / kid
        files = entry["files"]
        sys.stderr.write(f"{MARK} replaying {where.relative_to(ROOT).as_posix()}\n")
        sys.stderr.flush()
        for role, dest in (outputs or {}).items():
            if role in files:               # a run that failed early may have written none
                Path(dest).write_bytes((where / files[role]).read_bytes())
        sys.stdout.buffer.write((where / files["stdout"]).read_bytes())
        sys.stdout.flush()
        sys.stderr.buffer.write((where / files["stderr"]).read_bytes())
        sys.stderr.flush()
    sys.exit(entry["exit_code"])


def fail(*lines: str):
    """An input the real binary would refuse before running: say so (rank 0) and exit 1."""
    if rank() == 0:
        for line in lines:
            print(line)
    sys.exit(1)
