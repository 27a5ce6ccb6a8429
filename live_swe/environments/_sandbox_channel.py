"""The local environment's command channel: the driver runs inside one long-lived bubblewrap
sandbox, as the init of its own PID namespace, talking over the sandbox's stdin/stdout pipes.

Starting bwrap costs several milliseconds; a command through the open channel costs about what a
plain subprocess does. The driver sweeps its namespace after every command (nothing a command
started survives it), and being PID 1 there, no command can signal it away. The kernel holds the
driver's host PID (bwrap's ``--info-fd``) to interrupt a command on timeout or when a front end
stops.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import tempfile
import time

from live_swe.environments._channel import DRIVER, ChannelLost, FramedChannel, driver_arguments
from live_swe.environments._processes import stop, tail

SHELL = ("bash", "-c")
_START_TIMEOUT_S = 30.0


class SandboxChannel(FramedChannel):
    def __init__(self, bwrap: str, sandbox_args: list[str], env: dict[str, str], repo_dir: str, *,
                 output_cap: int, shell: tuple[str, ...] = SHELL):
        super().__init__(output_cap=output_cap)
        self._stderr = tempfile.TemporaryFile()
        info_read, info_write = os.pipe()
        argv = [bwrap, *sandbox_args, "--info-fd", str(info_write), "--",
                "bash", "-c", DRIVER, *driver_arguments(repo_dir, sweep=True, shell=shell)]
        try:
            self.process = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=self._stderr, pass_fds=(info_write,), start_new_session=True)
        except OSError as exc:
            os.close(info_read)
            os.close(info_write)
            self._stderr.close()
            raise ChannelLost(f"could not start bwrap: {exc}") from None
        os.close(info_write)
        self.host_pid = 0
        try:
            self.host_pid = self._read_info(info_read)
            self._handshake()
        except BaseException:
            self.close()
            raise
        finally:
            os.close(info_read)

    def _read_info(self, fd: int) -> int:
        """The driver's PID as this machine sees it (bwrap writes it, then closes the pipe)."""
        data = b""
        deadline = time.monotonic() + _START_TIMEOUT_S
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise ChannelLost("the sandbox did not start in time")
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
        try:
            return int(json.loads(data)["child-pid"])
        except (ValueError, KeyError, TypeError):
            self.process.wait()
            raise ChannelLost(f"the sandbox did not start: {self.stderr_tail() or 'bwrap said nothing'}") from None

    # -- transport ----------------------------------------------------------------------------------

    def _send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(data)
            self.process.stdin.flush()
        except OSError as exc:
            raise ChannelLost(f"could not write to the sandbox: {exc}") from None

    def _recv_stdout(self, deadline: float | None) -> bytes:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return b""
            if select.select([fd], [], [], remaining)[0]:
                break
        data = os.read(fd, 65536)  # below malloc's mmap threshold: no map and unmap per read
        if not data:
            raise ChannelLost("the sandbox stopped" + (f" ({self.stderr_tail()})" if self.stderr_tail() else ""))
        return data

    # -- control -------------------------------------------------------------------------------------

    def interrupt(self, _driver_pid: int = 0) -> None:
        """Have the driver kill the running command (its process group, then the whole namespace)."""
        if self.host_pid and self.process.poll() is None:
            try:
                os.kill(self.host_pid, signal.SIGUSR1)
            except ProcessLookupError:
                pass

    def stderr_tail(self) -> str:
        # bash's job notices ("[1]+ Done ...") are noise; bwrap's own complaints are what matter
        said = [line for line in tail(self._stderr).splitlines() if line.strip() and not line.startswith("[")]
        return said[-1][:300] if said else ""

    def close(self) -> None:
        """Stop the sandbox: killing bwrap takes everything inside with it (--die-with-parent)."""
        stop(self.process)
        try:
            self._stderr.close()
        except OSError:
            pass

    def __del__(self) -> None:
        # An environment dropped without close() (a test, a caller that forgot) leaves no sandbox behind.
        process = getattr(self, "process", None)
        if process is not None and process.returncode is None:
            try:
                stop(process)
            except Exception:  # noqa: BLE001 - interpreter shutdown: bwrap still dies with this process
                pass
