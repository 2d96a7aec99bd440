"""The experiment schema means the same in Python as in editors (ECMA-262 regular expressions)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from iolab.experiment import schema as schemas


def _patterns(node=None) -> list[str]:
    node = schemas.experiment_schema() if node is None else node
    out = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern":
                out.append(value)
            elif key == "patternProperties":
                out.extend(value)
            out.extend(_patterns(value))
    elif isinstance(node, list):
        for value in node:
            out.extend(_patterns(value))
    return out


SAMPLES = ["abc", "abc\n", "a-b", "a-b\n", "\nabc", "a b", "ab_c.d", "10m", "1d2h3m4s", "10m\n",
           "#DW jobdw capacity=1TiB", "#DW jobdw\n", "#SBATCH --comment=x\ntouch /tmp/z",
           "#SBATCH x\r", "*:1", "*:1\n", "1 s", "500ms\n", "mpiio.cb_nodes", "mpiio.cb_nodes\n", ""]


def test_every_pattern_is_anchored_at_both_ends():
    patterns = _patterns()
    assert len(patterns) >= 10
    for pattern in patterns:
        assert pattern.startswith("^") and pattern.endswith("$"), pattern


@pytest.mark.skipif(shutil.which("node") is None, reason="node (an ECMA-262 engine) is not installed")
def test_patterns_match_in_python_as_in_ecma():
    patterns = sorted(set(_patterns()))
    script = ("const [ps, ss] = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "console.log(JSON.stringify(ps.map(p => ss.map(s => new RegExp(p, 'u').test(s)))));")
    out = subprocess.run(["node", "-e", script], input=json.dumps([patterns, SAMPLES]),
                         capture_output=True, text=True, timeout=60, check=True)
    ecma = json.loads(out.stdout)
    python = [[bool(schemas.ecma_regex(p).search(s)) for s in SAMPLES] for p in patterns]
    assert python == ecma
    assert any(any(row) for row in python)        # the samples do match some patterns


@pytest.mark.parametrize("doc, where", [
    ({"id": "abc\n"}, "id"),
    ({"tags": ["ok", "x\n"]}, "tags"),
    ({"job": {"time_limit": "10m\n"}}, "job"),
    ({"job": {"extra_directives": ["#SBATCH --comment=x\ntouch /tmp/z"]}}, "job"),
    ({"job": {"resources": {"bb": {"capacity": "1TiB\n"}}}}, "job"),
    ({"profiles": {"small\n": {}}}, "profiles"),
    ({"report": {"metrics": ["write_bw\n"]}}, "report"),
])
def test_the_schema_alone_refuses_a_trailing_newline(doc, where):
    doc = {"id": "x", "description": "x", **doc}
    errors = list(schemas.validator().iter_errors(doc))
    assert [e.absolute_path[0] if e.absolute_path else None for e in errors] == [where]
    # the same document without the newline (the first line of each string) is valid
    assert schemas.validator().is_valid(_first_lines(doc))


def _first_lines(value):
    if isinstance(value, dict):
        return {_first_lines(k): _first_lines(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_first_lines(v) for v in value]
    return value.split("\n")[0] if isinstance(value, str) else value


@pytest.mark.parametrize("key, value", [("lustre.pool", "flash\n"), ("mpiio.cb_config_list", "*:1\n"),
                                        ("ioengine", "psync\n")])
def test_parameter_patterns_refuse_a_trailing_newline(key, value):
    spec = schemas.param_spec("fio", key)
    assert not schemas.validator(spec).is_valid(value)
    assert schemas.validator(spec).is_valid(value[:-1])
    assert schemas.param_spec("ior", "mpiio.romio_whatever\n") is None
    assert schemas.param_spec("ior", "mpiio.romio_whatever") is not None
