"""Where the benchmark binaries (and Darshan's runtime) come from, per system partition.

A partition's extras['iolab']['stack'] chooses the provider:
  {'provider': 'spack'}                          build spack.yaml once per partition (ReFrame fixture)
  {'provider': 'modules', 'modules': {'ior': ['ior/4.0.0'], 'darshan': ['darshan-runtime']}}
  {'provider': 'prefix', 'prefix': '/opt/io'}    a hand-built stack with bin/ and lib/
Without one, the binaries are whatever is on PATH ('path').
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

from . import shell
from .errors import IolabError

PROVIDERS = ("path", "prefix", "modules", "spack")
# Spack package names of each benchmark's executables.
SPACK_PACKAGES = {"ior": "ior", "fio": "fio", "btio": "btio", "h5bench": "h5bench",
                  "darshan": "darshan-runtime"}


@dataclass
class Stack:
    provider: str = "path"
    prefix: str | None = None
    modules: dict[str, list[str]] = field(default_factory=dict)
    darshan_lib: str | None = None      # explicit path of libdarshan.so, if the config gives one

    def env(self) -> dict[str, str]:
        """Variables the job needs so the stack's binaries and libraries are found, as shell
        words (the prefix literal, $PATH and $LD_LIBRARY_PATH expanded in the job)."""
        if self.provider != "prefix":
            return {}
        return {"PATH": shell.word(f"{self.prefix}/bin", "stack prefix") + ':"$PATH"',
                "LD_LIBRARY_PATH": shell.word(f"{self.prefix}/lib", "stack prefix")
                + '"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"'}

    def modules_for(self, benchmark: str) -> list[str]:
        return list(self.modules.get(benchmark, [])) if self.provider == "modules" else []

    def available(self, executable: str, benchmark: str | None = None) -> bool | None:
        """Whether the binary exists, where this process can tell; None when only the job can
        (modules and Spack environments are loaded inside the job)."""
        if self.provider == "prefix":
            # The prefix goes first on PATH; what it lacks may still come from the system.
            return (os.access(os.path.join(self.prefix, "bin", executable), os.X_OK)
                    or shutil.which(executable) is not None)
        if self.provider == "path":
            return shutil.which(executable) is not None
        if self.provider == "modules":
            # no module named for this benchmark: it can only come from PATH
            return None if self.modules.get(benchmark) else shutil.which(executable) is not None
        return None

    def libdarshan(self) -> str | None:
        """libdarshan.so to preload, or None when this stack has no Darshan runtime."""
        preload = self.darshan_preload()
        return preload[0] if preload else None

    def darshan_preload(self) -> tuple[str, str] | None:
        """(libdarshan.so as shown in records, the same as one shell word for the job), or None
        when this stack has no Darshan runtime. Spack and modules name it by an expansion that
        only the job can make."""
        if self.darshan_lib:
            return self.darshan_lib, shell.word(self.darshan_lib, "darshan_lib")
        if self.provider == "prefix":
            path = os.path.join(self.prefix, "lib", "libdarshan.so")
            return (path, shell.word(path, "stack prefix")) if os.path.exists(path) else None
        if self.provider == "path":
            for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") + ["/usr/lib", "/usr/local/lib"]:
                path = os.path.join(d, "libdarshan.so") if d else ""
                if path and os.path.exists(path):
                    return path, shell.word(path, "LD_LIBRARY_PATH entry")
        if self.provider == "spack":
            expr = "$(spack location -i darshan-runtime)/lib/libdarshan.so"
            return expr, f'"{expr}"'
        if self.provider == "modules" and self.modules.get("darshan"):
            expr = "${DARSHAN_RUNTIME_ROOT:-${DARSHAN_ROOT}}/lib/libdarshan.so"
            return expr, f'"{expr}"'
        return None

    def supplied_by(self, binary_path: str | None) -> str:
        """Which provider the binary that actually ran came from."""
        if self.provider == "prefix" and binary_path and binary_path.startswith(
                os.path.join(self.prefix, "bin") + os.sep):
            return "prefix"
        if self.provider == "prefix":
            return "path"
        return self.provider

    def describe(self, binary_path: str | None = None) -> dict:
        out = {"provider": self.provider, "supplied_by": self.supplied_by(binary_path)}
        if self.prefix:
            out["prefix"] = self.prefix
        if self.provider == "modules":
            out["modules"] = self.modules
        return out


def from_extras(extras: dict) -> Stack:
    conf = dict(extras.get("stack") or {})
    provider = conf.pop("provider", "path")
    if provider not in PROVIDERS:
        raise IolabError(f"unknown stack provider {provider!r}", key="extras.iolab.stack.provider",
                         hint=f"allowed: {', '.join(PROVIDERS)}")
    prefix = conf.pop("prefix", None)
    if provider == "prefix":
        if not prefix:
            raise IolabError("the prefix provider needs 'prefix': a directory with bin/ and lib/",
                             key="extras.iolab.stack.prefix")
        prefix = os.path.expandvars(prefix)
    modules = conf.pop("modules", {}) or {}
    darshan_lib = conf.pop("darshan_lib", None)
    if conf:
        raise IolabError(f"unknown keys {sorted(conf)} in the stack of the system config",
                         key="extras.iolab.stack")
    return Stack(provider, prefix, {k: list(v) for k, v in modules.items()}, darshan_lib)
