"""One long-lived command channel into a container.

A single ``docker exec`` runs the command driver of :mod:`live_swe.environments._channel`, whose
stdin/stdout are the attached, hijacked HTTP socket. Each command is one request frame; the driver
runs it in a fresh login shell (``bash -lc``, see ``login_shell``) in its own process group and
frames the merged stdout+stderr. This
replaces a ``docker exec`` round trip per command (~100 ms) with a write and a read on an open
socket. On timeout the host signals the driver (SIGUSR1) through a side exec; the driver kills the
command's process group and closes the frame, so the channel and the container survive.
Only bash and the shell builtins are needed in the image (no python, no coreutils).
"""

from __future__ import annotations

import struct
import time
from typing import Any

from live_swe.environments._channel import (
    DRIVER,
    ChannelLost,
    FramedChannel,
    RunResult,
    driver_arguments,
)

# How the driver runs each command: a login shell, as ``docker exec CONTAINER bash -lc CMD`` and
# mini-swe-agent do, so the image's /etc/profile and ~/.profile -> ~/.bashrc apply (the official
# SWE-bench images activate their conda ``testbed`` env there). The scaffold's tools folder ($1)
# goes first on PATH after the profile (Debian's /etc/profile resets PATH); the command is $2.
LOGIN_WRAPPER = 'case ":$PATH:" in *":$1:"*) ;; *) [ -z "$1" ] || PATH="$1:$PATH" ;; esac; eval "set --; $2"'


def login_shell(tools_dir: str = "") -> tuple[str, ...]:
    return ("bash", "-lc", LOGIN_WRAPPER, "bash", tools_dir)


SHELL = login_shell()
_HEADER = struct.Struct(">BxxxL")  # docker's multiplexed stream: kind, 3 pad bytes, length

__all__ = ["Channel", "ChannelLost", "ExecSocket", "RunResult", "SHELL", "login_shell"]


class ExecSocket:
    """The attached socket of one ``docker exec`` (stdin in; stdout and stderr multiplexed out)."""

    def __init__(self, api: Any, container_id: str, argv: list[str], **exec_options: Any):
        exec_id = api.exec_create(container_id, argv, stdin=True, stdout=True, stderr=True, tty=False,
                                  **exec_options)["Id"]
        self.exec_id = exec_id
        self._sock_io = api.exec_start(exec_id, socket=True)  # keep a reference: it owns the fd
        self._sock = getattr(self._sock_io, "_sock", self._sock_io)
        self._frame_left = 0  # bytes left in the current multiplexed frame
        self._frame_kind = 1
        self._header = b""
        self.stderr_tail = b""  # the process's own complaints, for error messages

    def send(self, data: bytes) -> None:
        try:
            self._sock.sendall(data)
        except OSError as exc:
            raise ChannelLost(f"could not write to the command channel: {exc}") from None

    def recv_stdout(self, deadline: float | None) -> bytes:
        """The next chunk of the process's stdout; b'' when the deadline passed."""
        while True:
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return b""
                self._sock.settimeout(remaining)
            else:
                self._sock.settimeout(None)
            try:
                data = self._sock.recv(262144)
            except TimeoutError:
                return b""
            except OSError as exc:
                raise ChannelLost(f"the command channel failed: {exc}") from None
            if not data:
                raise ChannelLost("the command channel was closed (did the container stop?)")
            out = self._demux(data)
            if out:
                return out

    def _demux(self, data: bytes) -> bytes:
        out: list[bytes] = []
        view = memoryview(data)
        while view:
            if self._frame_left == 0:
                need = _HEADER.size - len(self._header)
                self._header += bytes(view[:need])
                view = view[need:]
                if len(self._header) < _HEADER.size:
                    break
                self._frame_kind, self._frame_left = _HEADER.unpack(self._header)
                self._header = b""
                continue
            take = bytes(view[: self._frame_left])
            view = view[len(take):]
            self._frame_left -= len(take)
            if self._frame_kind == 2:
                self.stderr_tail = (self.stderr_tail + take)[-4000:]
            else:
                out.append(take)
        return b"".join(out)

    def close(self) -> None:
        for closer in (getattr(self._sock, "close", None), getattr(self._sock_io, "close", None)):
            try:
                if closer:
                    closer()
            except OSError:
                pass


class Channel(FramedChannel):
    """The driver process and its socket. Not thread-safe: one command at a time."""

    def __init__(self, api: Any, container_id: str, repo_dir: str, *, output_cap: int, tools_dir: str = ""):
        super().__init__(output_cap=output_cap)
        shell = login_shell(tools_dir)
        self._exec = ExecSocket(api, container_id,
                                ["bash", "-c", DRIVER, *driver_arguments(repo_dir, sweep=False, shell=shell)])
        try:
            self._handshake()
        except BaseException:
            self.close()
            raise

    @property
    def stderr_tail(self) -> bytes:
        return self._exec.stderr_tail

    def _send(self, data: bytes) -> None:
        self._exec.send(data)

    def _recv_stdout(self, deadline: float | None) -> bytes:
        return self._exec.recv_stdout(deadline)

    def close(self) -> None:
        self._exec.close()
