"""Run each command in a fresh subprocess in the repository on this machine."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
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
        chunks: list[bytes] = []
        dropped = [0]

        def read() -> None:
            size = 0
            assert process.stdout is not None
            for chunk in iter(lambda: process.stdout.read(65536), b""):
                if size < OUTPUT_CAP_BYTES:
                    chunks.append(chunk[: OUTPUT_CAP_BYTES - size])
                    dropped[0] += max(0, len(chunk) - (OUTPUT_CAP_BYTES - size))
                else:
                    dropped[0] += len(chunk)
                size += len(chunk)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        timed_out = False
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process)
            process.wait()
        reader.join(timeout=5)
        text = b"".join(chunks).decode("utf-8", errors="replace")
        if dropped[0]:
            text += f"\n[live-swe: {dropped[0]} more bytes of output were dropped]"
        return Output(text=text, returncode=process.returncode if not timed_out else -1, timed_out=timed_out)

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


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
