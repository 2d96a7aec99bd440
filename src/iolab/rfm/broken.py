"""The test that stands for an experiment that could not be loaded."""

from __future__ import annotations

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_after, run_before, sanity_function, variable
from reframe.core.exceptions import ReframeError

from . import internals


class BrokenExperiment(rfm.RunOnlyRegressionTest):
    """Stands for an experiment that could not be loaded (register.py names a subclass after it):
    it fails at setup with the reason, on any system, so the run cannot end as PASSED."""

    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    executable = "true"
    iolab_error = variable(str, value="")

    @run_after("init")
    def _iolab_describe(self):
        self.descr = f"cannot run: {self.iolab_error}"

    @run_before("setup")
    def _iolab_refuse(self):
        raise ReframeError(f"iolab: {self.iolab_error}")

    @sanity_function
    def _iolab_never(self):
        return sn.assert_true(False, msg=f"iolab: {self.iolab_error}")


# As in base.py: no deprecated `variables` alias, whose every read walks the call stack.
internals.drop_variables_alias(BrokenExperiment)
