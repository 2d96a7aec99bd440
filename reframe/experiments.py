# iolab's loader: registers a ReFrame test for every experiments/*.yaml that the run can select
# (-n/-x, IOLAB_EXPERIMENTS; see iolab/rfm/select.py) and (re)writes the generated shims in
# reframe/generated/. Adding an experiment needs only its YAML.
import reframe  # noqa: F401  (marks this file as a ReFrame test file)

from iolab.rfm.register import register_all

register_all(__name__, __file__)
