"""Expanding experiments into cases: order, stable ids, exclude, zip, dedupe, bytes and varied keys."""

from __future__ import annotations

import hashlib
import re
import time

import pytest

from iolab.experiment import matrix
from iolab.benchmarks import get as get_benchmark
from iolab.errors import IolabError
from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import (MAX_CASES, case_id, count_cases, defaults, describe, expand,
                                     varied_keys, varied_keys_of)

KIB, MIB = 1024, 1024**2

ORDERED = """
    id: {id}
    description: order and ids
    benchmark: ior
    scale: {{nodes: 1, tasks_per_node: 4}}
    matrix:
      api: [POSIX, MPIIO]
      transfer_size: [256k, 1m]
    """


def _cases(write_experiment, name, text, profile=None):
    return expand(load_experiment(write_experiment(name, text), profile=profile))


def test_order_is_the_cross_product_in_key_order(write_experiment):
    cases = _cases(write_experiment, "order", ORDERED.format(id="order"))
    assert [(c.params["api"], c.params["transfer_size"]) for c in cases] == [
        ("POSIX", 256 * KIB), ("POSIX", MIB), ("MPIIO", 256 * KIB), ("MPIIO", MIB)]
    assert len({c.case_id for c in cases}) == 4
    again = _cases(write_experiment, "order", ORDERED.format(id="order"))
    assert [c.case_id for c in again] == [c.case_id for c in cases]
    first = cases[0]
    assert (first.experiment, first.part, first.benchmark) == ("order", "main", "ior")
    assert (first.nodes, first.tasks_per_node, first.num_tasks) == (1, 4, 4)
    # every parameter is present, defaults included, in sorted order
    assert list(first.params) == sorted(first.params)
    assert set(first.params) == set(defaults("ior"))
    assert first.get("segments") == 1 and first.get("lustre.pool") is None


def test_case_ids_are_stable(write_experiment):
    base = {c.params["api"] + str(c.params["transfer_size"]): c.case_id
            for c in _cases(write_experiment, "order", ORDERED.format(id="order"))}
    # keys in another order, another file name, sizes written differently, and the default
    # values written out explicitly: the same cases, the same ids
    other = _cases(write_experiment, "renamed-copy", """
        id: renamed-copy
        description: the same cases written differently
        benchmark: ior
        fixed:
          segments: 1
          write: true
          block_size: 1MiB
          extra_args: []
        matrix:
          transfer_size: [262144, 1MiB]
          api: [MPIIO, POSIX]
        scale: {tasks_per_node: 4, nodes: 1}
        """)
    assert {c.params["api"] + str(c.params["transfer_size"]): c.case_id for c in other} == base


def test_case_id_changes_with_any_parameter(write_experiment):
    cases = _cases(write_experiment, "order", ORDERED.format(id="order"))
    ids = {c.case_id for c in cases}
    changed = _cases(write_experiment, "changed", ORDERED.format(id="changed").replace(
        "benchmark: ior", "benchmark: ior\n    fixed: {segments: 2}"))
    assert not ids & {c.case_id for c in changed}
    more_tasks = _cases(write_experiment, "tasks", ORDERED.format(id="tasks").replace(
        "tasks_per_node: 4", "tasks_per_node: 8"))
    assert not ids & {c.case_id for c in more_tasks}


def test_case_id_function():
    params = {**defaults("ior"), "api": "MPIIO"}
    assert case_id("ior", params) == case_id("ior", {"api": "MPIIO"})       # defaults do not count
    assert case_id("ior", params) != case_id("ior", {"api": "HDF5"})
    assert case_id("ior", {}) != case_id("fio", {})                          # the benchmark does
    # Pinned: results on disk are keyed by these ids; a change in hashing orphans them all.
    # sha256('{"benchmark": "ior", "params": {"api": "MPIIO"}}')[:16]; runs recorded with 8-digit
    # ids ("99a3ce01") have its first 8, so they still match by prefix.
    blob = '{"benchmark": "ior", "params": {"api": "MPIIO"}}'
    assert case_id("ior", params) == hashlib.sha256(blob.encode()).hexdigest()[:16] == "99a3ce015baa8c12"


def test_two_different_cases_on_one_id_are_an_error_never_a_dropped_case(write_experiment,
                                                                          monkeypatch):
    # 1 hex digit: 16 ids for 20 different cases, so two of them must share one
    monkeypatch.setattr(matrix, "CASE_ID_DIGITS", 1)
    exp = load_experiment(write_experiment("crowd", f"""
        id: crowd
        description: more cases than ids
        benchmark: ior
        matrix: {{segments: {list(range(1, 21))}}}
        """))
    with pytest.raises(IolabError) as info:
        expand(exp)
    found = re.search(r"crowd\.yaml: two different cases share the id ([0-9a-f]): "
                      r"ior \(segments=(\d+)\) and ior \(segments=(\d+)\) "
                      r"\(a sha256 prefix collision: please report it\)$", str(info.value))
    assert found, str(info.value)
    cid, first, second = found.groups()
    assert first != second
    assert case_id("ior", {"segments": int(first)}) == case_id("ior", {"segments": int(second)}) == cid
    # with the real width, every one of them has its own id
    monkeypatch.setattr(matrix, "CASE_ID_DIGITS", 16)
    assert len({c.case_id for c in expand(exp)}) == 20


def test_exclude_drops_matching_cases(write_experiment):
    cases = _cases(write_experiment, "excl", """
        id: excl
        description: exclude
        benchmark: ior
        matrix:
          api: [POSIX, MPIIO, HDF5]
          collective: [false, true]
        exclude:
          - {api: POSIX, collective: true}
          - {api: HDF5}
        """)
    assert [(c.params["api"], c.params["collective"]) for c in cases] == [
        ("POSIX", False), ("MPIIO", False), ("MPIIO", True)]


def test_everything_excluded(write_experiment):
    with pytest.raises(IolabError, match=r"nothing\.yaml: the matrix expands to no cases"):
        _cases(write_experiment, "nothing", """
            id: nothing
            description: all gone
            benchmark: ior
            matrix: {api: [POSIX, MPIIO]}
            exclude: [{write: true}]
            """)


def test_zip_pairs_and_crosses(good_dir):
    cases = expand(load_experiment(good_dir / "zip-groups.yaml"))
    got = [(c.params["transfer_size"], c.params["api"], c.params["collective"],
            c.params["block_size"], c.params["segments"]) for c in cases]
    assert got == [
        (256 * KIB, "POSIX", False, 4 * MIB, 4), (256 * KIB, "POSIX", False, 16 * MIB, 1),
        (256 * KIB, "MPIIO", True, 4 * MIB, 4), (256 * KIB, "MPIIO", True, 16 * MIB, 1),
        (MIB, "POSIX", False, 4 * MIB, 4), (MIB, "POSIX", False, 16 * MIB, 1),
        (MIB, "MPIIO", True, 4 * MIB, 4), (MIB, "MPIIO", True, 16 * MIB, 1),
    ]


def test_the_same_case_twice_runs_once(write_experiment):
    cases = _cases(write_experiment, "dupes", """
        id: dupes
        description: one size written three ways
        benchmark: ior
        matrix:
          block_size: [1m, 1MiB, 1048576, 2m]
        """)
    assert [c.params["block_size"] for c in cases] == [MIB, 2 * MIB]


def test_parts_expand_in_file_order(good_dir):
    cases = expand(load_experiment(good_dir / "parts.yaml"))
    assert [(c.part, c.benchmark) for c in cases] == [("shared", "ior")] * 2 + [("local", "fio")] * 4
    assert [(c.params["rw"], c.params["bs"]) for c in cases[2:]] == [
        ("write", 4 * KIB), ("write", MIB), ("read", 4 * KIB), ("read", MIB)]
    assert cases[0].job.time_limit == "10m" and cases[2].job.time_limit == "5m"
    quick = expand(load_experiment(good_dir / "parts.yaml", profile="quick"))
    assert [c.case_id for c in quick[:2]] == [c.case_id for c in cases[:2]]   # untouched part


def test_profile_cases(good_dir):
    base = expand(load_experiment(good_dir / "profiles.yaml"))
    assert len(base) == 3 * 2 * 2 - 3                 # POSIX with 4g excluded at every node count
    assert not any(c.params["api"] == "POSIX" and c.params["block_size"] == 4 * 1024**3 for c in base)
    small = expand(load_experiment(good_dir / "profiles.yaml", profile="small"))
    assert [(c.params["api"], c.tasks_per_node, c.params["iterations"]) for c in small] == [
        (api, tpn, it) for api in ("POSIX", "MPIIO") for tpn in (2, 4) for it in (1, 3)]
    assert {c.params["block_size"] for c in small} == {16 * MIB}
    assert {c.nodes for c in small} == {1}


@pytest.mark.parametrize("tasks, segments, iterations", [(1, 1, 1), (4, 1, 3), (8, 4, 2)])
def test_ior_bytes_written(write_experiment, tasks, segments, iterations):
    [case] = _cases(write_experiment, "bytes", f"""
        id: bytes
        description: bytes written
        benchmark: ior
        scale: {{nodes: 2, tasks_per_node: {tasks}}}
        fixed:
          block_size: 8m
          transfer_size: 1m
          segments: {segments}
          iterations: {iterations}
        """)
    # block * segments * tasks * iterations
    assert get_benchmark("ior").bytes_written(case) == 8 * MIB * segments * (2 * tasks) * iterations


def test_fio_bytes_written(write_experiment):
    cases = _cases(write_experiment, "fio-bytes", """
        id: fio-bytes
        description: bytes written by fio
        benchmark: fio
        fixed: {size: 64m}
        matrix:
          numjobs: [1, 4]
          rw: [write, randread]
        """)
    adapter = get_benchmark("fio")
    assert [adapter.bytes_written(c) for c in cases] == [64 * MIB, 64 * MIB, 256 * MIB, 256 * MIB]


def test_varied_keys(good_dir, write_experiment):
    cases = expand(load_experiment(good_dir / "zip-groups.yaml"))
    assert varied_keys(cases) == ["api", "block_size", "collective", "segments", "transfer_size"]
    assert varied_keys(cases[:1]) == []
    exp = load_experiment(good_dir / "zip-groups.yaml")
    assert varied_keys_of(exp) == ["transfer_size", "api", "collective", "block_size", "segments"]
    # a matrix key with one value is listed by the experiment but does not vary between cases
    single = load_experiment(write_experiment("single", """
        id: single
        description: one value
        benchmark: ior
        matrix: {api: [MPIIO], segments: [1, 2]}
        """))
    assert varied_keys_of(single) == ["api", "segments"]
    assert varied_keys(expand(single)) == ["segments"]
    parts = load_experiment(good_dir / "parts.yaml")
    assert varied_keys_of(parts) == ["segments", "rw", "bs"]
    assert varied_keys_of(parts, parts.parts[1]) == ["rw", "bs"]


def _varied_keys_by_json(cases):
    """varied_keys as it was first written (a value's JSON per case and key): the reference."""
    import json

    keys = []
    for case in cases:
        keys += [k for k in case.params if k not in keys]
    return [k for k in keys if len({json.dumps(c.params.get(k), sort_keys=True) for c in cases}) > 1]


def test_varied_keys_on_a_wide_matrix_answers_as_json_comparison_does(write_experiment):
    """The linear varied_keys gives the JSON comparison's answer, also where Python's == and JSON
    disagree (1, 1.0 and true; -0.0 and 0.0; a list and a tuple; key order in a mapping; an
    absent key and null)."""
    wide = _cases(write_experiment, "wide", """
        id: wide
        description: wide
        parts:
          ior:
            benchmark: ior
            scale: {nodes: 1, tasks_per_node: [1, 2, 4]}
            fixed: {block_size: 8MiB}
            matrix:
              api: [MPIIO, HDF5]
              transfer_size: [64KiB, 256KiB, 1MiB, 4MiB]
              segments: [1, 2, 3, 4, 5]
              collective: [false, true]
          fio:
            benchmark: fio
            matrix: {rw: [write, randwrite], bs: [4KiB, 1MiB], numjobs: [1, 2, 3]}
        """)
    assert len(wide) == 3 * 2 * 4 * 5 * 2 + 12
    assert varied_keys(wide) == _varied_keys_by_json(wide) and len(varied_keys(wide)) > 8
    for part in ("ior", "fio"):
        some = [c for c in wide if c.part == part]
        assert varied_keys(some) == _varied_keys_by_json(some)
    base = wide[0]

    def with_params(**params):
        return matrix.Case(base.experiment, base.part, base.benchmark, base.case_id,
                           {**base.params, **params}, base.job)

    pairs = [({"x": 1}, {"x": 1.0}), ({"x": 1}, {"x": True}), ({"x": 0}, {"x": False}),
             ({"x": 0.0}, {"x": -0.0}), ({"x": 2.5}, {"x": 2.5}), ({"x": [1, 2]}, {"x": (1, 2)}),
             ({"x": {"a": 1, "b": 2}}, {"x": {"b": 2, "a": 1}}), ({"x": None}, {}),
             ({"x": "1"}, {"x": 1}), ({"x": float("nan")}, {"x": float("nan")}),
             ({"x": [1, [2]]}, {"x": [1, [3]]}), ({"x": "a"}, {"x": "a"}), ({}, {"x": 0})]
    for one, two in pairs:
        for cases in ([with_params(**one), with_params(**two)], [with_params(**two), with_params(**one)],
                      [with_params(**one), with_params(**one), with_params(**two)]):
            assert varied_keys(cases) == _varied_keys_by_json(cases), (one, two)


def test_describe(write_experiment):
    case = _cases(write_experiment, "order", ORDERED.format(id="order"))[1]
    assert describe(case, ["api", "transfer_size"]) == "api=POSIX, transfer_size=1MiB"
    assert describe(case, []) == case.case_id


def test_null_in_a_zip_means_not_set(tmp_path):
    """Hint sets that add hints one after another: null leaves a hint out of that case."""
    (tmp_path / "experiments").mkdir()
    path = tmp_path / "experiments" / "hint-sets.yaml"
    path.write_text("id: hint-sets\ndescription: x\nbenchmark: ior\nfixed: {api: MPIIO}\n"
                    "zip:\n  mpiio.striping_unit: [null, 1MiB, 1MiB]\n"
                    "  mpiio.cb_config_list: [null, null, '*:2']\n"
                    "exclude:\n  - {mpiio.cb_config_list: null, mpiio.striping_unit: null}\n")
    cases = expand(load_experiment(path))
    hints = [{k: v for k, v in c.params.items() if k.startswith("mpiio.")} for c in cases]
    # the first set (no hints at all) is excluded by matching both keys as absent
    assert hints == [{"mpiio.striping_unit": 1048576},
                     {"mpiio.striping_unit": 1048576, "mpiio.cb_config_list": "*:2"}]
    plain = tmp_path / "experiments" / "plain.yaml"
    plain.write_text("id: plain\ndescription: x\nbenchmark: ior\n"
                     "fixed: {api: MPIIO, mpiio.striping_unit: 1MiB}\n")
    assert expand(load_experiment(plain))[0].case_id == cases[0].case_id


# ---------------------------------------------------------------- the case limit


def _values(n: int) -> str:
    return "[" + ", ".join(str(i) for i in range(1, n + 1)) + "]"


def _sized(write_experiment, name, *sizes, extra=""):
    keys = ["segments", "iterations", "scale.nodes", "scale.tasks_per_node", "mpiio.cb_nodes",
            "mpiio.striping_factor"]
    matrix = "".join(f"  {k}: {_values(n)}\n" for k, n in zip(keys, sizes))
    return load_experiment(write_experiment(name, f"id: {name}\ndescription: x\nbenchmark: ior\n"
                                                  f"fixed: {{api: MPIIO}}\nmatrix:\n{matrix}{extra}"))


def test_ten_million_cases_are_refused_before_expanding(write_experiment, monkeypatch):
    monkeypatch.delenv("IOLAB_MAX_CASES", raising=False)
    exp = _sized(write_experiment, "huge", 10, 10, 10, 10, 10, 10)
    exp.parts[0].zips.append({"fsync": [True, False] * 5, "keep_file": [False, True] * 5})
    started = time.monotonic()
    with pytest.raises(IolabError) as info:
        expand(exp)
    assert time.monotonic() - started < 1
    assert str(info.value).endswith(
        "huge.yaml: the matrix would make 10,000,000 cases (10 segments x 10 iterations x "
        "10 scale.nodes x 10 scale.tasks_per_node x 10 mpiio.cb_nodes x 10 mpiio.striping_factor x "
        "10 zip(fsync, keep_file)), more than the limit of 10,000 per experiment "
        "(drop values, or raise the limit: IOLAB_MAX_CASES=10000000)")


def test_the_default_limit_is_exact(write_experiment, monkeypatch):
    monkeypatch.delenv("IOLAB_MAX_CASES", raising=False)
    assert MAX_CASES == 10_000
    assert len(expand(_sized(write_experiment, "at", 100, 100))) == 10_000
    with pytest.raises(IolabError, match=r"would make 10,100 cases \(100 segments x 101 iterations\)"):
        expand(_sized(write_experiment, "over", 100, 101))


def test_iolab_max_cases_raises_or_lowers_the_limit(write_experiment, monkeypatch):
    exp = _sized(write_experiment, "twelve", 3, 4)
    monkeypatch.setenv("IOLAB_MAX_CASES", "11")
    with pytest.raises(IolabError, match=r"12 cases .*limit of 11 .*IOLAB_MAX_CASES=12\)$"):
        expand(exp)
    monkeypatch.setenv("IOLAB_MAX_CASES", " 12 ")
    assert len(expand(exp)) == 12
    assert count_cases(exp) == 12


@pytest.mark.parametrize("value", ["x", "0", "-5", "1e6", "12.0"])
def test_a_bad_iolab_max_cases_is_an_error(write_experiment, monkeypatch, value):
    monkeypatch.setenv("IOLAB_MAX_CASES", value)
    with pytest.raises(IolabError, match=r"^IOLAB_MAX_CASES='.*': give a whole number of cases"):
        expand(_sized(write_experiment, "small", 2))


def test_the_limit_counts_every_part_and_says_exclude_comes_later(write_experiment, monkeypatch):
    monkeypatch.setenv("IOLAB_MAX_CASES", "20")
    path = write_experiment("two-parts", """
        id: two-parts
        description: x
        parts:
          a: {benchmark: ior, matrix: {segments: [1, 2, 3], iterations: [1, 2, 3, 4]},
              exclude: [{segments: 1}]}
          b: {benchmark: fio, matrix: {numjobs: [1, 2, 3], iodepth: [1, 2, 3]}}
          c: {benchmark: fio}
        """)
    with pytest.raises(IolabError) as info:
        expand(load_experiment(path))
    assert ("the matrix would make 22 cases before exclude (part a: 3 segments x 4 iterations; "
            "part b: 3 numjobs x 3 iodepth), more than the limit of 20") in str(info.value)
