"""One long-lived command channel into a container.

A single ``docker exec`` runs a small bash driver (below) whose stdin/stdout are the attached,
hijacked HTTP socket. Each command is one request frame; the driver runs it in a fresh login
shell (``bash -lc``, as ``docker exec CONTAINER bash -lc CMD`` and mini-swe-agent do, so the
image's ``/etc/profile`` and ``~/.profile`` -> ``~/.bashrc`` apply: the official SWE-bench images
activate their conda ``testbed`` env there) in its own process group, and frames the merged
stdout+stderr. The scaffold's tools folder is put first on PATH after the profile (Debian's
``/etc/profile`` resets PATH). This replaces a ``docker exec`` round trip per command (~100 ms)
with a write and a read on an open socket.

Request frame (host -> driver):  NONCE \\0 COMMAND \\0
Reply frame (driver -> host):    NONCE:S\\n <output bytes> NONCE:E:RC\\n

The nonce is random per command, so output of background processes left over from an earlier
command (which still hold the driver's stdout) is discarded before the start marker, and a
command cannot end its own frame early by printing a marker it cannot guess.
On timeout the host signals the driver (SIGUSR1) through a side exec; the driver kills the
command's process group and closes the frame, so the channel and the container survive.
Only bash and the shell builtins are needed in the image (no python, no coreutils).
"""

from __future__ import annotations

import secrets
import struct
import time
from typing import Any

DRIVER = r"""
set -m                      # every background job gets its own process group
repo=$1
tools=$2                    # the scaffold's tools folder, first on PATH after the login profile
child=
trap '[ -n "$child" ] && kill -s KILL -- "-$child" 2>/dev/null' USR1
IFS= read -r -d '' hello || exit 0
printf 'LIVE-SWE-READY:%s:%s\n' "$$" "$hello"
while IFS= read -r -d '' nonce && IFS= read -r -d '' cmd; do
  cd -- "$repo" 2>/dev/null || cd /
  printf '%s:S\n' "$nonce"
  bash -lc 'case ":$PATH:" in *":$1:"*) ;; *) [ -z "$1" ] || PATH="$1:$PATH" ;; esac; eval "set --; $2"' \
    bash "$tools" "$cmd" </dev/null 2>&1 &
  child=$!
  wait "$child"; rc=$?
  # a trapped signal (or a stopped job) returns from wait early: finish the job for real
  while kill -0 "$child" 2>/dev/null; do
    kill -s CONT -- "-$child" 2>/dev/null
    wait "$child"; rc=$?
  done
  child=
  printf '%s:E:%s\n' "$nonce" "$rc"
done
"""

_HEADER = struct.Struct(">BxxxL")  # docker's multiplexed stream: kind, 3 pad bytes, length
_READY_TIMEOUT_S = 30.0
_KILL_GRACE_S = 10.0  # after a kill, how long the driver may take to close the frame


class ChannelLost(Exception):
    """The driver or its socket went away. ``started``: the command had begun running."""

    def __init__(self, message: str, *, started: bool = False, partial: bytes = b""):
        super().__init__(message)
        self.started = started
        self.partial = partial


class RunResult:
    __slots__ = ("output", "dropped", "returncode", "timed_out")

    def __init__(self, output: bytes, dropped: int, returncode: int, timed_out: bool):
        self.output = output
        self.dropped = dropped
        self.returncode = returncode
        self.timed_out = timed_out


class _CappedBuffer:
    """Keeps the first ``cap`` bytes and counts the rest."""

    def __init__(self, cap: int):
        self.cap = cap
        self.parts: list[bytes] = []
        self.size = 0
        self.dropped = 0

    def add(self, data: bytes) -> None:
        room = self.cap - self.size
        if room > 0:
            kept = data[:room]
            self.parts.append(kept)
            self.size += len(kept)
            self.dropped += len(data) - len(kept)
        else:
            self.dropped += len(data)

    def value(self) -> bytes:
        return b"".join(self.parts)


class Channel:
    """The driver process and its socket. Not thread-safe: one command at a time."""

    def __init__(self, api: Any, container_id: str, repo_dir: str, *, output_cap: int, tools_dir: str = ""):
        self._api = api
        self._container = container_id
        self._cap = output_cap
        self._pending = b""  # stdout bytes received but not yet consumed
        self._frame_left = 0  # bytes left in the current multiplexed frame
        self._frame_kind = 1
        self._header = b""
        self.stderr_tail = b""  # the driver's own complaints, for error messages
        self.driver_pid = 0
        exec_id = api.exec_create(
            container_id,
            ["bash", "-c", DRIVER, "live-swe-driver", repo_dir, tools_dir],
            stdin=True,
            stdout=True,
            stderr=True,
            tty=False,
        )["Id"]
        self._sock_io = api.exec_start(exec_id, socket=True)  # keep a reference: it owns the fd
        self._sock = getattr(self._sock_io, "_sock", self._sock_io)
        try:
            self._handshake()
        except BaseException:
            self.close()
            raise

    # -- framing ------------------------------------------------------------------------------

    def _handshake(self) -> None:
        hello = secrets.token_hex(8)
        self._send(f"{hello}\0".encode())
        line = self._read_until(b"\n", time.monotonic() + _READY_TIMEOUT_S, started=False)
        text = line.decode("utf-8", "replace").strip()
        prefix, _, rest = text.partition("LIVE-SWE-READY:")
        pid, _, echoed = rest.partition(":")
        if not rest or echoed != hello or not pid.isdigit():
            raise ChannelLost(f"the command driver did not start: {(prefix or text)[:300]}")
        self.driver_pid = int(pid)

    def _send(self, data: bytes) -> None:
        try:
            self._sock.sendall(data)
        except OSError as exc:
            raise ChannelLost(f"could not write to the command channel: {exc}") from None

    def _recv_stdout(self, deadline: float | None) -> bytes:
        """The next chunk of the driver's stdout; b'' when the deadline passed."""
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

    def _read_until(self, marker: bytes, deadline: float | None, *, started: bool) -> bytes:
        """Consume up to and including ``marker``; return what preceded it (plus the marker)."""
        while True:
            index = self._pending.find(marker)
            if index >= 0:
                end = index + len(marker)
                head, self._pending = self._pending[:end], self._pending[end:]
                return head
            chunk = self._recv_stdout(deadline)
            if not chunk:
                raise TimeoutError
            self._pending += chunk
            if not started and len(self._pending) > 1_000_000:
                self._pending = self._pending[-len(marker):]  # stale output we never need

    # -- commands -----------------------------------------------------------------------------

    def run(self, command: str, timeout: float | None, interrupt) -> RunResult:
        """Run ``command``; ``interrupt()`` is called on timeout to have the driver kill it."""
        nonce = secrets.token_hex(12).encode()
        start, end = nonce + b":S\n", nonce + b":E:"
        self._send(nonce + b"\0" + command.encode("utf-8", "surrogateescape") + b"\0")
        try:
            # what precedes the start marker is late output of earlier background processes
            self._read_until(start, time.monotonic() + _READY_TIMEOUT_S, started=False)
        except TimeoutError:
            raise ChannelLost("the command driver did not answer in time") from None
        deadline = None if timeout is None else time.monotonic() + timeout
        output = _CappedBuffer(self._cap)
        timed_out = False
        keep = len(end) - 1
        while True:
            index = self._pending.find(end)
            if index >= 0:
                output.add(self._pending[:index])
                self._pending = self._pending[index + len(end):]
                break
            if len(self._pending) > keep:
                output.add(self._pending[:-keep])
                self._pending = self._pending[-keep:]
            try:
                chunk = self._recv_stdout(deadline)
            except ChannelLost as exc:
                output.add(self._pending)
                exc.started, exc.partial = True, output.value()
                raise
            if chunk:
                self._pending += chunk
                continue
            if timed_out:
                raise ChannelLost("the command could not be killed after its timeout",
                                  started=True, partial=output.value())
            timed_out = True
            interrupt(self.driver_pid)
            deadline = time.monotonic() + _KILL_GRACE_S
        try:
            tail = self._read_until(b"\n", time.monotonic() + _KILL_GRACE_S, started=True)
        except TimeoutError:
            raise ChannelLost("the command driver stopped mid-frame", started=True) from None
        code = tail.strip()
        returncode = int(code) if code.isdigit() else -1
        return RunResult(output.value(), output.dropped, -1 if timed_out else returncode, timed_out)

    def close(self) -> None:
        for closer in (getattr(self._sock, "close", None), getattr(self._sock_io, "close", None)):
            try:
                if closer:
                    closer()
            except OSError:
                pass
