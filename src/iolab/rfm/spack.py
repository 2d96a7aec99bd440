"""The Spack stack provider: build the project's spack.yaml once per partition, as a fixture.

The build runs `spack -e spackenv install` in the fixture's stage directory (on the login node,
ReFrame's default for compile-only tests). Cases then load their benchmark from that environment,
and the environment's spack.lock is stored with the results.
"""

from __future__ import annotations

import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_before, sanity_function

from ..render import project_root

ENV_DIR = "spackenv"


class build_iolab_stack(rfm.CompileOnlyRegressionTest):
    """spack.yaml (and the local package repository spack-repo/) -> an installed environment."""

    descr = "Build the iolab I/O stack from spack.yaml"
    valid_systems = ["+iolab"]
    valid_prog_environs = ["+iolab"]
    build_system = "Spack"
    sourcesdir = None

    @run_before("compile")
    def _prepare_env(self):
        root = project_root()
        self.prebuild_cmds = [f"mkdir -p {ENV_DIR}",
                              f"cp {root / 'spack.yaml'} {ENV_DIR}/"]
        if (root / "spack-repo").is_dir():
            self.prebuild_cmds.append(f"cp -r {root / 'spack-repo'} {ENV_DIR}/")
        # The site's externals (its MPI, Lustre, HDF5): reframe/config/spack/<system>.yaml
        site = root / "reframe" / "config" / "spack" / f"{self.current_system.name}.yaml"
        if site.is_file():
            self.prebuild_cmds.append(f"spack -e {ENV_DIR} config add -f {site}")
        self.build_system.environment = ENV_DIR
        self.build_system.install_opts = ["--fail-fast"]

    @sanity_function
    def _installed(self):
        return sn.assert_true(os.path.exists(os.path.join(self.stagedir, ENV_DIR, "spack.lock")),
                              msg="spack install left no spack.lock")

    @property
    def env_path(self) -> str:
        return os.path.join(self.stagedir, ENV_DIR)

    @property
    def lock_path(self) -> str:
        return os.path.join(self.stagedir, ENV_DIR, "spack.lock")
