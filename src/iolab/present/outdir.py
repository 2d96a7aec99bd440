"""Where `iolab publish` writes, written safely: --out and every path below it real directories
and files (its parents may be symlinks), checked before anything changes, then opened relative
to directory descriptors with O_NOFOLLOW; only files an earlier publish wrote (listed in
MARKER) are replaced, and an --out inside the results root, or containing it, is refused."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

from ..errors import IolabError
from ..results.files import write_all

MARKER = ".iolab-publish.json"


def _inside(path: Path, parent: Path) -> bool:
    try:
        path.resolve().relative_to(parent.resolve())
        return True
    except ValueError:
        return False


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def real_out(out: Path, res: Path) -> Path:
    """--out as an absolute path whose parents are resolved and whose last part is not a symlink;
    neither inside the results root nor containing it."""
    out = Path(out)
    real = out.resolve() if out.name in ("", "..") else out.parent.resolve() / out.name
    st = _lstat(real)
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise IolabError(f"--out {out} is a symlink (to {os.readlink(real)}); publishing never writes "
                         "through a symlink", hint="give the real directory")
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise IolabError(f"--out {out}: exists and is not a directory")
    if _inside(real, res):
        raise IolabError(f"--out {out} is inside the results directory {res}; publishing never "
                         "writes there", hint="choose a directory outside it, e.g. site/")
    if _inside(res, real):
        raise IolabError(f"--out {out} contains the results directory {res}; publishing never "
                         "writes there", hint="choose a directory outside it, e.g. site/")
    return real


def _no_symlinks(out: Path, rel: str) -> None:
    """Refuse a path below --out if any part of it is a symlink (or a non-file in the way)."""
    path = out
    parts = Path(rel).parts
    for i, part in enumerate(parts):
        path = path / part
        st = _lstat(path)
        if st is None:
            return
        if stat.S_ISLNK(st.st_mode):
            raise IolabError(f"--out {out}: {path.relative_to(out)} is a symlink; publishing never "
                             "writes, replaces or deletes through a symlink; nothing changed",
                             hint="remove it, or choose another --out")
        last = i == len(parts) - 1
        if not last and not stat.S_ISDIR(st.st_mode) or last and not stat.S_ISREG(st.st_mode):
            raise IolabError(f"--out {out}: {path.relative_to(out)} is in the way (not a "
                             f"{'file' if last else 'directory'}); nothing changed")


class OutDir:
    """Writes and deletes below --out through directory descriptors opened with O_NOFOLLOW, so a
    symlink that appears after the checks is refused by the kernel rather than followed."""

    DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)

    def __init__(self, path: Path):
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        try:
            self.fd = os.open(path, self.DIR_FLAGS)
        except OSError as exc:
            raise self._refuse(".", exc) from None

    def _refuse(self, rel: str, exc: OSError, link: bool = False) -> IolabError:
        why = "is a symlink" if link or exc.errno == errno.ELOOP else (
            "is not a directory" if exc.errno == errno.ENOTDIR else exc.strerror)
        return IolabError(f"--out {self.path}: {rel} {why}; publishing never writes, replaces or "
                          "deletes through a symlink; stopped")

    def _dir(self, parts: tuple[str, ...], create: bool) -> int | None:
        """A descriptor of out/<parts...>; None when it does not exist and create is False."""
        fd = os.dup(self.fd)
        for i, part in enumerate(parts):
            try:
                if create:
                    try:
                        os.mkdir(part, 0o755, dir_fd=fd)
                    except FileExistsError:
                        pass
                child = os.open(part, self.DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                return None
            except OSError as exc:
                # O_DIRECTORY | O_NOFOLLOW on a symlink fails with ENOTDIR: say which it was
                try:
                    link = stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode)
                except OSError:
                    link = False
                raise self._refuse("/".join(parts[:i + 1]), exc, link) from None
            finally:
                os.close(fd)
            fd = child
        return fd

    def write(self, rel: str, data: bytes) -> None:
        *parents, name = Path(rel).parts
        fd = self._dir(tuple(parents), create=True)
        tmp = f".{name}.iolab-tmp{os.getpid()}"
        try:
            try:
                os.unlink(tmp, dir_fd=fd)     # a leftover of an interrupted publish
            except FileNotFoundError:
                pass
            out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=fd)
            try:
                write_all(out, data)
            finally:
                os.close(out)
            # rename replaces the directory entry itself, never what a symlink points to
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=fd)
            except OSError:
                pass
            raise
        finally:
            os.close(fd)

    def unlink(self, rel: str) -> None:
        """Remove a regular file (never what a symlink points to); a missing one is fine."""
        *parents, name = Path(rel).parts
        fd = self._dir(tuple(parents), create=False)
        if fd is None:
            return
        try:
            if stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            pass
        finally:
            os.close(fd)

    def rmdir_if_empty(self, rel: str) -> None:
        parts = Path(rel).parts
        fd = self._dir(parts, create=False)
        if fd is None:
            return
        try:
            empty = not os.listdir(fd)
        finally:
            os.close(fd)
        parent = self._dir(parts[:-1], create=False) if empty else None
        if parent is None:
            return
        try:
            os.rmdir(parts[-1], dir_fd=parent)
        except OSError:
            pass        # not empty after all: left alone
        finally:
            os.close(parent)

    def close(self) -> None:
        os.close(self.fd)


def previous_files(out: Path, force: bool) -> list[str]:
    if not out.is_dir() or not any(out.iterdir()):
        return []
    if not force:
        raise IolabError(f"--out {out} is not empty",
                         hint="publish into a new or empty directory, or pass --force to replace "
                              "what an earlier `iolab publish` wrote there")
    marker = out / MARKER
    try:
        _no_symlinks(out, MARKER)
        data = json.loads(marker.read_text())
        files = [str(f) for f in data["files"]]
    except FileNotFoundError:
        raise IolabError(f"--force: {out} was not written by `iolab publish` (no {MARKER}); "
                         "its files are left alone", hint="choose another --out") from None
    except (ValueError, KeyError, TypeError, IolabError):
        raise IolabError(f"--force: {marker} is unreadable; the directory's files are left alone",
                         hint="choose another --out") from None
    for f in files:
        parts = Path(f).parts
        if Path(f).is_absolute() or ".." in parts or not parts or f in (MARKER, "."):
            raise IolabError(f"--force: {marker} lists {f!r}, outside the directory; nothing replaced")
    return files


def install(staging: Path, out: Path, previous: list[str]) -> list[str]:
    new = sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file())
    # Every path this touches is checked before anything changes.
    for f in dict.fromkeys(new + previous + [MARKER]):
        _no_symlinks(out, f)
    foreign = [f for f in new if (out / f).exists() and f not in previous]
    if foreign:
        raise IolabError(f"--out {out}: {', '.join(foreign[:5])} would be overwritten and was not "
                         "written by `iolab publish`; nothing replaced", hint="choose another --out")
    target = OutDir(out)
    try:
        for f in previous:
            if f not in new:
                target.unlink(f)
        dirs = {Path(f).parent.as_posix() for f in previous} - {"."}
        for d in sorted(dirs, key=lambda p: len(Path(p).parts), reverse=True):
            target.rmdir_if_empty(d)
        for f in new:
            target.write(f, (staging / f).read_bytes())
    finally:
        target.close()
    return new
