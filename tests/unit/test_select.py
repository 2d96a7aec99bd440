"""Which experiments a ReFrame process builds tests for (rfm/select.py), and the log level of the
shipped configs (rfm/systems.py). End to end through ReFrame: tests/integration/test_run_safety.py."""

from __future__ import annotations

import pytest

from iolab.rfm.select import excluded, from_command_line, named, reframe_names
from iolab.rfm.systems import log_level

KNOWN = {"quickstart", "quickstart-full", "archer-fpp-vs-ssf", "cp2k-aggregators", "scale-1k"}
RFM = "/opt/io/venv/bin/reframe"


def chosen(*args, env=None, argv0=RFM):
    return from_command_line([argv0, "-C", "c.py", "-c", "reframe/", "-R", *args], env or {}, KNOWN)


def wanted(*args, env=None):
    sel = chosen(*args, env=env)
    return sorted(e for e in KNOWN if sel.wants(e))


def test_every_form_of_name_and_exclude_is_read():
    assert reframe_names(["-n", "a", "--name", "b", "--name=c", "-nd", "-x", "e", "--exclude=f", "-xg"]) \
        == (["a", "b", "c", "d"], ["e", "f", "g"])
    assert reframe_names(["-C", "x.py", "-r"]) == ([], [])


@pytest.mark.parametrize("args", [["--na", "quickstart"], ["--exc=quickstart"], ["-Rn", "quickstart"],
                                  ["-rx", "quickstart"]])
def test_a_form_not_read_here_loads_everything(args):
    assert reframe_names(args) is None
    assert wanted(*args) == sorted(KNOWN)


def test_names_that_plainly_name_experiments_select_them():
    assert wanted("-n", "^quickstart\\b") == ["quickstart", "quickstart-full"]   # a superset is safe
    assert wanted("-n", "cp2k") == ["cp2k-aggregators"]
    assert wanted("-n", "scale_1k") == ["scale-1k"]
    assert wanted("-n", "archer", "-n", "cp2k") == ["archer-fpp-vs-ssf", "cp2k-aggregators"]
    assert wanted("-n", "quickstart_full@3") == ["quickstart-full"]
    assert wanted("-n", "^cp2k_aggregators%case=0123abcd") == ["cp2k-aggregators"]


@pytest.mark.parametrize("pattern", ["quick.*", "case=0123", "0123abcd", "repetition=2", "rep", "/9e62f93e",
                                     "nosuch", "nosuch@1", "quickstart|nosuch(", "ase"])
def test_any_other_name_loads_everything_and_reframe_decides(pattern):
    """A regular expression, a part of the case id or repetition, a hash, or a name that matches no
    experiment: every experiment is loaded, so that ReFrame's own filter (and iolab's refusal of a
    run of nothing) decides, never a selection made here."""
    assert named(pattern, KNOWN) in (None, set())
    assert wanted("-n", pattern) == sorted(KNOWN)
    assert wanted("-n", "cp2k", "-n", pattern) == sorted(KNOWN)


def test_exclude_drops_only_experiments_whose_every_test_it_excludes():
    assert wanted("-x", "quickstart") == ["archer-fpp-vs-ssf", "cp2k-aggregators", "scale-1k"]
    assert wanted("-x", "^quickstart\\b") == ["archer-fpp-vs-ssf", "cp2k-aggregators", "quickstart-full",
                                               "scale-1k"]
    assert wanted("-n", "quickstart", "-x", "full") == ["quickstart"]
    for pattern in ("quickstart%case=01", "quick.*", "^quickstart$", "quickstart@1"):
        assert excluded(pattern, KNOWN) == set()


def test_iolab_experiments_chooses_and_names_the_unknown():
    sel = chosen(env={"IOLAB_EXPERIMENTS": "quickstart, scale-1k nosuch"})
    assert sorted(sel.wanted) == ["quickstart", "scale-1k"] and sel.unknown == ("nosuch",)
    assert wanted("-n", "quickstart", env={"IOLAB_EXPERIMENTS": "quickstart,scale-1k"}) == ["quickstart"]
    assert wanted("-n", "cp2k", env={"IOLAB_EXPERIMENTS": "quickstart"}) == []   # ReFrame: nothing to run


def test_outside_reframe_the_command_line_is_not_read():
    assert from_command_line(["pytest", "-n", "cp2k"], {}, KNOWN).wanted is None
    module = from_command_line(["/x/reframe/__main__.py", "-n", "cp2k"], {}, KNOWN)
    assert module.wanted == {"cp2k-aggregators"}


def test_the_log_file_is_at_info_unless_debug_is_asked_for():
    assert log_level([], {}) == "info"
    assert log_level(["-r", "-n", "verbose"], {}) == "info"
    for argv in (["-v"], ["-vv", "-r"], ["--verbose"]):
        assert log_level(argv, {}) == "debug"
    assert log_level([], {"RFM_VERBOSE": "1"}) == "debug"
    assert log_level([], {"RFM_VERBOSE": "0"}) == "info"
    assert log_level(["-v"], {"IOLAB_RFM_LOG": "info"}) == "info"
    assert log_level([], {"IOLAB_RFM_LOG": "DEBUG"}) == "debug"
    with pytest.raises(Exception, match="IOLAB_RFM_LOG='loud': give one of info, verbose, debug, debug2"):
        log_level([], {"IOLAB_RFM_LOG": "loud"})


def test_a_log_level_reframe_cannot_use_is_one_line_not_a_traceback():
    import os
    import shutil
    import subprocess
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    reframe = shutil.which("reframe") or pytest.skip("no reframe on PATH")
    out = subprocess.run([reframe, "-C", "reframe/config/local.py", "-l"], cwd=repo, capture_output=True,
                         text=True, timeout=300, env={**os.environ, "IOLAB_RFM_LOG": "loud"})
    assert out.returncode != 0
    assert "Traceback" not in out.stdout + out.stderr
    assert ("failed to load configuration: IOLAB_RFM_LOG='loud': give one of info, verbose, debug, "
            "debug2") in out.stdout + out.stderr


def test_an_id_written_with_hyphens_names_its_experiment():
    from iolab.rfm.select import as_written

    assert wanted("-n", "cp2k-aggregators") == ["cp2k-aggregators"]
    assert wanted("-n", "^cp2k-aggregators\\b") == ["cp2k-aggregators"]
    assert wanted("-n", "quickstart-full@1") == ["quickstart-full"]
    assert wanted("--name=scale-1k", "-n", "archer-fpp-vs-ssf") == ["archer-fpp-vs-ssf", "scale-1k"]
    assert wanted("-x", "quickstart-full") == ["archer-fpp-vs-ssf", "cp2k-aggregators", "quickstart",
                                               "scale-1k"]
    # the longer id first; what is not an id stays as written (ReFrame decides)
    known = {"a-b", "a-b-c"}
    assert as_written("^a-b-c\\b|a-b", known) == "^a_b_c\\b|a_b"
    assert as_written("a-bc", known) == "a_bc" and as_written("x-y", known) == "x-y"
    assert wanted("-n", "cp2k-aggr") == sorted(KNOWN)
