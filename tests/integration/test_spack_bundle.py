"""scripts/spack-bundle for real: a bundle made from a built Spack home (Spack fetching the
sources from the mirror that home is configured with), then opened and verified as
`scripts/setup --spack-bundle` does; made twice, the same bytes; the home only read.

Needs a Spack home that `scripts/setup --spack-bundle` (python -m iolab.stack.build) built:
IOLAB_SPACK_HOME, else its default place. Without one the test is skipped with the reason;
under IOLAB_REQUIRE_STACK=1 it fails instead."""

from __future__ import annotations

import os
import subprocess
import tarfile
import time
from pathlib import Path

import pytest
import yaml

from iolab.stack import build
from iolab.stack import bundle as bundles

from .conftest import REPO, STACK_REQUIRED

pytestmark = pytest.mark.integration


def spack_home() -> Path:
    """IOLAB_SPACK_HOME, else where scripts/setup --spack-bundle builds by default."""
    home = build.default_home()
    why = None
    if not home.is_dir():
        why = f"no Spack home at {home} (IOLAB_SPACK_HOME: a home scripts/setup --spack-bundle built)"
    elif not any((p / "bin" / "spack").is_file() for p in home.glob("spack-*")):
        why = f"the Spack home {home} has no spack-<version>/bin/spack"
    elif not list(home.glob(f"envs/*/{build.INSTALLED}")):
        why = f"the Spack home {home} has no installed environment"
    if why:
        if STACK_REQUIRED:
            pytest.fail(f"IOLAB_REQUIRE_STACK=1 but {why}")
        pytest.skip(why)
    return home


def configured_wheels(home: Path) -> list[str]:
    """The wheels of the bundle the home was built from (beside the mirror its Spack uses), so no
    package index is needed; else none (pip download then)."""
    spack = next(p for p in home.glob("spack-*") if (p / "bin" / "spack").is_file())
    conf = spack / "etc" / "spack" / "mirrors.yaml"
    mirrors = (yaml.safe_load(conf.read_text()) or {}) if conf.is_file() else {}
    for url in (mirrors.get("mirrors:") or mirrors.get("mirrors") or {}).values():
        url = url if isinstance(url, str) else url.get("url", "")
        wheels = Path(url.removeprefix("file://")).parent / "wheels"
        if url.startswith("file://") and wheels.is_dir():
            return ["--wheels", str(wheels)]
    return []


def spack_bundle(out: Path, home: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "scripts" / "spack-bundle"), str(out), "--home", str(home), *extra],
                          capture_output=True, text=True, timeout=600)


def changed_since(root: Path, t0: float) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if os.lstat(path).st_mtime >= t0:
                out.append(path)
    return out


def test_a_bundle_from_a_built_spack_home(tmp_path):
    home = spack_home()
    wheels = configured_wheels(home)
    t0 = time.time() - 1
    out = tmp_path / "bundle"
    res = spack_bundle(out, home, *wheels)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert f"scripts/setup --spack-bundle {out}" in res.stdout

    b = bundles.open_bundle(out)
    bundles.verify(b)                                   # what setup checks first
    assert b.root == out and (out / bundles.SUMS).is_file()
    files = bundles.files_of(out)                       # raises on any link
    assert set(files) == set(b.sums) == set(b.checked)
    mirror = [f for f in files if f.startswith("mirror/")]
    assert mirror and all(f.startswith("mirror/_source-cache/") for f in mirror)
    assert any(f.startswith(f"wheels/clingo-{build.CLINGO_VERSION}-") for f in files)
    # IOR's archive verifies against its recipe: named by its own sha256
    ior = [f for f in mirror if "/archive/" in f and Path(f).name.startswith(b.sums[f])]
    assert ior, mirror

    with tarfile.open(b.spack_tarball) as tar:
        names = tar.getnames()
    top = f"spack-{b.spack_version}"
    assert names[0] == top and names == sorted(names)
    assert f"{top}/bin/spack" in names
    for leftover in ("etc/spack/mirrors.yaml", "etc/spack/config.yaml", "etc/spack/bootstrap.yaml",
                     "etc/spack/site/repos.yaml", "opt", ".iolab-extracted"):
        assert f"{top}/{leftover}" not in names
    with tarfile.open(b.packages_tarball) as tar:
        assert not any(n == "spack-packages/.git" or n.startswith("spack-packages/.git/")
                       for n in tar.getnames())

    readme = (out / "README.md").read_text()
    assert f"Spack {b.spack_version}" in readme and b.packages_version in readme
    assert "scripts/setup --spack-bundle" in readme
    for f in mirror:
        assert f"| `{f}` |" in readme and b.sums[f] in readme

    # the same inputs, the same bundle
    again = tmp_path / "again"
    res = spack_bundle(again, home, *wheels)
    assert res.returncode == 0, res.stderr[-3000:]
    assert (again / bundles.SUMS).read_bytes() == (out / bundles.SUMS).read_bytes()
    assert (again / "README.md").read_bytes() == (out / "README.md").read_bytes()

    # an existing bundle is never written into
    res = spack_bundle(out, home, *wheels)
    assert res.returncode == 2 and res.stderr.startswith("iolab: error: ") and res.stderr.count("\n") == 1
    assert "exists and is not empty" in res.stderr
    # the Spack it was made from was only read
    assert changed_since(home, t0) == []
