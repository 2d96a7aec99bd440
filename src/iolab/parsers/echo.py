"""The benchmark's own account of what it ran, set against what iolab asked for.

Parsers put what a benchmark printed about its own run into `Parsed.echo`, under the benchmark's
names (IOR's numTasks, blockSize...), with values typed like iolab's (bytes as int, flags as
bool). Each adapter says what it expects to see (`Adapter.requested_echo`). A wrong module, a
wrapper that drops arguments, or a replayed output from another run fails the case here.

A test stand-in (tests/bin) that replays a recorded run says so on a line of its own,
`IOLAB-STANDIN: replaying <recording>`; `replayed` finds it, so such a case is never taken for
a measurement.
"""

from __future__ import annotations

from ..units import shown

STANDIN_MARK = "IOLAB-STANDIN:"


def replayed(*texts: str | None) -> str | None:
    """The recording a test stand-in replayed, named on its `IOLAB-STANDIN:` line, or None."""
    for text in texts:
        for line in (text or "").splitlines():
            if line.startswith(STANDIN_MARK):
                return line[len(STANDIN_MARK):].strip().removeprefix("replaying ") or "(unnamed)"
    return None


def differences(requested: dict, echoed: dict) -> list[str]:
    """One phrase per difference: 'numTasks 4, requested 2'; a value not reported counts too."""
    out = []
    for key, want in requested.items():
        if key not in echoed:
            out.append(f"{key} not reported, requested {shown(want)}")
        elif echoed[key] != want:
            out.append(f"{key} {shown(echoed[key])}, requested {shown(want)}")
    return out


def check(requested: dict, echoed: dict) -> str | None:
    diffs = differences(requested, echoed)
    return "echo: " + "; ".join(diffs) if diffs else None
