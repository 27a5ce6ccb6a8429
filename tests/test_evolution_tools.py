"""Tools the agent writes itself mid-task: gated, registered, announced in the next observation
(the system prompt is not rewritten: its cached prefix stays valid), used, kept out of the patch;
and refused (with the reason told) when they fail a gate."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from conftest import SUBMIT, bash_reply
from test_evolution_support import (
    FIND_DEF,
    ON_EACH_ENVIRONMENT,
    environment,
    events_of,
    observation,
    run_script,
    session_dir,
    simple_tool,
    system_prompt,
    tool_reply,
    write_file_command,
)

from live_swe.evolution.history import ScaffoldHistory

CLI = [sys.executable, "-m", "live_swe.cli.main"]


@ON_EACH_ENVIRONMENT
def test_tool_created_registered_listed_used_and_kept_out_of_the_patch(git_repo, env_name, request):
    env, image = environment(request, env_name)
    result, model = run_script(git_repo, [
        tool_reply("find-def", FIND_DEF, "A tool that finds definitions saves grepping every time."),
        bash_reply("find-def add"),
        bash_reply("sed -i 's/a - b/a + b/' calc.py"),
        SUBMIT,
    ], env=env, image=image)
    assert result.status == "submitted", result.message

    # registered at the step boundary, with a commit carrying the agent's reason
    [registered] = events_of(result.session_id, "tool")
    assert registered == {**registered, "kind": "registered", "step": 1, "name": "find-def"}
    [commit] = events_of(result.session_id, "scaffold")
    assert commit["kind"] == "commit" and commit["files"] == ["tools/find-def"] and commit["step"] == 1
    assert commit["reason"] == "A tool that finds definitions saves grepping every time."
    assert "registered" in observation(model, 1)

    # announced, with its description and usage, right after the step that wrote it; the system
    # prompt stays as it was (a rewrite would make the provider's whole cached prefix worthless)
    assert ("Scaffold: tool `find-def` registered: Print where a Python function or class is defined"
            in observation(model, 1)) and "(usage: `find-def NAME`)" in observation(model, 1)
    assert "Your tools:" not in system_prompt(model, 0)
    assert all(system_prompt(model, query) == system_prompt(model, 0) for query in (1, 2, 3))
    assert events_of(result.session_id, "system") == []

    # used: it ran in the environment, on the repository
    assert "calc.py:1: def add(a, b):" in observation(model, 2)

    # the patch is the repository's change only
    assert "+    return a + b" in result.patch
    assert "find-def" not in result.patch and "live-swe-tool" not in result.patch and "scaffold" not in result.patch

    # the history has it, outside the work tree; sessions show lists it
    history = ScaffoldHistory(session_dir(result.session_id) / "scaffold.git", session_dir(result.session_id) / "scaffold")
    assert history.file_at("HEAD", "tools/find-def").decode() == FIND_DEF
    assert history.mode_at("HEAD", "tools/find-def") == 0o755
    assert not (session_dir(result.session_id) / "scaffold" / ".git").exists()
    shown = json.loads(subprocess.run([*CLI, "sessions", "show", result.session_id, "--json"], capture_output=True,
                                      text=True, check=True).stdout)
    assert shown["tools"] == ["find-def"]
    assert shown["scaffold_changes"] == [{
        "step": 1, "files": ["tools/find-def"], "accepted": True,
        "reason": "A tool that finds definitions saves grepping every time.", "kind": "commit", "why": "",
        "rev": commit["rev"],
    }]


LIST_FUNCTIONS = """#!/usr/bin/env node
// live-swe-tool: list-functions
// description: List the functions a Python file defines, with their line numbers
// usage: list-functions FILE...
const fs = require("fs");

const files = process.argv.slice(2);
if (files.length === 0 || files[0] === "--help" || files[0] === "-h") {
  console.log("usage: list-functions FILE...\\nPrints FILE:LINE: NAME for every def NAME in each file.");
  process.exit(files.length === 0 ? 2 : 0);
}
for (const file of files) {
  fs.readFileSync(file, "utf8").split("\\n").forEach((line, index) => {
    const match = /^\\s*def\\s+(\\w+)/.exec(line);
    if (match) console.log(`${file}:${index + 1}: ${match[1]}`);
  });
}
"""


def test_a_javascript_tool_with_a_comment_header_is_registered_and_used(git_repo):
    """Local only: the base image (Debian minbase) has no node; the JavaScript gates are shown on
    both environments by the refused tools below. `.ci/run` installs node on the machine."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed on this machine; a JavaScript tool cannot run here")
    result, model = run_script(git_repo, [
        tool_reply("list-functions", LIST_FUNCTIONS, "A tool that lists functions shows me the code's shape."),
        bash_reply("list-functions calc.py"),
        SUBMIT,
    ])
    assert result.status == "submitted", result.message
    [registered] = events_of(result.session_id, "tool")
    assert (registered["kind"], registered["step"], registered["name"]) == ("registered", 1, "list-functions")
    assert "list-functions" not in system_prompt(model, 2)
    assert "tool `list-functions` registered: List the functions a Python file defines" in observation(model, 1)
    assert "(usage: `list-functions FILE...`)" in observation(model, 1)
    assert "calc.py:1: add" in observation(model, 2)  # node ran it, in the environment, on the repository
    assert "list-functions" not in result.patch


SYNTAX_ERROR = """#!/usr/bin/env python3
# live-swe-tool: broken
# description: Has a syntax error
# usage: broken FILE
import sys
def main(:
    print(sys.argv)
"""

JS_SYNTAX_ERROR = """#!/usr/bin/env node
// live-swe-tool: js-bad
// description: Has a syntax error
// usage: js-bad FILE
const files = process.argv.slice(2);
if (files.length === 0 {
  console.log("usage: js-bad FILE");
}
"""

TRAVERSAL = """#!/bin/bash
# live-swe-tool: ../x
# description: Tries to live outside the tools folder
# usage: ../x
echo escaped
"""


@ON_EACH_ENVIRONMENT
def test_tools_failing_a_gate_are_refused_removed_and_explained(git_repo, env_name, request):
    env, image = environment(request, env_name)
    result, model = run_script(git_repo, [
        tool_reply("broken", SYNTAX_ERROR),
        bash_reply(write_file_command("tools/../x", TRAVERSAL) + '\nchmod +x "$LIVE_SWE_SCAFFOLD/x"'),
        tool_reply("ls", simple_tool("ls")),
        tool_reply("noexec", simple_tool("noexec"), executable=False),
        tool_reply("badhelp", simple_tool("badhelp", 'echo "no help here" >&2; exit 3')),
        tool_reply("misnamed", simple_tool("othername")),
        tool_reply("bash-bad", simple_tool("bash-bad", 'if [ -n "$1" ]; then echo yes')),
        tool_reply("js-bad", JS_SYNTAX_ERROR),
        tool_reply("ok-tool", simple_tool("ok-tool")),
        SUBMIT,
    ], env=env, image=image)
    assert result.status == "submitted", result.message
    refused = {e["name"]: e for e in events_of(result.session_id, "tool") if e["kind"] == "refused"}
    assert set(refused) == {"broken", "../x", "ls", "noexec", "badhelp", "misnamed", "bash-bad", "js-bad"}
    assert "python syntax error at line 6" in refused["broken"]["why"]
    assert "path separator" in refused["../x"]["why"]
    assert "clashes with the shell command 'ls'" in refused["ls"]["why"]
    assert "not executable" in refused["noexec"]["why"]
    assert "exited with status 3" in refused["badhelp"]["why"] and "no help here" in refused["badhelp"]["why"]
    assert "says `live-swe-tool: othername` but the file is named 'misnamed'" in refused["misnamed"]["why"]
    assert "bash syntax error" in refused["bash-bad"]["why"]
    assert "javascript syntax error at line 6 (missing ')')" in refused["js-bad"]["why"]  # the // header passed
    registered = [e["name"] for e in events_of(result.session_id, "tool") if e["kind"] == "registered"]
    assert registered == ["ok-tool"]

    # each was removed from the scaffold, and the model was told why, in the next observation
    scaffold = session_dir(result.session_id) / "scaffold"
    assert sorted(p.name for p in (scaffold / "tools").iterdir()) == ["ok-tool"]
    assert not (scaffold / "x").exists()
    assert "tool `broken` refused: python syntax error at line 6" in observation(model, 1)
    assert "tool `../x` refused" in observation(model, 2) and "removed" in observation(model, 2)
    assert "chmod +x" in observation(model, 4)
    assert "tool `js-bad` refused: javascript syntax error at line 6" in observation(model, 8)
    # never announced; the valid one is, in the next observation
    for query in range(len(model.seen)):
        assert not any(f"`{name}` registered" in model.seen[query][-1]["content"] for name in refused)
    assert "tool `ok-tool` registered: A tool (usage: `ok-tool ARGS`)" in observation(model, 9)
    # each refusal is a rejected scaffold change in the log
    rejects = [e for e in events_of(result.session_id, "scaffold") if e["kind"] == "reject"]
    assert {tuple(e["files"]) for e in rejects} >= {("tools/broken",), ("x",), ("tools/ls",), ("tools/noexec",)}


def test_a_registered_tool_edited_into_a_broken_state_is_restored_to_its_registered_version(git_repo):
    good = simple_tool("greet", 'echo "usage: greet NAME"; [ "$1" = --help ] || echo "hello $1"')
    result, model = run_script(git_repo, [
        tool_reply("greet", good),
        bash_reply("echo 'case x in' >> \"$LIVE_SWE_SCAFFOLD/tools/greet\"", "Extend the tool."),
        bash_reply("greet world"),
        SUBMIT,
    ])
    assert result.status == "submitted"
    tool = session_dir(result.session_id) / "scaffold" / "tools" / "greet"
    assert tool.read_text() == good and tool.stat().st_mode & 0o777 == 0o755
    assert "restored to its registered version" in observation(model, 2)
    assert "hello world" in observation(model, 3)
    assert "tool `greet` registered" in observation(model, 1) and "`greet` registered" not in observation(model, 2)


def test_a_tool_that_hangs_on_help_is_refused_within_the_timeout(git_repo, monkeypatch):
    import time

    from live_swe.evolution import tool_gates

    monkeypatch.setattr(tool_gates, "HELP_TIMEOUT", 1.0)
    started = time.monotonic()
    result, model = run_script(git_repo, [tool_reply("sleepy", simple_tool("sleepy", "sleep 30")), SUBMIT])
    assert result.status == "submitted"
    assert time.monotonic() - started < 25
    [refused] = events_of(result.session_id, "tool")
    assert refused["kind"] == "refused" and "did not finish within 1s" in refused["why"]
