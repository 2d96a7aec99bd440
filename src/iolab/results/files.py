"""Opening a run's files (regular files only, within size limits, inside the run) and writing
bytes whole.

Readers open a run's files only when they are regular files within size limits (open_regular):
a FIFO or a device is refused at once, never waited on; a symlink is followed only to a file
inside the run.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from ..errors import IolabError
from .runfiles import inside

# What a reader opens (read_regular): regular files only, and at most this many bytes, so a
# FIFO, a device or a runaway file never blocks a command or fills its memory.
MAX_RECORDS_BYTES = 4 << 30       # records.jsonl: a campaign's is hundreds of MiB
MAX_MANIFEST_BYTES = 256 << 20    # manifest.json: a campaign's plan makes it megabytes
MAX_IMPORT_BYTES = 1 << 30        # one benchmark output given to `iolab import`


def write_all(fd: int, data: bytes) -> None:
    """os.write may write less than asked (a nearly full disk): continue until all is written."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:
            raise OSError(errno.EIO, "write returned 0 bytes")
        view = view[n:]


def oserror_text(exc: OSError) -> str:
    """An OSError in a few words: its message and errno name."""
    code = errno.errorcode.get(exc.errno or 0)
    return f"{exc.strerror or exc}" + (f" ({code})" if code else "")


def read_records_bytes(path: Path) -> bytes:
    """records.jsonl's bytes (path: the file); a missing or unreadable file is an error."""
    return read_regular(path, MAX_RECORDS_BYTES, within=path.parent, missing="not a results run")


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def open_regular(path: Path, limit: int, *, within: Path | None = None,
                 missing: str = "no such file") -> int:
    """A read-only descriptor on `path`, only if it is a regular file of at most `limit` bytes;
    else IolabError in one line. Opened without blocking (O_NONBLOCK: a FIFO with no writer)
    and checked on the opened descriptor. With `within` (a run directory), a symlink is followed
    only to a file inside it."""
    path = Path(path)
    target = path
    if path.is_symlink():
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            raise IolabError(f"{path}: a symlink to {os.readlink(path)!r}, which does not resolve "
                             "to a file") from None
        if within is not None and not inside(target, Path(within)):
            raise IolabError(f"{path}: a symlink to {target}, outside the run {Path(within).name}; "
                             "a run's files are read only inside its directory")
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(target, flags | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise IolabError(f"{path} not found: {missing}") from None
    except OSError as exc:
        raise IolabError(f"{path}: cannot read: {oserror_text(exc)}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
            shown = f" (a symlink to {target})" if target != path else ""
            raise IolabError(f"{path}{shown}: {kind}, not a regular file; iolab reads only "
                             "regular files")
        if st.st_size > limit:
            raise IolabError(f"{path}: {st.st_size} bytes, over iolab's limit of {limit} bytes "
                             "for this file (docs/guarantees.md: Input limits)")
    except BaseException:
        os.close(fd)
        raise
    return fd


def readable_file(path: Path, limit: int) -> None:
    """Refuse (IolabError, one line) what open_regular refuses, reading nothing."""
    os.close(open_regular(path, limit))


def read_regular(path: Path, limit: int, *, within: Path | None = None,
                 missing: str = "no such file") -> bytes:
    """The bytes of a regular file of at most `limit` bytes (open_regular says what else is
    refused); a file that grows past the limit while it is read is refused too."""
    fd = open_regular(path, limit, within=within, missing=missing)
    try:
        with os.fdopen(fd, "rb", buffering=0) as f:
            # to the end into one buffer sized from fstat (grown if the file grows), by as many
            # reads as it takes: Linux returns at most 2 GiB per read, and the chunks of a
            # larger file joined held it twice (6.9 GB to read the 3.4 GB of 1M records)
            data = f.readall()
    except OSError as exc:
        raise IolabError(f"{path}: cannot read: {oserror_text(exc)}") from None
    if len(data) > limit:
        raise IolabError(f"{path}: more than {limit} bytes, over iolab's limit for this file "
                         "(docs/guarantees.md: Input limits)")
    return data
