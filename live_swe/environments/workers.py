"""Helper processes an environment starts for the kernel, confined like the agent's commands.

The hook worker is the one such process: ``python3 -I -S -B -c SOURCE ARGS...`` talking over its
stdin/stdout. Each environment starts it where the agent's code runs (``start_python``): in a
bubblewrap sandbox of its own (local), in the session's container (docker), or, only when the user
turned the sandbox off, as a plain process. A :class:`Worker` is the kernel's end of it.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import tempfile
import time
from typing import Protocol

from live_swe.environments._channel import ChannelLost
from live_swe.environments._docker_channel import ExecSocket
from live_swe.environments._processes import stop, tail


class Worker(Protocol):
    def send(self, data: bytes) -> None: ...  # OSError when the worker is gone

    def recv(self, deadline: float) -> bytes | None: ...  # None: deadline passed; b"": end of output

    def started(self, pid: int) -> None: ...  # the worker's pid as it sees itself

    def exit_status(self) -> int | None: ...

    def stderr_tail(self) -> str: ...

    def close(self, *, busy: bool = True) -> None: ...  # stops it; ``busy``: it may be running a hook now


def _tail(data: bytes, limit: int = 600) -> str:
    text = data.decode("utf-8", "replace").strip()
    return text[-limit:]


class PipeWorker:
    """A worker process on pipes (the local environment; the process may be bwrap itself)."""

    def __init__(self, argv: list[str], *, env: dict[str, str], cwd: str | None = None, scratch: str | None = None):
        self._stderr = tempfile.TemporaryFile()
        self._scratch = scratch
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                        cwd=cwd, env=env, start_new_session=True, close_fds=True)

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def recv(self, deadline: float) -> bytes | None:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            return None
        return os.read(fd, 1 << 16)

    def started(self, pid: int) -> None:
        pass

    def exit_status(self) -> int | None:
        return self.process.poll()

    def stderr_tail(self) -> str:
        return tail(self._stderr, 600).strip()[-600:]

    def close(self, *, busy: bool = True) -> None:
        stop(self.process)
        self._stderr.close()
        if self._scratch:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None


class ExecWorker:
    """A worker started by ``docker exec`` inside the session's container (an attached socket)."""

    def __init__(self, environment, argv: list[str]):
        self._environment = environment
        self._socket = ExecSocket(environment._api, environment.container_id, argv, workdir="/")
        self._pid = 0
        self._ended = False

    def send(self, data: bytes) -> None:
        try:
            self._socket.send(data)
        except ChannelLost as exc:
            raise BrokenPipeError(str(exc)) from None

    def recv(self, deadline: float) -> bytes | None:
        try:
            data = self._socket.recv_stdout(deadline)
        except ChannelLost:
            self._ended = True
            return b""
        return data or None

    def started(self, pid: int) -> None:
        self._pid = pid

    def exit_status(self) -> int | None:
        if not self._ended:
            return None
        try:
            return self._environment._api.exec_inspect(self._socket.exec_id).get("ExitCode")
        except Exception:  # noqa: BLE001 - only used in messages
            return None

    def stderr_tail(self) -> str:
        return _tail(self._socket.stderr_tail)

    def close(self, *, busy: bool = True) -> None:
        """Closing its stdin ends an idle worker; one that may be running a hook is killed, with its
        process group, by a side exec (what escaped the group ends with the container)."""
        if busy and self._pid and not self._ended:
            self._environment.side_command(f"kill -s KILL -- -{int(self._pid)} {int(self._pid)} 2>/dev/null")
        self._socket.close()
        self._ended = True
