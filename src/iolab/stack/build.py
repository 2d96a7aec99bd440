"""Set Spack up from an offline bundle and build the project's spack.yaml with it, offline.

    python -m iolab.stack.build BUNDLE [--home DIR] [--site-config NAME] [--jobs N]

Everything lives under one directory iolab owns (IOLAB_SPACK_HOME, default
~/.cache/iolab/spack; outside any checkout, so a second clone reuses what the first built):

    spack-<version>/         Spack, extracted; its etc/spack/ is the site scope we write
    packages-<sha>/          the builtin package repository, a git work tree (Spack requires one)
    python/                  a virtual environment with clingo from the bundle's wheels
    user-config/ user-cache/ SPACK_USER_CONFIG_PATH, SPACK_USER_CACHE_PATH: ~/.spack stays out
    stage/                   build stages
    envs/<key>/              the environment: spack.yaml, spack-repo/, spack.lock, .spack-env/view
    logs/                    Spack's whole output of each set-up

Nothing reaches the network: the bundle's mirror is the only mirror (`mirrors::`), bootstrapping is
off, and clingo comes from the wheels. Only Darshan's archive (not the upstream release tarball)
is installed without its checksum; every other source is verified. An environment whose inputs
(bundle, spack.yaml, spack-repo/, the site's externals) are unchanged is reused as it is.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import IolabError
from ..layers.registry import stack_packages
from ..project import project_root
from . import SPACK_ENV_NOTE
from . import bundle as bundles

# The packages whose bundled archive is not the one their recipe's sha256 names (a layer says
# which: a git archive of a tag in place of a release tarball): these alone install without it.
NO_CHECKSUM = stack_packages("no_checksum")
CLINGO_VERSION = "5.8.3"
INSTALLED = ".iolab-installed"
POINTER = SPACK_ENV_NOTE
SITE_CONFIGS = Path("reframe") / "config" / "spack"


def default_home() -> Path:
    env = os.environ.get("IOLAB_SPACK_HOME")
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "iolab" / "spack"


def default_site_config(root: Path) -> Path | None:
    """The externals file for this OS: reframe/config/spack/debian<major>.yaml on Debian."""
    try:
        facts = dict(line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines()
                     if "=" in line)
    except OSError:
        return None
    os_id = facts.get("ID", "").strip('"')
    major = facts.get("VERSION_ID", "").strip('"').split(".")[0]
    path = root / SITE_CONFIGS / f"{os_id}{major}.yaml"
    return path if path.is_file() else None


def env_view(env_dir: Path) -> Path:
    return env_dir / ".spack-env" / "view"


# What a reused environment must still have: each of these resolves into the install tree.
VIEW_FILES = ("bin/ior", "bin/mdtest", "bin/h5bench_write", "bin/h5bench_read", "bin/btio",
              *stack_packages("view_files"))


def broken_view(env_dir: Path) -> list[str]:
    """The files of VIEW_FILES the environment's view lacks, or whose link leads nowhere (an
    install tree emptied by hand): such an environment is installed again, never reused."""
    view = env_view(env_dir)
    if not view.is_dir():
        return ["the view"]
    return [name for name in VIEW_FILES if not (view / name).exists()]


@dataclass
class Built:
    env_dir: Path
    view: Path
    lock: Path
    reused: bool
    seconds: float


class Log:
    """Spack's whole output to a file; our own lines to the terminal, each with its time."""

    def __init__(self, path: Path, out=sys.stdout):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.file = open(path, "a")
        self.out = out

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)
        self.file.write(f"## {text}\n")
        self.file.flush()


class Spack:
    """One Spack, isolated: its own config scopes, caches and stages, never ~/.spack."""

    def __init__(self, home: Path, root: Path, python: Path, log: Log):
        self.home, self.root, self.python, self.log = home, root, python, log
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SPACK_")}
        self.env.update(SPACK_PYTHON=str(python), SPACK_USER_CONFIG_PATH=str(home / "user-config"),
                        SPACK_USER_CACHE_PATH=str(home / "user-cache"), SPACK_DISABLE_LOCAL_CONFIG="1",
                        SPACK_COLOR="never")
        self.env.pop("PYTHONPATH", None)

    def run(self, *args: str, check: bool = True, watch=None) -> tuple[int, list[str]]:
        cmd = [str(self.root / "bin" / "spack"), *args]
        self.log.file.write(f"$ {' '.join(cmd)}\n")
        self.log.file.flush()
        proc = subprocess.Popen(cmd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", stdin=subprocess.DEVNULL)
        lines = []
        for line in proc.stdout:
            self.log.file.write(line)
            lines.append(line.rstrip("\n"))
            if watch:
                watch(line.rstrip("\n"))
        self.log.file.flush()
        rc = proc.wait()
        if check and rc != 0:
            raise SpackFailed(f"spack {' '.join(args)}", rc, lines, self.log.path)
        return rc, lines


class SpackFailed(IolabError):
    exit_code = 1

    def __init__(self, what: str, rc: int, lines: list[str], log: Path):
        errors = [ln.removeprefix("==> ").strip() for ln in lines if ln.startswith("==> Error")]
        build_log = _build_log(lines)
        message = f"{what} failed (exit {rc}): {errors[0] if errors else (lines[-1] if lines else '')}"
        hint = f"build log: {build_log}; Spack's whole output: {log}" if build_log else \
            f"Spack's whole output: {log}"
        super().__init__(message, hint=hint)
        self.package = _failed_package(lines)
        self.build_log = build_log


def _build_log(lines: list[str]) -> str | None:
    for i, line in enumerate(lines):
        if "See build log for details" in line and i + 1 < len(lines):
            return lines[i + 1].strip()
        m = re.search(r"(/\S+/spack-build-out\.txt)", line)
        if m:
            return m.group(1)
    return None


def _failed_package(lines: list[str]) -> str | None:
    for line in lines:
        m = re.search(r"Failed to install (\S+?)(?:-[a-z0-9]{7,})?\b", line)
        if m:
            return m.group(1)
    return None


class Progress:
    """A line per package Spack installs, with its time: `==> Installing NAME-VER-HASH [i/n]`
    starts it, `Successfully installed` ends it; `[+] ...` marks one already installed."""

    START = re.compile(r"^==> Installing (\S+) \[(\d+)/(\d+)\]")
    DONE = re.compile(r"^==> (\S+): Successfully installed (\S+)")

    def __init__(self, log: Log):
        self.log, self.started, self.built = log, {}, {}

    def __call__(self, line: str) -> None:
        m = self.START.match(line)
        if m:
            self.started[m.group(1)] = time.monotonic()
            return
        m = self.DONE.match(line)
        if m:
            full = m.group(2)
            took = time.monotonic() - self.started.get(full, time.monotonic())
            self.built[full] = took
            self.log.say(f"   built {_pretty(m.group(1), full)} in {took:.0f} s")


def _pretty(name: str, full: str) -> str:
    """(btio, btio-2019-07-21-abcdefg...) -> btio@2019-07-21 (abcdefg): versions hold dashes too."""
    m = re.match(rf"^{re.escape(name)}-(.+)-([a-z0-9]{{32}})$", full)
    return f"{name}@{m.group(1)} ({m.group(2)[:7]})" if m else full


def _extract(tarball: Path, dest: Path, log: Log) -> Path:
    """Extract a one-directory tarball to dest (atomically: a half-extracted tree never counts)."""
    if (dest / ".iolab-extracted").is_file():
        return dest
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    with tarfile.open(tarball) as tar:
        members = tar.getmembers()
        tops = {m.name.split("/", 1)[0] for m in members}
        if len(tops) != 1:
            raise IolabError(f"{tarball}: expected one top directory, found {len(tops)}")
        tar.extractall(tmp, filter="data")
    inner = tmp / tops.pop()
    shutil.rmtree(dest, ignore_errors=True)
    inner.rename(dest)
    shutil.rmtree(tmp, ignore_errors=True)
    (dest / ".iolab-extracted").write_text(str(tarball.name) + "\n")
    log.say(f"   extracted {tarball.name}")
    return dest


def _git_repo(path: Path, log: Log) -> None:
    """Spack uses a package repository only from a git work tree (else it tries to clone)."""
    if (path / ".git").is_dir():
        return
    env = {**os.environ, "GIT_AUTHOR_NAME": "iolab", "GIT_AUTHOR_EMAIL": "iolab@localhost",
           "GIT_COMMITTER_NAME": "iolab", "GIT_COMMITTER_EMAIL": "iolab@localhost",
           "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "as extracted from the bundle"]):
        subprocess.run(["git", "-C", str(path), *args], env=env, check=True,
                       stdout=subprocess.DEVNULL)
    log.say(f"   {path.name}: made a git work tree (Spack requires one)")


def _python(home: Path, b: bundles.Bundle, log: Log) -> Path:
    """A virtual environment with clingo from the bundle's wheels, for Spack's concretizer."""
    venv = home / "python"
    py = venv / "bin" / "python"
    ok = py.exists() and subprocess.run([str(py), "-c", "import clingo"], capture_output=True).returncode == 0
    if ok:
        return py
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    res = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-index", "--find-links",
                          str(b.wheels), f"clingo=={CLINGO_VERSION}"], capture_output=True, text=True)
    if res.returncode != 0:
        tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
        raise IolabError(f"clingo {CLINGO_VERSION} did not install from {b.wheels}: "
                         f"{(res.stderr.strip().splitlines() or ['?'])[-1]}",
                         hint=f"this Python is {tag}; the bundle's wheels must be for {tag} "
                              "(scripts/spack-bundle --python VERSION writes them)")
    log.say(f"   clingo {CLINGO_VERSION} installed from the bundle's wheels")
    return py


def _site_scope(spack_root: Path, home: Path, b: bundles.Bundle) -> None:
    """The scope iolab owns (Spack's site scope, inside its own extracted Spack): the bundle's
    mirror as the only mirror, stages under home, no bootstrapping (clingo is importable)."""
    site = spack_root / "etc" / "spack"
    site.mkdir(parents=True, exist_ok=True)
    (site / "mirrors.yaml").write_text(
        "# written by iolab: the bundle's mirror is the only one (a miss never tries the network)\n"
        f"mirrors::\n  bundle: {json.dumps('file://' + str(b.mirror))}\n")
    (site / "config.yaml").write_text(
        "# written by iolab: stages and caches under its own directory\n"
        f"config:\n  build_stage:\n  - {json.dumps(str(home / 'stage'))}\n"
        f"  source_cache: {json.dumps(str(home / 'source-cache'))}\n"
        f"  misc_cache: {json.dumps(str(home / 'user-cache' / 'misc'))}\n")
    (site / "bootstrap.yaml").write_text(
        "# written by iolab: clingo comes from the bundle's wheels, nothing is bootstrapped\n"
        "bootstrap:\n  enable: false\n")


def inputs_key(b: bundles.Bundle, root: Path, site_config: Path | None) -> str:
    """What the environment is built from: the bundle, spack.yaml, spack-repo/ and the site's
    externals. The same key, the same environment."""
    h = hashlib.sha256()
    h.update(b.key.encode())
    h.update(b"\0spack.yaml\0" + (root / "spack.yaml").read_bytes())
    repo = root / "spack-repo"
    for path in sorted(repo.rglob("*")) if repo.is_dir() else []:
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(f"\0{path.relative_to(repo).as_posix()}\0".encode() + path.read_bytes())
    if site_config is not None:
        h.update(b"\0site\0" + site_config.read_bytes())
    return h.hexdigest()


def write_pointer(root: Path, env_dir: Path) -> Path:
    """The checkout's note of the environment setup built for it (read by the local systems)."""
    path = root / POINTER
    path.parent.mkdir(exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(str(env_dir) + "\n")
    tmp.replace(path)
    return path


def setup(bundle_dir: Path, *, root: Path | None = None, home: Path | None = None,
          site_config: Path | None = None, jobs: int | None = None, out=sys.stdout) -> Built:
    root = Path(root or project_root())
    home = Path(home or default_home()).resolve()
    home.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with open(home / ".lock", "w") as lockfile:
        fcntl.flock(lockfile, fcntl.LOCK_EX)    # one set-up at a time in one home
        log = Log(home / "logs" / f"setup-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log", out)
        b = bundles.open_bundle(bundle_dir)
        bundles.verify(b)
        log.say(f"== offline Spack bundle {b.root}: Spack {b.spack_version}, packages "
                f"{b.packages_version}, {len(b.checked)} files verified")
        site_config = site_config or default_site_config(root)
        if site_config is None:
            log.say("   no externals file for this OS under reframe/config/spack/: every dependency "
                    "must then build from the bundle's mirror, which holds only the benchmarks")
        key = inputs_key(b, root, site_config)
        env_dir = home / "envs" / key[:16]
        marker = env_dir / INSTALLED
        if marker.is_file() and marker.read_text().strip() == key and not broken_view(env_dir) \
                and (env_dir / "spack.lock").is_file():
            write_pointer(root, env_dir)
            took = time.monotonic() - t0
            log.say(f"== reused the installed environment {env_dir} (nothing changed; {took:.1f} s)")
            return Built(env_dir, env_view(env_dir), env_dir / "spack.lock", True, took)
        if marker.is_file():
            log.say(f"   the installed environment {env_dir} lacks "
                    f"{', '.join(broken_view(env_dir)) or 'its spack.lock'}: building it again")

        spack_root = _extract(b.spack_tarball, home / f"spack-{b.spack_version}", log)
        packages_dir = home / f"packages-{b.sums[b.packages_tarball.name][:12]}"
        packages = _extract(b.packages_tarball, packages_dir, log)
        _git_repo(packages, log)
        python = _python(home, b, log)
        _site_scope(spack_root, home, b)
        spack = Spack(home, spack_root, python, log)
        spack.run("repo", "set", "--scope", "site", "--destination", str(packages), "builtin")

        shutil.rmtree(env_dir, ignore_errors=True)
        env_dir.mkdir(parents=True)
        shutil.copy(root / "spack.yaml", env_dir / "spack.yaml")
        if (root / "spack-repo").is_dir():
            shutil.copytree(root / "spack-repo", env_dir / "spack-repo",
                            ignore=shutil.ignore_patterns("__pycache__"))
        if site_config is not None:
            spack.run("-e", str(env_dir), "config", "add", "-f", str(site_config))
            shown = site_config.relative_to(root) if site_config.is_relative_to(root) else site_config
            log.say(f"   externals: {shown}")
        step = time.monotonic()
        log.say("== concretizing spack.yaml (the first time also indexes the package repository)")
        spack.run("-e", str(env_dir), "concretize", "--fresh")
        log.say(f"   concretized in {time.monotonic() - step:.0f} s")
        progress = Progress(log)
        j = ["-j", str(jobs)] if jobs else []
        step = time.monotonic()
        log.say(f"== installing (Spack's output: {log.path})")
        try:
            # those archives alone are not the ones their recipes' sha256 name
            spack.run("-e", str(env_dir), "install", "--fail-fast", "--no-checksum", *j, *NO_CHECKSUM,
                      watch=progress)
            spack.run("-e", str(env_dir), "install", "--fail-fast", *j, watch=progress)
        except SpackFailed as exc:
            if exc.package:
                exc.message = f"{exc.package} did not build: {exc.message}"
            raise
        lacking = broken_view(env_dir)
        if lacking:
            raise IolabError(f"{env_dir}: Spack installed, but its view lacks {', '.join(lacking)}",
                             hint="spack.yaml must keep `view: true` and the benchmarks' specs")
        marker.write_text(key + "\n")
        write_pointer(root, env_dir)
        took = time.monotonic() - t0
        log.say(f"== installed {len(progress.built)} packages in {time.monotonic() - step:.0f} s "
                f"(set-up {took:.0f} s): {env_dir}")
        return Built(env_dir, env_view(env_dir), env_dir / "spack.lock", False, took)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m iolab.stack.build",
                                description="Build spack.yaml offline from a Spack bundle.")
    p.add_argument("bundle", type=Path, help="the bundle's directory (spack-*.tar.gz, mirror/, wheels/)")
    p.add_argument("--home", type=Path, help="where Spack and the environment live "
                   "(IOLAB_SPACK_HOME; default ~/.cache/iolab/spack)")
    p.add_argument("--site-config", type=Path, help="the externals file (default: "
                   "reframe/config/spack/<os><major>.yaml where there is one)")
    p.add_argument("-j", "--jobs", type=int, help="parallel build jobs (Spack's default: the cores)")
    args = p.parse_args(argv)
    try:
        built = setup(args.bundle, home=args.home, site_config=args.site_config, jobs=args.jobs)
    except IolabError as exc:
        print(f"iolab: error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"== stack: {built.view}/bin (IOLAB_SPACK_ENV={built.env_dir})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
