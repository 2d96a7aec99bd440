"""What iolab needs from ReFrame that ReFrame's public API does not offer, in one place.

Everything else in rfm/ uses ReFrame's documented API (reframe.core.builtins, make_test,
simple_test, reframe.core.exceptions, the test's pipeline attributes). Each use below says why it
has no public alternative; tests/unit/test_rfm_internals.py checks, for each one, that the
installed ReFrame still has it in the shape used here, so a ReFrame release that changes it fails
that test, not a user's run. The supported ReFrame range is in pyproject.toml.
"""

from __future__ import annotations

from collections.abc import Callable


def wrap_runall(make_wrapper: Callable[[Callable], Callable]) -> None:
    """Replace Runner.runall(self, testcases, *args) with make_wrapper(original).

    Why: ReFrame has no session hooks. Pipeline hooks are per test, and only Runner.runall knows,
    before the first job starts, every test case (reframe.frontend.executors.TestCase: .check,
    .partition, .environ, .deps) it will run, and sees how the session ends (KeyboardInterrupt,
    ForceExitError on SIGTERM, FailureLimitError, RunSessionTimeout), which iolab must record.
    The runner starts the cases in the order of that list, which is how iolab's run order
    (runorder.py) becomes ReFrame's.
    """
    from reframe.frontend.executors import Runner

    Runner.runall = make_wrapper(Runner.runall)


def is_dry_run(runner) -> bool:
    """Whether this Runner runs `reframe --dry-run`.

    Why: the test's is_dry_run() exists only once a test is set up; the session must know before
    any is (a dry run plans no run directory). ReFrame sets policy.dry_run_mode from --dry-run.
    """
    return bool(getattr(runner.policy, "dry_run_mode", False))


def drop_variables_alias(cls: type) -> None:
    """Remove ReFrame's deprecated `variables` alias of env_vars from a test class.

    Why: ReFrame reads the alias for every test it instantiates, and each read walks the whole
    call stack (inspect.stack) for a deprecation warning that ReFrame then suppresses: most of the
    time `reframe -l` spends on a thousand cases. iolab never uses the alias (plan.py sets
    env_vars), so its cases do not carry it. ReFrame offers no way to drop a variable from a
    class; its variable space (_rfm_var_space.vars, a dict) is where a class's variables live.
    """
    cls._rfm_var_space.vars.pop("variables", None)


def rewrite_name_filters(rewrite: Callable[[str], str]) -> None:
    """Pass each -n/-x pattern through rewrite() before ReFrame's name filters see it.

    Why: ReFrame names a test after its class, with '_' where an experiment id has '-'; -n and -x
    are matched by reframe.frontend.filters.have_any_name(names) / have_not_name(pattern), which
    the command line builds after the tests load, and which no option or hook can change.
    Installed once per process; later calls replace only rewrite.
    """
    from reframe.frontend import filters

    if not hasattr(filters, "_iolab_rewrite"):
        any_name, not_name = filters.have_any_name, filters.have_not_name
        filters.have_any_name = lambda names: any_name([filters._iolab_rewrite(n) for n in names])
        filters.have_not_name = lambda patt: not_name(filters._iolab_rewrite(patt))
    filters._iolab_rewrite = rewrite


def config_files() -> list[str]:
    """The configuration files ReFrame loaded (`-C a.py:b.py`), in order, with '<builtin>'.

    Why: a run records its configuration files (recording.py); ReFrame's runtime exposes them only
    as site_config.sources, which is not in the documented API.
    """
    from reframe.core.runtime import runtime

    return list(runtime().site_config.sources)
