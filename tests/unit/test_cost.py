"""What a plan costs: node-hours at the time limits and from earlier runs, peak scratch, budget."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from iolab.analysis import cost
from iolab.cli import main
from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand, jobs_per_case, varied_keys
from tests.golden.publish_data import REPO, experiment, make_run, records

RUN = "20261121T000000Z-aaaaaa"


def test_node_hours_at_the_limits_and_from_earlier_runs(tmp_path):
    exp = experiment("archer-fpp-vs-ssf")          # local: 1 node, 5m limit, 2 repetitions
    cases = expand(exp)
    spent = cost.plan_cost(cases, jobs_per_case(exp, cases))
    assert {c.job.time_limit for c in cases} == {"5m"} and exp.repetitions == 2
    limit_h = 300 / 3600
    assert spent.node_hours == pytest.approx(sum(c.nodes for c in cases) * limit_h * 2)
    assert spent.core_hours == pytest.approx(sum(c.num_tasks for c in cases) * limit_h * 2)
    assert spent.estimate is None and spent.peak_scratch > 0
    # an earlier run timed the first case at 36 s per repetition
    recs = records(exp, RUN, reps=1)
    first = recs[0]
    timing = {"benchmark_start": 1000.0, "benchmark_end": 1036.0}
    recs[0] = replace(first, provenance=replace(first.provenance,
                                                extra={**first.provenance.extra, "timing": timing}))
    path = make_run(tmp_path / "results", exp, RUN, recs)
    earlier = cost.durations([path], cases)
    assert earlier == {first.case_id: 36.0}
    spent = cost.plan_cost(cases, jobs_per_case(exp, cases), earlier)
    assert spent.measured_cases == 1
    assert abs(spent.estimate - (spent.node_hours - 2 * limit_h + 2 * 36 / 3600)) < 1e-9


def test_budget_refuses_and_names_what_to_trim(capsys):
    assert main(["plan", "archer-fpp-vs-ssf", "--profile", "full", "--budget", "10"]) == 2
    captured = capsys.readouterr()
    assert "node-hours: 12276.00 at the time limits" in captured.out
    assert "the plan needs 12276.00 node-hours at its time limits, over the budget of 10" in captured.err
    assert "scale.nodes: 10 values" in captured.err
    assert main(["plan", "archer-fpp-vs-ssf", "--profile", "full", "--budget", "20000"]) == 0


def test_a_budget_that_is_not_positive_is_refused(capsys):
    assert main(["plan", "quickstart", "--budget", "-1"]) == 2
    assert "--budget -1: give a positive number of node-hours" in capsys.readouterr().err


REFERENCED = """\
id: referenced
description: fio, two block sizes and two patterns, with a drift reference
benchmark: fio
repetitions: 2
fixed: {size: 256KiB}
matrix: {bs: [4KiB, 64KiB], rw: [write, randwrite]}
drift: {case: {bs: 64KiB, rw: write}, every: 3}
"""


def test_the_plan_counts_every_job_the_run_submits_with_the_reference_jobs_named(tmp_path, capsys):
    """`iolab plan` of an experiment with a drift reference: its jobs, bytes and node-hours are
    those of every job the run's order holds (the order the manifest's `planned` lists), the
    reference's extra jobs among them and named."""
    from iolab.experiment.load import load_experiment
    from iolab.experiment.matrix import producers, reference_cases
    from iolab.experiment.order import Order

    path = tmp_path / "referenced.yaml"
    path.write_text(REFERENCED)
    exp = load_experiment(path)
    cases = expand(exp)
    refs = tuple((p, cid, every) for p, (cid, every) in reference_cases(exp, cases).items())
    # the jobs a run submits: what RunSession.run_order derives (and the manifest's `planned`)
    ran = Order.new(exp.order, exp.repetitions, refs).jobs(cases, producers(cases))
    assert len(ran) == 4 * 2 + 4          # 8 jobs of the cases and 4 of the reference
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    by_id = {c.case_id: c for c in cases}
    nbytes = sum(cost.get_benchmark(by_id[cid].benchmark).bytes_written(by_id[cid])
                 for _p, cid, _rep in ran)
    assert f"cases: 4  jobs: {len(ran)}  bytes written: 3.0 MiB ({nbytes} B)" in out, out
    (ref,) = [cid for _p, cid, _every in refs]
    assert (f"drift reference: {ref} (bs=64KiB, rw=write) runs 4 more jobs (at the start, every 3 "
            "jobs and the end), repetitions 3 to 6") in out, out
    hours = sum(by_id[cid].nodes * 600 / 3600 for _p, cid, _rep in ran)    # the default 10m limit
    assert {c.job.time_limit for c in cases} == {"10m"}
    assert f"node-hours: {hours:.2f} at the time limits" in out, out



SCALED = """\
id: scaled
description: IOR on 1, 2 and 4 nodes
benchmark: ior
repetitions: 2
job: {time_limit: 10m}
scale: {tasks_per_node: 1}
fixed: {api: POSIX, transfer_size: 1MiB, block_size: 4MiB}
matrix: {scale.nodes: [1, 2, 4]}
"""


def test_the_plan_prices_both_modes(tmp_path, capsys):
    """Job mode: 6 jobs, each queued and charged its own nodes. Allocation mode: the largest node
    count (4) held for the six 10-minute limits and the allowance between steps, the nodes the
    1- and 2-node jobs leave idle said, and what to ask salloc/sbatch for."""
    path = tmp_path / "scaled.yaml"
    path.write_text(SCALED)
    cases = expand(load_experiment(path))
    assert sorted(c.nodes for c in cases) == [1, 2, 4]
    modes = cost.by_mode(cases, {c.case_id: 2 for c in cases})
    length = 6 * (600 + cost.BETWEEN_STEPS_S) + cost.END_RESERVE_S
    assert (modes.jobs, modes.nodes, modes.seconds) == (6, 4, length)
    assert modes.job_node_hours == pytest.approx((1 + 2 + 4) * 2 * 600 / 3600)
    assert modes.allocation_node_hours == pytest.approx(4 * length / 3600)
    assert modes.idle_node_hours == pytest.approx((3 + 2 + 0) * 2 * 600 / 3600)
    assert main(["plan", str(path), "--queue-wait", "20m", "--longest-allocation", "30m"]) == 0
    out = capsys.readouterr().out
    assert "  job mode: 6 jobs, each its own queue wait; 2.33 node-hours at the time limits\n" in out
    assert ("  allocation mode: 3 queue waits; 4 nodes held for 1:02:00 (the jobs' time limits, "
            f"{cost.BETWEEN_STEPS_S} s each between steps and {cost.END_RESERVE_S} s at the end): "
            "4.10 node-hours at the time limits\n") in out
    assert "    1.67 of them (41%) idle: the 4 nodes are held while jobs on fewer run\n" in out
    assert ("    longer than the longest allocation allowed (0:30:00): 3 allocations of --nodes 4 "
            "--time 0:30:00") in out
    assert "  waiting in the queue at 20 min a wait: job mode 2 h 00 min, allocation mode 1 h 00 min\n" in out
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "    ask for --nodes 4 --time 1:02:00\n" in out and "waiting in the queue" not in out
    assert main(["plan", str(path), "--queue-wait", "soon"]) == 2
    assert "--queue-wait soon: 'soon' is not a time limit" in capsys.readouterr().err


def test_the_allocation_s_length_from_earlier_runs():
    """An earlier duration replaces a case's limit in the allocation's estimated length; the
    others stay at their limits."""
    exp = experiment("archer-fpp-vs-ssf")
    cases = expand(exp)
    jobs = jobs_per_case(exp, cases)
    first = cases[0].case_id
    modes = cost.by_mode(cases, jobs, {first: 36.0})
    at_limits = sum((300 + cost.BETWEEN_STEPS_S) * jobs[c.case_id] for c in cases) + cost.END_RESERVE_S
    assert modes.estimated_seconds == at_limits - jobs[first] * (300 - 36)
    assert cost.by_mode(cases, jobs).estimated_seconds is None


def test_the_plan_keeps_the_reserve_the_allocation_s_clock_keeps():
    """The plan's allocation holds the last step's limit and the reserve the clock refuses to
    start a step without; they are one figure in two places (analysis/ does not import rfm/)."""
    from iolab.rfm import allocation

    assert cost.END_RESERVE_S == allocation.RESERVE


@pytest.mark.parametrize("seconds, text", [(1, "0:01:00"), (3600, "1:00:00"), (3661, "1:02:00"),
                                           (86400, "1-00:00:00"), (90061, "1-01:02:00")])
def test_slurm_time_rounds_up_to_a_minute(seconds, text):
    assert cost.slurm_time(seconds) == text


def test_suggested_repetitions_count_the_drift_reference_jobs(tmp_path, capsys, monkeypatch):
    """`iolab plan --suggest-reps` of an experiment with a drift reference: a run with the
    suggested repetitions submits the reference's jobs too (their number follows the run's jobs),
    and its node-hours count them; the reference's earlier jobs are not pooled as repetitions."""
    from iolab import stats
    from iolab.experiment.order import ROLE, reference_jobs
    from iolab.parsers import Metric
    from iolab.results.record import Provenance, Record

    monkeypatch.setenv("IOLAB_RESULTS", str(tmp_path / "results"))
    path = tmp_path / "referenced.yaml"
    path.write_text(REFERENCED)
    exp = load_experiment(path)
    cases = expand(exp)
    (ref,) = [c.case_id for c in cases if c.params["bs"] == 65536 and c.params["rw"] == "write"]
    noise = {0: [100.0, 104.0], 1: [100.0, 130.0], 2: [200.0, 201.0], 3: [50.0, 55.0]}
    recs = []
    for i, case in enumerate(cases):
        jobs = [(rep, v, None) for rep, v in enumerate(noise[i], 1)]
        if case.case_id == ref:     # two reference jobs far off the repetitions
            jobs += [(3, 400.0, ROLE), (4, 10.0, ROLE)]
        for rep, value, role in jobs:
            recs.append(Record(experiment=exp.id, case_id=case.case_id, benchmark="fio", status="ok",
                               repetition=rep, params=case.params, varied=["bs", "rw"],
                               metrics=[Metric("write_bw", value, "MiB/s", "fio-json")],
                               recorded="2026-11-21T00:00:00Z",
                               provenance=Provenance("reframe", "local:default",
                                                     {"role": role} if role else {})))
    make_run(tmp_path / "results", exp, RUN, recs)
    assert main(["plan", str(path), "--suggest-reps", "--target-ci", "5"]) == 0
    out = capsys.readouterr().out
    want = {c.case_id: stats.reps_needed(noise[i], 0.05) for i, c in enumerate(cases)}
    for cid, n in want.items():
        line = next(x for x in out.splitlines() if x.strip().startswith(cid) and "write_bw" in x)
        assert line.split()[3] == "2" and line.split()[-1] == str(n), line   # n: repetitions only
    total = sum(want.values())
    more = reference_jobs(total, 3)
    hours = (total + more) * 600 / 3600         # one node each, the default 10m limit
    assert (f"a run submits {total + more} jobs and costs {hours:.2f} node-hours at the time "
            "limits") in out, out
    assert (f"of them drift reference {ref}: {more} more jobs (at the start, every 3 jobs and the "
            "end), kept out of its repetitions") in out, out


def _advice(exp):
    cases = expand(exp)
    keys = varied_keys(cases)
    spent = cost.plan_cost(cases, jobs_per_case(exp, cases))
    return spent, cost.trim_suggestions(exp, cases, spent, keys)


@pytest.mark.parametrize("exp_id,profile", [
    (p.stem, prof) for p in sorted((REPO / "experiments").glob("*.yaml"))
    for prof in [None, *load_experiment(p).profiles]])
def test_budget_advice_adds_up(exp_id, profile):
    """For every shipped experiment and profile, each piece of trimming advice leaves a plan
    whose node-hours and the saving add up to the plan's, in numbers and in the words printed."""
    exp = load_experiment(REPO / "experiments" / f"{exp_id}.yaml", profile)
    spent, advice = _advice(exp)
    assert advice or len(expand(exp)) == 1 and exp.repetitions == 1
    total = round(spent.node_hours, 2)
    for a in advice:
        assert a.remaining + a.saved == pytest.approx(spent.node_hours, rel=1e-12, abs=1e-12), a.text
        assert 0 <= a.remaining <= spent.node_hours and a.saved >= 0, a.text
        left, saved = (float(x) for x in re.search(r"leaves ([\d.]+) node-hours \(saves ([\d.]+)\)",
                                                   a.text).groups())
        assert round(left + saved, 2) == total, a.text


def test_kaust_full_advice_is_about_its_own_part(capsys):
    """The advice that kept one value of `storage` (which only the small-file part varies) and
    so dropped every other part, claiming to save 883.25 of 883.50 node-hours."""
    assert main(["plan", "kaust-stripe-count", "--profile", "full", "--budget", "50"]) == 2
    err = capsys.readouterr().err
    assert "saves 883.25" not in err and "storage: 2 values" not in err, err
    assert "lustre.stripe_count" in err and "leaves" in err, err


def test_campaigns_md_shows_what_plan_prints_of_both_modes(capsys):
    """docs/campaigns.md's example of both modes is the plan's own output."""
    text = (REPO / "docs" / "campaigns.md").read_text()
    command = "iolab plan archer-fpp-vs-ssf --profile full --queue-wait 20m --longest-allocation 24h"
    block = text.split(command + "\n", 1)[1].split("```", 1)[0]
    shown = [line[len("#   "):] for line in block.splitlines()]
    assert len(shown) == 6
    assert main(command.split()[1:]) == 0
    printed = capsys.readouterr().out.splitlines()
    start = printed.index(shown[0])
    assert printed[start:start + len(shown)] == shown
