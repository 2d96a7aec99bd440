"""Write an offline Spack bundle (the layout bundle.py reads) from a Spack that has the sources.

    python -m iolab.stack.make_bundle OUT [--home DIR | --spack DIR --env DIR] [--wheels DIR]

From a Spack home that `python -m iolab.stack.build` made (IOLAB_SPACK_HOME, the default), or
any Spack 1.x (`--spack`) with a concretized environment of spack.yaml (`--env`):

    spack-<version>.tar.gz          `git archive` of Spack's commit when its root is a git work
                                    tree, else a tar of its root without what using it added
                                    (iolab's site scope, opt/, caches)
    spack-packages-<tag>.tar.gz     the builtin package repository, without .git
    mirror/_source-cache/...        `spack -e ENV mirror create --all`: Spack fetches each source
                                    (the network, or the mirror it is configured with) and
                                    verifies it; only a package of build.NO_CHECKSUM whose archive
                                    fails its recipe's sha256 is fetched again without the check
    wheels/                         clingo and its dependencies (`pip download`, or --wheels DIR)
    SHA256SUMS, README.md

Spack runs isolated, as build.py runs it: its user scope, caches and stages in a temporary
directory (~/.spack is not read, and the Spack and environment given are only read), with
`--packages` its builtin repository. Tarballs are deterministic (sorted members, one mtime,
owner root, gzip without a name or time): the same inputs give the same bytes. OUT is written as
a hidden sibling first and renamed when complete and verified; an OUT that exists and is not
empty is refused.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import IolabError
from ..project import project_root
from . import build
from . import bundle as bundles

MTIME = 946684800          # 2000-01-01T00:00:00Z: every member of a tarball we write
# What using a Spack adds to its root (build.py's site scope, `spack repo set --scope site`,
# installs, caches): never carried into a bundle.
SITE_SCOPE_FILES = ("mirrors.yaml", "config.yaml", "bootstrap.yaml", "repos.yaml")
SPACK_EXCLUDED_DIRS = ("opt", "var/spack/cache")
ALWAYS_EXCLUDED = ("__pycache__", ".iolab-extracted", build.INSTALLED)


def _spack_excluded(rel: str) -> bool:
    parts = rel.split("/")
    if parts[-1] in ALWAYS_EXCLUDED:
        return True
    if any(rel == d or rel.startswith(d + "/") for d in SPACK_EXCLUDED_DIRS):
        return True
    return parts[-1] in SITE_SCOPE_FILES and "/".join(parts[:-1]) in ("etc/spack", "etc/spack/site")


def _packages_excluded(rel: str) -> bool:
    return rel.split("/")[-1] in ALWAYS_EXCLUDED or rel == ".git"


def _members(src: Path, exclude: Callable[[str], bool]) -> list[str]:
    """Every path under src (relative, posix), sorted; an excluded directory is not entered."""
    out = []
    for dirpath, dirnames, filenames in os.walk(src):
        base = Path(dirpath).relative_to(src).as_posix()
        base = "" if base == "." else base + "/"
        kept = [d for d in dirnames if not exclude(base + d)]
        dirnames[:] = [d for d in kept if not os.path.islink(os.path.join(dirpath, d))]
        out.extend(base + name for name in kept + filenames if not exclude(base + name))
    return sorted(out)


def _gzip(path: Path):
    """A gzip stream with no file name and no time in its header."""
    raw = open(path, "wb")
    return raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6)


def tar_dir(src: Path, out: Path, prefix: str, exclude: Callable[[str], bool] = lambda rel: False) -> int:
    """out (.tar.gz) of src under the top directory prefix/: members sorted, mode 755 or 644
    (kept: executable or not), owner root, mtime MTIME. Returns the number of members."""
    src = Path(src)
    members = _members(src, exclude)
    raw, gz = _gzip(out)
    with raw, gz, tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        def add(info: tarfile.TarInfo, fileobj=None):
            info.mtime, info.uid, info.gid, info.uname, info.gname = MTIME, 0, 0, "root", "root"
            tar.addfile(info, fileobj)

        top = tarfile.TarInfo(prefix)
        top.type, top.mode = tarfile.DIRTYPE, 0o755
        add(top)
        for rel in members:
            path = src / rel
            info = tarfile.TarInfo(f"{prefix}/{rel}")
            st = path.lstat()
            if path.is_symlink():
                info.type, info.mode, info.linkname = tarfile.SYMTYPE, 0o777, os.readlink(path)
                add(info)
            elif path.is_dir():
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                add(info)
            elif path.is_file():
                info.size, info.mode = st.st_size, 0o755 if st.st_mode & 0o111 else 0o644
                with open(path, "rb") as f:
                    add(info, f)
            else:
                raise IolabError(f"{path}: neither a file, a directory nor a link",
                                 hint="a bundle's tarballs hold plain files only")
    return len(members) + 1


def _git(path: Path, *args: str) -> str | None:
    res = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True)
    return res.stdout.strip() if res.returncode == 0 else None


def _git_top(path: Path) -> bool:
    top = _git(path, "rev-parse", "--show-toplevel")
    return top is not None and Path(top).resolve() == Path(path).resolve()


def git_archive(root: Path, out: Path, prefix: str) -> str:
    """out (.tar.gz) of root's HEAD (git archive, gzip without name or time); returns the commit."""
    commit = _git(root, "rev-parse", "HEAD")
    raw, gz = _gzip(out)
    with raw, gz:
        # modes 755/644 as our own tars, and no line-ending conversion, whatever git's config says
        proc = subprocess.Popen(["git", "-C", str(root), "-c", "tar.umask=0022", "-c", "core.autocrlf=false",
                                 "archive", "--format=tar",
                                 f"--prefix={prefix}/", "HEAD"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        shutil.copyfileobj(proc.stdout, gz)
        err = proc.stderr.read().decode(errors="replace").strip()
        if proc.wait() != 0:
            raise IolabError(f"{root}: git archive failed: {err.splitlines()[-1] if err else '?'}")
    return commit


@dataclass
class Source:
    """The Spack a bundle is made from: its root, builtin packages, environment and python."""
    spack: Path
    env: Path
    python: Path
    packages: Path | None = None          # default: the builtin repository Spack names
    packages_tag: str | None = None
    misc_cache: Path | None = None        # a cache to start from (a copy is used; it is only read)


@dataclass
class Made:
    out: Path
    spack_version: str
    packages_tag: str
    sums: dict[str, str]
    sources: dict[str, list[str]] = field(default_factory=dict)   # mirror file -> what it is
    unverified: list[str] = field(default_factory=list)


def from_home(home: Path, root: Path | None = None, env: Path | None = None) -> Source:
    """The Spack, environment (unless given) and python of a home build.py made."""
    home = Path(home).expanduser().resolve()
    if not home.is_dir():
        raise IolabError(f"{home}: no such Spack home", hint="give --home DIR (a home `scripts/setup "
                         "--spack-bundle` built) or --spack DIR --env DIR")
    spacks = sorted(p for p in home.glob("spack-*") if (p / "bin" / "spack").is_file())
    if len(spacks) != 1:
        raise IolabError(f"{home}: expected one spack-<version>/ with bin/spack, found "
                         f"{', '.join(p.name for p in spacks) or 'none'}", hint="choose with --spack DIR")
    envs = sorted(p.parent for p in home.glob(f"envs/*/{build.INSTALLED}"))
    pointer = Path(root or project_root()) / build.POINTER
    chosen = Path(pointer.read_text().strip()) if pointer.is_file() else None
    if env is None:
        env = chosen if chosen in envs else (envs[0] if len(envs) == 1 else None)
    if env is None:
        raise IolabError(f"{home}: {len(envs)} installed environments under envs/ and none is "
                         "this checkout's", hint="choose one with --env DIR")
    python = home / "python" / "bin" / "python"
    misc = home / "user-cache" / "misc"
    return Source(spacks[0], env, python if python.exists() else Path(sys.executable),
                  misc_cache=misc if misc.is_dir() else None)


def _packages_tag(packages: Path) -> tuple[str | None, str | None]:
    """(tag, commit) of a spack-packages clone at a tag; else (the tag of the tarball build.py
    extracted it from, None: its commit is build.py's own, which names nothing upstream)."""
    if _git_top(packages):
        tag = _git(packages, "describe", "--tags", "--exact-match", "HEAD")
        if tag:
            return tag, _git(packages, "rev-parse", "HEAD")
    marker = packages / ".iolab-extracted"
    name = marker.read_text().strip() if marker.is_file() else ""
    if name.startswith("spack-packages-") and name.endswith(".tar.gz"):
        return name.removeprefix("spack-packages-").removesuffix(".tar.gz"), None
    return None, None


def _check_tag(tag: str) -> str:
    if not tag or "/" in tag or any(c.isspace() for c in tag) or tag.startswith("."):
        raise IolabError(f"--packages-tag {tag!r}: not usable in a file name",
                         hint="a tag such as v2025.11.0")
    return tag


def _env_names(env: Path) -> list[str]:
    """The packages Spack builds in env (the non-external specs of its spack.lock)."""
    lock = env / "spack.lock"
    if not lock.is_file():
        raise IolabError(f"{env}: no spack.lock", hint=f"concretize it first: spack -e {env} concretize")
    try:
        specs = json.loads(lock.read_text())["concrete_specs"].values()
    except (ValueError, KeyError, AttributeError) as exc:
        raise IolabError(f"{lock}: not a spack.lock ({exc})") from None
    return sorted({s["name"] for s in specs if not s.get("external")})


class _Maker:
    def __init__(self, src: Source, work: Path, out=sys.stdout):
        self.src, self.work = src, work
        self.log = build.Log(work / "spack.log", out)
        self.scope = work / "scope"
        self.scope.mkdir()
        # a command-line scope (Spack's highest): stages and caches in work/, whatever the
        # Spack's own scopes say, so the Spack we read from is not written to
        misc = work / "misc-cache"
        if src.misc_cache is not None:
            shutil.copytree(src.misc_cache, misc, ignore=shutil.ignore_patterns("*.lock", "lock"))
        (self.scope / "config.yaml").write_text(
            "config:\n"
            f"  build_stage:\n  - {json.dumps(str(work / 'stage'))}\n"
            f"  source_cache: {json.dumps(str(work / 'source-cache'))}\n"
            f"  misc_cache: {json.dumps(str(misc))}\n")
        if src.packages is not None:
            # the packages carried are the packages Spack mirrors the sources of
            (self.scope / "repos.yaml").write_text(
                f"repos:\n  builtin: {json.dumps(str(src.packages / 'repos' / 'spack_repo' / 'builtin'))}\n")
        self.spack = build.Spack(work, src.spack, src.python, self.log)

    def run(self, *args: str, check: bool = True):
        return self.spack.run("-C", str(self.scope), *args, check=check)

    def version(self) -> str:
        _, lines = self.run("--version")
        return (lines[-1].split() or ["?"])[0] if lines else "?"

    def packages(self) -> Path:
        """The builtin repository's root (the directory holding repos/spack_repo/builtin)."""
        _, lines = self.run("repo", "list")
        for line in lines:
            words = line.split()
            if len(words) >= 2 and words[1] == "builtin" or (words and words[0] == "builtin"):
                path = Path(words[-1])
                if path.parts[-3:] == ("repos", "spack_repo", "builtin"):
                    return path.parents[2]
        raise IolabError(f"{self.src.spack}: Spack names no builtin repository in a spack-packages "
                         "checkout", hint="give --packages DIR (the spack-packages directory)")

    def mirror(self, env: Path, mirror: Path) -> list[str]:
        """mirror/ from `mirror create --all`; returns the packages fetched without a checksum."""
        rc, lines = self.run("-e", str(env), "mirror", "create", "-d", str(mirror), "--all", check=False)
        if rc == 0:
            return []
        failed = _failed_downloads(lines)
        names = sorted({f.split("@")[0] for f in failed})
        checksum = any("Expected" in ln and "but got" in ln for ln in lines)   # Spack's ChecksumError
        if not names or set(names) - set(build.NO_CHECKSUM) or not checksum:
            raise build.SpackFailed("spack mirror create", rc, lines, self.log.path)
        self.log.say(f"   {', '.join(names)}: the source fails its recipe's sha256; fetched again "
                     "without the check (build.py installs these with --no-checksum)")
        others = [n for n in _env_names(env) if n not in names]
        excl = ["--exclude-specs", " ".join(others)] if others else []
        self.run("-e", str(env), "mirror", "--no-checksum", "create", "-d", str(mirror), "--all", *excl)
        return names


def _failed_downloads(lines: list[str]) -> list[str]:
    for i, line in enumerate(lines):
        if "Failed downloads" in line:
            return [w for ln in lines[i + 1:] for w in ln.split() if "@" in w]
    return []


def _flatten_mirror(mirror: Path) -> dict[str, list[str]]:
    """Keep _source-cache/ only: Spack's per-package links (ior/ior-4.0.0.tar.gz -> ...) are
    read for what each file is, then removed (a bundle holds no links)."""
    what: dict[str, list[str]] = {}
    for top in sorted(mirror.iterdir()):
        if top.name == "_source-cache":
            continue
        for link in sorted(top.rglob("*")):
            if link.is_symlink():
                target = (link.parent / os.readlink(link)).resolve()
                if target.is_relative_to(mirror.resolve()):
                    rel = target.relative_to(mirror.resolve()).as_posix()
                    what.setdefault(rel, []).append(link.name.removesuffix(".tar.gz"))
        shutil.rmtree(top) if top.is_dir() and not top.is_symlink() else top.unlink()
    for path in mirror.rglob("*"):
        if path.is_symlink():
            raise IolabError(f"{path}: Spack's mirror holds a link inside _source-cache/",
                             hint="a bundle holds plain files only")
    return what


def _wheels(dest: Path, wheels: Path | None, python_version: str | None, log: build.Log) -> None:
    dest.mkdir()
    if wheels is not None:
        found = sorted(Path(wheels).glob("*.whl"))
        for whl in found:
            shutil.copyfile(whl, dest / whl.name)
        log.say(f"   wheels: {len(found)} copied from {wheels}")
    else:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "--dest", str(dest),
               f"clingo=={build.CLINGO_VERSION}"]
        if python_version:
            cmd += ["--python-version", python_version, "--implementation", "cp"]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            last = (res.stderr.strip().splitlines() or ["?"])[-1]
            raise IolabError(f"pip download clingo=={build.CLINGO_VERSION} failed: {last}",
                             hint="no package index here? give --wheels DIR (a directory of wheels)")
        log.say(f"   wheels: clingo {build.CLINGO_VERSION} and its dependencies from the package index")
    if not list(dest.glob(f"{bundles.CLINGO}-{build.CLINGO_VERSION}-*.whl")):
        raise IolabError(f"{wheels or 'pip download'}: no {bundles.CLINGO}-{build.CLINGO_VERSION} wheel",
                         hint="Spack's concretizer needs it (build.py installs it from wheels/)")


def _refuse(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise IolabError(f"{out}: exists and is not empty", hint="give a new directory")


def make(out: Path, src: Source, *, wheels: Path | None = None, python_version: str | None = None,
         stream=sys.stdout) -> Made:
    out = Path(out).expanduser().absolute()
    _refuse(out)
    if not (src.spack / "bin" / "spack").is_file():
        raise IolabError(f"{src.spack}: no bin/spack", hint="--spack names a Spack's root directory")
    names = _env_names(src.env)
    if wheels is not None and not Path(wheels).is_dir():
        raise IolabError(f"--wheels {wheels}: no such directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.partial-{os.getpid()}")
    work = Path(tempfile.mkdtemp(prefix="iolab-spack-bundle-"))
    keep_work = False
    try:
        tmp.mkdir()
        m = _Maker(src, work, stream)
        version = m.version()
        packages = src.packages or m.packages()
        found, packages_commit = _packages_tag(packages)
        tag = _check_tag(src.packages_tag or found or "")
        m.log.say(f"== bundle {out.name}: Spack {version} ({src.spack}), packages {tag} ({packages})")
        spack_name = f"spack-{version}"
        if _git_top(src.spack):
            spack_commit = git_archive(src.spack, tmp / f"{spack_name}.tar.gz", spack_name)
            spack_from = f"`git archive` of commit {spack_commit}"
            if _git(src.spack, "status", "--porcelain", "--untracked-files=no"):
                m.log.say("   note: the Spack work tree has local changes; the archive has the commit only")
        else:
            tar_dir(src.spack, tmp / f"{spack_name}.tar.gz", spack_name, _spack_excluded)
            spack_from = ("a tar of its root, without its site scope's " + ", ".join(SITE_SCOPE_FILES)
                          + ", opt/, var/spack/cache and __pycache__")
        m.log.say(f"   {spack_name}.tar.gz: {spack_from}")
        tar_dir(packages, tmp / f"spack-packages-{tag}.tar.gz", "spack-packages", _packages_excluded)
        m.log.say(f"   spack-packages-{tag}.tar.gz: the builtin repository, without .git")

        # a copy of the environment: Spack may write into an environment it reads
        env = work / "env"
        env.mkdir()
        for name in ("spack.yaml", "spack.lock"):
            shutil.copyfile(src.env / name, env / name)
        if (src.env / "spack-repo").is_dir():
            shutil.copytree(src.env / "spack-repo", env / "spack-repo",
                            ignore=shutil.ignore_patterns("__pycache__"))
        m.log.say(f"== mirror: the sources of {', '.join(names)} (spack mirror create)")
        unverified = m.mirror(env, tmp / "mirror")
        sources = _flatten_mirror(tmp / "mirror")
        _wheels(tmp / "wheels", wheels, python_version, m.log)

        sums = bundles.write_sums(tmp)
        text = readme(version, spack_from, tag, packages_commit, sums, sources, unverified)
        (tmp / "README.md").write_text(text)
        bundles.verify(bundles.open_bundle(tmp))          # what setup will check, checked now
        if out.exists():
            out.rmdir()
        tmp.rename(out)
        m.log.say(f"== bundle written: {out} ({len(sums)} files, SHA256SUMS, README.md)")
        return Made(out, version, tag, sums, sources, unverified)
    except build.SpackFailed:
        keep_work = True            # its hint names Spack's whole output, kept there
        raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        if not keep_work:
            shutil.rmtree(work, ignore_errors=True)


def readme(version: str, spack_from: str, tag: str, packages_commit: str | None, sums: dict[str, str],
           sources: dict[str, list[str]], unverified: list[str]) -> str:
    """What is in the bundle and how to use it (no date and no path: the same inputs, the same text)."""
    at = f" (commit {packages_commit})" if packages_commit else ""
    lines = [
        f"# An offline Spack bundle: Spack {version}, packages {tag}, and a source mirror", "",
        "Written by iolab's `scripts/spack-bundle`. On a machine without network, from an iolab "
        "checkout:", "",
        "```sh", "scripts/setup --spack-bundle <this directory>", "```", "",
        "which checks every file against `SHA256SUMS`, extracts Spack and its packages, installs "
        "clingo from `wheels/`, makes `mirror/` Spack's only mirror and builds spack.yaml "
        "(`python -m iolab.stack.build <this directory> --home DIR` does the same without the "
        "rest of set-up).", "",
        "| file | what |", "|---|---|",
        f"| `spack-{version}.tar.gz` | Spack {version}: {spack_from} |",
        f"| `spack-packages-{tag}.tar.gz` | the builtin package repository at {tag}{at}, "
        "without `.git` (set-up makes it a git work tree, as Spack requires) |",
        "| `mirror/_source-cache/` | the sources of the environment's packages, in Spack 1.x's mirror "
        "layout (below) |",
        f"| `wheels/` | clingo {build.CLINGO_VERSION} and its dependencies, for Spack's concretizer: "
        + ", ".join(f"`{Path(p).name}`" for p in sums if p.startswith("wheels/")) + " |",
        "| `SHA256SUMS` | sha256 of every file but itself and this README |", "",
        "## Sources in the mirror", "",
        "| file | for | sha256 |", "|---|---|---|",
    ]
    for rel, digest in sums.items():
        if rel.startswith("mirror/"):
            what = ", ".join(sources.get(rel.removeprefix("mirror/"), [])) or "?"
            lines.append(f"| `{rel}` | {what} | `{digest}` |")
    lines.append("")
    if unverified:
        lines += [f"{', '.join(unverified)}: the archive is not the one the recipe's sha256 names "
                  "(an archive named by the sha256 it should have, holding other bytes), so Spack "
                  "fetched it without the check; set-up installs these alone with `--no-checksum` "
                  "and verifies every other source.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="scripts/spack-bundle",
        description="Write an offline Spack bundle (Spack, its packages, the sources of spack.yaml, "
                    "clingo wheels, SHA256SUMS, README.md) from a Spack that has the sources.")
    p.add_argument("out", type=Path, help="the bundle's directory (new, or empty)")
    p.add_argument("--home", type=Path, help="a Spack home set up by scripts/setup --spack-bundle "
                   "(default IOLAB_SPACK_HOME, else ~/.cache/iolab/spack): its Spack, packages, "
                   "environment and clingo")
    p.add_argument("--spack", type=Path, help="a Spack root instead of a home's (needs --env)")
    p.add_argument("--env", type=Path, help="a concretized environment of spack.yaml (has spack.lock)")
    p.add_argument("--packages", type=Path, help="the builtin package repository (a spack-packages "
                   "directory; Spack is pointed at it too; default: the one Spack names)")
    p.add_argument("--packages-tag", help="its tag, for the tarball's name (default: its git tag, "
                   "or the tarball it was extracted from)")
    p.add_argument("--spack-python", type=Path, help="the python Spack runs with (default: the "
                   "home's, else this one)")
    p.add_argument("--wheels", type=Path, help="copy the wheels from DIR instead of pip download")
    p.add_argument("--python", dest="python_version", help="the Python version the wheels are for "
                   "(pip download --python-version; default this one)")
    args = p.parse_args(argv)
    try:
        if args.spack is not None:
            if args.env is None:
                raise IolabError("--spack needs --env DIR (a concretized environment of spack.yaml)")
            src = Source(args.spack.expanduser().resolve(), args.env.expanduser().resolve(),
                         Path(sys.executable))
        else:
            src = from_home(args.home or build.default_home(),
                            env=args.env.expanduser().resolve() if args.env else None)
        if args.packages is not None:
            src.packages = args.packages.expanduser().resolve()
        if args.spack_python is not None:
            src.python = args.spack_python
        src.packages_tag = args.packages_tag
        if args.wheels is not None and args.python_version:
            raise IolabError("--wheels and --python: choose one (--python is for pip download)")
        made = make(args.out, src, wheels=args.wheels, python_version=args.python_version)
    except IolabError as exc:
        print(f"iolab: error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"== use it: scripts/setup --spack-bundle {made.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
