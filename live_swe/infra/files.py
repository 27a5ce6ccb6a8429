"""Session files opened without following symbolic links, and replaced atomically.

A session directory may have been written by the agent (without a sandbox) or received from
someone else: a ``patch.diff`` that is a link to ``~/.ssh/id_rsa`` must not be shown, and a
``meta.json.tmp`` that is a link to ``~/.bashrc`` must not be written through.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path
from typing import IO


class DamagedFile(OSError):
    """A session file that is a link or not a regular file; the message names it and what to do."""


def _damaged(path: Path, why: str) -> DamagedFile:
    return DamagedFile(f"{path}: damaged session file ({why}); live-swe does not follow it. "
                       "Remove it (or restore the session from a copy)")


def open_no_follow(path: Path, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
    """``os.open`` that refuses a symbolic link (and anything but a regular file) at ``path``."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _damaged(path, "a symbolic link") from None
        raise
    if not _is_regular(fd):
        os.close(fd)
        raise _damaged(path, "not a regular file")
    return fd


def _is_regular(fd: int) -> bool:
    import stat

    return stat.S_ISREG(os.fstat(fd).st_mode)


def read_text(path: Path, missing: str | None = None) -> str:
    """The file's text (``missing`` when there is no file and ``missing`` is given)."""
    try:
        fd = open_no_follow(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        if missing is None:
            raise
        return missing
    with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as handle:
        return handle.read()


def open_append(path: Path) -> IO[str]:
    """A text handle appending to ``path`` (created if missing), never through a link."""
    fd = open_no_follow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    return os.fdopen(fd, "a", encoding="utf-8")


def ends_torn(path: Path) -> bool:
    """Whether the file's last line lacks its newline (a write cut short)."""
    fd = open_no_follow(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        size = os.fstat(fd).st_size
        return size > 0 and os.pread(fd, 1, size - 1) != b"\n"
    finally:
        os.close(fd)


def write_atomic(path: Path, content: str | bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``content``: a fresh temporary file in the same folder (``O_EXCL``: a
    planted link is never written through), flushed to disk, then a rename over the target (a link
    there is replaced, not followed). A kill or a power cut mid-write leaves the previous file whole.
    ``mode``: the new file's permissions (else the temporary file's 0600)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content.encode("utf-8") if isinstance(content, str) else content)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
