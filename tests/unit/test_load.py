"""The experiment loader: typed values on success, and on failure an error naming file:line, key path
and what to do about it. Bad samples live in tests/data/experiments/bad (id == file stem)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import re
import time
from pathlib import Path

import pytest

from iolab.experiment import yamlpos
from iolab.errors import IolabError, ParseError
from iolab.experiment.load import Job, load_experiment
from iolab.experiment.params import type_param
from iolab.experiment.matrix import expand
from iolab.experiment.yamlpos import load_yaml

MIB, GIB = 1024**2, 1024**3

# file stem -> (line, key path or None, fragments the message must contain)
LOAD_ERRORS = {
    "typo-top-key": (4, "repetiton", ["unknown key 'repetiton'", "did you mean 'repetitions'?"]),
    "typo-matrix-param": (8, "matrix.lustre.stripe_cont",
                          ["unknown parameter 'lustre.stripe_cont' for ior",
                           "did you mean 'lustre.stripe_count'?"]),
    "wrong-type-repetitions": (4, "repetitions", ["expected integer, got string 'three'"]),
    "wrong-type-fixed": (6, "fixed.iterations", ["expected integer, got string 'x'"]),
    "float-for-integer": (6, "fixed.iterations", ["expected integer, got number 3.0"]),
    "bad-size-fixed": (6, "fixed.block_size", ["'4XB' is not a size", "4MiB, 4m, 1g or 1048576"]),
    "bad-size-matrix-item": (8, "matrix.block_size[2]", ["'4XB' is not a size", "4MiB, 4m"]),
    "unknown-benchmark": (3, "benchmark", ["'iozone' is not allowed", "allowed: btio, fio, h5bench, ior"]),
    "no-benchmark": (1, None, ["give either 'benchmark'", "or 'parts'", "btio, fio, h5bench, ior"]),
    "empty-matrix": (6, "matrix", ["empty mapping", "remove the key"]),
    "empty-matrix-list": (6, "matrix.block_size", ["empty list", "remove the key"]),
    "id-mismatch": (1, "id", ["'some-other-name' differs from the file name",
                              "rename the file to some-other-name.yaml or set id: id-mismatch"]),
    "zip-unequal": (4, "zip", ["zip lists must have equal lengths", "api: 3, collective: 2"]),
    "set-twice": (9, "matrix.transfer_size", ["'transfer_size' is set twice",
                                              "also at fixed.transfer_size"]),
    "duplicate-key": (7, "fixed.block_size", ["duplicate key 'block_size'"]),
    "merge-duplicate": (12, "profiles.small.fixed.collective", ["duplicate key 'collective'"]),
    "invalid-syntax": (7, None, ["not valid YAML", "expected ',' or ']'",
                                 "flow sequence that started at line 6"]),
    "unknown-profile-part": (12, "profiles.small.parts.share", ["no part named 'share'",
                                                                "did you mean 'shared'?"]),
    "profile-section-with-parts": (11, "profiles.small.fixed", [
        "put 'fixed' inside profiles.small.parts.<part name>", "parts: shared, local"]),
}

# file stem -> fragments of the error matrix.expand raises (the YAML itself is well formed)
CASE_ERRORS = {
    "impossible-block-size": ["block_size=8MiB", "block_size (8388608) must be a multiple of "
                              "transfer_size (3145728)"],
    "impossible-collective-posix": ["api=POSIX", "collective I/O needs api MPIIO, HDF5 or NCMPI"],
    "impossible-extra-hints-u": ["extra_args '-U'", "IOR 4 removed -U"],
    "impossible-extra-verbose": ["extra_args '-v'", "invalid JSON"],
    "impossible-extra-block": ["extra_args '-b'", "use the parameter 'block_size'"],
    "impossible-transfer-size": ["transfer_size (1100) must be a multiple of 8 bytes"],
}


def test_every_bad_sample_is_tested_and_named_after_its_id(bad_dir):
    stems = {p.stem for p in bad_dir.glob("*.yaml")}
    assert stems == set(LOAD_ERRORS) | set(CASE_ERRORS)
    for path in bad_dir.glob("*.yaml"):
        if path.stem != "invalid-syntax":
            first = path.read_text().splitlines()[0]
            if path.stem == "id-mismatch":
                assert first == "id: some-other-name"
            else:
                assert first == f"id: {path.stem}"


@pytest.mark.parametrize("stem", sorted(LOAD_ERRORS))
def test_load_error(bad_dir, stem):
    line, key, fragments = LOAD_ERRORS[stem]
    with pytest.raises(IolabError) as info:
        load_experiment(bad_dir / f"{stem}.yaml")
    err = info.value
    message = str(err)
    assert not isinstance(err, ParseError)
    assert err.exit_code == 2
    assert f"{stem}.yaml:{line}: " in message, message
    assert err.line == line
    if key:
        assert f"{stem}.yaml:{line}: {key}: " in message, message
        assert err.key == key
    else:
        assert err.key is None
    for fragment in fragments:
        assert fragment in message, message
    assert "Traceback" not in message


@pytest.mark.parametrize("stem", sorted(CASE_ERRORS))
def test_impossible_case_is_refused_by_expand(bad_dir, stem):
    exp = load_experiment(bad_dir / f"{stem}.yaml")      # the YAML is well formed
    with pytest.raises(IolabError) as info:
        expand(exp)
    message = str(info.value)
    assert f"{stem}.yaml: case " in message, message
    assert not re.search(r"case (\w+) \(\1\)", message), message   # no "case X (X)" when nothing varies
    for fragment in CASE_ERRORS[stem]:
        assert fragment in message, message


def test_error_names_the_file_relative_to_the_working_directory(bad_dir, monkeypatch):
    monkeypatch.chdir(bad_dir)
    with pytest.raises(IolabError) as info:
        load_experiment(Path("typo-top-key.yaml"))
    assert str(info.value).startswith("typo-top-key.yaml:4: repetiton: unknown key 'repetiton'")


MORE_ERRORS = [
    ("empty", "# only a comment\n", "empty.yaml:1: the file is empty"),
    ("a-list", "- id: a-list\n", "a-list.yaml:1: an experiment must be a mapping"),
    ("no-description", "id: no-description\nbenchmark: ior\n",
     "no-description.yaml:1: missing required key 'description'"),
    ("nested", """
        id: nested
        description: parts and a top-level fixed
        parts:
          a: {benchmark: ior}
        fixed: {api: POSIX}
        """, "nested.yaml:5: fixed: with 'parts', put 'fixed' inside each part"),
    ("flat", """
        id: flat
        description: a flat experiment with a parts profile
        benchmark: fio
        profiles:
          small:
            parts: {main: {fixed: {size: 1m}}}
        """, "flat.yaml:6: profiles.small.parts: this experiment has no 'parts'"),
    ("scale-zero", """
        id: scale-zero
        description: zero nodes
        benchmark: ior
        scale: {nodes: [1, 0]}
        """, "scale-zero.yaml:4: scale.nodes[1]: 0 is out of range"),
    ("listless", """
        id: listless
        description: a matrix value that is not a list
        benchmark: ior
        matrix:
          api: POSIX
        """, "listless.yaml:5: matrix.api: expected list, got string 'POSIX'"),
    ("fio-param", """
        id: fio-param
        description: an IOR parameter in a fio experiment
        benchmark: fio
        fixed:
          size: 1g
          api: POSIX
        """, "fio-param.yaml:6: fixed.api: unknown parameter 'api' for fio"),
    ("bad-exclude", """
        id: bad-exclude
        description: a bad size in an exclude entry
        benchmark: ior
        matrix: {block_size: [1m, 2m]}
        exclude:
          - {block_size: 2 megs}
        """, "bad-exclude.yaml:6: exclude[0].block_size: '2 megs' is not a size"),
    ("float-repetitions", """
        id: float-repetitions
        description: a float where an integer is due, in a profile
        benchmark: ior
        profiles:
          small: {repetitions: 2.0}
        """, "float-repetitions.yaml:5: profiles.small.repetitions: expected integer, got number 2.0"),
    ("search-budget", """
        id: search-budget
        description: a search without a budget to spend
        benchmark: ior
        matrix: {transfer_size: [1m, 2m]}
        search: {objective: write_bw, budget: 0}
        """, "search-budget.yaml:5: search.budget: 0 is out of range (minimum 1)"),
    ("search-key", """
        id: search-key
        description: a misspelt search key
        benchmark: ior
        matrix: {transfer_size: [1m, 2m]}
        search:
          objective: write_bw
          budget: 4
          stratgy: random
        """, "search-key.yaml:8: search.stratgy: unknown key 'stratgy' (did you mean 'strategy'?"),
    ("search-strategy", """
        id: search-strategy
        description: a strategy iolab does not have
        benchmark: ior
        matrix: {transfer_size: [1m, 2m]}
        search: {objective: write_bw, budget: 4, strategy: genetic}
        """, "search-strategy.yaml:5: search.strategy: 'genetic' is not allowed (allowed: model, "
             "bayes, halving, random)"),
    ("search-objective", """
        id: search-objective
        description: an objective fio does not report
        benchmark: fio
        matrix: {bs: [4k, 1m]}
        search:
          budget: 2
          objective: write_time
        """, "search-objective.yaml:7: search.objective: fio reports no metric 'write_time' "
             "(fio metrics: *_bw, *_iops"),
    ("search-direction", """
        id: search-direction
        description: minimising a bandwidth
        benchmark: ior
        matrix: {transfer_size: [1m, 2m]}
        search:
          objective: write_bw
          direction: min
          budget: 2
        """, "search-direction.yaml:7: search.direction: min of write_bw, which is better higher "
             "(direction: max)"),
    ("search-no-direction", """
        id: search-no-direction
        description: an objective without a better side
        benchmark: fio
        matrix: {bs: [4k, 1m]}
        search: {objective: write_bytes, budget: 2}
        """, "search-no-direction.yaml:5: search: missing required key 'direction'"),
    ("search-halving", """
        id: search-halving
        description: halving with one repetition
        benchmark: ior
        repetitions: 1
        matrix: {transfer_size: [1m, 2m]}
        search:
          objective: write_bw
          budget: 2
          strategy: halving
        """, "search-halving.yaml:9: search.strategy: halving needs at least 2 repetitions"),
    ("search-initial", """
        id: search-initial
        description: more random cases than the budget
        benchmark: ior
        matrix: {transfer_size: [1m, 2m]}
        search: {objective: write_bw, budget: 2, initial: 3}
        """, "search-initial.yaml:5: search.initial: 3 random cases are more than the budget of 2"),
    ("require-other-file-system", """
        id: require-other-file-system
        description: a CephFS layout where only Lustre may run
        benchmark: fio
        require_file_system: lustre
        fixed: {rw: write, bs: 1MiB, size: 8MiB}
        matrix:
          cephfs.stripe_count: [1, 2]
        """, "require-other-file-system.yaml:7: matrix.cephfs.stripe_count: a CephFS layout, but "
             "require_file_system is lustre: no case can run as asked"),
]


@pytest.mark.parametrize("name, text, expected", MORE_ERRORS, ids=[e[0] for e in MORE_ERRORS])
def test_more_error_cases(write_experiment, name, text, expected):
    with pytest.raises(IolabError) as info:
        load_experiment(write_experiment(name, text))
    message = str(info.value)
    assert f"/{expected}" in f"/{message}", message


def test_search_typed_with_defaults(write_experiment):
    exp = load_experiment(write_experiment("srch", HEAD.format(id="srch") + """repetitions: 3
matrix: {transfer_size: [1m, 2m, 4m]}
search: {objective: write_time, budget: 12}
"""))
    s = exp.search
    assert (s.objective, s.direction, s.budget, s.strategy, s.repetitions, s.seed, s.initial) == (
        "write_time", "min", 12, "model", 3, 0, 4)
    assert not s.maximize and exp.repetitions == 3
    exp = load_experiment(write_experiment("srch2", HEAD.format(id="srch2") + """matrix: {transfer_size: [1m]}
search: {objective: write_bw, budget: 30, strategy: halving, repetitions: 4, seed: 7, initial: 0}
"""))
    assert (exp.search.strategy, exp.search.repetitions, exp.search.seed, exp.search.initial,
            exp.search.maximize) == ("halving", 4, 7, 0, True)
    assert load_experiment(write_experiment("nos", HEAD.format(id="nos"))).search is None


def test_missing_file(tmp_path):
    with pytest.raises(IolabError, match=r"absent\.yaml: no such experiment file"):
        load_experiment(tmp_path / "absent.yaml")


def test_unknown_profile_lists_the_known_ones(good_dir):
    with pytest.raises(IolabError) as info:
        load_experiment(good_dir / "profiles.yaml", profile="huge")
    message = str(info.value)
    assert "profiles.yaml: no profile 'huge' in this experiment (profiles: small, posix-only)" in message
    with pytest.raises(IolabError, match=r"\(profiles: none\)"):
        load_experiment(good_dir / "zip-groups.yaml", profile="small")


# ---------------------------------------------------------------- success


def test_typed_values(good_dir):
    path = good_dir / "typed-values.yaml"
    exp = load_experiment(path)
    assert exp.id == "typed-values"
    assert exp.source == "iolab unit tests"
    assert exp.tags == ["smoke", "typed"]
    assert exp.repetitions == 3 and exp.keep_data is True
    assert exp.profile is None and exp.profiles == []
    assert exp.benchmarks == ["ior"]
    assert exp.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert exp.text == path.read_text()
    assert exp.root == good_dir.parent.resolve()
    [part] = exp.parts
    assert (part.name, part.benchmark) == ("main", "ior")
    assert part.job == Job(time_limit="20m", exclusive=True)
    assert part.fixed == {"scale.nodes": 2, "scale.tasks_per_node": 4, "api": "MPIIO",
                          "transfer_size": 256 * 1024, "lustre.stripe_size": 4 * MIB,
                          "lustre.stripe_count": -1, "extra_args": ["--mpiio.showHints"]}
    assert part.matrix == {"block_size": [4 * MIB, 8 * MIB, 16 * MIB, GIB], "collective": [False, True]}
    assert all(type(v) is int for v in part.matrix["block_size"])
    assert part.exclude == [{"block_size": GIB, "collective": False}]   # "1GiB" typed too
    assert part.zips == []


def test_defaults_when_absent(write_experiment):
    exp = load_experiment(write_experiment("minimal", """
        id: minimal
        description: nothing but the required keys
        benchmark: fio
        """))
    assert exp.repetitions == 1 and exp.keep_data is False and exp.tags == [] and exp.source is None
    [part] = exp.parts
    assert part.job == Job("10m", False)
    assert (part.fixed, part.matrix, part.zips, part.exclude) == ({}, {}, [], [])


def test_profiles_deep_merge(good_dir):
    path = good_dir / "profiles.yaml"
    base = load_experiment(path)
    assert base.profiles == ["small", "posix-only"]
    assert base.repetitions == 5 and base.keep_data is False
    [part] = base.parts
    assert part.fixed == {"scale.tasks_per_node": 8, "transfer_size": MIB, "iterations": 2}
    assert part.matrix == {"scale.nodes": [1, 2, 4], "api": ["POSIX", "MPIIO"],
                           "block_size": [GIB, 4 * GIB]}
    assert part.job == Job("30m", False)

    small = load_experiment(path, profile="small")
    assert small.profile == "small"
    assert small.repetitions == 2 and small.keep_data is True
    [part] = small.parts
    # block_size moved from matrix to fixed, iterations from fixed to matrix,
    # scale overridden (nodes fixed, tasks per node varied); the rest kept
    assert part.fixed == {"transfer_size": MIB, "scale.nodes": 1, "block_size": 16 * MIB}
    assert part.matrix == {"api": ["POSIX", "MPIIO"], "scale.tasks_per_node": [2, 4],
                           "iterations": [1, 3]}
    assert part.job == Job("30m", True)      # exclusive from the profile, time_limit kept
    assert part.exclude == [{"api": "POSIX", "block_size": 4 * GIB}]   # no 'exclude' in the profile

    posix = load_experiment(path, profile="posix-only")
    assert posix.repetitions == 5
    [part] = posix.parts
    assert part.fixed["api"] == "POSIX" and "api" not in part.matrix
    assert part.exclude == []                # the profile's empty list replaces the base's


def test_parts(good_dir):
    exp = load_experiment(good_dir / "parts.yaml")
    assert [(p.name, p.benchmark) for p in exp.parts] == [("shared", "ior"), ("local", "fio")]
    assert exp.benchmarks == ["fio", "ior"]
    assert exp.repetitions == 3
    shared, local = exp.parts
    assert shared.fixed == {"scale.nodes": 1, "scale.tasks_per_node": 4, "api": "MPIIO",
                            "collective": True, "block_size": 8 * MIB, "transfer_size": 256 * 1024}
    assert local.fixed == {"size": 128 * MIB, "ioengine": "psync"}
    assert local.matrix == {"rw": ["write", "read"], "bs": [4096, MIB]}
    assert local.job == Job("5m", False)

    quick = load_experiment(good_dir / "parts.yaml", profile="quick")
    assert quick.repetitions == 1
    q_shared, q_local = quick.parts
    assert (q_shared.fixed, q_shared.matrix) == (shared.fixed, shared.matrix)
    assert q_local.fixed == {"ioengine": "psync", "size": 16 * MIB}
    assert q_local.matrix == {"rw": ["write", "read"], "bs": [MIB]}
    assert q_local.job == Job("5m", True)


def test_zip_as_mapping_and_as_list(good_dir, write_experiment):
    exp = load_experiment(good_dir / "zip-groups.yaml")
    [part] = exp.parts
    assert part.zips == [{"api": ["POSIX", "MPIIO"], "collective": [False, True]},
                         {"block_size": [4 * MIB, 16 * MIB], "segments": [4, 1]}]
    single = load_experiment(write_experiment("one-zip", """
        id: one-zip
        description: a single zip group written as a mapping
        benchmark: ior
        zip:
          api: [POSIX, MPIIO]
          collective: [false, true]
        """))
    assert single.parts[0].zips == [{"api": ["POSIX", "MPIIO"], "collective": [False, True]}]


def test_exclude_typed_and_checked(write_experiment):
    exp = load_experiment(write_experiment("excl", """
        id: excl
        description: exclude entries are typed like parameters
        benchmark: ior
        matrix:
          api: [POSIX, MPIIO]
          block_size: [1m, 4m]
        exclude:
          - {api: POSIX, block_size: 4MiB}
          - {scale.nodes: 2}
        """))
    assert exp.parts[0].exclude == [{"api": "POSIX", "block_size": 4 * MIB}, {"scale.nodes": 2}]


def test_yaml_merge_keys(good_dir):
    base = load_experiment(good_dir / "merge-keys.yaml")
    small = load_experiment(good_dir / "merge-keys.yaml", profile="small")
    assert base.parts[0].fixed == {"api": "MPIIO", "collective": True, "transfer_size": MIB}
    assert small.parts[0].fixed == {"api": "MPIIO", "collective": True, "transfer_size": 256 * 1024}
    assert small.parts[0].matrix == base.parts[0].matrix == {"block_size": [4 * MIB, 8 * MIB]}


def test_yaml_lines_follow_the_written_key_not_the_merged_one():
    text = ("a: &x\n"
            "  k: [1,\n"
            "      2]\n"
            "b:\n"
            "  <<: *x\n"
            "  k:\n"
            "    - 3\n"
            "    - 4\n")
    doc = load_yaml(text, "t.yaml")
    assert doc.data == {"a": {"k": [1, 2]}, "b": {"k": [3, 4]}}
    assert doc.line(("b", "k")) == 6
    assert doc.line(("b", "k", 1)) == 8
    assert doc.line(("a", "k", 1)) == 3


# ---------------------------------------------------------------- hostile input: bytes and structure


def _load_error(path) -> IolabError:
    with pytest.raises(IolabError) as info:
        load_experiment(path)
    assert not isinstance(info.value, ParseError)
    return info.value


HEAD = "id: {id}\ndescription: x\nbenchmark: ior\n"


@pytest.fixture(params=["libyaml", "pure-python"])
def parser(request, monkeypatch):
    """The checks hold with either of PyYAML's parsers (libyaml where PyYAML was built with it)."""
    if request.param == "pure-python":
        monkeypatch.setattr(yamlpos, "_FAST", None)
    elif yamlpos._FAST is None:
        pytest.skip("PyYAML was built without libyaml")
    return request.param


def test_undecodable_bytes_name_the_offset_and_line(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(HEAD.format(id="latin1").encode() + b"source: Jyv\xe4skyl\xe4\n")
    err = _load_error(path)
    offset = path.read_bytes().index(b"\xe4")
    assert str(err).endswith(f"latin1.yaml:4: not valid UTF-8: byte 0xe4 at byte offset {offset} "
                             "(save the file as UTF-8)")


def test_utf16_is_recognised_and_a_utf8_bom_is_fine(tmp_path):
    path = tmp_path / "wide.yaml"
    path.write_bytes(HEAD.format(id="wide").encode("utf-16"))
    assert "it starts with a UTF-16 byte-order mark: save it as UTF-8" in str(_load_error(path))
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + HEAD.format(id="bom").encode())
    assert load_experiment(path).id == "bom"


@pytest.mark.parametrize("written, got", [
    ("1", "an integer (1)"), ("null", "null"), ("~", "null"), ("true", "a boolean (True)"),
    ("1.5", "a number (1.5)"), ("2024-01-01", "a date (datetime.date(2024, 1, 1))"),
])
def test_keys_must_be_strings(write_experiment, written, got):
    err = _load_error(write_experiment("keys", HEAD.format(id="keys") + f"fixed:\n  {written}: 2\n"))
    assert str(err).endswith(f"keys.yaml:5: fixed: keys must be strings, got {got} "
                             f"(quote it for text: '{written}':)")


@pytest.mark.parametrize("text, got, line", [
    ("fixed: {[1, 2]: 2}\n", "a list", 4),
    ("fixed:\n  ? {a: 1}\n  : 2\n", "a mapping", 5),
    ("1: x\n", "an integer (1)", 4),
])
def test_collection_and_top_level_keys(write_experiment, text, got, line):
    err = _load_error(write_experiment("ckeys", HEAD.format(id="ckeys") + text))
    assert f"ckeys.yaml:{line}: " in str(err) and f"keys must be strings, got {got}" in str(err)


def _deep(kind: str, levels: int) -> str:
    if kind == "flow-list":
        return "fixed: " + "[" * levels + "]" * levels + "\n"
    if kind == "flow-map":
        return "fixed: " + "{a: " * levels + "1" + "}" * levels + "\n"
    if kind == "compact-list":
        return "fixed:\n  a:\n    " + "- " * levels + "x\n"
    # Block mappings indent by two spaces a level: 20,000 levels would be 400 MB of spaces,
    # so this one stops at 3,000, still three times Python's recursion limit.
    return "fixed:\n" + "".join("  " * (i + 1) + "a:\n" for i in range(levels))


@pytest.mark.parametrize("kind, levels", [("flow-list", 20_000), ("flow-map", 20_000),
                                          ("compact-list", 20_000), ("block-map", 3_000)])
def test_deep_nesting_is_refused_without_recursion(write_experiment, kind, levels, parser):
    path = write_experiment("deep", HEAD.format(id="deep") + _deep(kind, levels))
    started = time.monotonic()
    err = _load_error(path)
    assert time.monotonic() - started < 5
    assert f"nested more than {yamlpos.MAX_DEPTH} levels deep" in str(err)
    assert re.search(r"deep\.yaml:\d+: nested", str(err))


def test_nesting_up_to_the_limit_is_read(parser):
    levels = yamlpos.MAX_DEPTH - 1      # the top-level mapping is one level
    doc = load_yaml("a: " + "[" * levels + "]" * levels + "\n", "t.yaml")
    inner = doc.data["a"]
    for _ in range(levels - 1):
        (inner,) = inner
    assert inner == []
    with pytest.raises(IolabError, match="nested more than"):
        load_yaml("a: " + "[" * (levels + 1) + "]" * (levels + 1) + "\n", "t.yaml")


def test_depth_counts_what_aliases_bring_along(parser):
    # each anchor nests the one before one level deeper: written, nothing is deeper than 2
    chain = "".join(f"a{k}: &a{k} [{f'*a{k - 1}' if k else 1}]\n" for k in range(80))
    with pytest.raises(IolabError) as info:
        load_yaml(chain, "t.yaml")
    assert "nested more than 64 levels deep once its aliases are expanded" in str(info.value)
    assert str(info.value).startswith("t.yaml:64: ")   # where a63 (65 levels with the top) is


def test_billion_laughs_is_refused_at_once(parser):
    text = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
        f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 10)}]\n" for k in range(1, 10))
    started = time.monotonic()
    with pytest.raises(IolabError) as info:
        load_yaml(text, "lol.yaml")
    assert time.monotonic() - started < 1
    # a3 expands to 11,111 values, so the tenth *a3 of a4 (line 5) crosses 100,000
    assert str(info.value) == ("lol.yaml:5: more than 100000 values once its aliases are expanded "
                               "(aliases (*name) that repeat anchors many times over, e.g. a "
                               "'billion laughs', are refused)")


def test_the_value_limit_is_exact(monkeypatch, parser):
    monkeypatch.setattr(yamlpos, "MAX_NODES", 10)
    # a mapping, its key, a list and 7 items: 10 values; an alias to the list counts its 8
    assert load_yaml("a: [1, 2, 3, 4, 5, 6, 7]\n", "t.yaml").data == {"a": [1, 2, 3, 4, 5, 6, 7]}
    with pytest.raises(IolabError, match=r"t\.yaml:1: more than 10 values$"):
        load_yaml("a: [1, 2, 3, 4, 5, 6, 7, 8]\n", "t.yaml")
    with pytest.raises(IolabError, match="once its aliases are expanded"):
        load_yaml("a: &x [1]\nb: *x\nc: *x\nd: *x\n", "t.yaml")


@pytest.mark.parametrize("text, line", [
    ("fixed: &a {x: *a}\n", 4), ("fixed: &a [1, *a]\n", 4), ("fixed: &a\n  <<: *a\n", 5),
    ("fixed: &a\n  x:\n    - y: [*a]\n", 6),
])
def test_recursive_anchors_are_refused(write_experiment, text, line, parser):
    err = _load_error(write_experiment("rec", HEAD.format(id="rec") + text))
    assert f"rec.yaml:{line}: *a is used inside &a itself" in str(err)


def test_an_anchor_defined_twice(parser):
    with pytest.raises(IolabError, match=r"t\.yaml:2: anchor &x is defined twice \(first at line 1\)"):
        load_yaml("a: &x 1\nb: &x 2\n", "t.yaml")


@pytest.mark.parametrize("value, message", [
    ("9" * 5000, "an integer of 5000 digits is far too large"),
    ("2024-13-45", "cannot read this value: month must be in 1..12"),
])
def test_values_python_cannot_build(write_experiment, value, message):
    err = _load_error(write_experiment("val", HEAD.format(id="val") + f"repetitions: {value}\n"))
    assert str(err).endswith(f"val.yaml:4: {message}")


def test_characters_yaml_forbids_name_the_line(tmp_path):
    path = tmp_path / "nul.yaml"
    path.write_text(HEAD.format(id="nul") + "source: a\0b\n")
    assert str(_load_error(path)).endswith(
        "nul.yaml:4: not valid YAML: a NUL byte (U+0000) is not allowed in a YAML file")


# ---------------------------------------------------------------- every schema error at once


def test_every_schema_error_is_reported_one_line_each_by_line(write_experiment, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write_experiment("many", """
        id: many
        description: five mistakes
        benchmark: ior
        repetitons: 3
        verify: {layout: loud}
        job: {exclusive: maybe, time_limt: 5m}
        tags: [ok, "not ok"]
        darshan: {enabled: true, dtx: true}
        """)
    err = _load_error(path)
    assert str(err).splitlines() == [
        "many.yaml:4: repetitons: unknown key 'repetitons' (did you mean 'repetitions'? allowed: "
        "id, description, source, benchmark, scale, job, fixed, matrix, zip, exclude, parts, "
        "repetitions, search, keep_data, order, drift, require_lustre, require_file_system, verify, report, "
        "darshan, profiles, tags, allow)",
        "many.yaml:5: verify.layout: 'loud' is not allowed (allowed: fail, warn)",
        "many.yaml:6: job.exclusive: expected boolean, got string 'maybe'",
        "many.yaml:6: job.time_limt: unknown key 'time_limt' (did you mean 'time_limit'? allowed: "
        "time_limit, exclusive, extra_directives, resources)",
        "many.yaml:7: tags[1]: 'not ok' does not match ^[A-Za-z0-9_.-]+$",
        "many.yaml:8: darshan.dtx: unknown key 'dtx' (did you mean 'dxt'? allowed: enabled, dxt)",
    ]
    # read as a single error, it is the first one
    assert (err.line, err.key) == (4, "repetitons")


def test_a_hundred_errors_show_the_first_fifty(write_experiment, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    keys = "".join(f"  k{i:03}: 1\n" for i in range(100))
    err = _load_error(write_experiment("lots", HEAD.format(id="lots") + "verify:\n" + keys))
    lines = str(err).splitlines()
    assert len(lines) == 51 and lines[-1] == "... and 50 more problems"
    assert lines[0].startswith("lots.yaml:5: verify.k000: unknown key 'k000'")
    assert lines[49].startswith("lots.yaml:54: verify.k049: unknown key 'k049'")


# ---------------------------------------------------------------- control characters


NEWLINE_ONLY = "control characters are not allowed here; newlines and tabs only in description, " \
               "source, profiles.*.description and report.plots[].title"


@pytest.mark.parametrize("text, line, key, message", [
    ("id: |\n  ctl\n", 1, "id", "ends with a newline (U+000A): " + NEWLINE_ONLY),
    ('tags: [ok, "x\\n"]\n', 4, "tags[1]", "ends with a newline (U+000A): " + NEWLINE_ONLY),
    ('fixed: {lustre.pool: "flash\\n"}\n', 4, "fixed.lustre.pool", "ends with a newline"),
    ('fixed: {mpiio.cb_config_list: "*:1\\n"}\n', 4, "fixed.mpiio.cb_config_list", "ends with a newline"),
    ('job: {extra_directives: ["#SBATCH --comment=x\\ntouch /tmp/z"]}\n', 4, "job.extra_directives[0]",
     "has at character 20 a newline (U+000A): " + NEWLINE_ONLY),
    ('job: {resources: {bb: {capacity: "1TiB\\n"}}}\n', 4, "job.resources.bb.capacity",
     "ends with a newline"),
    ('fixed: {extra_args: ["-a\\x1b[2J"]}\n', 4, "fixed.extra_args[0]",
     "has at character 3 an escape character (U+001B): control characters are not allowed here"),
    ('matrix: {extra_args: [[], ["\\t-k"]]}\n', 4, "matrix.extra_args[1][0]", "has at character 1 a tab"),
    ('report: {plots: [{x: "a\\n", y: b, title: "two\\nlines"}]}\n', 4, "report.plots[0].x",
     "ends with a newline"),
    ('source: "x\\x7f"\n', 4, "source", "ends with a delete character (U+007F): control"),
    ('source: "x\\u2028y"\n', 4, "source", "has at character 2 a line separator (U+2028)"),
    ('source: "x\\x85y"\n', 4, "source", "has at character 2 a next-line character (U+0085)"),
    ('source: "x\\ud800"\n', 4, "source", "ends with a lone surrogate (U+D800)"),
    ('"fixed\\r": {}\n', 4, "fixed\\r", "the key ends with a carriage return (U+000D)"),
    ('profiles:\n  p: {description: "a\\x00b"}\n', 5, "profiles.p.description",
     "has at character 2 a NUL byte (U+0000)"),
])
def test_control_characters_are_refused(write_experiment, text, line, key, message):
    if text.startswith("id"):
        body = text + "description: x\nbenchmark: ior\n"
    else:
        body = HEAD.format(id="ctl") + text
    err = _load_error(write_experiment("ctl", body))
    assert f"ctl.yaml:{line}: {key}: {message}" in str(err), str(err)
    assert len(str(err).splitlines()) == 1       # the schema's pattern error is not repeated


def test_free_text_may_hold_newlines_and_tabs(write_experiment):
    exp = load_experiment(write_experiment("free", """
        id: free
        description: "Two lines,\\n\\tthe second indented with a tab.\\n"
        source: "a\\tb"
        benchmark: ior
        profiles:
          small: {description: "one\\ntwo"}
        report: {plots: [{x: api, y: write_bw, title: "Write\\nbandwidth"}]}
        """))
    assert exp.description == "Two lines,\n\tthe second indented with a tab.\n"
    assert exp.raw["report"]["plots"][0]["title"] == "Write\nbandwidth"


def test_type_param_refuses_control_characters():
    with pytest.raises(IolabError, match=r"--param: lustre\.pool: ends with a newline"):
        type_param("ior", "lustre.pool", "flash\n", "--param")


# ---------------------------------------------------------------- zero and nonsense values


STRIPE_RULE = "a multiple of 64KiB (Lustre's rule), at least 64KiB"


@pytest.mark.parametrize("bench, fixed, key, message", [
    ("ior", "{block_size: 0}", "fixed.block_size", "0 is not allowed: give at least 1B"),
    ("ior", "{transfer_size: 0k}", "fixed.transfer_size", "'0k' is not allowed: give at least 1B"),
    ("fio", "{bs: 0}", "fixed.bs", "0 is not allowed: give at least 1B"),
    ("fio", "{size: 0MiB}", "fixed.size", "'0MiB' is not allowed: give at least 1B"),
    ("h5bench", "{align: true, align_len: 0}", "fixed.align_len", "0 is not allowed: give at least 1B"),
    ("ior", "{api: MPIIO, mpiio.cb_buffer_size: 0}", "fixed.mpiio.cb_buffer_size",
     "0 is not allowed: give at least 1B"),
    ("ior", "{lustre.stripe_count: 0}", "fixed.lustre.stripe_count",
     "0 is not allowed: -1 (all OSTs) or a count from 1; leave the key out for the file system's "
     "default"),
    ("ior", "{lustre.stripe_count: -2}", "fixed.lustre.stripe_count", "-2 is not allowed: -1 (all OSTs)"),
    ("ior", "{lustre.stripe_size: 0}", "fixed.lustre.stripe_size",
     f"0 is not allowed: {STRIPE_RULE}; leave the key out for the file system's default"),
    ("ior", "{lustre.stripe_size: 96k}", "fixed.lustre.stripe_size",
     f"'96k' (98304 bytes) is not allowed: {STRIPE_RULE}"),
    ("ior", "{lustre.stripe_size: 1000}", "fixed.lustre.stripe_size", "1000 is not allowed"),
    ("ior", "{lustre.components: [{end: 0, stripe_count: 1}, {end: -1}]}",
     "fixed.lustre.components[0].end", f"0 is not allowed: {STRIPE_RULE}, or -1 for the end of the file"),
    ("ior", "{lustre.components: [{end: 100k}, {end: -1}]}", "fixed.lustre.components[0].end",
     "'100k' (102400 bytes) is not allowed"),
    ("ior", "{lustre.components: [{end: 1m, stripe_count: 0}, {end: -1}]}",
     "fixed.lustre.components[0].stripe_count", "0 is not allowed: -1 (all OSTs) or a count from 1"),
    ("ior", "{lustre.components: [{end: 1m}, {end: -1, stripe_size: 32k}]}",
     "fixed.lustre.components[1].stripe_size", f"'32k' is not allowed: {STRIPE_RULE}"),
    ("ior", "{api: MPIIO, mpiio.striping_unit: 1000k}", "fixed.mpiio.striping_unit",
     "'1000k' (1024000 bytes) is not allowed: " + STRIPE_RULE + "; leave the hint out"),
    ("ior", "{block_size: 999999999999999999999p}", "fixed.block_size",
     "'999999999999999999999p' is larger than 1EiB, the largest size iolab accepts"),
    ("fio", f"{{size: {2**60 + 1}}}", "fixed.size", f"{2**60 + 1} is larger than 1EiB"),
    ("ior", "{block_size: -1m}", "fixed.block_size", "'-1m' is not a size"),
    ("ior", "{block_size: -1}", "fixed.block_size", "-1 is not a size (use a size such as 4MiB"),
])
def test_zero_and_nonsense_sizes_are_refused_at_load(write_experiment, bench, fixed, key, message):
    err = _load_error(write_experiment("zero", f"id: zero\ndescription: x\nbenchmark: {bench}\n"
                                               f"fixed: {fixed}\n"))
    assert f"zero.yaml:4: {key}: {message}" in str(err), str(err)


def test_zero_in_a_matrix_names_the_item(write_experiment):
    err = _load_error(write_experiment("zero", HEAD.format(id="zero") +
                                       "matrix:\n  lustre.stripe_count: [1, 0, -1]\n"))
    assert "zero.yaml:5: matrix.lustre.stripe_count[1]: 0 is not allowed: -1 (all OSTs)" in str(err)


def test_sizes_that_lustre_takes(write_experiment):
    exp = load_experiment(write_experiment("fine", HEAD.format(id="fine") + """fixed:
  lustre.stripe_size: 1.5m
  lustre.stripe_count: -1
  transfer_size: 1
  block_size: 1024p
"""))
    fixed = exp.parts[0].fixed
    assert (fixed["lustre.stripe_size"], fixed["block_size"]) == (24 * 64 * 1024, 2**60)


@pytest.mark.parametrize("limit, message", [
    ("0s", "'0s' is no time at all: give a time limit from 1s to 365d"),
    ("0d0h0m", "'0d0h0m' is no time at all"),
    ("366d", "'366d' is longer than 365 days, the longest time limit iolab accepts"),
    ("8761h", "'8761h' is longer than 365 days"),
    ("99999999999999999999d", "'99999999999999999999d' does not match"),
    ("10", "'10' does not match"),
])
def test_time_limits_are_bounded(write_experiment, limit, message):
    err = _load_error(write_experiment("tl", HEAD.format(id="tl") + f"job: {{time_limit: '{limit}'}}\n"))
    assert f"tl.yaml:4: job.time_limit: {message}" in str(err), str(err)
    assert len(str(err).splitlines()) == 1


def test_time_limits_in_profiles_and_parts_too(write_experiment):
    err = _load_error(write_experiment("tlp", HEAD.format(id="tlp") +
                                       "profiles:\n  small:\n    job: {time_limit: 0m}\n"))
    assert "tlp.yaml:6: profiles.small.job.time_limit: '0m' is no time at all" in str(err)
    assert load_experiment(write_experiment("ok", HEAD.format(id="ok") + "job: {time_limit: 365d}\n"))


SIX_MISTAKES = """\
id: six
description: six mistakes of six kinds, all reported by one validate
benchmark: ior
repetitions: two
colour: blue
fixed: {api: MPIIO, transfer_size: 4 furlongs, block_sise: 16MiB}
matrix:
  api: [POSIX]
zip:
  segments: [1, 2]
  iterations: [1]
"""


def test_every_error_of_a_file_comes_in_one_run(tmp_path):
    path = tmp_path / "six.yaml"
    path.write_text(SIX_MISTAKES)
    err = _load_error(path)
    lines = str(err).splitlines()
    want = [("six.yaml:4: repetitions: expected integer", "schema: a type"),
            ("six.yaml:5: colour: unknown key 'colour'", "schema: an unknown key"),
            ("six.yaml:6: fixed.transfer_size: '4 furlongs' is not a size", "a parameter's value"),
            ("six.yaml:6: fixed.block_sise: unknown parameter 'block_sise' for ior (did you mean "
             "'block_size'?", "a parameter's name"),
            ("six.yaml:8: matrix.api: 'api' is set twice (also at fixed.api)", "set twice"),
            ("six.yaml:9: zip: zip lists must have equal lengths", "a zip")]
    for text, kind in want:
        assert any(text in line for line in lines), (kind, lines)
    assert len(lines) == 6, lines
    out = subprocess.run([sys.executable, "-m", "iolab.cli", "validate", str(path)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 6, out.stderr


@pytest.mark.parametrize("typo, near", [("bz", "'bs'"), ("numjob", "'numjobs'"),
                                        ("stripe_count", "'cephfs.stripe_count' or 'lustre.stripe_count'"),
                                        ("lustre.stripesize", "'lustre.stripe_size'")])
def test_a_mistyped_parameter_gets_the_nearest_names_and_the_others_grouped(write_experiment, typo, near):
    path = write_experiment("typo", f"""
        id: typo
        description: a parameter mistyped
        benchmark: fio
        fixed: {{rw: write, size: 8MiB}}
        matrix: {{{typo}: [1]}}
        """)
    with pytest.raises(IolabError) as info:
        load_experiment(path)
    message = str(info.value)
    assert f"typo.yaml:5: matrix.{typo}: unknown parameter '{typo}' for fio (did you mean {near}? " \
           "allowed: fio: rw, bs, size, numjobs," in message, message
    for group in ("; storage: cephfs.stripe_unit,", "; mpiio: mpiio.aggregators,",
                  "; scale: scale.nodes, scale.tasks_per_node)"):
        assert group in message, message


# ---------------------------------------------------------------- require_lustre, the older spelling

def _yaml(tmp_path, monkeypatch, extra: str, fixed: str = "{lustre.stripe_count: 2}") -> Path:
    monkeypatch.chdir(tmp_path)     # messages name the file as given, relative to here
    path = tmp_path / "old.yaml"
    path.write_text(f"id: old\ndescription: x\nbenchmark: ior\nfixed: {fixed}\n" + extra)
    return path


def test_require_lustre_is_read_as_require_file_system_lustre_with_a_note(tmp_path, monkeypatch):
    exp = load_experiment(_yaml(tmp_path, monkeypatch, "require_lustre: true\n"))
    assert exp.require_file_system == "lustre"
    assert exp.notes == ("old.yaml:5: require_lustre: the older spelling of "
                         "require_file_system: lustre, read as that; write require_file_system: lustre",)
    assert not hasattr(exp, "require_lustre")
    plain = load_experiment(_yaml(tmp_path, monkeypatch, "require_lustre: false\n"))
    assert plain.require_file_system is None and plain.notes == ()
    both = load_experiment(_yaml(tmp_path, monkeypatch,
                                 "require_lustre: true\nrequire_file_system: lustre\n"))
    assert both.require_file_system == "lustre"


def test_require_lustre_with_another_file_system_is_refused(tmp_path, monkeypatch):
    err = _load_error(_yaml(tmp_path, monkeypatch,
                            "require_lustre: true\nrequire_file_system: cephfs\n", "{}"))
    assert str(err).startswith("old.yaml:5: require_lustre: require_lustre: true and "
                               "require_file_system: 'cephfs' ask for two file systems"), str(err)


def test_validate_prints_the_note_and_succeeds(tmp_path, monkeypatch, capsys):
    from iolab.cli import main

    path = _yaml(tmp_path, monkeypatch, "require_lustre: true\n")
    assert main(["validate", path.name]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("ok: old.yaml (1 cases)")
    assert err == "iolab: note: old.yaml:5: require_lustre: the older spelling of " \
                  "require_file_system: lustre, read as that; write require_file_system: lustre\n"
