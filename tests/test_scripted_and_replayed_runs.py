"""Runs through the real loop with models given as a user gives them: a missing command is a format
error fed back and counted; scripted model files (``scripted:PATH``); ``replay:`` of our own saved
session reproduces its patch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SUBMIT, bash_reply, make_git_repo, write_script

from live_swe.models.base import Reply, ToolCall
from live_swe.models.scripted import ScriptedModel
from live_swe.runner import RunHooks, RunRequest, start_run
from live_swe.session.store import SessionStore

FIX = "sed -i 's/a - b/a + b/' calc.py"
SUBMIT_COMMAND = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
REPO_FILES = {"calc.py": "def add(a, b):\n    return a - b\n", "README.md": "# calc\n"}


def tool_call_scaffold(tmp_path: Path) -> str:
    """The seed scaffold switched to the tool-call action format, as a scaffold ref."""
    from live_swe.scaffolding.refs import materialize

    scaffold = tmp_path / "tool-call-scaffold"
    materialize("seed", scaffold)
    policy = scaffold / "scaffold.yaml"
    text = policy.read_text()
    assert "action_format: text" in text
    policy.write_text(text.replace("action_format: text", "action_format: tool_call"))
    return f"path:{scaffold}"


def run(repo, model: str, *, scripted: ScriptedModel | None = None, scaffold_ref="seed"):
    """Start a run; with ``scripted`` the model is injected, else ``model`` is resolved as a user's would be."""
    hooks = RunHooks(model_factory=lambda name: scripted) if scripted else None
    return start_run(RunRequest(task="Make add() add.", model=model, repo=repo, scaffold_ref=scaffold_ref), hooks)


def session_events(session_id: str) -> list[dict]:
    return SessionStore.default().open(session_id).events()[0]


def format_errors(session_id: str) -> list[dict]:
    return [e for e in session_events(session_id) if e["t"] == "format_error"]


# 1. A missing command is a format error, fed back and counted.


def test_empty_bash_block_is_a_format_error_fed_back_and_counted(git_repo):
    model = ScriptedModel([Reply("THOUGHT: hmm\n\n```bash\n```"), Reply("```bash\n   \n```"),
                           Reply(bash_reply(FIX)), Reply(SUBMIT)])
    result = run(git_repo, "scripted:test", scripted=model)
    assert result.status == "submitted"
    assert "+    return a + b" in result.patch
    for seen in model.seen[1:3]:
        assert seen[-1]["role"] == "user" and "the ```bash block is empty" in seen[-1]["content"]
    errors = format_errors(result.session_id)
    assert [e["consecutive"] for e in errors] == [1, 2]
    assert all("empty" in e["reason"] for e in errors)


def test_bash_tool_call_without_command_is_a_format_error_fed_back_and_counted(git_repo, tmp_path):
    model = ScriptedModel([
        Reply("No arguments.", (ToolCall("c1", "bash", "{}"),)),
        Reply("Wrong argument name.", (ToolCall("c2", "bash", '{"cmd": "ls"}'),)),
        Reply("Blank command.", (ToolCall("c3", "bash", '{"command": "  "}'),)),
        Reply("Fixing.", (ToolCall("c4", "bash", json.dumps({"command": FIX})),)),
        Reply("", (ToolCall("c5", "bash", json.dumps({"command": SUBMIT_COMMAND})),)),
    ])
    result = run(git_repo, "scripted:test", scripted=model, scaffold_ref=tool_call_scaffold(tmp_path))
    assert result.status == "submitted"
    assert "+    return a + b" in result.patch
    for seen, call_id in zip(model.seen[1:4], ("c1", "c2", "c3"), strict=True):
        assert seen[-1]["role"] == "tool" and seen[-1]["tool_call_id"] == call_id
        assert "the `bash` call has no `command` argument" in seen[-1]["content"]
    assert [e["consecutive"] for e in format_errors(result.session_id)] == [1, 2, 3]


# 2. Scripted model files, resolved from ``scripted:PATH`` as a user gives them.


def test_scripted_json_list_file_runs_end_to_end(git_repo, tmp_path):
    script = tmp_path / "replies.json"
    script.write_text(json.dumps([bash_reply(FIX), SUBMIT]))
    result = run(git_repo, f"scripted:{script}")
    assert result.status == "submitted" and result.steps == 2
    assert "+    return a + b" in result.patch


def test_scripted_yaml_content_and_tool_calls_entries_run_in_tool_call_format(git_repo, tmp_path):
    script = write_script(tmp_path / "replies.yaml", [
        # arguments as an object, no id: the id is made up and answered
        {"content": "Fixing.", "tool_calls": [{"name": "bash", "arguments": {"command": FIX}}]},
        # arguments as JSON text, with an id
        {"content": "Adding a file.", "tool_calls": [
            {"id": "mine", "name": "bash", "arguments": json.dumps({"command": "echo 'x = 1' > new.py"})}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": SUBMIT_COMMAND}}]},
    ])
    result = run(git_repo, f"scripted:{script}", scaffold_ref=tool_call_scaffold(tmp_path))
    assert result.status == "submitted" and result.steps == 3
    assert "+    return a + b" in result.patch and "+x = 1" in result.patch
    messages = [e["message"] for e in session_events(result.session_id) if e["t"] == "message"]
    assistant = [m for m in messages if m["role"] == "assistant"]
    assert [m["content"] for m in assistant] == ["Fixing.", "Adding a file.", ""]
    assert json.loads(assistant[0]["tool_calls"][0]["function"]["arguments"]) == {"command": FIX}
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert answered == [assistant[0]["tool_calls"][0]["id"], "mine"]


# 3. ``replay:`` of our own saved session reproduces its patch in a fresh copy of the repository.


@pytest.mark.parametrize("action_format,source", [("text", "directory"), ("tool_call", "events.jsonl")])
def test_replay_of_our_own_session_gives_the_same_patch(git_repo, tmp_path, action_format, source):
    scaffold_ref = tool_call_scaffold(tmp_path) if action_format == "tool_call" else "seed"

    def step(command, call_id):
        if action_format == "text":
            return Reply(bash_reply(command))
        return Reply("Step.", (ToolCall(call_id, "bash", json.dumps({"command": command})),))

    original = run(git_repo, "scripted:test", scaffold_ref=scaffold_ref, scripted=ScriptedModel([
        step(FIX, "c1"),
        Reply("no action here"),  # a format error: replayed too, and harmless again
        step("mkdir -p pkg && echo 'y = 2' > pkg/mod.py", "c2"),
        step(SUBMIT_COMMAND, "c3"),
    ]))
    assert original.status == "submitted"
    assert "+    return a + b" in original.patch and "+y = 2" in original.patch

    directory = SessionStore.default().open(original.session_id).dir
    path = directory if source == "directory" else directory / "events.jsonl"
    fresh = make_git_repo(tmp_path / "fresh", REPO_FILES)
    replayed = run(fresh, f"replay:{path}", scaffold_ref=scaffold_ref)
    assert replayed.status == "submitted"
    assert replayed.steps == original.steps
    assert replayed.patch == original.patch
    assert replayed.session_id != original.session_id


def test_replay_reads_a_log_with_unknown_kinds_and_damaged_lines(git_repo, tmp_path):
    """A saved log may come from a newer live-swe or have been damaged: ``replay:`` skips what it cannot
    read (a torn line, a message record without its message) and a kind it does not know, and replays
    the rest to the same patch."""
    from live_swe.models.replay import load_trajectory

    original = run(git_repo, "scripted:test", scripted=ScriptedModel([Reply(bash_reply(FIX)), Reply(SUBMIT)]))
    assert original.status == "submitted"
    lines = (SessionStore.default().open(original.session_id).dir / "events.jsonl").read_text().splitlines()
    first_reply = next(i for i, line in enumerate(lines) if '"role": "assistant"' in line)
    damaged = lines[:first_reply] + [
        json.dumps({"t": "from_a_newer_live_swe", "step": 1, "message": {"role": "assistant", "content": "x"}}),
        '{"t": "message", "step": 1, "message": {"role": "assis',  # torn mid-line
        json.dumps({"t": "message", "step": 1}),  # a message record without its message
        json.dumps({"t": "message", "step": 1, "message": "not an object"}),
    ] + lines[first_reply:]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(damaged) + "\n")

    assert [reply.content for reply in load_trajectory(path)] == [bash_reply(FIX), SUBMIT]
    replayed = run(make_git_repo(tmp_path / "fresh", REPO_FILES), f"replay:{path}")
    assert replayed.status == "submitted" and replayed.patch == original.patch
