"""Why a case failed, in the benchmark's own words: its error line, a full disk, a signal.

A reason is one line: what failed, then the evidence (`ior exited with status 255: ERROR:
cannot open file ...`). Each adapter names its benchmark's error lines (Adapter.error_lines);
what any program may print (ENOSPC, MPI aborts, signals, srun) is read here.
"""

from __future__ import annotations

import re
import signal

# What the system or the MPI runtime says when a run dies, whatever the benchmark.
_SPACE = re.compile(r"No space left on device|Disk quota exceeded|ENOSPC|EDQUOT", re.IGNORECASE)
_RUNTIME = re.compile(
    r"MPI_ABORT was invoked.*|.*exited on signal \d+.*|srun: error: .*|slurmstepd: error: .*|"
    r".*Segmentation fault.*|.*Bus error.*|There are not enough slots available.*|"
    r"mpirun was unable to .*|.*: command not found|.*: No such file or directory|"
    r".*error while loading shared libraries.*|.*Killed.*|"
    # a test stand-in (tests/bin) that refuses a call, e.g. one it has no recording for
    r"\S+ stand-in: .*")
MAX_REASON = 400


def signal_name(status: int) -> str | None:
    """A shell's exit status above 128 is a signal (137: SIGKILL)."""
    if 128 < status < 128 + 65:
        try:
            return signal.Signals(status - 128).name
        except ValueError:
            return f"signal {status - 128}"
    return None


def _runtime_lines(text: str) -> list[str]:
    return [m.group(0).strip() for m in _RUNTIME.finditer(text)]


def explain(executable: str, status: str, own_lines: list[str], stdout: str, stderr: str) -> str:
    """The reason of a failed run: exit status, signal, full disk, then the first error lines."""
    head = f"{executable} exited with status {status}"
    if status.isdigit():
        sig = signal_name(int(status))
        if sig:
            head += f" ({sig})"
    text = f"{stdout}\n{stderr}"
    evidence = list(dict.fromkeys(own_lines + _runtime_lines(stderr) + _runtime_lines(stdout)))
    space = _SPACE.search(text)
    if space:
        head += ": no space left on the device (ENOSPC)" if "quota" not in space.group().lower() \
            else ": disk quota exceeded (EDQUOT)"
        evidence = [line for line in evidence if not _SPACE.search(line)] + \
                   [line.strip() for line in text.splitlines() if _SPACE.search(line)][:1]
    if evidence:
        head += ": " + " | ".join(evidence[:2])
    elif stderr.strip():
        head += ": " + stderr.strip().splitlines()[-1].strip()
    return shorten(head)


def shorten(text: str, limit: int = MAX_REASON) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"
