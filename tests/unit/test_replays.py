"""The test stand-ins (tests/bin) replay only real recordings with exactly their key
(tests/data/replay, filed by tests/tools/record_replays.py), and a replay is never a measurement."""

from __future__ import annotations

from iolab import echo, failure
from iolab.rfm.session import describe_flags


def test_the_replay_line_is_read_back_and_flagged():
    assert echo.replayed("", "x\nIOLAB-STANDIN: replaying tests/data/replay/ior/abc\n") == \
        "tests/data/replay/ior/abc"
    assert echo.replayed("Writing output to ior-summary.json\n", "") is None
    assert echo.replayed(None, " IOLAB-STANDIN: not at the start of its line") is None
    flags = describe_flags({"replayed": "tests/data/replay/ior/abc", "lustre": {"fs_type": "ext4"}})
    assert flags == ["replayed by a test stand-in: not a measurement (tests/data/replay/ior/abc)"]
    assert describe_flags({"lustre": {"fs_type": "ext4"}}) == []


def test_a_standins_refusal_is_the_reason_of_the_failed_case():
    banner = "-" * 74 + "\nPrimary job  terminated normally, but 1 process returned\n" + "-" * 74 + "\n"
    stderr = "ior stand-in: no recording for replay key 0123456789abcdef {}; record it ...\n" + banner
    assert failure.explain("ior", "1", [], "", stderr).startswith(
        "ior exited with status 1: ior stand-in: no recording for replay key 0123456789abcdef")
