"""spack.yaml parses and every spec names a package that exists: in Spack's builtin repository
(spack/spack-packages, as listed in the reference) or in this project's spack-repo/."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
LOCAL_REPO = ROOT / "spack-repo" / "spack_repo" / "iolab"
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
    for path in (ROOT / "reframe" / "config" / "spack").glob("*.yaml"):
        doc = yaml.safe_load(path.read_text())
        assert set(doc) <= {"packages", "config", "compilers", "mirrors"}, path
        system = path.stem
        configs = "\n".join(p.read_text() for p in (ROOT / "reframe" / "config").glob("*.py"))
        assert f"'{system}'" in configs, f"{path.name} names no system in reframe/config"
