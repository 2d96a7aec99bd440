"""Where the benchmark binaries (and the layers' runtime libraries) come from, per system partition.

A partition's extras['iolab']['stack'] chooses the provider:
  {'provider': 'spack'}                          build spack.yaml once per partition and
                                                 environment (a ReFrame fixture, rfm/spack.py);
      'spack_config': 'debian12'                 the site's externals, reframe/config/spack/*.yaml
      'install_opts': ['--no-checksum']          more options for `spack install`
  {'provider': 'spack', 'env': '/path/to/env'}   an environment already built (scripts/setup
                                                 --spack-bundle): its view first on PATH, its
                                                 spack.lock and hashes in every record
  {'provider': 'modules', 'modules': {'ior': ['ior/4.0.0'], 'darshan': ['darshan-runtime'],
                                      'hdf5': ['cray-hdf5-parallel'], 'parallel-netcdf': [...]}}
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


def _runtimes():
    """The libraries the layers preload (layers.base.RuntimeLibrary): no benchmarks, but the
    stack supplies them like ones."""
    from .layers.registry import runtime_libraries

    return runtime_libraries()


def spack_packages() -> dict[str, str]:
    """Spack package of each benchmark (from its descriptor), and of each layer's runtime."""
    from . import benchmarks

    return {**{name: b.spack_package for name, b in benchmarks.registry().items()},
            **{lib.module: lib.package for lib in _runtimes()}}


def _links(name: str) -> tuple[str, ...]:
    """The libraries a benchmark's (or a runtime's) recipe links: the modules provider loads
    their modules too, where the site lists them, before the benchmark's own."""
    from . import benchmarks

    for lib in _runtimes():
        if lib.module == name:
            return lib.links
    return benchmarks.get(name).links


@dataclass
class Stack:
    provider: str = "path"
    prefix: str | None = None
    modules: dict[str, list[str]] = field(default_factory=dict)
    # explicit paths of the layers' runtime libraries, by config key (RuntimeLibrary.config_key)
    libraries: dict[str, str] = field(default_factory=dict)
    spack_config: str | None = None     # the site's Spack config (reframe/config/spack/<name>.yaml)
    install_opts: list[str] = field(default_factory=list)   # more `spack install` options
    spack_env: str | None = None        # the environment the fixture built (set by the case)
    built_env: str | None = None        # an environment built before the run ('env'), with its view

    @property
    def view(self) -> str | None:
        '''The view of an environment built before the run (its bin/ and lib/), else None.'''
        return os.path.join(self.built_env, ".spack-env", "view") if self.built_env else None

    def env(self) -> dict[str, str]:
        """Variables the job needs so the stack's binaries and libraries are found, as shell
        words (the prefix literal, $PATH and $LD_LIBRARY_PATH expanded in the job)."""
        if self.view is not None:
            # Spack's binaries find their libraries by RPATH: the view's lib/ (which also holds
            # gcc-runtime's libstdc++) stays off the job's LD_LIBRARY_PATH
            return {"PATH": shell.word(f"{self.view}/bin", "Spack environment") + ':"$PATH"'}
        if self.provider != "prefix":
            return {}
        return {"PATH": shell.word(f"{self.prefix}/bin", "stack prefix") + ':"$PATH"',
                "LD_LIBRARY_PATH": shell.word(f"{self.prefix}/lib", "stack prefix")
                + '"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"'}

    def modules_for(self, benchmark: str, packages=()) -> list[str]:
        """Modules to load for a case: the libraries the benchmark's recipe links (where the site
        lists them), the benchmark's own, then those of the packages a layer needs (Darshan's
        runtime when Darshan is on) with the libraries they link."""
        if self.provider != "modules":
            return []
        names = [*_links(benchmark), benchmark]
        for package in packages:
            names = [*names, *[d for d in _links(package) if d not in names], package]
        return list(dict.fromkeys(m for name in names for m in self.modules.get(name, [])))

    def available(self, executable: str, benchmark: str | None = None) -> bool | None:
        """Whether the binary exists, where this process can tell; None when only the job can
        (modules and Spack environments are loaded inside the job)."""
        base = self.prefix if self.provider == "prefix" else self.view
        if base is not None:
            # The prefix (or view) goes first on PATH; what it lacks (externals such as Debian's
            # fio are not in a view) may still come from the system.
            return (os.access(os.path.join(base, "bin", executable), os.X_OK)
                    or shutil.which(executable) is not None)
        if self.provider == "path":
            return shutil.which(executable) is not None
        if self.provider == "modules":
            # no module named for this benchmark: it can only come from PATH
            return None if self.modules.get(benchmark) else shutil.which(executable) is not None
        return None

    def preload(self, lib) -> tuple[str, str] | None:
        """(the runtime library `lib` (a layers.base.RuntimeLibrary) as shown in records, the same
        as one shell word for the job), or None when this stack does not have it. Spack and
        modules name it by an expansion that only the job can make."""
        if self.libraries.get(lib.config_key):
            named = self.libraries[lib.config_key]
            return named, shell.word(named, lib.config_key)
        if self.provider == "prefix":
            path = os.path.join(self.prefix, "lib", lib.file)
            return (path, shell.word(path, "stack prefix")) if os.path.exists(path) else None
        if self.provider == "path":
            found = _on_path(lib)
            if found:
                return found
        if self.view is not None:
            path = os.path.join(self.view, "lib", lib.file)
            return (path, shell.word(path, "Spack environment")) if os.path.exists(path) else None
        if self.provider == "spack":
            env = f" -e {shell.word(self.spack_env, 'Spack environment')}" if self.spack_env else ""
            expr = f"$(spack{env} location -i {lib.package})/lib/{lib.file}"
            return expr, f'"{expr}"'
        if self.provider == "modules" and self.modules.get(lib.module) and lib.module_roots:
            root = "${" + lib.module_roots[-1] + "}"
            for name in reversed(lib.module_roots[:-1]):
                root = "${" + name + ":-" + root + "}"
            expr = f"{root}/lib/{lib.file}"
            return expr, f'"{expr}"'
        return None

    def supplied_by(self, binary_path: str | None) -> str:
        """Which provider the binary that actually ran came from."""
        base = self.prefix if self.provider == "prefix" else self.view
        if base is None:
            return self.provider
        if binary_path and binary_path.startswith(os.path.join(base, "bin") + os.sep):
            return self.provider
        return "path"

    def describe(self, binary_path: str | None = None) -> dict:
        out = {"provider": self.provider, "supplied_by": self.supplied_by(binary_path)}
        if self.prefix:
            out["prefix"] = self.prefix
        if self.built_env:
            out["spack_env"], out["view"] = self.built_env, self.view
        if self.provider == "modules":
            out["modules"] = self.modules
        return out


def _on_path(lib) -> tuple[str, str] | None:
    """A runtime library on a PATH stack: its variable (the library itself), LD_LIBRARY_PATH,
    its config tool's -L dirs, then beside each PATH entry (PREFIX/bin -> PREFIX/lib: a Spack
    view or a prefix whose benchmarks are on PATH), then the system's directories."""
    named = os.environ.get(lib.env_var, "") if lib.env_var else ""
    if named:
        if os.path.isfile(named):
            return named, shell.word(named, lib.env_var)
        raise IolabError(f"{lib.env_var}={named}: no such file", key=lib.env_var,
                         hint=f"name {lib.file} itself, or unset it")
    beside = [os.path.join(os.path.dirname(d.rstrip("/")), "lib")
              for d in os.environ.get("PATH", "").split(":") if d]
    system = ["/usr/lib", "/usr/local/lib"]
    for d in (os.environ.get("LD_LIBRARY_PATH", "").split(":") + _config_tool_libdir(lib.config_tool)
              + beside + system):
        path = os.path.join(d, lib.file) if d else ""
        if path and os.path.exists(path):
            return path, shell.word(path, f"{lib.file} found")
    return None


def _config_tool_libdir(argv: tuple[str, ...]) -> list[str]:
    """The -L directories a runtime's config tool on PATH names (`darshan-config --dyn-ld-flags`:
    darshan-runtime's own answer, as 3.4 has no --libdir)."""
    exe = shutil.which(argv[0]) if argv else None
    if exe is None:
        return []
    import subprocess

    try:
        out = subprocess.run([exe, *argv[1:]], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return []
    if out.returncode != 0:
        return []
    return [w[2:] for w in out.stdout.split() if w.startswith("-L") and len(w) > 2]


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
    named = {lib.config_key: conf.pop(lib.config_key, None) for lib in _runtimes() if lib.config_key}
    libraries = {key: path for key, path in named.items() if path is not None}
    spack_config = conf.pop("spack_config", None)
    install_opts = conf.pop("install_opts", []) or []
    built_env = conf.pop("env", None)
    if built_env is not None:
        if provider != "spack" or not isinstance(built_env, str) or not built_env.strip():
            raise IolabError("'env' names a built Spack environment (a directory), for the spack provider",
                             key="extras.iolab.stack.env")
        built_env = os.path.expanduser(os.path.expandvars(built_env))
        if not os.path.isfile(os.path.join(built_env, "spack.lock")) or not os.path.isdir(
                os.path.join(built_env, ".spack-env", "view")):
            raise IolabError(f"no built Spack environment at {built_env} (no spack.lock or no view)",
                             key="extras.iolab.stack.env",
                             hint="build it with scripts/setup --spack-bundle DIR (docs/benchmarks.md), "
                                  "or set IOLAB_SPACK_ENV= (empty) to use what is on PATH")
    if conf:
        raise IolabError(f"unknown keys {sorted(conf)} in the stack of the system config",
                         key="extras.iolab.stack")
    if (spack_config or install_opts) and provider != "spack":
        raise IolabError("'spack_config' and 'install_opts' are for the spack provider",
                         key="extras.iolab.stack")
    if not isinstance(install_opts, list) or not all(isinstance(o, str) for o in install_opts):
        raise IolabError("'install_opts' must be a list of strings", key="extras.iolab.stack.install_opts")
    return Stack(provider, prefix, {k: list(v) for k, v in modules.items()}, libraries,
                 spack_config, list(install_opts), built_env=built_env)


def lock_specs(lock_path) -> dict[str, dict]:
    """name -> {version, hash} of the specs Spack built (not the externals), from a spack.lock
    (lockfile version 5 and later: `concrete_specs` keyed by hash); {} when it cannot be read."""
    import json

    try:
        data = json.loads(open(lock_path, "rb").read())
    except (OSError, ValueError):
        return {}
    out: dict[str, dict] = {}
    for digest, spec in _concrete(data):
        if not spec.get("external"):
            out.setdefault(spec["name"], {"version": spec.get("version"), "hash": digest})
    return out


def _concrete(data) -> list[tuple[str, dict]]:
    specs = data.get("concrete_specs") if isinstance(data, dict) else None
    return [(digest, spec) for digest, spec in (specs.items() if isinstance(specs, dict) else ())
            if isinstance(spec, dict) and isinstance(spec.get("name"), str)]


def _list(value) -> list:
    return value if isinstance(value, list) else []


def lock_packages(data) -> dict[str, dict]:
    """name -> {version, hash, external} of every spec in a parsed spack.lock (the first of a
    name); {} for anything that is no lock."""
    out: dict[str, dict] = {}
    for digest, spec in _concrete(data):
        out.setdefault(spec["name"], {"version": spec.get("version"), "hash": digest,
                                      "external": bool(spec.get("external"))})
    return out


def lock_providers(data, virtual: str) -> list[str]:
    """The packages a parsed spack.lock's specs depend on for a virtual package ("mpi")."""
    found = {dep.get("name") for _, spec in _concrete(data) for dep in _list(spec.get("dependencies"))
             if isinstance(dep, dict) and isinstance(dep.get("parameters"), dict)
             and virtual in _list(dep["parameters"].get("virtuals"))}
    return sorted(n for n in found if isinstance(n, str))


def summarize(records) -> list[str]:
    """What supplied a run's benchmarks, from its records, one line each: the provider (and
    spack.lock sha256, modules or prefix), then each benchmark's binary with its version (as the
    benchmark printed it, else as Spack installed it) and Darshan's runtime version."""
    lines, seen = [], set()
    for rec in records:
        stack = rec.provenance.stack
        if not stack:
            continue
        head = f"stack: {stack.get('provider')}"
        if stack.get("spack_lock_sha256"):
            head += f", spack.lock sha256 {stack['spack_lock_sha256']}"
        if stack.get("prefix"):
            head += f", prefix {stack['prefix']}"
        if stack.get("view"):
            head += f", view {stack['view']}"
        if stack.get("modules"):
            head += ", modules " + "; ".join(f"{k}: {' '.join(v)}"
                                             for k, v in sorted(stack["modules"].items()))
        if head not in seen:
            seen.add(head)
            lines.append(head)
    benchmarks: dict[str, tuple] = {}
    runtimes: set[tuple[str, str]] = set()
    for rec in records:
        binary, stack = rec.provenance.binary, rec.provenance.stack
        name = rec.benchmark
        spack_version = (stack.get("versions") or {}).get(spack_packages().get(name, ""))
        version = binary.get("version") or spack_version
        spack_hash = (stack.get("hashes") or {}).get(spack_packages().get(name, ""))
        if name and (binary.get("path") or version):
            benchmarks.setdefault(f"{name} {binary.get('name') or ''}".strip(), (
                binary.get("path"), version, stack.get("supplied_by"), binary.get("sha256"),
                spack_hash if stack.get("supplied_by") == "spack" else None))
        runtimes |= runtime_versions(rec.observed, stack)
    for label, (path, version, supplied_by, sha, spack_hash) in sorted(benchmarks.items()):
        lines.append(f"  {label}: {version or 'version not printed'}, {path or 'path unknown'}"
                     f"{f' ({supplied_by})' if supplied_by else ''}"
                     f"{f', sha256 {sha[:16]}' if sha else ''}"
                     f"{f', Spack hash {spack_hash}' if spack_hash else ''}")
    for package, ver in sorted(runtimes):
        lines.append(f"  {package}: {ver}")
    return lines


def runtime_versions(observed: dict, stack: dict, hashes: bool = True) -> set[tuple[str, str]]:
    """(package, version with its Spack hash, or without with hashes=False) of each layer's
    runtime library the job ran with."""
    from .layers.registry import registry

    out = set()
    for layer in registry():
        lib = layer.runtime_library
        ver = lib and layer.runtime_version(observed, stack.get("versions") or {})
        if ver:
            dhash = (stack.get("hashes") or {}).get(lib.package) if hashes else None
            out.add((lib.package, f"{ver}, Spack hash {dhash}" if dhash else ver))
    return out
