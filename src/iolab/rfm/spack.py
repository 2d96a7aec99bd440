"""The Spack stack provider: build the project's spack.yaml as a ReFrame fixture.

ReFrame's own pattern for Spack builds (hpctestlib, docs on the `Spack` build system): a
compile-only test with `build_system = 'Spack'`, used as `fixture(..., scope='environment')`, so
it is concretized and installed once per partition and programming environment (ReFrame accepts
only run-only fixtures at partition scope). It builds on the login node (ReFrame's default for
compile-only tests), in its stage directory:

    spackenv/spack.yaml, spackenv/spack-repo/     copies of the project's
    spack -e spackenv config add -f <site>.yaml    the site's externals (reframe/config/spack/)
    spack -e spackenv concretize
    spack -e spackenv install --fail-fast [...]    ReFrame's Spack build system
    spack -e spackenv find --json > spack-find.json

Each case then loads its benchmark from that environment (ReFrame emits
``eval `spack -e <env> load --sh <package>` `` into the job), and the environment's spack.lock is
stored with the results, its sha256 in every record. A build that fails fails the fixture; the
cases that need it are recorded as failed with Spack's own error line (`failure`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_before, sanity_function

from .. import shell
from ..project import project_root
from .site import of as site_facts

ENV_DIR = "spackenv"
FIND_FILE = "spack-find.json"
SITE_CONFIGS = Path("reframe") / "config" / "spack"


def site_config(root: Path, name: str | None, system: str) -> Path | None:
    """The Spack config a partition names (extras['iolab']['stack']['spack_config'], a file of
    reframe/config/spack/ or a path), else reframe/config/spack/<system>.yaml if there is one."""
    if name:
        path = Path(os.path.expandvars(name))
        candidates = [path] if path.is_absolute() else [root / SITE_CONFIGS / f"{name}.yaml",
                                                        root / SITE_CONFIGS / name, root / path]
        for candidate in candidates:
            if candidate.is_file():
                return candidate
        raise FileNotFoundError(f"spack_config {name!r}: no such file "
                                f"({', '.join(map(str, candidates))})")
    default = root / SITE_CONFIGS / f"{system}.yaml"
    return default if default.is_file() else None


def failure(stagedir: str | None) -> str | None:
    """Spack's own error line from a build's output: its first `==> Error:`, else ReFrame's
    report of the failed command, else None."""
    if not stagedir:
        return None
    lines = []
    for name in ("rfm_build.err", "rfm_build.out"):
        try:
            lines += Path(stagedir, name).read_text(errors="replace").splitlines()
        except OSError:
            continue
    for line in lines:
        if line.startswith("==> Error:"):
            return line.removeprefix("==> ").strip()
    for line in lines:
        if line.startswith("-reframe: command"):
            return line.removeprefix("-reframe: ").strip()
    return None


class build_iolab_stack(rfm.CompileOnlyRegressionTest):
    """spack.yaml (with the local package repository spack-repo/ and the site's externals)
    -> a concretized and installed Spack environment."""

    descr = "Build the iolab I/O stack from spack.yaml with Spack"
    valid_systems = ["+iolab"]
    valid_prog_environs = ["+iolab"]
    build_system = "Spack"
    sourcesdir = None

    @run_before("compile")
    def _prepare_env(self):
        root = project_root()
        stack = site_facts(self.current_partition).stack
        env = ENV_DIR
        self.prebuild_cmds = [f"mkdir -p {env}",
                              f"cp {shell.word(str(root / 'spack.yaml'))} {env}/"]
        if (root / "spack-repo").is_dir():
            self.prebuild_cmds.append(f"cp -r {shell.word(str(root / 'spack-repo'))} {env}/")
        site = site_config(root, stack.spack_config, self.current_system.name)
        self.build_system.environment = env
        self.build_system.preinstall_cmds = (
            ([f"spack -e {env} config add -f {shell.word(str(site))}"] if site else [])
            + [f"spack -e {env} concretize"])
        self.build_system.install_opts = ["--fail-fast", *shell.words(stack.install_opts,
                                                                     "spack install option")]
        # What was installed, for the records: versions and hashes of every package
        self.postbuild_cmds = [f"spack -e {env} find --json > {FIND_FILE}"]

    @sanity_function
    def _installed(self):
        return sn.all([
            sn.assert_true(os.path.exists(self.lock_path), msg="spack concretize left no spack.lock"),
            sn.assert_true(os.path.exists(os.path.join(self.stagedir, FIND_FILE)),
                           msg="spack find --json did not run after the install")])

    @property
    def env_path(self) -> str:
        return os.path.join(self.stagedir, ENV_DIR)

    @property
    def lock_path(self) -> str:
        return os.path.join(self.stagedir, ENV_DIR, "spack.lock")

    def installed(self) -> dict[str, dict]:
        """name -> {version, hash} of what `spack find --json` listed after the install."""
        try:
            specs = json.loads(Path(self.stagedir, FIND_FILE).read_text())
        except (OSError, ValueError):
            return {}
        return {s["name"]: {"version": s.get("version"), "hash": s.get("hash")}
                for s in specs if isinstance(s, dict) and "name" in s}
