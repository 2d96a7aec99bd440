"""The jobs' run order (experiment/order.py): blocks by repetition shuffled from a seed, or the
matrix's order; a read after its write; re-derived from what a manifest records."""

from __future__ import annotations

import collections
import json
import re

import pytest

from iolab.errors import IolabError
from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand, producers
from iolab.experiment.order import BLOCKS, MATRIX, Order


def _experiment(write_experiment, name="grid", extra=""):
    return load_experiment(write_experiment(name, f"""id: {name}
description: order test
benchmark: fio
repetitions: 3
matrix: {{bs: [4k, 64k, 1m], numjobs: [1, 2, 4]}}
{extra}"""))


def test_blocks_run_repetition_k_of_every_case_before_k_plus_1(write_experiment):
    exp = _experiment(write_experiment)
    cases = expand(exp)
    jobs = Order.new(exp.order, exp.repetitions).jobs(cases)
    assert exp.order == BLOCKS
    assert len(jobs) == 27 and len(set(jobs)) == 27
    reps = [rep for _p, _c, rep in jobs]
    assert reps == sorted(reps)                                   # block 1, then 2, then 3
    ids = {c.case_id for c in cases}
    for k in (1, 2, 3):
        assert {cid for _p, cid, rep in jobs if rep == k} == ids   # each block every case once


def test_a_seed_gives_one_order_and_other_seeds_others(write_experiment):
    cases = expand(_experiment(write_experiment))
    a = Order(BLOCKS, 12345, 3).jobs(cases)
    assert Order(BLOCKS, 12345, 3).jobs(cases) == a
    others = {tuple(Order(BLOCKS, seed, 3).jobs(cases)) for seed in range(20)}
    assert len(others) == 20                                      # 9!^3 orders: no seed repeats one
    # shuffled within blocks: not the matrix's order, and not the same order in every block
    block = [[cid for _p, cid, rep in a if rep == k] for k in (1, 2, 3)]
    assert block[0] != [c.case_id for c in cases] and len({tuple(b) for b in block}) > 1


def test_the_order_of_a_seed_does_not_change_between_versions(write_experiment):
    """A manifest's seed must give the same order in every later iolab and Python: the shuffle
    uses only Random.random(), whose sequence Python keeps for a seed. Pinned for seed 7 over
    ids a..e (a change of algorithm would make recorded orders unreproducible)."""
    case = collections.namedtuple("case", "case_id part")
    cases = [case(x, "main") for x in "abcde"]
    got = ["".join(cid for _p, cid, rep in Order(BLOCKS, 7, 2).jobs(cases) if rep == k) for k in (1, 2)]
    assert got == ["cdeab", "edabc"]


def test_order_matrix_keeps_the_matrix_order(write_experiment):
    exp = _experiment(write_experiment, "plain", "order: matrix\n")
    assert exp.order == MATRIX
    cases = expand(exp)
    order = Order.new(exp.order, exp.repetitions)
    assert order.seed is None
    assert order.jobs(cases) == [(c.part, c.case_id, rep) for c in cases for rep in (1, 2, 3)]


def test_an_unknown_order_is_refused_where_it_is_written(write_experiment):
    with pytest.raises(IolabError) as info:
        _experiment(write_experiment, "typo", "order: random\n")
    assert "typo.yaml:6: order:" in str(info.value) and "blocks, matrix" in str(info.value)


def test_a_read_runs_after_its_write_in_each_block(write_experiment):
    exp = load_experiment(write_experiment("rw", """id: rw
description: order test
benchmark: h5bench
repetitions: 4
matrix: {kernel: [write, read], dim_1: [1048576, 2097152, 4194304]}
"""))
    cases = expand(exp)
    producer = producers(cases)
    assert len(producer) == 3
    moved = 0
    for seed in range(30):
        order = Order(BLOCKS, seed, 4)
        jobs = [(cid, rep) for _p, cid, rep in order.jobs(cases, producer)]
        for reader, writer in producer.items():
            for rep in range(1, 5):
                assert jobs.index((writer, rep)) < jobs.index((reader, rep))
        # the shuffle alone would put some reads first: they were moved, not the whole order fixed
        shuffled = [(cid, rep) for _p, cid, rep in order.jobs(cases)]
        moved += shuffled != jobs
    assert moved > 0


def test_a_read_of_node_local_data_is_refused(write_experiment):
    """The layer that places the data says another job cannot read it (registry.private_data)."""
    text = """id: nl
description: a read in another job than its write, on each node's own disk
benchmark: h5bench
fixed: {storage: node_local}
matrix: {kernel: [write, read], dim_1: [1048576]}
"""
    exp = load_experiment(write_experiment("nl", text))
    with pytest.raises(IolabError) as info:
        expand(exp)
    assert re.fullmatch(r"case [0-9a-f]+ \(h5bench read\) cannot read node-local data: another "
                        "job wrote it, possibly on another node", info.value.message), info.value
    assert info.value.file == str(exp.path)
    scratch = load_experiment(write_experiment("sc", text.replace("node_local", "scratch")
                                               .replace("id: nl", "id: sc")))
    assert len(producers(expand(scratch))) == 1


def test_the_order_is_re_derived_from_what_a_manifest_records(write_experiment):
    cases = expand(_experiment(write_experiment))
    order = Order.new(BLOCKS, 3)
    recorded = order.as_dict()
    assert set(recorded) == {"by", "seed", "repetitions"} and isinstance(recorded["seed"], int)
    assert Order.from_dict(recorded).jobs(cases) == order.jobs(cases)
    # more blocks (a search round asking for more repetitions) leave the first ones as they were
    assert Order.from_dict(recorded).jobs(cases, repetitions=4)[:27] == order.jobs(cases)


@pytest.mark.parametrize("data", [None, {}, {"by": "random"}, {"by": "blocks"},
                                  {"by": "blocks", "seed": "7"}, {"by": "matrix", "repetitions": 0}])
def test_what_is_not_an_order_is_refused(data):
    with pytest.raises(ValueError):
        Order.from_dict(data)


def test_an_exec_order_of_reframe_is_answered_not_ignored():
    from iolab.rfm.runorder import exec_order_note

    assert exec_order_note(["reframe", "-r", "-n", "quickstart"]) is None
    for argv in (["reframe", "-r", "--exec-order", "name"], ["reframe", "-r", "--exec-order=random"]):
        note = exec_order_note(argv)
        assert note.startswith("iolab: --exec-order does not reorder iolab's cases")
        assert "order: matrix" in note


def test_a_drift_reference_runs_first_after_every_n_jobs_and_last(write_experiment):
    exp = _experiment(write_experiment, "referenced", "drift: {case: {bs: 64k, numjobs: 2}, every: 10}\n")
    cases = expand(exp)
    (ref,) = [c.case_id for c in cases if c.params["bs"] == 65536 and c.params["numjobs"] == 2]
    order = Order.new(exp.order, exp.repetitions, [("main", ref, 10)])
    jobs = order.jobs(cases)
    at = [i for i, (_p, cid, rep) in enumerate(jobs) if cid == ref and rep > 3]
    # 27 jobs of the cases: a reference before the 1st, the 11th, the 21st, and after the 27th
    assert at == [0, 11, 22, 30] and len(jobs) == 31
    assert [jobs[i][2] for i in at] == [4, 5, 6, 7]
    assert [j for j in jobs if j[2] <= 3] == Order(order.by, order.seed, 3).jobs(cases)
    assert {order.role(*jobs[i]) for i in at} == {"drift-reference"}
    assert {order.role(*j) for j in jobs if j[2] <= 3} == {None}
    again = Order.from_dict(json.loads(json.dumps(order.as_dict())))
    assert again == order and again.jobs(cases) == jobs
    assert "drift reference" in order.describe()
    with pytest.raises(ValueError, match="reference"):
        Order.from_dict({**order.as_dict(), "reference": [["main", ref, 0]]})


def test_a_drift_reference_with_a_search_is_refused_where_it_is_written(write_experiment):
    """A search picks cases and repetitions round by round: a reference's extra jobs would count
    as repetitions of the case it names, so the two are refused together, at drift:'s line."""
    with pytest.raises(IolabError) as info:
        _experiment(write_experiment, "searched", "drift: {case: {bs: 64k, numjobs: 2}, every: 10}\n"
                    "search: {objective: write_bw, budget: 4}\n")
    assert "searched.yaml:6: drift: a drift reference and search: do not combine" in str(info.value)
