"""What a plan costs: node-hours at the time limits and from earlier runs, peak scratch, budget."""

from __future__ import annotations

from dataclasses import replace

import pytest

from iolab.analysis import cost
from iolab.cli import main
from iolab.experiment.matrix import expand
from tests.golden.publish_data import experiment, make_run, records

RUN = "20261121T000000Z-aaaaaa"


def test_node_hours_at_the_limits_and_from_earlier_runs(tmp_path):
    exp = experiment("archer-fpp-vs-ssf")          # local: 1 node, 5m limit, 2 repetitions
    cases = expand(exp)
    spent = cost.plan_cost(cases, exp.repetitions)
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
    spent = cost.plan_cost(cases, exp.repetitions, earlier)
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
