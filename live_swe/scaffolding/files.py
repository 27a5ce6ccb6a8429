"""Reading files the agent can write: regular files only, never through a link, never blocking.

A scaffold file may be replaced by anything between two looks: a FIFO (whose ``open`` would wait
for a writer forever), a device, or a symbolic link to a file outside the scaffold. The kernel
opens each with ``O_NOFOLLOW | O_NONBLOCK`` and checks what it opened before reading it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


class NotARegularFile(OSError):
    """The path is a link, FIFO, device, socket or folder: never read."""


def read_regular(path: str | Path, limit: int | None = None) -> bytes:
    """The bytes of ``path`` (at most ``limit``+1 when given, so the caller sees it was too big)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the last component is a link
            raise NotARegularFile(f"{path} is a link, not a regular file") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFile(f"{path} is not a regular file")
        os.set_blocking(fd, True)
        chunks = []
        wanted = None if limit is None else limit + 1
        while wanted is None or wanted > 0:
            chunk = os.read(fd, 1 << 20 if wanted is None else min(wanted, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            if wanted is not None:
                wanted -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_regular_text(path: str | Path, limit: int | None = None) -> str:
    """Like ``Path.read_text()``, for a regular file only (UnicodeDecodeError on bad UTF-8)."""
    return read_regular(path, limit).decode("utf-8")
