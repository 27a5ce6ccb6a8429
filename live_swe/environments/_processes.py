"""Stopping a helper process the kernel started (a sandbox, a hook worker) and reading its stderr."""

from __future__ import annotations

import os
import signal
import subprocess


def stop(process: subprocess.Popen) -> None:
    """Kill the process's group (bwrap's sandbox dies with bwrap: --die-with-parent), reap it, close its pipes."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            process.kill()
    process.wait()
    for stream in (process.stdin, process.stdout):
        try:
            if stream:
                stream.close()
        except OSError:
            pass


def tail(handle, limit: int = 2000) -> str:
    """The last ``limit`` bytes of a (temporary) file the process writes its stderr to, as text."""
    try:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - limit))
        return handle.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""
