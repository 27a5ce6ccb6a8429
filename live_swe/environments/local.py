"""Run commands in the repository on this machine: in a bubblewrap sandbox (the default), or, when
the user opts out with ``--sandbox none``, as plain subprocesses.

Sandboxed, one long-lived sandbox per session runs every command through a command channel
(:mod:`live_swe.environments._sandbox_channel`); what the sandbox lets a command see and write is
described in :mod:`live_swe.environments.sandbox`. Either way each command gets a fresh shell
(stdin closed), the deadline holds whether or not the command keeps its output open, and what a
command started is killed when it ends (sandboxed: everything; unconfined: its process group).
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from live_swe.environments import sandbox as bubblewrap
from live_swe.environments._channel import ChannelCommands, ChannelLost
from live_swe.environments._sandbox_channel import SandboxChannel
from live_swe.environments.base import OUTPUT_CAP_BYTES, EnvironmentError_, Output
from live_swe.environments.workers import PipeWorker

# Variables that must never reach commands the agent writes (unconfined mode; the sandbox starts
# from an empty environment).
_SECRET_MARKERS = ("API_KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")


def scrubbed_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The host environment without credentials, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not any(m in k.upper() for m in _SECRET_MARKERS)}
    env.update(extra or {})
    env.setdefault("PAGER", "cat")
    env.setdefault("GIT_PAGER", "cat")
    return env


def _worker_environment(scratch: str) -> dict[str, str]:
    # Built from nothing rather than filtered: no variable of the kernel's reaches agent code.
    return {"PATH": "/usr/bin:/bin", "HOME": scratch, "TMPDIR": scratch, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}


class LocalEnvironment(ChannelCommands):
    def __init__(self, repo_dir: str | Path, *, scaffold_dir: str | Path | None = None, tools_subdir: str = "tools",
                 sandbox: str = "bubblewrap", network: bool = False):
        repo = Path(repo_dir).resolve()
        if not repo.is_dir():
            raise EnvironmentError_(f"{repo}: repository directory does not exist")
        if sandbox not in bubblewrap.SANDBOX_MODES:
            raise EnvironmentError_(f"unknown sandbox {sandbox!r}; use {' or '.join(bubblewrap.SANDBOX_MODES)}")
        self.repo_dir = str(repo)
        self.scaffold_dir = str(Path(scaffold_dir).resolve()) if scaffold_dir else ""
        self.sandbox = sandbox
        self.network = network if sandbox != "none" else True
        extra = {}
        if self.scaffold_dir:
            extra["LIVE_SWE_SCAFFOLD"] = self.scaffold_dir
            extra["PATH"] = f"{self.scaffold_dir}/{tools_subdir}:{os.environ.get('PATH', '')}"
        self._running: subprocess.Popen | None = None
        self._channel: SandboxChannel | None = None
        if sandbox == "none":
            self._env = scrubbed_environment(extra)
            self._die_with_parent = _parent_death_signal()
            return
        self._bwrap = bubblewrap.require()
        self._env = bubblewrap.environment(extra)
        if self.scaffold_dir:
            Path(self.scaffold_dir).mkdir(parents=True, exist_ok=True)  # bound into the sandbox: it must exist
        self._channel = self._open_channel()

    @property
    def confined(self) -> bool:
        return self.sandbox != "none"

    # -- commands ---------------------------------------------------------------------------------

    def execute(self, command: str, timeout: float) -> Output:
        if not self.confined:
            return self._run_unconfined(command, timeout)
        return self._execute_on_channel(command, timeout)

    lost_note = "the sandbox stopped during the command"

    def _interrupt_channel(self, channel: SandboxChannel) -> None:
        channel.interrupt()

    def _failed_twice(self, exc: ChannelLost) -> str:
        return f"the sandbox failed twice: {exc}"

    def _open_channel(self) -> SandboxChannel:
        args = bubblewrap.command_sandbox(Path(self.repo_dir), Path(self.scaffold_dir) if self.scaffold_dir else None,
                                          network=self.network)
        try:
            return SandboxChannel(self._bwrap, args, self._env, self.repo_dir, output_cap=OUTPUT_CAP_BYTES)
        except ChannelLost as exc:
            raise EnvironmentError_(f"could not start the bubblewrap sandbox for {self.repo_dir}: {exc}") from None

    def _drop_channel(self) -> None:
        channel, self._channel = self._channel, None
        if channel is not None:
            channel.close()

    def _run_unconfined(self, command: str, timeout: float) -> Output:
        process = subprocess.Popen(
            ["bash", "-c", command],
            cwd=self.repo_dir,
            env=self._env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group, so its children can be killed with it
            preexec_fn=self._die_with_parent,
        )
        self._running = process
        try:
            deadline = time.monotonic() + timeout
            text, dropped, timed_out = _read_until_eof(process, deadline)
            # the output closed, but the command may still run: the deadline holds until it exits
            timed_out = timed_out or not _exited_by(process, deadline)
            _kill_group(process)  # nothing left in its group outlives the command
            process.wait()
        except BaseException:
            _kill_group(process)
            process.wait()
            raise
        finally:
            self._running = None
        if dropped:
            text += f"\n[live-swe: {dropped} more bytes of output were dropped]"
        return Output(text=text, returncode=-1 if timed_out else process.returncode, timed_out=timed_out)

    def interrupt(self) -> None:
        """Kill the running command and what it started (from another thread: the TUI quitting)."""
        channel = self._channel
        if channel is not None:
            channel.interrupt()
        process = self._running
        if process is not None:
            _kill_group(process)

    # -- helper processes -------------------------------------------------------------------------

    def start_python(self, source: str, args: list[str]) -> PipeWorker:
        """``python3 -I -S -B -c SOURCE ARGS`` confined like the commands (a sandbox of its own:
        nothing writable but a private /tmp, no network), or unconfined with the sandbox off."""
        python = os.path.realpath(sys.executable)
        command = [python, "-I", "-S", "-B", "-c", source, *args]
        if not self.confined:
            scratch = tempfile.mkdtemp(prefix="live-swe-hooks-")
            return PipeWorker(command, env=_worker_environment(scratch), cwd=scratch, scratch=scratch)
        env = bubblewrap.environment({"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"})
        return PipeWorker([self._bwrap, *bubblewrap.worker_sandbox(python), "--", *command], env=env)

    # -- files ------------------------------------------------------------------------------------

    def copy_in(self, src: Path, dest: str) -> None:
        target = Path(dest)
        if Path(src).is_dir():
            shutil.copytree(src, target, dirs_exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)

    def copy_out(self, src: str, dest: Path) -> None:
        self.copy_in(Path(src), str(dest))

    def close(self) -> None:
        self._drop_channel()

    def __enter__(self) -> LocalEnvironment:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _read_until_eof(process: subprocess.Popen, deadline: float) -> tuple[str, int, bool]:
    """Read merged output until every writer closed it or the deadline passed.

    A selector wait, not polling: the per-command overhead stays in the sub-millisecond range.
    Returns (text, bytes dropped past the cap, timed out).
    """
    assert process.stdout is not None
    fd = process.stdout.fileno()
    chunks: list[bytes] = []
    kept = dropped = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            return b"".join(chunks).decode("utf-8", errors="replace"), dropped, True
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        room = max(0, OUTPUT_CAP_BYTES - kept)
        chunks.append(chunk[:room])
        kept += min(room, len(chunk))
        dropped += max(0, len(chunk) - room)
    return b"".join(chunks).decode("utf-8", errors="replace"), dropped, False


def _exited_by(process: subprocess.Popen, deadline: float) -> bool:
    """Whether the process exits before the deadline. It is not reaped here, so its process group
    cannot be taken by another process before it is killed."""
    remaining = max(0.0, deadline - time.monotonic())
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):
        try:
            process.wait(timeout=remaining)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        return bool(select.select([pidfd], [], [], remaining)[0])
    finally:
        os.close(pidfd)


def _parent_death_signal():
    """A function for the child to call between fork and exec (no imports or lookups there: the
    kernel may run other threads, the TUI's included): the kernel sends the command's shell SIGKILL
    when live-swe dies (``kill -9`` included), so an unconfined command does not go on writing to the
    repository while ``resume`` runs the step again. (Unconfined, what it started in the background
    may outlive it; the sandbox's PID namespace is what takes everything.) None where prctl is missing."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass

