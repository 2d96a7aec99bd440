"""Run PyDarshan in a child process, so that a bad log cannot take iolab down with it.

Why a child: PyDarshan 3.4.7/3.5.0 (libdarshan-util through cffi) segfaults or aborts on some
damaged logs (a log truncated inside its job data fails an assert in darshan_log_close; a
header claiming format 3.21 segfaults), and on others it reads *fewer records without raising*:
libdarshan-util prints "Error: ..." to stderr and PyDarshan treats the failed read as the end of
the module. So the child's exit status and its stderr are both checked, and any reader error
makes the whole log unreadable rather than silently short.

One child serves every log of a process (importing PyDarshan costs about 0.4 s, reading a log a
few ms); it is started on first use, and again after a crash or a timeout.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from ...errors import IolabError

CHILD = Path(__file__).with_name("_read.py")
TIMEOUT_S = 600
_ERROR_LINE = re.compile(r"^Error: (.*)$", re.MULTILINE)
# "Invalid DXT POSIX module version number (got 2)", "expected version 3.41, but got 3.99"
_VERSION_ERROR = re.compile(r"module version number|expected version")
INSTALL_HINT = "pip install 'iolab[darshan]', at the release of the darshan-runtime that wrote the logs"


class Unreadable(Exception):
    """The log cannot be read completely; str() is the reason."""


def child_env() -> dict:
    # Agg: the summary page draws with matplotlib and there is no display on compute nodes.
    return {**os.environ, "MPLBACKEND": "Agg"}


def run_child(argv: list[str], *, timeout_s: float, cwd: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, cwd=cwd, env=child_env(), capture_output=True, text=True,
                              errors="replace", timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise Unreadable(f"the Darshan reader took longer than {timeout_s:g} s") from None


def reader_errors(stderr: str) -> list[str]:
    """The "Error: ..." lines libdarshan-util printed, in order, without repeats."""
    return list(dict.fromkeys(m.strip() for m in _ERROR_LINE.findall(stderr)))


def crash_reason(returncode: int, stderr: str) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        what = f"the Darshan reader crashed ({name})"
    else:
        what = f"the Darshan reader failed (exit {returncode})"
    errors = reader_errors(stderr)
    if errors:
        return f"{what}: {'; '.join(errors[:4])}"
    tail = stderr.strip().splitlines()[-1:] or []
    return f"{what}: {tail[0]}" if tail else what


def explain(errors: list[str]) -> str:
    reason = "; ".join(errors[:4])
    if any(_VERSION_ERROR.search(e) for e in errors):
        reason += (" (a log must be read by the darshan-util release that wrote it, or a newer one "
                   "that knows its module versions)")
    return reason


def read_raw(log_path: str | os.PathLike, timeout_s: float = TIMEOUT_S) -> dict:
    """The log's contents as plain data (see _read.py), or Unreadable with the reason.

    Raises IolabError (not Unreadable) when PyDarshan itself is missing: that is the setup, not
    the log, and every log would fail the same way.
    """
    path = Path(log_path)
    if not path.exists():
        raise Unreadable(f"{path}: no such file")
    if not path.is_file():
        raise Unreadable(f"{path}: not a file")
    if path.stat().st_size == 0:
        raise Unreadable(f"{path}: empty file (the job ended before Darshan wrote its log?)")
    # A private working directory: a damaged handle once made darshan_log_close try to unlink a
    # garbage (relative) path; whatever it tries, it tries in here.
    with tempfile.TemporaryDirectory(prefix="iolab-darshan-") as work:
        out = Path(work) / "raw.json"
        returncode = _SERVER.request({"log": str(path.resolve()), "out": str(out), "cwd": work}, timeout_s)
        stderr = _read_text(Path(work) / "stderr.txt")
        try:
            result = json.loads(out.read_text())
        except (OSError, ValueError):
            result = None
    if result and result.get("kind") == "no-reader":
        raise IolabError(result["error"], file=str(path), hint=INSTALL_HINT)
    if returncode != 0 or result is None:
        if result and result.get("error"):
            errors = reader_errors(stderr)
            raise Unreadable(result["error"] + (f" ({explain(errors)})" if errors else ""))
        raise Unreadable(crash_reason(returncode, stderr))
    errors = reader_errors(stderr)
    if errors:
        raise Unreadable(f"libdarshan-util reported errors, so records are missing: {explain(errors)}")
    return result["raw"]


def _read_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


class _Server:
    """The long-lived reader child (_read.py --serve)."""

    def __init__(self):
        self.proc: subprocess.Popen | None = None
        self.env: dict = {}

    def _start(self) -> subprocess.Popen:
        env = child_env()
        if self.proc is not None and (self.proc.poll() is not None or env != self.env):
            self.stop()     # died, or the environment it should see (PYTHONPATH...) changed
        if self.proc is None:
            self.env = env
            # Its own session: ReFrame's local scheduler reaps a finished job with waitpid(0, 0),
            # which would wait for every child in ReFrame's process group, this one included.
            self.proc = subprocess.Popen([sys.executable, str(CHILD), "--serve"], env=env,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True, cwd=tempfile.gettempdir(),
                                         start_new_session=True)
        return self.proc

    def request(self, request: dict, timeout_s: float) -> int:
        """The child's exit code for this log: 0 read, 3 no PyDarshan, 4 unreadable; a crash is
        the negative signal number (the child is then started anew for the next log)."""
        proc = self._start()
        try:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            return self._died(proc)
        ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
        if not ready:
            self.stop()
            raise Unreadable(f"the Darshan reader took longer than {timeout_s:g} s")
        line = proc.stdout.readline()
        if not line:
            return self._died(proc)
        return int(json.loads(line)["code"])

    def _died(self, proc: subprocess.Popen) -> int:
        code = proc.wait()
        self.proc = None
        return code if code != 0 else -signal.SIGKILL

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


_SERVER = _Server()
atexit.register(_SERVER.stop)
