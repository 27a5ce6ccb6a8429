"""Shared by the attack suites (no tests here): the real CLI in a subprocess with a scripted model
whose replies are the attack, and reading back what the agent saw and what the session logged.

The kernel is the CLI process: it holds a fake provider key in its environment, so a leak of any
kind shows up as that value somewhere the agent's code could read."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

from conftest import write_script

from live_swe.session.store import SessionStore

CLI = [sys.executable, "-m", "live_swe.cli.main"]


def fake_key() -> str:
    return f"sk-test-{secrets.token_hex(12)}"


def kernel_environment(key: str, **extra: str) -> dict[str, str]:
    """The CLI's environment: this one plus a provider key that must never reach agent code."""
    env = {**os.environ, "OPENAI_API_KEY": key, "GITHUB_TOKEN": key.replace("sk-test-", "ghp_"), **extra}
    env.pop("LIVE_SWE_MODEL", None)
    return env


def run_cli(repo: Path, replies: list[str], script_dir: Path, *args: str, env: dict[str, str] | None = None,
            timeout: float = 180) -> subprocess.CompletedProcess:
    script = write_script(script_dir / f"attack-{secrets.token_hex(4)}.yaml", replies)
    return subprocess.run([*CLI, "run", "--task", "Fix the bug.", "--repo", str(repo), "--model", f"scripted:{script}",
                           "--yolo", "--json", *args], capture_output=True, text=True, env=env, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def start_cli(repo: Path, replies: list[str], script_dir: Path, *args: str, env: dict[str, str] | None = None,
              **popen) -> subprocess.Popen:
    """The CLI started in its own process group (as a terminal runs it), not waited for."""
    script = write_script(script_dir / f"attack-{secrets.token_hex(4)}.yaml", replies)
    return subprocess.Popen([*CLI, "run", "--task", "Fix the bug.", "--repo", str(repo), "--model",
                             f"scripted:{script}", "--yolo", *args], env=env, stdin=subprocess.DEVNULL,
                            start_new_session=True, **popen)


def result_of(completed: subprocess.CompletedProcess) -> dict:
    lines = [line for line in completed.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no JSON result; exit {completed.returncode}; stderr: {completed.stderr[-2000:]}"
    return json.loads(lines[-1])


def only_session():
    sessions = SessionStore.default().list()
    assert len(sessions) == 1, [s.id for s in sessions]
    return SessionStore.default().open(sessions[0].id)


def events(session_id: str, kind: str | None = None) -> list[dict]:
    logged = SessionStore.default().open(session_id).events()[0]
    return [e for e in logged if kind is None or e.get("t") == kind]


def observations(session_id: str) -> list[str]:
    """What the model was told after each step, in order."""
    return [e["message"]["content"] for e in events(session_id, "message")
            if e["message"].get("role") in ("user", "tool") and e.get("step", 0) > 0]


def everything_logged(session_id: str) -> str:
    directory = SessionStore.default().open(session_id).dir
    return "\n".join(path.read_text(errors="replace") for path in sorted(directory.glob("*")) if path.is_file())


def output_of(observation: str) -> str:
    """The command's output inside an observation (without the return code and the notes after it)."""
    return observation.split("<output>\n", 1)[-1].split("</output>", 1)[0]
