"""Run each command in a fresh subprocess in the repository on this machine."""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import time
from pathlib import Path

from live_swe.environments.base import OUTPUT_CAP_BYTES, EnvironmentError_, Output

# Variables that must never reach commands the agent writes.
_SECRET_MARKERS = ("API_KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")


def scrubbed_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The host environment without credentials, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not any(m in k.upper() for m in _SECRET_MARKERS)}
    env.update(extra or {})
    env.setdefault("PAGER", "cat")
    env.setdefault("GIT_PAGER", "cat")
    return env


class LocalEnvironment:
    def __init__(self, repo_dir: str | Path, *, scaffold_dir: str | Path | None = None, tools_subdir: str = "tools"):
        repo = Path(repo_dir).resolve()
        if not repo.is_dir():
            raise EnvironmentError_(f"{repo}: repository directory does not exist")
        self.repo_dir = str(repo)
        self.scaffold_dir = str(Path(scaffold_dir).resolve()) if scaffold_dir else ""
        extra = {}
        if self.scaffold_dir:
            extra["LIVE_SWE_SCAFFOLD"] = self.scaffold_dir
            extra["PATH"] = f"{self.scaffold_dir}/{tools_subdir}:{os.environ.get('PATH', '')}"
        self._env = scrubbed_environment(extra)
        self._running: subprocess.Popen | None = None

    def execute(self, command: str, timeout: float) -> Output:
        process = subprocess.Popen(
            ["bash", "-c", command],
            cwd=self.repo_dir,
            env=self._env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group, so a timeout kills its children too
        )
        self._running = process
        try:
            text, dropped, timed_out = _read_until_eof(process, timeout)
            if timed_out:
                _kill_group(process)
            process.wait()
        finally:
            self._running = None
        if dropped:
            text += f"\n[live-swe: {dropped} more bytes of output were dropped]"
        return Output(text=text, returncode=-1 if timed_out else process.returncode, timed_out=timed_out)

    def interrupt(self) -> None:
        """Kill the running command and its children (from another thread: the TUI quitting)."""
        process = self._running
        if process is not None:
            _kill_group(process)

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
        pass


def _read_until_eof(process: subprocess.Popen, timeout: float) -> tuple[str, int, bool]:
    """Read merged output until every writer closed it or the deadline passed.

    A selector wait, not polling: the per-command overhead stays in the sub-millisecond range.
    Returns (text, bytes dropped past the cap, timed out).
    """
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    kept = dropped = 0
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                return b"".join(chunks).decode("utf-8", errors="replace"), dropped, True
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                break
            room = max(0, OUTPUT_CAP_BYTES - kept)
            chunks.append(chunk[:room])
            kept += min(room, len(chunk))
            dropped += max(0, len(chunk) - room)
    return b"".join(chunks).decode("utf-8", errors="replace"), dropped, False


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def repository_problem(path: Path) -> str | None:
    """Why ``path`` cannot be worked in (not a directory, not a git repository with a commit), or None."""
    if not Path(path).is_dir():
        return f"{path}: repository directory does not exist"
    try:
        out = subprocess.run(["git", "-C", str(path), "rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
                             capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{path}: cannot run git there ({exc})"
    if out.returncode == 0:
        return None
    said = f" (git said: {out.stderr.strip()[:200]})" if out.stderr.strip() else ""
    return (f"{path} is not a git repository with at least one commit{said}. "
            "Run `git init && git add -A && git commit -m init` there first.")
