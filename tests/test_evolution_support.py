"""Shared pieces of the self-evolution tests (no tests here): scripted runs on the local or the
docker environment, tool sources the scripted model writes, and event helpers."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from conftest import bash_reply

from live_swe.config import KernelLimits
from live_swe.models.base import Reply
from live_swe.models.scripted import ScriptedModel
from live_swe.runner import RunHooks, RunRequest, start_run
from live_swe.session.store import SessionStore

FIND_DEF = r'''#!/usr/bin/env python3
# live-swe-tool: find-def
# description: Print where a Python function or class is defined in the repository
# usage: find-def NAME
import pathlib
import re
import sys

if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
    print("usage: find-def NAME\nPrints file:line of every `def NAME` or `class NAME` under the current folder.")
    sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)
pattern = re.compile(r"^\s*(def|class)\s+" + re.escape(sys.argv[1]) + r"\b")
for path in sorted(pathlib.Path(".").rglob("*.py")):
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if pattern.match(line):
            print(f"{path}:{number}: {line.strip()}")
'''


def simple_tool(name: str, body: str = 'echo "usage: NAME ARGS"', shebang: str = "#!/bin/bash") -> str:
    """A small tool (bash by default) with a valid header; NAME in ``body`` becomes the name."""
    return f"{shebang}\n# live-swe-tool: {name}\n# description: A tool\n# usage: {name} ARGS\n{body.replace('NAME', name)}\n"


def write_file_command(relative: str, text: str, *, executable: bool = False) -> str:
    """A bash command writing ``text`` to ``$LIVE_SWE_SCAFFOLD/relative`` (a here-document)."""
    target = f'"$LIVE_SWE_SCAFFOLD"/{shlex.quote(relative)}'
    command = f"cat > {target} <<'LIVE_SWE_EOF'\n{text.rstrip()}\nLIVE_SWE_EOF"
    if executable:
        command += f"\nchmod +x {target}"
    return command


def tool_reply(name: str, text: str, thought: str = "A tool of my own will make this faster.", **kw) -> str:
    return bash_reply(write_file_command(f"tools/{name}", text, executable=kw.get("executable", True)), thought)


def run_script(repo: Path, replies: list, *, env: str = "local", image: str | None = None,
               limits: KernelLimits | None = None, scaffold_ref: str = "seed", task: str = "Make add() add."):
    model = ScriptedModel([r if isinstance(r, Reply) else Reply(r) for r in replies])
    request = RunRequest(task=task, model="scripted:test", repo=repo, env=env, image=image,
                         limits=limits or KernelLimits(), scaffold_ref=scaffold_ref)
    result = start_run(request, RunHooks(model_factory=lambda name: model))
    return result, model


def events_of(session_id: str, kind: str | None = None) -> list[dict]:
    events = SessionStore.default().open(session_id).events()[0]
    return [e for e in events if kind is None or e.get("t") == kind]


def session_dir(session_id: str) -> Path:
    return SessionStore.default().open(session_id).dir


def observation(model: ScriptedModel, step: int) -> str:
    """What the model read after ``step`` (the last message of the next query)."""
    return model.seen[step][-1]["content"]


def system_prompt(model: ScriptedModel, query: int) -> str:
    return model.seen[query][0]["content"]


# Each main scenario runs on the local environment and in a real Docker container.
ON_EACH_ENVIRONMENT = pytest.mark.parametrize("env_name", ["local", pytest.param("docker", marks=pytest.mark.docker)])


def environment(request, env_name: str) -> tuple[str, str | None]:
    """(environment, image) for ``run_script``; the docker one needs the engine and the base image."""
    if env_name == "docker":
        return "docker", request.getfixturevalue("base_image")
    return "local", None
