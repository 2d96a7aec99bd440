"""What iolab uses of ReFrame beyond its public API (iolab.rfm.internals), checked against the
installed ReFrame: each test fails when a ReFrame release changes what iolab relies on. CI runs
this file on the oldest and the newest supported ReFrame (README, "Test")."""

from __future__ import annotations

import ast
import inspect
import re
import signal
from pathlib import Path

import reframe
import reframe.core.exceptions as rfm_exceptions
from reframe.core.config import load_config
from reframe.core.runtime import RuntimeContext
from reframe.frontend import cli, filters
from reframe.frontend.executors import ExecutionPolicy, Runner
from reframe.frontend.executors import TestCase as RfmTestCase

from iolab.rfm import internals, session
from iolab.rfm.base import IolabTest
from iolab.rfm.broken import BrokenExperiment

REPO = Path(__file__).resolve().parents[2]


def _supported_range() -> tuple[tuple[int, ...], tuple[int, ...]]:
    text = (REPO / "pyproject.toml").read_text()
    low, high = re.search(r'"reframe-hpc>=([\d.]+),<([\d.]+)"', text).groups()
    return tuple(map(int, low.split("."))), tuple(map(int, high.split(".")))


def test_the_installed_reframe_is_in_the_supported_range():
    low, high = _supported_range()
    version = tuple(int(p) for p in re.match(r"[\d.]+", reframe.VERSION)[0].rstrip(".").split("."))
    assert low <= version < high, f"ReFrame {reframe.VERSION} is outside >={low},<{high}"


# wrap_runall -------------------------------------------------------------------------------------

def test_runner_runall_takes_the_test_cases_first():
    # read from the source: ReFrame's timing decorator hides the signature
    assert re.search(r"def runall\(self, testcases\b", inspect.getsource(Runner)), \
        "Runner.runall(self, testcases, ...) changed: internals.wrap_runall must follow"


def test_a_test_case_has_what_the_session_reads():
    for attr in ("check", "partition", "environ", "deps"):
        assert isinstance(inspect.getattr_static(RfmTestCase, attr), property), attr


def test_the_runner_starts_the_cases_in_the_order_of_its_list():
    """rfm/runorder.py hands runall the cases in the run's order: ReFrame's runner must start
    them in the order of that list (tests/integration/test_run_order.py sees it happen)."""
    assert re.search(r"for t in testcases:\s*\n\s*self\._policy\.runcase\(t\)",
                     inspect.getsource(Runner._runall)), \
        "Runner._runall no longer starts the cases in the order of its list: runorder.arrange must follow"


def test_wrap_runall_puts_the_wrapper_on_runner(monkeypatch):
    original = Runner.runall
    monkeypatch.setattr(Runner, "runall", original)     # restored after the test
    seen = []

    def make(orig):
        seen.append(orig)
        return lambda runner, testcases, *a, **k: ("wrapped", orig)

    internals.wrap_runall(make)
    assert seen == [original]
    assert Runner.runall(None, []) == ("wrapped", original)


# is_dry_run --------------------------------------------------------------------------------------

def test_the_policy_starts_with_dry_run_mode_off():
    # a policy needs ReFrame's runtime to be made: read its constructor
    assert re.search(r"self\.dry_run_mode\s*=\s*False", inspect.getsource(ExecutionPolicy.__init__))


def test_is_dry_run_reads_the_runners_policy():
    class Policy:
        dry_run_mode = True

    runner = Runner.__new__(Runner)
    runner._policy = Policy()
    assert isinstance(inspect.getattr_static(Runner, "policy"), property)
    assert internals.is_dry_run(runner) is True
    Policy.dry_run_mode = False
    assert internals.is_dry_run(runner) is False


def test_the_command_line_sets_dry_run_mode_from_dry_run():
    assert re.search(r"\.dry_run_mode\s*=\s*options\.dry_run\b", inspect.getsource(cli)), \
        "reframe --dry-run no longer sets the policy's dry_run_mode: internals.is_dry_run misses it"


# drop_variables_alias ----------------------------------------------------------------------------

def test_reframe_tests_still_carry_the_variables_alias_in_their_variable_space():
    space = reframe.RunOnlyRegressionTest._rfm_var_space
    assert isinstance(space.vars, dict) and "env_vars" in space.vars
    assert "variables" in space.vars, \
        "ReFrame dropped the `variables` alias: internals.drop_variables_alias can go"


def test_iolab_test_classes_have_no_variables_alias():
    for cls in (IolabTest, BrokenExperiment):
        assert "variables" not in cls._rfm_var_space.vars and "env_vars" in cls._rfm_var_space.vars
    # a subclass made as register.py makes them inherits the dropped alias
    sub = reframe.core.meta.make_test("internals_probe", (IolabTest,), {})
    assert "variables" not in sub._rfm_var_space.vars


# rewrite_name_filters ----------------------------------------------------------------------------

def test_the_name_filters_take_what_iolab_rewrites():
    assert list(inspect.signature(filters.have_any_name).parameters) == ["names"]
    assert list(inspect.signature(filters.have_not_name).parameters) == ["patt"]
    assert re.search(r"filters\.have_any_name\(", inspect.getsource(cli))
    assert re.search(r"filters\.have_not_name\(", inspect.getsource(cli))


def test_rewrite_name_filters_rewrites_each_pattern(monkeypatch):
    calls = []
    monkeypatch.setattr(filters, "have_any_name", lambda names: calls.append(("any", names)))
    monkeypatch.setattr(filters, "have_not_name", lambda patt: calls.append(("not", patt)))
    monkeypatch.setattr(filters, "_iolab_rewrite", None, raising=False)
    monkeypatch.delattr(filters, "_iolab_rewrite")
    internals.rewrite_name_filters(str.upper)
    internals.rewrite_name_filters(lambda p: p.replace("-", "_"))     # the later rewrite holds
    filters.have_any_name(["a-b", "c"])
    filters.have_not_name("x-y")
    assert calls == [("any", ["a_b", "c"]), ("not", "x_y")]


# config_files ------------------------------------------------------------------------------------

def test_the_site_config_lists_its_files_in_sources():
    config = REPO / "reframe" / "config" / "local.py"
    site = load_config(str(config))
    assert str(config) in list(site.sources)
    assert isinstance(inspect.getattr_static(RuntimeContext, "site_config"), property)


# exceptions --------------------------------------------------------------------------------------

def test_the_exceptions_iolab_records_are_reframe_errors():
    for name in ("ForceExitError", "FailureLimitError", "RunSessionTimeout"):
        assert issubclass(getattr(rfm_exceptions, name), rfm_exceptions.ReframeError), name


def test_reframe_names_the_signal_it_stops_on():
    from reframe.frontend import executors

    raised = re.search(r"ForceExitError\(f?'([^']*)'\)", inspect.getsource(executors))
    assert raised, "ReFrame no longer raises ForceExitError on a signal where iolab looks"
    text = raised[1].replace("{signum}", str(int(signal.SIGTERM)))
    assert session._reason(rfm_exceptions.ForceExitError(text)) == "interrupted by SIGTERM"


def test_the_session_names_each_way_a_run_stops():
    reason = session._reason
    assert reason(rfm_exceptions.ForceExitError("received signal 2")) == "interrupted by SIGINT"
    assert reason(rfm_exceptions.ForceExitError("received TERM signal")) == "interrupted by SIGTERM"
    assert reason(rfm_exceptions.FailureLimitError("5 failures")) == "ReFrame stopped the run: 5 failures"
    assert reason(rfm_exceptions.RunSessionTimeout("maximum session duration exceeded")) == \
        "ReFrame stopped the run: maximum session duration exceeded"
    assert reason(KeyboardInterrupt()) == "interrupted by SIGINT"
    assert reason(ValueError("x")) == "the run stopped: ValueError: x"


# only internals.py reaches past the public API ---------------------------------------------------

PRIVATE = re.compile(r"\._rfm_|reframe\.frontend|site_config\.sources|dry_run_mode|"
                     r"__name__\s*==\s*['\"]\w+(Error|Timeout)['\"]")


def test_only_internals_reaches_past_reframes_public_api():
    offenders = []
    for path in sorted((REPO / "src" / "iolab").rglob("*.py")):
        if path.name == "internals.py" and path.parent.name == "rfm":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            text = None
            if isinstance(node, ast.Attribute | ast.ImportFrom | ast.Import | ast.Compare):
                text = ast.unparse(node)
            if text and PRIVATE.search(text):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}: {text}")
    assert not offenders, offenders
