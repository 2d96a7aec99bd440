"""An offline Spack bundle: what an air-gapped site carries in to build spack.yaml.

    spack-<version>.tar.gz              Spack itself (one top directory)
    spack-packages-<tag>.tar.gz         its builtin package repository (one top directory)
    mirror/_source-cache/...            the sources, in Spack 1.x's mirror layout
    wheels/                             clingo and its dependencies, for Spack's concretizer
    SHA256SUMS                          sha256 of every file above (or README.md's ```sha256 block)

Every file is checked against its sha256 before anything is extracted from it; a file the list
does not name, or a listed file that is missing, is refused.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import IolabError
from ..results.provenance import sha256_file

SUMS = "SHA256SUMS"
CLINGO = "clingo"
_SUM_LINE = re.compile(r"^([0-9a-f]{64})\s+\*?(\S.*)$")


def parse_sums(text: str) -> dict[str, str]:
    """`sha256sum` lines (hash, two spaces, relative path) -> {path: hash}; other lines ignored."""
    out = {}
    for line in text.splitlines():
        m = _SUM_LINE.match(line.strip())
        if m:
            out[m.group(2).strip()] = m.group(1)
    return out


def _readme_sums(readme: Path) -> dict[str, str]:
    """The sums in README.md's section '## sha256' (the shared bundle's own form)."""
    text = readme.read_text(errors="replace")
    part = text.split("## sha256", 1)
    return parse_sums(part[1]) if len(part) == 2 else {}


@dataclass
class Bundle:
    root: Path
    sums: dict[str, str]                   # relative path -> sha256, as the bundle lists them
    spack_tarball: Path
    packages_tarball: Path
    mirror: Path
    wheels: Path
    spack_version: str
    packages_version: str
    checked: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        """One digest of everything in the bundle: its sums, sorted."""
        text = "".join(f"{h}  {p}\n" for p, h in sorted(self.sums.items()))
        return hashlib.sha256(text.encode()).hexdigest()


def _one(root: Path, pattern: str, exclude: str | None = None) -> Path:
    found = sorted(p for p in root.glob(pattern) if not (exclude and p.name.startswith(exclude)))
    if len(found) != 1:
        what = "none" if not found else ", ".join(p.name for p in found)
        raise IolabError(f"{root}: expected one {pattern} in the bundle, found {what}",
                         hint="a bundle has spack-<version>.tar.gz, spack-packages-<tag>.tar.gz, "
                              "mirror/ and wheels/ (scripts/spack-bundle writes one)")
    return found[0]


def open_bundle(root: Path) -> Bundle:
    """The bundle in root, its layout checked (not yet its checksums: see verify)."""
    root = Path(root).expanduser().resolve()
    if not root.is_dir():
        raise IolabError(f"{root}: no such directory", hint="give the directory of an offline Spack bundle")
    if (root / SUMS).is_file():
        sums = parse_sums((root / SUMS).read_text(errors="replace"))
        source = SUMS
    elif (root / "README.md").is_file():
        sums = _readme_sums(root / "README.md")
        source = "README.md's sha256 section"
    else:
        sums, source = {}, SUMS
    if not sums:
        raise IolabError(f"{root}: the bundle lists no checksums ({source})",
                         hint=f"a bundle needs {SUMS}: `sha256sum` of every file, relative paths")
    spack = _one(root, "spack-[0-9]*.tar.gz")
    packages = _one(root, "spack-packages-*.tar.gz")
    for sub in ("mirror", "wheels"):
        if not (root / sub).is_dir():
            raise IolabError(f"{root}: the bundle has no {sub}/")
    return Bundle(root, sums, spack, packages, root / "mirror", root / "wheels",
                  spack.name.removeprefix("spack-").removesuffix(".tar.gz"),
                  packages.name.removeprefix("spack-packages-").removesuffix(".tar.gz"))


def files_of(root: Path) -> list[str]:
    """Every regular file of a bundle that its sums must name (relative paths, sorted)."""
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            raise IolabError(f"{path}: a link inside the bundle", hint="a bundle holds plain files only")
        if path.is_file() and rel not in (SUMS, "README.md"):
            out.append(rel)
    return out


def verify(bundle: Bundle) -> None:
    """Every file of the bundle has the sha256 it lists, and it lists every file it has."""
    present = set(files_of(bundle.root))
    listed = set(bundle.sums)
    missing = sorted(listed - present)
    if missing:
        raise IolabError(f"{bundle.root}: listed but missing: {', '.join(missing)}")
    unlisted = sorted(present - listed)
    if unlisted:
        raise IolabError(f"{bundle.root}: not in its checksum list: {', '.join(unlisted)}",
                         hint="a file nobody vouched for is not used; list it in SHA256SUMS or remove it")
    for rel in sorted(listed):
        got = sha256_file(bundle.root / rel)
        if got != bundle.sums[rel]:
            raise IolabError(f"{bundle.root / rel}: sha256 {got}, the bundle lists {bundle.sums[rel]}",
                             hint="the file was damaged or replaced; copy the bundle again")
        bundle.checked.append(rel)


def write_sums(root: Path) -> dict[str, str]:
    """SHA256SUMS of every file under root (but itself and README.md), sorted by path."""
    sums = {rel: sha256_file(root / rel) for rel in files_of(root)}
    (root / SUMS).write_text("".join(f"{h}  {rel}\n" for rel, h in sums.items()))
    return sums
