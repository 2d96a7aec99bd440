"""Budgeted search (search.py) over a real grid: the IOR grid measured on the local system
(tests/data/grids/ior-local), replayed job by job from its records; and the effective-setting
rule on records whose striping or hints were not what was asked for."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from iolab import stats
from iolab.campaigns.search import answer as AN
from iolab.campaigns.search import observations as OB
from iolab.campaigns.search import space as SP
from iolab.campaigns.search import strategies as ST
from iolab.present import search as PS
from iolab.errors import IolabError
from iolab.experiment.load import Search, default_initial, load_experiment
from iolab.experiment.matrix import expand
from iolab.parsers import Metric
from iolab.results.record import Observed, Record

GRID = Path(__file__).parents[1] / "data" / "grids" / "ior-local"


@pytest.fixture(scope="module")
def grid():
    cases = expand(load_experiment(GRID / "grid-ior-local.yaml"))
    records = [Record.from_json(json.loads(line)) for line in (GRID / "records.jsonl").open()]
    by_job = {(r.case_id, r.repetition): r for r in records}
    return SP.Space.of(cases), by_job


def replay(by_job):
    """`measure` for search.drive, the loop `iolab search` runs: the grid's recorded jobs, as if
    each round measured them now. A repetition beyond the 3 recorded (a re-measurement) replays
    them again in turn: repetition 4 is the record of repetition 1, as repetition 4."""
    def rerun(cid, rep):
        return replace(by_job[(cid, (rep - 1) % 3 + 1)], repetition=rep)

    return lambda jobs, records: records + [rerun(cid, rep) for _part, cid, rep in jobs]


def search(strategy="model", budget=10, repetitions=3, seed=1, initial=4):
    return Search("write_bw", "max", budget, strategy, repetitions, seed, initial)


def test_the_grid_as_axes(grid):
    space, by_job = grid
    assert len(space.cases) == 36 and len(by_job) == 108
    assert space.axes == ["api", "block_size", "collective", "file_per_process", "transfer_size"]
    assert space.ordered == {"api": False, "block_size": True, "collective": False,
                             "file_per_process": False, "transfer_size": True}
    assert space.values["transfer_size"] == [65536, 262144, 1048576, 4194304]
    assert all(space.case_for(space.setting(c)) is c for c in space.cases)
    assert space.case_for({**space.setting(space.cases[0]), "transfer_size": 3}) is None


@pytest.mark.parametrize("strategy", ["model", "bayes", "random", "halving"])
def test_budget_spent_exactly_once_per_case(grid, strategy):
    space, by_job = grid
    s = search(strategy, budget=10)
    records = ST.drive(s, space, replay(by_job))
    jobs = [r.job for r in records]
    assert len(jobs) == len(set(jobs)), "a job ran twice"
    state = OB.observe(space, records, "write_bw")
    if strategy in ("halving", "model", "bayes"):
        assert len(records) <= s.budget * s.repetitions
        assert len(state.spent) > s.budget      # more cases, fewer repetitions each
        full = [c for c, reps in state.spent.items() if reps == {1, 2, 3}]
        assert 1 <= len(full) < len(state.spent)
        if strategy != "halving":
            # every case begins with one repetition; the answer has all of them, and the cases
            # that overlap it get theirs and more (4, 5, ...: beyond the 3 asked for) to separate
            # them; the budget's end may cut one short
            assert all(reps == set(range(1, len(reps) + 1)) for reps in state.spent.values())
            assert sum(len(reps) == 2 for reps in state.spent.values()) <= 1
            assert len(state.best(True).values) >= 3
            assert len(records) >= s.budget * s.repetitions - 2
    else:
        assert len(state.spent) == s.budget and len(records) == s.budget * s.repetitions
    best = state.best(True)
    assert best.mean == max(p.mean for p in state.points)
    assert ST.propose(s, space, records) == []


def test_the_loop_stops_where_iolab_search_stops_it(grid):
    """drive is run_search's loop: `rounds` rounds at most, a dry run (None) ends it after the
    first round, a round without records is an error, and a spent budget is said once."""
    space, by_job = grid
    s = search("random", budget=6, seed=2)
    one = ST.drive(s, space, replay(by_job), batch=2, rounds=1)
    assert len({r.case_id for r in one}) == 2 and len(one) == 2 * s.repetitions
    two = ST.drive(s, space, replay(by_job), records=one, batch=2, rounds=1)
    assert two[:len(one)] == one and len(two) == 2 * len(one)
    asked = []
    assert ST.drive(s, space, lambda jobs, records: asked.append(jobs)) == [] and len(asked) == 1
    with pytest.raises(IolabError, match="gave no records"):
        ST.drive(s, space, lambda jobs, records: records)
    spent = []
    whole = ST.drive(s, space, replay(by_job), batch=2, on_spent=spent.append)
    assert spent == [whole] and len({r.case_id for r in whole}) == s.budget


@pytest.mark.parametrize("strategy", ["model", "bayes", "random", "halving"])
def test_same_seed_same_search_and_resumable(grid, strategy):
    space, by_job = grid
    s = search(strategy, budget=12, seed=5)
    whole = ST.drive(s, space, replay(by_job))
    assert [r.job for r in ST.drive(s, space, replay(by_job))] == [r.job for r in whole]
    # interrupted after a third of its records, resumed from them alone
    cut = whole[:len(whole) // 3]
    assert [r.job for r in ST.drive(s, space, replay(by_job), records=cut)] == [r.job for r in whole]
    other = ST.drive(replace(s, seed=6), space, replay(by_job))
    assert [r.job for r in other] != [r.job for r in whole]


@pytest.mark.parametrize("strategy", ["bayes", "model"])
def test_starts_at_random_then_follows_its_model(grid, strategy):
    space, by_job = grid
    got = ST.drive(search(strategy, budget=12, seed=3), space, replay(by_job))
    rand = ST.drive(search("random", budget=12, seed=3), space, replay(by_job))
    first = [r.case_id for r in got if r.repetition == 1]
    assert first[:4] == [r.case_id for r in rand if r.repetition == 1][:4]
    assert first[4:] != [r.case_id for r in rand if r.repetition == 1][4:]
    # the model hears that POSIX file per process writes fastest here (1.3 to 1.7 GiB/s against
    # 1 GiB/s for MPI-IO), a third of the grid: after its random start, nearly half its new
    # cases are POSIX, near all it can (12 of 36 cases are) in the 20-odd new cases its 36 jobs
    # buy (bayes: 61 of 131 over these seeds, model 64 of 134; random search: a third)
    posix = new = 0
    for seed in range(6):
        got = ST.drive(search(strategy, budget=12, seed=seed), space, replay(by_job))
        cases = [r.case_id for r in got if r.repetition == 1][4:]
        posix += sum(_api(space, cid) == "POSIX" for cid in cases)
        new += len(cases)
    assert posix >= 0.45 * new, (posix, new)


def test_the_main_effects_model_is_deterministic_and_explores():
    """With no value yet every case rates the same: the seed's order decides. Once an axis value
    is seen, the bonus sends the next case to values seen less."""
    space = SP.Space.of(expand(load_experiment(GRID / "grid-ior-local.yaml")))
    s = search("model", budget=36, initial=0, repetitions=1, seed=7)
    state = OB.observe(space, [], "write_bw")
    assert ST._main_effects(s, space, state, 3, set()) == ST.order(space, 7)[:3]
    first = ST.order(space, 7)[0]
    rec = Record("grid-ior-local", first.case_id, "ior", "ok", repetition=1,
                 params=dict(first.params), metrics=[Metric("write_bw", 500.0, "MiB/s", "t")])
    (nxt,) = ST._main_effects(s, space, OB.observe(space, [rec], "write_bw"), 1, set())

    def new_values(case):
        return sum(space.setting(case)[k] != space.setting(first)[k] for k in space.axes)

    # one value is no evidence of an effect: it goes where the most axis values are new
    assert new_values(nxt) == max(new_values(c) for c in space.cases) == 5 - 1


def _api(space, case_id):
    return space.setting(next(c for c in space.cases if c.case_id == case_id))["api"]


@pytest.mark.parametrize("strategy", ["model", "bayes"])
def test_batches_propose_distinct_cases(grid, strategy):
    space, by_job = grid
    records = ST.drive(search(strategy, budget=4, initial=4, repetitions=1), space, replay(by_job))
    jobs = ST.propose(search(strategy, budget=12, initial=4), space, records, n=5)
    cases = list(dict.fromkeys(cid for _, cid, _ in jobs))
    assert len(cases) == 5
    # the leader so far (one repetition) gets its other two; four new cases get one each
    best = OB.observe(space, records, "write_bw").best(True)
    assert jobs[:2] == [(best.case.part, best.case.case_id, 2), (best.case.part, best.case.case_id, 3)]
    assert sorted(rep for _, cid, rep in jobs[2:]) == [1, 1, 1, 1]
    assert not set(cases[1:]) & {r.case_id for r in records}


def test_halving_rungs_fit_the_budget():
    rungs = ST.rungs(search("halving", budget=10, repetitions=4), 36)
    assert [r for _, r in rungs] == [1, 2, 4]
    n = [n for n, _ in rungs]
    assert n == [n[0], -(-n[0] // 2), -(-n[0] // 4)]
    assert n[0] * 1 + n[1] * 1 + n[2] * 2 <= 40 < (n[0] + 1) + -(-(n[0] + 1) // 2) + 2 * -(-(n[0] + 1) // 4)
    assert ST.rungs(search("halving", budget=1000, repetitions=2), 36)[0][0] == 36


# --------------------------------------------------------------- what was applied counts

def _record(case, value, observed=None, rep=1, status="ok"):
    return Record(experiment="hints", case_id=case.case_id, benchmark="ior", status=status,
                  repetition=rep, params=dict(case.params),
                  metrics=[Metric("write_bw", value, "MiB/s", "test")] if status == "ok" else [],
                  observed=observed or Observed())


@pytest.fixture
def hints_space(write_experiment):
    exp = load_experiment(write_experiment("hints", """id: hints
description: aggregators and striping
benchmark: ior
fixed: {api: MPIIO, collective: true}
matrix:
  mpiio.cb_nodes: [1, 2, 4]
  lustre.stripe_count: [1, 4]
"""))
    return SP.Space.of(expand(exp))


def _case(space, **want):
    return next(c for c in space.cases
                if all(c.params[k.replace("__", ".")] == v for k, v in want.items()))


def test_lowered_hint_counts_as_the_setting_in_effect(hints_space):
    space = hints_space
    asked = _case(space, mpiio__cb_nodes=4, lustre__stripe_count=1)
    lowered = Observed.from_json(dict(
        mpiio_hints={"requested": {"cb_nodes": "4"}, "effective": {"cb_nodes": "2"}}))
    state = OB.observe(space, [_record(asked, 900.0, lowered)], "write_bw")
    (point,) = state.points
    assert point.case is _case(space, mpiio__cb_nodes=2, lustre__stripe_count=1)
    assert point.requested == [asked.case_id] and point.notes == [
        "mpiio.cb_nodes: requested 4, effective 2"]
    assert state.best(True) is point and set(state.spent) == {asked.case_id}


def test_striping_not_applied_is_off_the_grid_and_never_the_best(hints_space):
    space = hints_space
    striped = _case(space, mpiio__cb_nodes=1, lustre__stripe_count=4)
    plain = _case(space, mpiio__cb_nodes=2, lustre__stripe_count=1)
    off = Observed.from_json(dict(lustre={"requested": {"stripe_count": 4}, "applied": False,
                           "reason": "ext4: no striping"}))
    records = [_record(striped, 5000.0, off), _record(plain, 100.0),
               _record(plain, 0.0, rep=2, status="failed")]
    state = OB.observe(space, records, "write_bw")
    by_case = {p.case.case_id if p.case else None: p for p in state.points}
    assert by_case[None].setting["lustre.stripe_count"] == OB.NOT_APPLIED
    assert by_case[None].notes == ["lustre.stripe_count=4: striping not applied: ext4: no striping"]
    assert state.best(True) is by_case[plain.case_id] and by_case[plain.case_id].values == [100.0]
    assert state.spent == {striped.case_id: {1}, plain.case_id: {1, 2}}
    # the model hears of the spent case as a failure: the search goes on without it
    for strategy in ("model", "bayes"):
        s = Search("write_bw", "max", 6, strategy, 1, 0, 1)
        nxt = {cid for _, cid, _ in ST.propose(s, space, records, n=2)}
        assert len(nxt) == 2 and not nxt & {striped.case_id, plain.case_id}


# -------------------------------------------------------------------------- search-report

RUN_ID = "20261123T190316Z-dd7f42"


def _file_run(results, records, search_yaml=None):
    """The measured grid run filed under `results`, with these records, and `search:` added to
    the experiment as run."""
    manifest = json.loads((GRID / "manifest.json").read_text())
    if search_yaml:
        manifest["experiment_yaml"] += search_yaml
    # a search's rounds plan the repetitions they run, those beyond the grid's 3 too
    planned = {(j["part"], j["case_id"], j["repetition"]) for j in manifest["planned"]}
    manifest["planned"] += [{**manifest["planned"][0], "case_id": r.case_id,
                             "repetition": r.repetition} for r in records
                            if (r.part, r.case_id, r.repetition) not in planned]
    run = results / "grid-ior-local" / RUN_ID
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / "records.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in records))
    return run


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_RESULTS", str(tmp_path / "results"))
    return tmp_path / "results"


def test_search_report_of_a_search(grid, results, capsys):
    from iolab.cli import main

    space, by_job = grid
    s = search("model", budget=9, seed=2, initial=3)
    records = ST.drive(s, space, replay(by_job))
    _file_run(results, records, "search: {objective: write_bw, budget: 9, seed: 2, initial: 3}\n")
    assert main(["search-report", "grid-ior-local"]) == 0
    out = capsys.readouterr().out
    a = AN.answer(s, space, records)
    best, second = a.best, a.runner_up
    cases = len({r.case_id for r in records})
    assert 9 < cases < 27 and len(records) == 27
    assert f"grid-ior-local run {RUN_ID}\nsearch: model, max write_bw, budget 9 x 3 " \
           f"repetitions = 27 jobs, seed 2\ncases run: {cases} of the grid's 36 (27 jobs; the " \
           "grid: 108)\n" in out
    from iolab import stats

    m = stats.summarize(best.values)
    assert (f"best found: api=POSIX, block_size={best.setting['block_size'] // 2**20}MiB, "
            in out) and f"write_bw {m.mean:.4g} MiB/s ± {m.ci_half_width:.4g}" in out
    assert f"write_bw {stats.summarize(second.values).mean:.4g} MiB/s" in out.split("runner-up: ")[1]
    assert best.mean > second.mean >= max(p.mean for p in a.ranked[2:])


def test_search_report_of_the_whole_grid(grid, results, capsys):
    from iolab.cli import main

    _space, by_job = grid
    _file_run(results, list(by_job.values()))
    assert main(["search-report", "grid-ior-local"]) == 2
    assert "has no search: section (give --objective METRIC" in capsys.readouterr().err
    assert main(["search-report", "grid-ior-local", "--objective", "write_bw"]) == 0
    out = capsys.readouterr().out
    assert "search: none (the run asked for the grid); max write_bw\n" in out
    assert "cases run: 36 of the grid's 36 (108 jobs; the grid: 108)" in out
    assert ("best found: api=POSIX, block_size=64MiB, collective=false, file_per_process=true, "
            "transfer_size=256KiB\n    write_bw 1703 MiB/s ± 110 (95% CI 1593 to 1813), n=3") in out
    assert ("runner-up: api=POSIX, block_size=16MiB, collective=false, file_per_process=true, "
            "transfer_size=256KiB\n    write_bw 1516 MiB/s") in out
    assert "best vs runner-up: distinguishable (Welch p=0.0339 < 0.05)" in out
    # the main-effects model puts the optimum elsewhere, and says it was run and what it gave
    assert "model's optimum (each axis's main effect, fitted to the cases run): " in out
    assert "(run: 1516 MiB/s)" in out
    assert main(["search-report", "grid-ior-local", "--objective", "write_bww"]) == 1
    assert "no case of the grid gave a value of write_bww: nothing found" in capsys.readouterr().out
    assert main(["search-report", "grid-ior-local", "--objective", "write_bw_stddev"]) == 2
    assert "not better higher or lower" in capsys.readouterr().err


def test_report_says_when_two_best_cannot_be_told_apart(hints_space):
    space = hints_space
    a, b = _case(space, mpiio__cb_nodes=1, lustre__stripe_count=1), _case(space, mpiio__cb_nodes=2,
                                                                          lustre__stripe_count=1)
    records = [_record(a, v, rep=i) for i, v in enumerate([100, 140, 120], 1)]
    records += [_record(b, v, rep=i) for i, v in enumerate([110, 130, 125], 1)]
    s = Search("write_bw", "max", 4, "random", 3, 0, 1)
    text = PS.render_answer(AN.answer(s, space, records), space)
    assert "best vs runner-up: NOT distinguishable (Welch p=" in text
    assert "model's optimum" not in text        # two cases: too few for the model
    one = PS.render_answer(AN.answer(s, space, records[:1] + records[3:4]), space)
    assert "n too small for Welch's test" in one and "(n too small for an interval)" in one


def test_report_names_the_cases_that_overlap_the_best_with_their_intervals(hints_space):
    space = hints_space
    a, b, c = (_case(space, mpiio__cb_nodes=n, lustre__stripe_count=1) for n in (1, 2, 4))
    records = [_record(a, v, rep=i) for i, v in enumerate([100, 140, 120], 1)]
    records += [_record(b, v, rep=i) for i, v in enumerate([105, 125, 115], 1)]
    records += [_record(c, v, rep=i) for i, v in enumerate([20, 22, 21], 1)]
    s = Search("write_bw", "max", 4, "random", 3, 0, 1)
    found = AN.answer(s, space, records)
    assert [p.case for p in found.indistinguishable] == [b]        # c is far below: separated
    text = PS.render_answer(found, space)
    lo, hi = stats.summarize([100, 140, 120]).ci
    assert (f"statistically indistinguishable from the best (1: their 95% intervals overlap the "
            f"best's, {lo:.4g} to {hi:.4g}; more repetitions of them may tell them apart):\n"
            "    lustre.stripe_count=1, mpiio.cb_nodes=2: 95% CI ") in text
    alone = AN.answer(s, space, records[:3] + records[6:])
    assert alone.indistinguishable == []
    assert "the best is separated: no other case's 95% interval reaches its own" in \
        PS.render_answer(alone, space)
    # one value has no interval: it is taken as noisy as the best
    near = AN.answer(s, space, records[:3] + records[3:4])
    assert [p.case for p in near.indistinguishable] == [b]
    assert "n=1: one value, taken as noisy as the best" in PS.render_answer(near, space)
    assert AN.agree(found, AN.answer(s, space, records[3:6] + records[6:] + records[:3]))
    # neither ran the other's best, and two cases are too few for a model to rule it out
    other = AN.answer(s, space, records[3:])
    assert not AN.same(alone, other) and AN.agree(alone, other)
    # each ran the other's best and separated it below its own: a contradiction
    low_a, low_b = ([_record(x, v, rep=i) for i, v in enumerate([20, 22, 21], 1)] for x in (a, b))
    x, y = AN.answer(s, space, records[:3] + low_b), AN.answer(s, space, records[3:6] + low_a)
    assert not AN.agree(x, y) and not AN.agree(y, x)
    assert AN.agree(x, AN.answer(s, space, records[3:6] + records[6:]))     # that one never ran a


def test_before_answering_the_cases_that_overlap_the_best_are_measured_again(grid):
    """A model search re-measures the cases whose intervals overlap the best's (repetitions
    beyond the 3 asked for) until none overlaps or the budget is spent."""
    space, by_job = grid
    again = 0
    for seed in range(6):
        s = search("model", budget=18, seed=seed, initial=6)
        records = ST.drive(s, space, replay(by_job))
        found = AN.answer(s, space, records)
        assert len(records) == s.budget * s.repetitions or found.indistinguishable == []
        more = {r.case_id for r in records if r.repetition > s.repetitions}
        assert more <= {p.case.case_id for p in found.ranked[:1] + found.indistinguishable} | {
            r.case_id for r in records if r.repetition > s.repetitions}
        again += bool(more)
        # what is re-measured is the best or a case that overlapped it when it was proposed
        for k, r in enumerate(records):
            if r.repetition > s.repetitions:
                then = AN.answer(s, space, records[:k])
                assert r.case_id in {p.case.case_id for p in then.ranked[:1]
                                     + then.indistinguishable}
    assert again >= 3


def _deal(grid_dir: Path, seed: int):
    """`measure` replaying a measured grid with its noise: each job of a case is the next of the
    case's recorded repetitions, dealt in an order drawn from the seed and dealt again once all
    are used (so a case's first 3 values are its 3 measured ones, and no value twice in them)."""
    import random

    records = grid_records(grid_dir)
    recorded: dict[str, list] = {}
    for r in records:
        recorded.setdefault(r.case_id, []).append(r)
    rng, decks = random.Random(f"{grid_dir.name}/{seed}"), {}

    def run(cid, rep):
        if not decks.get(cid):
            decks[cid] = list(recorded[cid])
            rng.shuffle(decks[cid])
        return replace(decks[cid].pop(), repetition=rep)

    return lambda jobs, done: done + [run(cid, rep) for _part, cid, rep in jobs]


@pytest.mark.parametrize("name", sorted(p.name for p in GRID.parent.iterdir() if p.is_dir()))
def test_two_seeds_agree_or_report_their_answers_indistinguishable(name):
    """On each measured grid, with the noise of its measured repetitions: every pair of 10
    seeded searches (the default strategy, a budget of half the grid, 3 repetitions) gives the
    same answer, or answers that one of the two reports calls indistinguishable from its best."""
    root = GRID.parent / name
    (yaml,) = root.glob("grid-*.yaml")
    space = SP.Space.of(expand(load_experiment(yaml)))
    budget = len(space.cases) // 2
    answers = []
    for seed in range(10):
        s = Search("write_bw", "max", budget, "model", 3, seed, default_initial(budget))
        answers.append(AN.answer(s, space, ST.drive(s, space, _deal(root, seed))))
    apart = [(i, j) for i in range(len(answers)) for j in range(i + 1, len(answers))
             if not AN.agree(answers[i], answers[j])]
    assert apart == [], [(answers[i].best.setting, answers[j].best.setting) for i, j in apart]


def _bench_search():
    """scripts/bench-search as a module: its replay of the published tables (one value per cell,
    times 1 + e with a 10% CV) is the one the stability figures come from."""
    import importlib.util
    from importlib.machinery import SourceFileLoader

    path = Path(__file__).parents[2] / "scripts" / "bench-search"
    loader = SourceFileLoader("bench_search", str(path))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


@pytest.mark.parametrize("table", [("csc-btio-mahti", "write_bw"),
                                   ("cp2k-aggregators", "net_write_bw")])
def test_two_seeds_of_a_small_published_grid_give_answers_the_reports_cover(table):
    """The small published tables (8 and 9 cells, as many as the model has effects), where two
    seeds with a budget of 4 cases disagreed on the best in about 40% of pairs. With a budget of
    3 (9 jobs: too few to run every case once and confirm the best) seeds still disagree, and
    each answer is one that the other's report leaves possibly the best: indistinguishable from
    its best (a case it ran), or not measured and not ruled out (a case it did not run). With 4
    (12 jobs) the search runs every case once first (search.sweeps) and leaves none open."""
    bench = _bench_search()
    g = bench.published_grid(table[0], None, table[1], True, 0.10)
    space = SP.Space.of(g.cases)
    answers = [bench.searched(g, space, seed, 3, 3) for seed in range(8)]
    differ = 0
    for i, a in enumerate(answers):
        for b in answers[i + 1:]:
            assert AN.agree(a, b)
            if AN.same(a, b):
                continue
            differ += 1
            x, y = a.best.case.case_id, b.best.case.case_id
            for one, its in ((a, y), (b, x)):
                ran = {p.case.case_id for p in one.ranked}
                unrun = {u.case.case_id for u in one.not_ruled_out}
                assert not ran & unrun      # never a case both measured and not measured
                if AN.covers(one, its):      # the other's answer: among the cases it names
                    assert (its in unrun) != (its in {p.case.case_id
                                                      for p in one.indistinguishable})
    assert differ > 0       # the seeds do disagree on the best: the reports must cover it
    for seed in range(4):
        s = Search(g.objective, "max", 4, "model", 3, seed, default_initial(4))
        assert ST.sweeps(s, space) and not ST.sweeps(replace(s, budget=3), space)
        found = bench.searched(g, space, seed, 4, 3)
        assert found.cases_run == len(space.cases) and found.not_run == 0
        assert found.not_ruled_out == [] and len(found.best.values) >= 3


def test_a_search_never_claims_a_case_it_did_not_run_was_measured(hints_space):
    """The cases not run are named as not run (with their prediction), never among the cases
    run; a case the model predicts well below the best is ruled out, one that may reach it is
    not, and with the model fitting the cases run exactly nothing can be ruled out."""
    space = hints_space
    cases = {(n, k): _case(space, mpiio__cb_nodes=n, lustre__stripe_count=k)
             for n in (1, 2, 4) for k in (1, 4)}

    def runs(effect_k4, skip):
        out = []
        for (n, k), c in cases.items():
            if (n, k) == skip:
                continue
            base = {1: 100.0, 2: 200.0, 4: 300.0}[n] + (effect_k4 if k == 4 else 0.0)
            out += [_record(c, base + d + (1.0 if (n, k) == (2, 1) else 0.0), rep=i)
                    for i, d in enumerate((-2.0, 0.0, 2.0), 1)]
        return out

    s = Search("write_bw", "max", 6, "random", 3, 0, 1)
    # 5 cases of 6 run (one residual degree of freedom); the one not run is cb_nodes=1,
    # stripe 4: predicted about 100 + 50, far below the best (cb_nodes=4, stripe 4: about 350)
    low = AN.answer(s, space, runs(50.0, (1, 4)))
    assert low.best.case is cases[(4, 4)] and low.not_run == 1 and low.not_ruled_out == []
    text = PS.render_answer(low, space)
    assert "the 1 case(s) not run are ruled out by the model" in text
    # the one not run is cb_nodes=4, stripe 4: predicted about 350, above the best run (300)
    high = AN.answer(s, space, runs(50.0, (4, 4)))
    (u,) = high.not_ruled_out
    assert u.case is cases[(4, 4)] and u.interval[0] < 350 < u.interval[1]
    assert u.case.case_id not in {p.case.case_id for p in high.ranked}
    text = PS.render_answer(high, space)
    assert ("not measured; could be as good (1 of the 1 case(s) not run" in text
            and "lustre.stripe_count=4, mpiio.cb_nodes=4: not run, predicted 349.5 (95% "
            "prediction interval " in text)
    assert AN.covers(high, u.case.case_id)
    # 3 cases run fit the model exactly (4 parameters' worth): nothing is ruled out
    few = AN.answer(s, space, [r for r in runs(50.0, None) if r.case_id in
                              {cases[(1, 1)].case_id, cases[(2, 1)].case_id, cases[(2, 4)].case_id}])
    assert few.not_run == 3 and {u.case.case_id for u in few.not_ruled_out} == {
        c.case_id for c in cases.values()} - {p.case.case_id for p in few.ranked}
    assert all(u.interval is None and u.why for u in few.not_ruled_out)
    assert "not run, not predicted: " in PS.render_answer(few, space)
    # stripe 4 measured in one value only: its effect rests on it, the cases with it stay open
    once = AN.answer(s, space, [r for r in runs(50.0, None) if r.params["lustre.stripe_count"] == 1
                               or (r.case_id == cases[(2, 4)].case_id and r.repetition == 1)])
    assert {u.case.case_id: u.reason() for u in once.not_ruled_out} == {
        cases[(n, 4)].case_id: "one value only was measured with lustre.stripe_count=4"
        for n in (1, 4)}


def test_an_interrupted_case_is_finished_before_anything_new(grid):
    space, by_job = grid
    s = search("random", budget=6, seed=4)
    whole = ST.drive(s, space, replay(by_job))
    # the fourth case's round was cut after its first repetition; its second was aborted
    cut = whole[:10]
    aborted = replace(whole[10], status="aborted", metrics=[])
    jobs = ST.propose(s, space, cut + [aborted])
    assert jobs == [whole[10].job, whole[11].job]
    assert [r.job for r in ST.drive(s, space, replay(by_job), records=cut)] == [r.job for r in whole]


@pytest.mark.parametrize("strategy", ["model", "bayes"])
def test_an_interrupted_confirmation_is_finished_first(grid, strategy):
    """A leader's confirmation (its repetitions 2 and 3) cut after the second, the third aborted:
    the third runs next, whatever the second did to the ranking."""
    space, by_job = grid
    s = search(strategy, budget=8, seed=4)
    whole = ST.drive(s, space, replay(by_job))
    at = next(i for i, r in enumerate(whole) if r.repetition == 2)
    assert whole[at + 1].job == (whole[at].part, whole[at].case_id, 3)
    cut = whole[:at + 1]
    aborted = replace(whole[at + 1], status="aborted", metrics=[])
    assert ST.propose(s, space, cut + [aborted]) == [whole[at + 1].job]
    assert [r.job for r in ST.drive(s, space, replay(by_job), records=cut)] == [r.job for r in whole]


def test_search_refuses_what_it_cannot_do(write_experiment, capsys):
    from iolab.cli import main

    plain = write_experiment("plain", "id: plain\ndescription: x\nbenchmark: ior\n")
    assert main(["search", str(plain), "--dry-run"]) == 2
    assert "plain has no search: section" in capsys.readouterr().err
    assert main(["search", str(plain), "--batch", "0"]) == 2
    assert "give 1 or more" in capsys.readouterr().err


def test_real_lowered_aggregators_count_as_the_setting_in_effect():
    """ROMIO on one node lowered cb_nodes 2 and 4 to 1 in every run of the measured ROMIO grid:
    its 27 cases are 9 settings in effect, all at cb_nodes 1."""
    root = GRID.parent / "romio-local"
    space = SP.Space.of(expand(load_experiment(root / "grid-romio-local.yaml")))
    records = [Record.from_json(json.loads(line)) for line in (root / "records.jsonl").open()]
    assert len(space.cases) == 27 and len(records) == 81
    state = OB.observe(space, records, "write_bw")
    assert len(state.spent) == 27 and len(state.points) == 9
    assert {p.case.params["mpiio.cb_nodes"] for p in state.points} == {1}
    assert all(len(p.values) == 9 and len(p.requested) == 3 for p in state.points)
    lowered = [n for p in state.points for n in p.notes]
    assert sorted(set(lowered)) == ["mpiio.cb_nodes: requested 2, effective 1",
                                    "mpiio.cb_nodes: requested 4, effective 1"]


# ------------------------------------------------------------------ progress, and the page

def test_progress_is_the_order_the_jobs_ran_with_the_best_so_far(hints_space):
    space = hints_space
    a = _case(space, mpiio__cb_nodes=1, lustre__stripe_count=1)
    b = _case(space, mpiio__cb_nodes=4, lustre__stripe_count=1)
    striped = _case(space, mpiio__cb_nodes=2, lustre__stripe_count=4)
    lowered = Observed.from_json(dict(
        mpiio_hints={"requested": {"cb_nodes": "4"}, "effective": {"cb_nodes": "2"}}))
    off = Observed.from_json(dict(
        lustre={"requested": {"stripe_count": 4}, "applied": False, "reason": "ext4"}))
    r1 = [replace(_record(a, 100.0), run_id="R1", recorded="2026-11-23T10:00:02Z"),
          replace(_record(a, 120.0, rep=2), run_id="R1", recorded="2026-11-23T10:00:01Z")]
    r2 = [replace(_record(b, 150.0, lowered), run_id="R2", recorded="2026-11-23T09:00:00Z"),
          replace(_record(striped, 900.0, off), run_id="R2", recorded="2026-11-23T11:00:00Z"),
          replace(_record(b, 0.0, rep=2, status="failed"), run_id="R2",
                  recorded="2026-11-23T11:00:01Z"),
          replace(_record(b, 0.0, rep=3, status="aborted"), run_id="R2")]
    s = Search("write_bw", "max", 4, "bayes", 2, 0, 1)
    # written out of order: the rounds come first, then the time each record was written
    steps = OB.search_progress(s, space, r2 + r1, ["R1", "R2"])
    assert [(st.index, st.round, st.value) for st in steps] == [
        (1, 1, 120.0), (2, 1, 100.0), (3, 2, 150.0), (4, 2, 900.0), (5, 2, None)]
    assert [st.on_grid for st in steps] == [True, True, True, False, False]
    assert [st.lowered for st in steps] == [False, False, True, False, False]
    # the best mean on the grid: a's mean, then the lowered job's (the case in effect); the
    # job whose striping was not applied is never the best
    assert [st.best for st in steps] == [120.0, 110.0, 150.0, 150.0, 150.0]


def _svg_markers(svg: str, gid: str) -> int:
    import re

    group = re.search(rf'<g id="{gid}">(.*?)</g>\s*</g>', svg, re.S)
    return 0 if group is None else group.group(1).count("<use ")


def test_progress_plot_draws_every_job(hints_space, tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib.image

    from iolab.present import progress as plots

    space = hints_space
    a = _case(space, mpiio__cb_nodes=1, lustre__stripe_count=1)
    striped = _case(space, mpiio__cb_nodes=2, lustre__stripe_count=4)
    off = Observed.from_json(dict(
        lustre={"requested": {"stripe_count": 4}, "applied": False, "reason": "ext4"}))
    records = [_record(a, 100.0), _record(a, 130.0, rep=2), _record(striped, 900.0, off),
               _record(striped, 0.0, rep=2, status="failed")]
    s = Search("write_bw", "max", 4, "bayes", 2, 0, 1)
    steps = OB.search_progress(s, space, records)
    plot = plots.search_progress_plot(steps, "write_bw", " MiB/s", True, tmp_path, "x-")
    assert plot.files["png"] == tmp_path / "x-search-progress.png"
    image = matplotlib.image.imread(plot.files["png"])
    assert image.shape[0] > 200 and image.shape[1] > 300
    svg = plot.files["svg"].read_text()
    assert _svg_markers(svg, plots.SEARCH_GIDS["on_grid"]) == 2
    assert _svg_markers(svg, plots.SEARCH_GIDS["off_grid"]) == 1
    assert _svg_markers(svg, plots.SEARCH_GIDS["no_value"]) == 1
    assert _svg_markers(svg, plots.SEARCH_GIDS["lowered"]) == 0
    assert "1 job(s) whose striping was not applied" in "; ".join(plot.notes)
    assert _svg_markers(svg, plots.SEARCH_GIDS["again"]) == 0
    assert f'id="{plots.SEARCH_GIDS["best_ci"]}"' in svg        # the best's interval, from 2 values
    assert plot.xlabel.startswith("Jobs spent")
    assert plots.search_progress_plot([], "write_bw", "", True, tmp_path) is None


def test_progress_plot_rings_the_jobs_that_separate_the_best(grid, tmp_path):
    pytest.importorskip("matplotlib")
    from iolab.present import progress as plots

    space, by_job = grid
    s = search("model", budget=18, seed=1, initial=6)
    records = ST.drive(s, space, replay(by_job))
    steps = OB.search_progress(s, space, records)
    again = [st for st in steps if st.again]
    assert again and all(st.record.repetition > 3 for st in again)
    assert [st.index for st in steps] == list(range(1, len(records) + 1))
    plot = plots.search_progress_plot(steps, "write_bw", " MiB/s", True, tmp_path)
    svg = plot.files["svg"].read_text()
    assert _svg_markers(svg, plots.SEARCH_GIDS["again"]) == len(again)
    assert f"{len(again)} job(s) measured a case again" in "; ".join(plot.notes)
    last = steps[-1]
    assert last.best == OB.observe(space, records, "write_bw").best(True).mean
    assert last.best_ci == stats.summarize(OB.observe(space, records, "write_bw").best(True).values).ci


def _file_search(results, root, records_by_round, yaml_extra):
    """A search of a measured grid filed as `iolab search` files one: its first round, then
    continuations naming their parent."""
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["experiment_yaml"] += yaml_extra
    ids = []
    for i, recs in enumerate(records_by_round, 1):
        rid = f"20261123T2{i:05d}Z-search"
        chain = {"parent": ids[-1], "chain_root": ids[0]} if ids else {}
        run = results / manifest["experiment"] / rid
        run.mkdir(parents=True)
        planned = [{"case_id": r.case_id, "part": r.part, "repetition": r.repetition,
                     "system": manifest["system"]} for r in recs]
        finished = {**manifest["finished"], "counts": {"ok": len(recs)}, "planned": len(recs)}
        (run / "manifest.json").write_text(json.dumps(
            {**manifest, "run_id": rid, "search_round": i, "search_jobs": len(recs), **chain,
             "planned": planned, "finished": finished}))
        (run / "records.jsonl").write_text("".join(
            json.dumps(replace(r, run_id=rid).to_json()) + "\n" for r in recs))
        ids.append(rid)
    return ids


def test_publish_of_a_search_shows_its_answer_and_progress(results, tmp_path, capsys):
    """The ROMIO grid, where ROMIO lowered 2 and 4 aggregators to 1: a search of it published
    has a Search section with the answer and the plot of every job; the grid run has none."""
    pytest.importorskip("matplotlib")
    import matplotlib.image

    from iolab.present import progress as plots
    from iolab.cli import main

    root = GRID.parent / "romio-local"
    space = SP.Space.of(expand(load_experiment(root / "grid-romio-local.yaml")))
    by_job = {(r.case_id, r.repetition): r for r in
              (Record.from_json(json.loads(line)) for line in (root / "records.jsonl").open())}
    s = Search("write_bw", "max", 6, "bayes", 3, 2, 2)
    records = ST.drive(s, space, replay(by_job), batch=3)
    ids = _file_search(results, root, [records[:9], records[9:]],
                       "search: {objective: write_bw, budget: 6, repetitions: 3, seed: 2, initial: 2}\n")
    out = tmp_path / "page"
    assert main(["publish", "grid-romio-local", "--out", str(out)]) == 0
    page = (out / "index.html").read_text()
    assert '<li><a href="#search-1">Search</a></li>' in page
    import html

    text, _ = PS.report_run(_chain(results, ids[-1]))
    shown = html.unescape(page.split('<pre class="search-answer">')[1].split("</pre>")[0])
    assert "best found: " in text and shown == text
    # which cases the search could not tell from the best, or that none is left
    found = AN.answer(s, space, records)
    assert ("statistically indistinguishable from the best (" in shown) == bool(found.indistinguishable)
    assert ("the best is separated" in shown) == (not found.indistinguishable)
    assert "(the rounds of iolab search)" in page and "run incomplete" not in page
    assert '<img src="plots/search-progress.png"' in page
    assert "18 jobs in 2 rounds" in page
    assert matplotlib.image.imread(out / "plots" / "search-progress.png").shape[1] > 300
    svg = (out / "plots" / "search-progress.svg").read_text()
    lowered = sum(r.params["mpiio.cb_nodes"] != 1 for r in records)
    assert lowered and _svg_markers(svg, plots.SEARCH_GIDS["lowered"]) == lowered
    assert _svg_markers(svg, plots.SEARCH_GIDS["on_grid"]) == len(records) - lowered
    assert "dotted lines: the 2 rounds" in page
    md = (out / "report.md").read_text()
    assert "### Search\n" in md and "![" in md and "(plots/search-progress.png)" in md

    # the whole grid, run as a plain run of the same experiment: no search section
    grid_results = tmp_path / "grid-results"
    recorded = next(iter(by_job.values())).run_id             # the run its records name
    run = grid_results / "grid-romio-local" / recorded
    run.parent.mkdir(parents=True)
    import shutil

    shutil.copytree(root, run)
    capsys.readouterr()
    from iolab.present.publish import publish

    done = publish("grid-romio-local", tmp_path / "grid-page", results=grid_results)
    page = (done.out / "index.html").read_text()
    assert 'id="search-' not in page and "search-progress" not in page
    assert "### Search" not in (done.out / "report.md").read_text()


def _chain(results, run_id):
    from iolab.results.combine import load_chain

    return load_chain(results / "grid-romio-local" / run_id)


def grid_records(path: Path) -> list[Record]:
    """A measured grid's records: records.jsonl, or kept compressed (records.jsonl.gz)."""
    import gzip

    plain = path / "records.jsonl"
    with (plain.open() if plain.exists() else gzip.open(path / "records.jsonl.gz", "rt")) as lines:
        return [Record.from_json(json.loads(line)) for line in lines]


@pytest.mark.parametrize("name", sorted(p.name for p in GRID.parent.iterdir() if p.is_dir()))
def test_each_measured_grid_is_whole(name):
    """Every case of the grid's experiment with every repetition, once, as the run's manifest
    planned it; and no path of the machine that measured it."""
    root = GRID.parent / name
    (yaml,) = root.glob("grid-*.yaml")
    exp = load_experiment(yaml)
    records = grid_records(root)
    manifest = json.loads((root / "manifest.json").read_text())
    assert manifest["experiment_yaml"] == yaml.read_text()
    want = sorted((c.case_id, rep) for c in expand(exp) for rep in range(1, exp.repetitions + 1))
    assert sorted((r.case_id, r.repetition) for r in records) == want
    assert all(r.ok and r.value("write_bw") for r in records)
    assert manifest["finished"]["complete"] and manifest["finished"]["planned"] == len(want)
    text = json.dumps([r.to_json() for r in records]) + json.dumps(manifest)
    for machine in ("/work/", "/tmp/", "iolab-stack"):
        assert machine not in text


def test_objective_must_be_reported_by_every_case_as_its_parameters_say(write_experiment):
    from iolab.errors import IolabError

    ior = """\
        id: {id}
        description: x
        benchmark: ior
        matrix:
          transfer_size: [1MiB, 2MiB]
        fixed: {{block_size: 4MiB, read: {read}}}
        search: {{objective: {objective}, budget: 2}}
        """
    # IOR writes and reads by default: read_bw is reported (checked where the cases are expanded)
    ok = load_experiment(write_experiment("rd", ior.format(id="rd", read="true", objective="read_bw")))
    assert ok.search.objective == "read_bw" and len(expand(ok)) == 2
    # known once the cases are: when they are expanded (validate, plan, search, ReFrame's loader)
    write_only = load_experiment(write_experiment("wo", ior.format(id="wo", read="false",
                                                                   objective="read_bw")))
    with pytest.raises(IolabError) as err:
        expand(write_only)
    assert err.value.key == "search.objective" and err.value.line == 7
    assert err.value.message.startswith(
        "'read_bw' is not reported by any case searched: 2 of 2 ior cases (transfer_size=1MiB, …) "
        "report only write_bw, write_bw_max, write_bw_min, write_bw_stddev, write_ops,")
    # a name the patterns allow (*_bw*) but IOR never reports
    with pytest.raises(IolabError, match="'frobnicate_bw' is not reported by any case searched"):
        expand(load_experiment(write_experiment("fr", ior.format(id="fr", read="true",
                                                                 objective="frobnicate_bw"))))


def test_every_metric_a_case_reports_is_one_its_parsers_yield():
    """reported() names exactly what the real recorded outputs gave (tests/data/grids)."""
    from iolab.benchmarks import get as get_benchmark

    records = [Record.from_json(json.loads(line)) for line in (GRID / "records.jsonl").open()]
    cases = {c.case_id: c for c in expand(load_experiment(GRID / "grid-ior-local.yaml"))}
    for rec in records[:20]:
        if rec.ok:
            want = get_benchmark("ior").reported(cases[rec.case_id].params)
            assert sorted(want) == sorted(m.name for m in rec.metrics)


def _damaged(record: Record, value: float) -> Record:
    return replace(record, metrics=[replace(m, value=value) if m.name == "write_bw" else m
                                    for m in record.metrics])


def test_a_value_set_aside_is_in_no_round_answer_or_progress_and_is_named(grid, tmp_path):
    """The replayed IOR grid, the first job of the search written 1e308 MiB/s (on purpose):
    as the table sets it aside (stats.LIMIT), the rounds, the answer and the progress plot take
    no mean from it and each names it."""
    space, by_job = grid
    s = search("model", budget=9, seed=2, initial=3)
    first = []

    def measure(jobs, records):
        got = replay(by_job)(jobs, [])
        if not first:
            first.append(got[0])
            got[0] = _damaged(got[0], 1e308)
        return records + got

    records = ST.drive(s, space, measure)
    victim = first[0]
    (damaged,) = [r for r in records if r.job == victim.job]
    assert damaged.value("write_bw") == 1e308
    assert OB.round_line([damaged], "write_bw") == (
        f"1 of 1 ok; write_bw: 1 value set aside (1e+308: above 1e+150), in no mean: "
        f"{victim.case_id} rep {victim.repetition}")
    a = AN.answer(s, space, records)
    assert a.best.mean < 1e4 and all(p.mean < 1e4 for p in a.ranked)
    assert a.set_aside == [(victim.case_id, victim.repetition, 1e308)]
    assert f"in no figure above: {victim.case_id} rep {victim.repetition}" in PS.render_answer(a, space)
    steps = OB.search_progress(s, space, records)
    (aside,) = [st for st in steps if st.set_aside is not None]
    assert aside.record.job == victim.job and aside.value is None and aside.set_aside == 1e308
    assert all(st.best is None or st.best < 1e4 for st in steps)
    pytest.importorskip("matplotlib")
    from iolab.present import progress as plots

    plot = plots.search_progress_plot(steps, "write_bw", " MiB/s", True, tmp_path)
    svg = plot.files["svg"].read_text()
    assert _svg_markers(svg, plots.SEARCH_GIDS["set_aside"]) == 1
    assert _svg_markers(svg, plots.SEARCH_GIDS["no_value"]) == 0
    assert (f"write_bw: 1 value set aside (1e+308: above 1e+150), marked on the x axis: job "
            f"{aside.index} ({victim.case_id} rep {victim.repetition})") in plot.notes
