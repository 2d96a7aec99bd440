"""Progressive file layouts (lfs setstripe -E ...): typed at load, checked before submission,
and compared component by component with what lfs getstripe shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from iolab.layers.storage import lustre
from iolab.errors import IolabError
from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand

DATA = Path(__file__).resolve().parents[1] / "data" / "lustre"
PFL = """\
id: pfl
description: a three-component layout
benchmark: ior
fixed:
  lustre.components:
    - {end: 4MiB, stripe_count: 1, stripe_size: 1MiB}
    - {end: 64m, stripe_count: 4, stripe_size: 1MiB}
    - {end: -1, stripe_count: -1, stripe_size: 4MiB}
"""


def load(tmp_path, text, name="pfl"):
    (tmp_path / "experiments").mkdir(exist_ok=True)
    path = tmp_path / "experiments" / f"{name}.yaml"
    path.write_text(text.replace("id: pfl", f"id: {name}"))
    return load_experiment(path)


def test_components_are_typed_once_and_become_setstripe_args(tmp_path):
    (case,) = expand(load(tmp_path, PFL))
    comps = case.params["lustre.components"]
    assert comps[0] == {"end": 4194304, "stripe_count": 1, "stripe_size": 1048576}
    assert comps[1]["end"] == 67108864 and comps[2]["end"] == -1
    args = lustre.setstripe_args(lustre.requested(case.params))
    assert args == ["lfs", "setstripe", "-E", "4M", "-c", "1", "-S", "1M", "-E", "64M", "-c", "4",
                    "-S", "1M", "-E", "-1", "-c", "-1", "-S", "4M"]


def test_bad_component_sizes_name_the_item(tmp_path):
    with pytest.raises(IolabError, match=r"pfl.yaml:7: fixed.lustre.components\[1\].end"):
        load(tmp_path, PFL.replace("end: 64m", "end: 64XB"))


@pytest.mark.parametrize("change,message", [
    ("end: -1, stripe_count: -1", "only the last one may be -1"),  # -1 kept, but order broken below
    ("stripe_size: 4MiB}", "multiple of 64 KiB"),
])
def test_checks_before_submission(change, message):
    comps = [{"end": 4 << 20, "stripe_count": 1}, {"end": -1, "stripe_count": -1},
             {"end": 64 << 20, "stripe_count": 4}]
    if "stripe_size" in change:
        comps = [{"end": -1, "stripe_size": 1000}]
    assert message in lustre.check_request({"components": comps}, None)


def test_components_exclude_a_plain_count():
    assert "not both" in lustre.check_request({"components": [{"end": -1}], "stripe_count": 2}, 8)


@pytest.mark.parametrize("sample", ["getstripe_pfl.txt", "getstripe_pfl_yaml.txt"])
def test_observed_components_match_or_differ(sample):
    (layout,) = lustre.parse_getstripe((DATA / sample).read_text())
    want = [{"end": 4 << 20, "stripe_count": 1, "stripe_size": 1 << 20},
            {"end": 64 << 20, "stripe_count": 4, "stripe_size": 1 << 20},
            {"end": -1, "stripe_count": -1, "stripe_size": 4 << 20}]
    assert lustre.compare_layout({"components": want}, [layout], None) == []
    wrong = [dict(want[0]), dict(want[1], stripe_count=8), dict(want[2])]
    (diff,) = lustre.compare_layout({"components": wrong}, [layout], None)
    assert diff["key"] == "components[1].stripe_count" and diff["observed"] == 4
    (short,) = lustre.compare_layout({"components": want[:2]}, [layout], None)
    assert short["key"] == "components" and (short["requested"], short["observed"]) == (2, 3)
