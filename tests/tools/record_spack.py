"""Record a real Spack build of this checkout's spack.yaml for the `spack` stand-in (tests/bin/spack).

    python -m tests.tools.record_spack --spack SPACK --dir DIR [--site FILE] [--out DIR]
        [--spack-source TEXT] [--packages TEXT]

Runs, with the real SPACK (its SPACK_* variables taken from this process's environment), the
commands of tests/data/spack/README.md in DIR, which must not exist yet: DIR/spackenv holds copies
of spack.yaml and spack-repo/ as the stack fixture makes them (src/iolab/rfm/spack.py). Each
command's stdout and stderr go unchanged to the file the stand-in replays, and index.json gets the
exit codes, how long each command took, the inputs' sha256, the environment directory and install
root the stand-in maps, and the `load` callers' environment. The install tree must be empty
(`concretize` would reuse what it holds), so that the install is a build from sources.

`load` and `location` run with only HOME, PATH=/usr/bin:/bin and the SPACK_* variables set, since
Spack prints whole values computed from its caller's environment (`env -i` in the README).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOADED = ("ior", "h5bench", "btio", "fio", "darshan-runtime")
CALLER_PATH = "/usr/bin:/bin"
# How Spack 1.1 computes each variable `load --sh` prints for these packages (read from Spack 1.1
# and the recipes; the stand-in applies them to its own caller's environment).
LOAD_MODIFICATIONS = {
    "ACLOCAL_PATH": "prepend", "CMAKE_PREFIX_PATH": "prepend", "MANPATH": "prepend",
    "PATH": "prepend", "PKG_CONFIG_PATH": "prepend", "SPACK_LOADED_HASHES": "prepend",
    "LD_LIBRARY_PATH": "append",
    "MPICC": "set", "MPICXX": "set", "MPIF77": "set", "MPIF90": "set", "MPIFC": "set",
    "DARSHAN_LOG_DIR_PATH": "default-home",
}


def standin():
    """tests/bin/spack as a module: its digests are the ones index.json must hold."""
    loader = SourceFileLoader("spack_standin", str(ROOT / "tests" / "bin" / "spack"))
    module = module_from_spec(spec_from_loader("spack_standin", loader))
    loader.exec_module(module)
    return module


class Recorder:
    def __init__(self, spack: Path, workdir: Path, out: Path):
        self.spack, self.workdir, self.out = spack, workdir, out
        self.commands: dict[str, dict] = {}
        self.env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        self.env["SPACK_COLOR"] = "never"
        self.bare = {"HOME": os.environ.get("HOME", "/root"), "PATH": CALLER_PATH,
                     **{k: v for k, v in os.environ.items() if k.startswith("SPACK_")}}

    def run(self, args: list[str], name: str | None, *, bare: bool = False, expect: int | None = 0):
        cmd = [str(self.spack), "-e", "spackenv", *args]
        t0 = time.monotonic()
        done = subprocess.run(cmd, cwd=self.workdir, capture_output=True, text=True,
                              env=self.bare if bare else self.env, stdin=subprocess.DEVNULL)
        took = round(time.monotonic() - t0, 1)
        print(f"  {' '.join(args)}: exit {done.returncode}, {took} s", flush=True)
        if expect is not None and done.returncode != expect:
            sys.exit(f"record_spack: `spack -e spackenv {' '.join(args)}` exited {done.returncode}, "
                     f"expected {expect}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        if name is not None:
            (self.out / f"{name}.out").write_text(done.stdout)
            (self.out / f"{name}.err").write_text(done.stderr)
            key = " ".join(a for a in args if not a.startswith("/"))
            self.commands[key] = {"rc": done.returncode, "seconds": took,
                                  "stdout": f"{name}.out", "stderr": f"{name}.err"}
        return done


def record(spack: Path, workdir: Path, site: Path, out: Path, spack_source: str,
           packages: str) -> dict:
    env_dir = workdir / "spackenv"
    if workdir.exists():
        sys.exit(f"record_spack: {workdir} exists; the recording starts from an empty directory")
    env_dir.mkdir(parents=True)
    shutil.copy(ROOT / "spack.yaml", env_dir / "spack.yaml")
    shutil.copytree(ROOT / "spack-repo", env_dir / "spack-repo",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for old in [*out.glob("*.out"), *out.glob("*.err"), out / "spack.lock",
                out / "spack.yaml.merged"]:
        old.unlink(missing_ok=True)
    rec = Recorder(spack, workdir, out)
    version = subprocess.run([str(spack), "--version"], capture_output=True, text=True,
                             env=rec.env, check=True).stdout.strip()
    print(f"Spack {version} in {workdir}", flush=True)
    installed = subprocess.run([str(spack), "find", "--format", "{hash}"], capture_output=True,
                               text=True, env=rec.env).stdout.split()
    if installed:
        sys.exit(f"record_spack: {len(installed)} specs are installed already, which `concretize` "
                 "would reuse: record with an empty install tree (`spack uninstall --all`)")

    rec.run(["config", "add", "-f", str(site)], "config-add")
    shutil.copy(env_dir / "spack.yaml", out / "spack.yaml.merged")
    rec.run(["concretize"], "concretize")
    shutil.copy(env_dir / "spack.lock", out / "spack.lock")
    rec.run(["install", "--fail-fast"], "install-fail", expect=1)
    rec.run(["install", "--fail-fast", "--no-checksum"], "install")
    rec.run(["find", "--json"], "find-json")
    for package in LOADED:
        rec.run(["load", "--sh", package], f"load-{package}", bare=True)
    where = rec.run(["location", "-i", "darshan-runtime"], "location-darshan-runtime", bare=True)

    printed = {line.removeprefix("export ").split("=", 1)[0]
               for package in LOADED
               for line in (out / f"load-{package}.out").read_text().splitlines()}
    unknown = printed - set(LOAD_MODIFICATIONS)
    if unknown:
        sys.exit(f"record_spack: `load --sh` printed {sorted(unknown)}, whose modification "
                 "the stand-in does not know: add it to LOAD_MODIFICATIONS")
    sha256 = standin().sha256
    prefix = Path(where.stdout.strip())           # <install root>/<platform-target>/<name-...>
    index = {
        "commands": rec.commands,
        "env_dir": str(env_dir),
        "environment": {
            "merged_spack_yaml": "spack.yaml.merged",
            "merged_spack_yaml_sha256": sha256(out / "spack.yaml.merged"),
            "site_config": site.resolve().relative_to(ROOT).as_posix(),
            "site_config_sha256": sha256(site),
            "spack_lock": "spack.lock",
            "spack_lock_sha256": sha256(out / "spack.lock"),
            "spack_repo_sha256": standin().tree_sha256(ROOT / "spack-repo"),
            "spack_yaml_sha256": sha256(ROOT / "spack.yaml"),
        },
        "install_root": str(prefix.parent.parent),
        "load_caller_env": {"HOME": rec.bare["HOME"], "PATH": CALLER_PATH},
        "load_modifications": {k: v for k, v in sorted(LOAD_MODIFICATIONS.items()) if k in printed},
        "spack_packages": packages,
        "spack_version": version,
        "spack_source": spack_source,
    }
    (out / "index.json").write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    return index


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.tools.record_spack", description=__doc__.split("\n")[0])
    p.add_argument("--spack", type=Path, required=True, help="the real spack executable")
    p.add_argument("--dir", type=Path, required=True, help="an empty directory to build in")
    p.add_argument("--site", type=Path, default=ROOT / "reframe" / "config" / "spack" / "debian12.yaml")
    p.add_argument("--out", type=Path, default=ROOT / "tests" / "data" / "spack")
    p.add_argument("--spack-source", default="", help="where this Spack came from, for index.json")
    p.add_argument("--packages", default="", help="the builtin packages it used, for index.json")
    args = p.parse_args(argv)
    record(args.spack, args.dir.absolute(), args.site.absolute(), args.out, args.spack_source,
           args.packages)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
