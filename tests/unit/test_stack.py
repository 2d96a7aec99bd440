"""Providers of the benchmark stack: modules a case loads, Spack's Darshan path, the config's
keys, and the stack summary `iolab runs --stack` prints."""

from __future__ import annotations

import pytest

from iolab.layers.darshan.preload import RUNTIME
from iolab.errors import IolabError
from iolab.results.record import Record
from iolab.software import from_extras, summarize

SITE_MODULES = {"provider": "modules", "modules": {
    "ior": ["ior/4.0.0"], "h5bench": ["h5bench/1.6"], "darshan": ["darshan-runtime/3.4.7"],
    "hdf5": ["cray-hdf5-parallel"], "parallel-netcdf": ["cray-parallel-netcdf"]}}


def test_modules_load_the_recipes_libraries_the_benchmark_and_darshan_when_on():
    stack = from_extras({"stack": SITE_MODULES})
    assert stack.modules_for("ior") == ["cray-hdf5-parallel", "cray-parallel-netcdf", "ior/4.0.0"]
    assert stack.modules_for("h5bench", ["darshan"]) == [
        "cray-hdf5-parallel", "h5bench/1.6", "cray-parallel-netcdf", "darshan-runtime/3.4.7"]
    # fio links none of them, and btio's module is not listed: only what the site lists loads
    assert stack.modules_for("fio") == []
    assert stack.modules_for("btio") == ["cray-parallel-netcdf"]
    assert stack.modules_for("fio", ["darshan"]) == [
        "cray-hdf5-parallel", "cray-parallel-netcdf", "darshan-runtime/3.4.7"]
    # with the darshan module loaded, its root variable names the library
    assert stack.preload(RUNTIME)[0] == "${DARSHAN_RUNTIME_ROOT:-${DARSHAN_ROOT}}/lib/libdarshan.so"
    assert from_extras({"stack": {"provider": "prefix", "prefix": "/opt/io"}}).modules_for("ior") == []


def test_spack_darshan_comes_from_the_fixtures_environment():
    stack = from_extras({"stack": {"provider": "spack", "spack_config": "debian12",
                                   "install_opts": ["--no-checksum"]}})
    assert stack.spack_config == "debian12" and stack.install_opts == ["--no-checksum"]
    stack.spack_env = "/stage/build iolab/spackenv"
    shown, word = stack.preload(RUNTIME)
    assert shown == "$(spack -e '/stage/build iolab/spackenv' location -i darshan-runtime)/lib/libdarshan.so"
    assert word == f'"{shown}"'


@pytest.mark.parametrize("conf, message", [
    ({"provider": "modules", "spack_config": "debian12"}, "are for the spack provider"),
    ({"provider": "spack", "install_opts": "--no-checksum"}, "must be a list of strings"),
    ({"provider": "spack", "spack_env": "/x"}, "unknown keys ['spack_env']"),
])
def test_bad_stack_configs_are_refused(conf, message):
    with pytest.raises(IolabError, match=message.replace("[", r"\[").replace("]", r"\]")):
        from_extras({"stack": conf})


def test_summary_names_the_provider_lock_and_versions():
    stack = {"provider": "spack", "supplied_by": "spack", "spack_lock_sha256": "ab" * 32,
             "versions": {"ior": "4.0.0", "h5bench": "1.6", "darshan-runtime": "3.4.7"}}
    recs = [
        {"benchmark": "ior", "provenance": {"stack": stack, "binary": {
            "name": "ior", "path": "/env/bin/ior", "sha256": "c" * 64, "version": "4.0.0"}}},
        {"benchmark": "h5bench", "provenance": {"stack": stack, "binary": {
            "name": "h5bench_write", "path": "/env/bin/h5bench_write", "version": None}},
         "observed": {"darshan": {"status": "ok", "summary": {"darshan_version": "3.4.7"}}}},
    ]
    assert summarize([Record.from_json(r) for r in recs]) == [
        f"stack: spack, spack.lock sha256 {'ab' * 32}",
        "  h5bench h5bench_write: 1.6, /env/bin/h5bench_write (spack)",
        f"  ior ior: 4.0.0, /env/bin/ior (spack), sha256 {'c' * 16}",
        "  darshan-runtime: 3.4.7"]
    assert summarize([Record.from_json({"benchmark": "ior", "provenance": {}})]) == []
