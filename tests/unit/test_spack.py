"""spack.yaml parses and every spec names a package that exists: in Spack's builtin repository
(spack/spack-packages, as listed in the reference) or in this project's spack-repo/."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import yaml

from iolab.results.provenance import sha256_file
from tests.tools.record_spack import standin

ROOT = Path(__file__).resolve().parents[2]
LOCAL_REPO = ROOT / "spack-repo" / "spack_repo" / "iolab"
DATA = ROOT / "tests" / "data" / "spack"
# Packages of spack/spack-packages that iolab relies on (REFERENCE §8; fio and openmpi exist
# there too). BTIO is not among them: the local repository provides it.
BUILTIN = {"ior", "h5bench", "darshan-runtime", "darshan-util", "py-darshan", "parallel-netcdf",
           "hdf5", "fio", "openmpi", "mpich", "cray-mpich", "lustre", "reframe"}


def spec_name(spec: str) -> str:
    return re.match(r"^([a-z0-9][a-z0-9-]*)", spec.strip()).group(1)


def local_packages() -> dict[str, Path]:
    return {p.parent.name.replace("_", "-"): p for p in (LOCAL_REPO / "packages").glob("*/package.py")}


def test_spack_yaml_specs_exist():
    env = yaml.safe_load((ROOT / "spack.yaml").read_text())["spack"]
    names = [spec_name(s) for s in env["specs"]]
    unknown = [n for n in names if n not in BUILTIN and n not in local_packages()]
    assert not unknown, f"specs naming no known package: {unknown}"
    assert {"ior", "h5bench", "btio", "darshan-runtime", "darshan-util", "hdf5", "parallel-netcdf",
            "fio"} <= set(names)


def test_ior_is_pinned_and_the_darshan_pair_matches():
    specs = yaml.safe_load((ROOT / "spack.yaml").read_text())["spack"]["specs"]
    ior = next(s for s in specs if spec_name(s) == "ior")
    assert "@4.0.0" in ior and "+hdf5" in ior and "+ncmpi" in ior  # Spack prefers 3.3.0
    versions = {spec_name(s): re.search(r"@([\d.]+)", s).group(1) for s in specs
                if spec_name(s) in ("darshan-runtime", "darshan-util")}
    assert len(set(versions.values())) == 1, versions
    pyproject = (ROOT / "pyproject.toml").read_text()
    # PyDarshan's wheels are numbered x.y.z.w (3.4.7.0 for darshan-util 3.4.7)
    assert f'darshan=={versions["darshan-util"]}.0' in pyproject, "PyDarshan must match the runtime"


def test_local_repository_is_registered_and_well_formed():
    env = yaml.safe_load((ROOT / "spack.yaml").read_text())["spack"]
    assert env["repos"]["iolab"] == "$env/spack-repo/spack_repo/iolab"
    repo = yaml.safe_load((LOCAL_REPO / "repo.yaml").read_text())["repo"]
    assert repo["namespace"] == "iolab" == LOCAL_REPO.name
    for name, path in local_packages().items():
        tree = ast.parse(path.read_text())
        classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
        assert classes == ["".join(w.capitalize() for w in name.split("-"))], path


def test_site_externals_files_are_spack_config():
    """Each is named after a system, or is a spack_config that a system config can name."""
    configs = "\n".join(p.read_text() for p in [*(ROOT / "reframe" / "config").glob("*.py"),
                                                 ROOT / "src" / "iolab" / "rfm" / "systems.py"])
    for path in (ROOT / "reframe" / "config" / "spack").glob("*.yaml"):
        doc = yaml.safe_load(path.read_text())
        assert set(doc) <= {"packages", "config", "compilers", "mirrors"}, path
        name = path.stem
        assert f"'{name}'" in configs or f'"{name}"' in configs, \
            f"{path.name} names no system in reframe/config and no config names it"


def recipe_versions(path: Path) -> dict[str, dict]:
    """version("1.6", commit=...) calls of a recipe, by version string."""
    out = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "version":
            out[node.args[0].value] = {k.arg: k.value.value for k in node.keywords
                                       if isinstance(k.value, ast.Constant)}
    return out


def recipe_variants(path: Path) -> set[str]:
    return {node.args[0].value for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "variant"}


def test_h5bench_and_btio_come_from_the_local_repository_at_the_versions_iolab_runs():
    specs = yaml.safe_load((ROOT / "spack.yaml").read_text())["spack"]["specs"]
    h5bench = next(s for s in specs if spec_name(s) == "h5bench")
    assert "@1.6" in h5bench and "+metadata" in h5bench and "+exerciser" in h5bench
    recipe = local_packages()["h5bench"]
    # h5bench 1.6 is tag 1.6 of hpc-io/h5bench (Spack's builtin stops at 1.4)
    assert recipe_versions(recipe)["1.6"]["commit"] == "675c86d11832c625f1d71e63d7626308170ba8c5"
    assert {"metadata", "exerciser"} <= recipe_variants(recipe)
    text = recipe.read_text()
    for option in ("H5BENCH_METADATA", "H5BENCH_EXERCISER", "HDF5_PREFER_PARALLEL", "HDF5_HOME"):
        assert option in text, option
    btio = local_packages()["btio"]
    assert recipe_versions(btio)["2019-07-21"]["commit"] == "d45c2702ae60218139dc8b44f495453f0a92c431"
    assert "parallel = False" in btio.read_text()     # the Makefile's bt.o rule races under -j


def test_the_recorded_spack_build_is_of_this_spack_yaml():
    """tests/data/spack holds a real Spack build of exactly this spack.yaml, spack-repo/ and
    Debian site config: change one of them and the recording must be made again (its README)."""
    index = json.loads((DATA / "index.json").read_text())
    env = index["environment"]
    how = "re-record tests/data/spack (tests/data/spack/README.md)"
    assert sha256_file(ROOT / "spack.yaml") == env["spack_yaml_sha256"], how
    assert sha256_file(ROOT / env["site_config"]) == env["site_config_sha256"], how
    assert standin().tree_sha256(ROOT / "spack-repo") == env["spack_repo_sha256"], how
    assert sha256_file(DATA / "spack.lock") == env["spack_lock_sha256"]
    lock = json.loads((DATA / "spack.lock").read_text())
    concrete = {n["name"]: n for n in lock["concrete_specs"].values()}
    assert concrete["h5bench"]["namespace"] == "iolab" and concrete["h5bench"]["version"] == "1.6"
    roots = {r["spec"] for r in lock["roots"]}
    assert any(r.startswith("h5bench@1.6") for r in roots), roots
    installed = {s["name"]: s for s in json.loads((DATA / "find-json.out").read_text())}
    assert installed["h5bench"]["version"] == "1.6" and installed["h5bench"]["namespace"] == "iolab"
    assert installed["btio"]["namespace"] == "iolab"
    assert installed["ior"]["version"] == "4.0.0" and installed["darshan-runtime"]["version"] == "3.4.7"
    assert installed["hdf5"]["external"]["path"] == "/usr/lib/x86_64-linux-gnu/hdf5/openmpi"


def test_the_lock_is_for_the_x86_64_baseline_not_the_recording_host():
    """Spack builds for the host's microarchitecture unless a requirement names one; the Debian
    site file requires the x86-64 baseline of all (and of darshan-runtime, whose own requirement
    replaces that of `all`), so the recorded lock rebuilds on any x86-64 machine."""
    site = yaml.safe_load((ROOT / "reframe" / "config" / "spack" / "debian12.yaml").read_text())
    for name in ("all", "darshan-runtime"):
        assert "target=x86_64" in site["packages"][name]["require"], name
    lock = json.loads((DATA / "spack.lock").read_text())
    targets = {n["name"]: n["arch"]["target"] for n in lock["concrete_specs"].values()}
    targets = {k: v["name"] if isinstance(v, dict) else v for k, v in targets.items()}
    assert set(targets.values()) == {"x86_64"}, targets
    assert {"ior", "h5bench", "btio", "darshan-runtime", "darshan-util"} <= set(targets)
