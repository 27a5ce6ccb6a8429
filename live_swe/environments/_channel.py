"""A long-lived command channel: one small bash driver runs every command of a session.

The driver (below) reads request frames on its stdin and writes reply frames on its stdout; each
command runs in a fresh shell (``"$@" "$cmd"``: the shell words are a parameter, e.g.
``bash -c``) in its own process group, with stdin from /dev/null and stderr merged into stdout.
The transport differs (an attached Docker exec socket, or the pipes of a bubblewrap sandbox);
the framing, the handshake and the deadline handling are the same and live here.

Request frame (host -> driver):  NONCE \\0 COMMAND \\0
Reply frame (driver -> host):    NONCE:S\\n <output bytes> NONCE:E:RC\\n

The nonce is random per command, so output of background processes left over from an earlier
command (which still hold the driver's stdout) is discarded before the start marker, and a
command cannot end its own frame early by printing a marker it cannot guess.
On timeout the host signals the driver (SIGUSR1); the driver kills the command's process group
and closes the frame, so the channel survives. With ``sweep`` set (the driver is the init of its
own PID namespace) it then kills every other process in it: nothing a command started outlives
the command. Only bash and its builtins are needed.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable

from live_swe.environments.base import EnvironmentError_, Output
from live_swe.errors import InfrastructureError

# Arguments: REPO SWEEP SHELL-WORDS... (e.g. /testbed 0 bash -c)
DRIVER = r"""
set -m                      # every background job gets its own process group
repo=$1; sweep=$2; shift 2
child=
trap '[ -n "$child" ] && kill -s KILL -- "-$child" 2>/dev/null' USR1
IFS= read -r -d '' hello || exit 0
printf 'LIVE-SWE-READY:%s:%s\n' "$$" "$hello"
while IFS= read -r -d '' nonce && IFS= read -r -d '' cmd; do
  cd -- "$repo" 2>/dev/null || cd /
  printf '%s:S\n' "$nonce"
  "$@" "$cmd" </dev/null 2>&1 &
  child=$!
  wait "$child"; rc=$?
  # a trapped signal (or a stopped job) returns from wait early: finish the job for real
  while kill -0 "$child" 2>/dev/null; do
    kill -s CONT -- "-$child" 2>/dev/null
    wait "$child"; rc=$?
  done
  child=
  # the init of its own PID namespace: everything but the driver goes (daemons, setsid, nohup)
  [ "$sweep" = 1 ] && kill -s KILL -- -1 2>/dev/null
  printf '%s:E:%s\n' "$nonce" "$rc"
done
"""

READY_TIMEOUT_S = 30.0
KILL_GRACE_S = 10.0  # after a kill, how long the driver may take to close the frame


def driver_arguments(repo_dir: str, *, sweep: bool, shell: tuple[str, ...]) -> list[str]:
    """The words after ``bash -c DRIVER``: $0, the repository, the sweep flag and the shell."""
    return ["live-swe-driver", repo_dir, "1" if sweep else "0", *shell]


class ChannelLost(InfrastructureError):
    """The driver or its transport went away. ``started``: the command had begun running."""

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


class CappedBuffer:
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


class FramedChannel:
    """The framing over a transport. Subclasses provide ``_send(data)`` and
    ``_recv_stdout(deadline) -> bytes`` (b'' when the deadline passed; ChannelLost at end of stream).
    Not thread-safe: one command at a time."""

    def __init__(self, *, output_cap: int):
        self._cap = output_cap
        self._pending = b""  # stdout bytes received but not yet consumed
        self.driver_pid = 0  # as the driver sees itself ($$)

    def _send(self, data: bytes) -> None:
        raise NotImplementedError

    def _recv_stdout(self, deadline: float | None) -> bytes:
        raise NotImplementedError

    def _handshake(self) -> None:
        hello = secrets.token_hex(8)
        self._send(f"{hello}\0".encode())
        line = self._read_until(b"\n", time.monotonic() + READY_TIMEOUT_S, started=False)
        text = line.decode("utf-8", "replace").strip()
        prefix, _, rest = text.partition("LIVE-SWE-READY:")
        pid, _, echoed = rest.partition(":")
        if not rest or echoed != hello or not pid.isdigit():
            raise ChannelLost(f"the command driver did not start: {(prefix or text)[:300]}")
        self.driver_pid = int(pid)

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

    def run(self, command: str, timeout: float | None, interrupt: Callable[[int], None]) -> RunResult:
        """Run ``command``; ``interrupt(driver_pid)`` is called on timeout to have the driver kill it."""
        nonce = secrets.token_hex(12).encode()
        start, end = nonce + b":S\n", nonce + b":E:"
        self._send(nonce + b"\0" + command.encode("utf-8", "surrogateescape") + b"\0")
        try:
            # what precedes the start marker is late output of earlier background processes
            self._read_until(start, time.monotonic() + READY_TIMEOUT_S, started=False)
        except TimeoutError:
            raise ChannelLost("the command driver did not answer in time") from None
        deadline = None if timeout is None else time.monotonic() + timeout
        output = CappedBuffer(self._cap)
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
            deadline = time.monotonic() + KILL_GRACE_S
        try:
            tail = self._read_until(b"\n", time.monotonic() + KILL_GRACE_S, started=True)
        except TimeoutError:
            raise ChannelLost("the command driver stopped mid-frame", started=True) from None
        code = tail.strip()
        returncode = int(code) if code.isdigit() else -1
        return RunResult(output.value(), output.dropped, -1 if timed_out else returncode, timed_out)


class ChannelCommands:
    """``execute`` over a framed channel, for an environment that keeps one open (docker, the local
    sandbox): a channel lost before the command started is reopened once; one lost during it ends the
    command with what it printed; an interrupt (Ctrl-C) mid-command stops it and drops the channel."""

    _channel: FramedChannel | None
    lost_note = "the command channel was lost"  # said in the output of a command whose channel went away

    def _open_channel(self) -> FramedChannel:
        raise NotImplementedError

    def _interrupt_channel(self, channel: FramedChannel) -> None:
        raise NotImplementedError

    def _close_channel(self, channel: FramedChannel) -> None:
        channel.close()

    def _failed_twice(self, exc: ChannelLost) -> str:
        raise NotImplementedError

    def _after_command(self, channel: FramedChannel) -> None:
        pass

    def _execute_on_channel(self, command: str, timeout: float | None) -> Output:
        if "\0" in command:
            return Output(text="live-swe: the command contains a NUL byte, which bash cannot run", returncode=2)
        for attempt in (1, 2):
            if self._channel is None:
                self._channel = self._open_channel()
            channel = self._channel
            try:
                result = channel.run(command, timeout, lambda _pid, c=channel: self._interrupt_channel(c))
            except ChannelLost as exc:
                self._close_channel(channel)
                self._channel = None
                if exc.started:
                    text = exc.partial.decode("utf-8", "replace")
                    return Output(text=f"{text}\n[live-swe: {self.lost_note}: {exc}]", returncode=-1)
                if attempt == 2:
                    raise EnvironmentError_(self._failed_twice(exc)) from None
                continue
            except BaseException:
                # Ctrl-C or similar mid-command: stop the command, start clean next time.
                self._interrupt_channel(channel)
                self._close_channel(channel)
                self._channel = None
                raise
            self._after_command(channel)
            text = result.output.decode("utf-8", errors="replace")
            if result.dropped:
                text += f"\n[live-swe: {result.dropped} more bytes of output were dropped]"
            return Output(text=text, returncode=result.returncode, timed_out=result.timed_out)
        raise AssertionError("unreachable")
