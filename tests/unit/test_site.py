"""extras['iolab'] of a system config: one schema, one loader, a typed object; history read leniently."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from iolab.experiment import site
from iolab.rfm import site as rfm_site
from iolab.analysis.published.compare import same_machine_studies
from iolab.errors import IolabError
from iolab.layers.darshan.layer import Darshan
from iolab.layers.registry import registry
from iolab.results.record import Manifest

REPO = Path(__file__).resolve().parents[2]
CONFIG = "reframe/config/mysite.py"

EVERY_KEY = {
    "scratch": "/lustre/scratch/$USER/iolab",
    "burst_buffer": "$DW_JOB_STRIPED",
    "node_local": "/local",
    "cores_per_node": 128,
    "profile": ["cluster", "local"],
    "mpi_flavour": "cray-mpich",
    "launcher_options": ["--mpi=pmix"],
    "stack": {"provider": "spack", "spack_config": "debian12", "install_opts": ["--no-checksum"]},
    "darshan": {"enabled": True, "dxt": True},
    "same_machine_as": ["archer-fpp-ssf"],
    "strict": True,
}


def error_of(extras, file=CONFIG) -> str:
    with pytest.raises(IolabError) as info:
        site.load(extras, file=file)
    return str(info.value)


def test_every_key_is_read_into_its_typed_field():
    conf = site.load(EVERY_KEY, file=CONFIG)
    assert (conf.scratch, conf.burst_buffer, conf.node_local) == (
        "/lustre/scratch/$USER/iolab", "$DW_JOB_STRIPED", "/local")
    assert conf.cores_per_node == 128 and conf.profile == ("cluster", "local") and conf.strict
    assert conf.mpi_flavour == "cray-mpich" and conf.launcher_options == ("--mpi=pmix",)
    assert (conf.stack.provider, conf.stack.spack_config, conf.stack.install_opts) == (
        "spack", "debian12", ["--no-checksum"])
    assert conf.sections["darshan"] == Darshan(enabled=True, dxt=True)
    assert conf.same_machine_as == ("archer-fpp-ssf",)
    assert conf.raw == EVERY_KEY, "the manifest records the keys as written"
    assert [conf.root(t) for t in ("scratch", "burst_buffer", "node_local")] == [
        "/lustre/scratch/$USER/iolab", "$DW_JOB_STRIPED", "/local"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        conf.scratch = "/elsewhere"


def test_an_absent_key_has_the_default_the_code_had():
    conf = site.load(None)
    assert conf == site.load({}) == site.SiteConfig()
    assert (conf.scratch, conf.burst_buffer, conf.node_local) == ("/tmp/iolab-scratch", None, "/tmp")
    assert conf.mpi_flavour == "openmpi-ompio" and conf.stack.provider == "path"
    assert conf.profile == () and conf.cores_per_node is None and not conf.sections["darshan"].enabled
    assert site.load({"profile": "local"}).profile == ("local",) and not conf.strict
    assert site.load({"cores_per_node": None}).cores_per_node is None   # os.cpu_count() may say so


def test_the_schema_documents_exactly_the_typed_fields():
    schema = site.schema()
    assert schema["additionalProperties"] is False
    # the layers' sections are one field, each its own key
    sections = [layer.section for layer in registry() if layer.section]
    fields = [name for f in dataclasses.fields(site.SiteConfig) if f.name != "raw"
              for name in (sections if f.name == "sections" else [f.name])]
    assert list(schema["properties"]) == fields == list(EVERY_KEY)
    todo = [("", schema)]
    while todo:
        where, node = todo.pop()
        for key, spec in node.get("properties", {}).items():
            assert spec.get("description"), f"{where}{key} has no description"
            if spec.get("type") == "object" and "properties" in spec:
                assert spec["additionalProperties"] is False, f"{where}{key} takes any key"
                todo.append((f"{where}{key}.", spec))
    from iolab.layers.mpiio import hints as mpiio
    assert schema["properties"]["mpi_flavour"]["enum"] == list(mpiio.FLAVOURS)


def test_the_readme_table_is_the_schema():
    readme = (REPO / "docs" / "systems.md").read_text()
    table = "\n".join("  " + line for line in site.reference_table().splitlines())
    assert table in readme, "docs/systems.md's extras['iolab'] table differs from site.v1.json: paste " \
        "site.reference_table() into docs/systems.md"


@pytest.mark.parametrize("extras, key, hint", [
    ({"cores_per_nodes": 4}, "extras['iolab'].cores_per_nodes", "did you mean 'cores_per_node'?"),
    ({"scrach": "/s"}, "extras['iolab'].scrach", "did you mean 'scratch'?"),
    ({"mpi_flavor": "cray-mpich"}, "extras['iolab'].mpi_flavor", "did you mean 'mpi_flavour'?"),
    ({"stack": {"provider": "spack", "install_opt": []}}, "extras['iolab'].stack.install_opt",
     "did you mean 'install_opts'?"),
    ({"darshan": {"enable": True}}, "extras['iolab'].darshan.enable", "did you mean 'enabled'?"),
])
def test_a_misspelt_key_is_named_with_a_suggestion(extras, key, hint):
    assert error_of(extras) == f"{CONFIG}: {key}: unknown key ({hint})"


def test_a_key_like_none_lists_the_keys():
    message = error_of({"xyzzy": 1})
    assert message.startswith(f"{CONFIG}: extras['iolab'].xyzzy: unknown key (keys: scratch, ")


@pytest.mark.parametrize("extras, expected", [
    ({"scratch": 5}, "extras['iolab'].scratch: 5 is an integer, expected a string"),
    ({"burst_buffer": ["/bb"]}, "extras['iolab'].burst_buffer: ['/bb'] is a list, expected a string or None"),
    ({"node_local": None}, "extras['iolab'].node_local: null is None, expected a string"),
    ({"cores_per_node": "128"},
     "extras['iolab'].cores_per_node: '128' is a string, expected an integer or None"),
    ({"cores_per_node": 1.5}, "extras['iolab'].cores_per_node: 1.5 is a number, expected an integer or None"),
    ({"cores_per_node": True}, "extras['iolab'].cores_per_node: True is a bool, expected an integer or None"),
    ({"cores_per_node": 0}, "extras['iolab'].cores_per_node: 0 is below the least allowed, 1"),
    ({"profile": 3}, "extras['iolab'].profile: 3 is an integer, expected a string or a list of strings"),
    ({"profile": []}, "extras['iolab'].profile: [] is empty: give at least one"),
    ({"mpi_flavour": "openmpi_romio"},
     "extras['iolab'].mpi_flavour: 'openmpi_romio' is not allowed (did you mean "
     "'openmpi-romio'? allowed: mpich-romio, openmpi-romio, cray-mpich, openmpi-ompio)"),
    ({"launcher_options": "--mpi=pmix"},
     "extras['iolab'].launcher_options: '--mpi=pmix' is a string, expected a list"),
    ({"launcher_options": ["-x", 1]},
     "extras['iolab'].launcher_options[1]: 1 is an integer, expected a string"),
    ({"stack": "spack"}, "extras['iolab'].stack: 'spack' is a string, expected a dict"),
    ({"stack": {"provider": "spak"}}, "extras['iolab'].stack.provider: 'spak' is not allowed (did you "
                                      "mean 'spack'? allowed: path, prefix, modules, spack)"),
    ({"stack": {"provider": "modules", "modules": {"ior": "ior/4"}}},
     "extras['iolab'].stack.modules.ior: 'ior/4' is a string, expected a list"),
    ({"stack": {"provider": "prefix"}}, "extras['iolab'].stack.prefix: the prefix provider needs 'prefix': "
                                        "a directory with bin/ and lib/"),
    ({"stack": {"provider": "path", "spack_config": "x"}},
     "extras['iolab'].stack: 'spack_config' and 'install_opts' are for the spack provider"),
    ({"darshan": {"enabled": "yes"}},
     "extras['iolab'].darshan.enabled: 'yes' is a string, expected True or False"),
    ({"same_machine_as": "archer"}, "extras['iolab'].same_machine_as: 'archer' is a string, expected a list"),
])
def test_a_wrong_type_names_the_expected_one(extras, expected):
    assert error_of(extras) == f"{CONFIG}: {expected}"


def test_not_a_dict_at_all():
    assert error_of(["scratch"]) == f"{CONFIG}: extras['iolab']: ['scratch'] is a list, expected a dict"


def test_every_problem_is_named_at_once():
    message = error_of({"scrach": "/s", "cores_per_node": "x"})
    assert message.splitlines() == [
        f"{CONFIG}: extras['iolab'].scrach: unknown key (did you mean 'scratch'?)",
        f"{CONFIG}: extras['iolab'].cores_per_node: 'x' is a string, expected an integer or None"]


def test_the_line_is_named_where_the_file_writes_the_key(tmp_path):
    config = tmp_path / "mysite.py"
    config.write_text("from iolab.rfm.systems import local_system\n"
                      "site_configuration = local_system('s', 'openmpi-ompio', 'x')\n"
                      "_extras = site_configuration['systems'][0]['partitions'][0]['extras']['iolab']\n"
                      "_extras['cores_per_nodes'] = 4\n")
    assert error_of({"cores_per_nodes": 4}, file=str(config)) == (
        f"{config}:4: extras['iolab'].cores_per_nodes: unknown key (did you mean 'cores_per_node'?)")
    # written twice, or built elsewhere (iolab.rfm.systems): no line rather than a wrong one
    config.write_text(config.read_text() + "_extras['cores_per_nodes'] = 5\n")
    assert error_of({"cores_per_nodes": 4}, file=str(config)).startswith(f"{config}: extras")


def test_a_control_character_in_a_path_or_option_is_refused_at_load(tmp_path):
    # a newline in scratch reached every job script, which failed with a traceback
    config = tmp_path / "mysite.py"
    config.write_text("from iolab.rfm.systems import local_system\n"
                      "site_configuration = local_system('s', 'openmpi-ompio', 'x')\n"
                      "_extras = site_configuration['systems'][0]['partitions'][0]['extras']['iolab']\n"
                      "_extras['scratch'] = '/scratch/\\nme'\n")
    assert error_of({"scratch": "/scratch/\nme"}, file=str(config)) == (
        f"{config}:4: extras['iolab'].scratch: '/scratch/\\nme' has at character 10 a newline "
        "(U+000A): control characters are not allowed here")
    assert error_of({"launcher_options": ["--mpi=pmix\t"]}) == (
        f"{CONFIG}: extras['iolab'].launcher_options[0]: '--mpi=pmix\\t' ends with a tab (U+0009): "
        "control characters are not allowed here")


def old_manifests() -> list[Path]:
    found = sorted((REPO / "tests" / "data" / "runs").glob("*/*/*/manifest.json"))
    assert len(found) >= 10, "the recorded old runs are the history this must read"
    return found


def test_old_runs_system_extras_still_load():
    for path in old_manifests():
        manifest = json.loads(path.read_text())
        recorded = manifest.get("system_extras")
        conf = site.recorded(recorded)
        assert conf.raw == (recorded or {})
        if recorded:
            assert conf == site.load(recorded), path     # all of them were valid when written
        assert same_machine_studies(Manifest.from_json(manifest)) == []


def test_history_is_read_leniently():
    old = {"same_machine_as": "toy", "cores_per_node": "2", "retired_key": 1,
           "stack": {"provider": "spak"}, "scratch": "/old"}
    conf = site.recorded(old)
    assert conf.same_machine_as == ("toy",) and conf.scratch == "/old"
    assert conf.cores_per_node is None and conf.stack.provider == "path"
    assert site.recorded(None) == site.recorded("not a dict") == site.SiteConfig()
    assert same_machine_studies(Manifest.from_json({"system_extras": old})) == ["toy"]
    with pytest.raises(IolabError, match="retired_key: unknown key"):
        site.load(old)      # the same keys as configuration are refused


def test_no_module_reads_extras_but_the_loader():
    """Every reader of a partition's extras['iolab'] goes through iolab.experiment.site (its typed object,
    or site.recorded for a manifest's history): a `.extras` read elsewhere could default silently."""
    offenders = []
    for path in sorted((REPO / "src" / "iolab").rglob("*.py")):
        if path.name == "site.py":
            continue
        tree = ast.parse(path.read_text())
        through_loader = {id(arg) for node in ast.walk(tree) if isinstance(node, ast.Call)
                          and getattr(node.func, "attr", None) == "recorded" for arg in node.args}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("extras", "system_extras") \
                    and isinstance(node.ctx, ast.Load) and id(node) not in through_loader:
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == []


@pytest.mark.parametrize("argv, environ, shown", [
    (["-C", "reframe/config/mysite.py", "-r"], {}, "reframe/config/mysite.py"),
    (["--config-file=config/mysite.py"], {}, "config/mysite.py"),
    (["-Cmysite.py"], {}, "mysite.py"),
    ([], {"RFM_CONFIG_FILES": "/etc/rfm/base.py:reframe/config/mysite.py"}, "reframe/config/mysite.py"),
    (["-C", "/proj/reframe/config/mysite.py"], {}, "/proj/reframe/config/mysite.py"),
    (["-C", "other/mysite.py"], {}, "/proj/reframe/config/mysite.py"),   # not this file: absolute
    ([], {}, "/proj/reframe/config/mysite.py"),
])
def test_the_config_file_is_shown_as_the_user_wrote_it(argv, environ, shown):
    assert rfm_site.shown_source("/proj/reframe/config/mysite.py", argv, environ) == (
        shown, "/proj/reframe/config/mysite.py")


def test_the_cluster_configs_are_strict_and_the_local_ones_skip():
    from iolab.rfm import systems

    slurm = systems.slurm_partition("debug", "srun", "d", [], [], 8, "openmpi-ompio")
    assert site.load(slurm["extras"]["iolab"]).strict
    local = systems.local_system("local", "openmpi-ompio", "d")["systems"][0]["partitions"][0]
    assert not site.load(local["extras"]["iolab"]).strict
    assert "'strict': True" in (REPO / "reframe" / "config" / "example-cluster.py").read_text()
