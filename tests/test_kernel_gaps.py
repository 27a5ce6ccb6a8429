"""Kernel requirements the other kernel tests leave open: missing commands, script files,
replay of our own sessions, the local environment's edges, model resolution, litellm retries."""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from conftest import SUBMIT, bash_reply, live_processes, make_git_repo, wait_until_no_process, write_script

from live_swe.config import load_settings
from live_swe.environments.base import OUTPUT_CAP_BYTES
from live_swe.environments.local import LocalEnvironment
from live_swe.models.base import ModelError, Reply, ToolCall
from live_swe.models.litellm_model import LitellmModel
from live_swe.models.resolve import LOCAL_DEFAULT, PROVIDER_DEFAULTS, default_model_name
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


# 4. The local environment: closed stdin, a timeout kills the whole process group, an output cap.


@pytest.fixture
def open_stdin():
    """Our own stdin is a pipe nobody writes to or closes: a command that inherited it would hang."""
    read_end, write_end = os.pipe()
    saved = os.dup(0)
    os.dup2(read_end, 0)
    try:
        yield
    finally:
        os.dup2(saved, 0)
        for fd in (saved, read_end, write_end):
            os.close(fd)


def test_local_commands_get_a_closed_stdin(git_repo, open_stdin):
    env = LocalEnvironment(git_repo)
    started = time.monotonic()
    output = env.execute("cat; read -r line; echo read=$?", timeout=5)
    assert time.monotonic() - started < 3
    assert not output.timed_out and output.returncode == 0
    assert output.text.strip() == "read=1"  # end of input at once


@pytest.mark.parametrize("sandbox", ["bubblewrap", "none"])
def test_local_timeout_kills_the_commands_children_too(git_repo, sandbox):
    token = f"30{os.getpid()}.{len(sandbox)}"  # a sleep nothing else on this machine runs
    env = LocalEnvironment(git_repo, sandbox=sandbox)
    try:
        output = env.execute(f"sleep {token} & wait", timeout=1)
        assert output.timed_out and output.returncode == -1
        assert wait_until_no_process(f"sleep\0{token}") == [], "the background child outlived the timed-out command"
    finally:
        env.close()
        for pid in live_processes(f"sleep\0{token}"):
            os.kill(pid, 9)


def test_local_output_is_capped_in_memory_with_a_note(git_repo):
    total = OUTPUT_CAP_BYTES + 3_000_000
    output = LocalEnvironment(git_repo).execute(f"head -c {total} /dev/zero | tr '\\0' x; echo", timeout=30)
    assert output.returncode == 0 and not output.timed_out
    kept, _, note = output.text.partition("\n[live-swe: ")
    assert kept == "x" * OUTPUT_CAP_BYTES
    assert note == f"{total + 1 - OUTPUT_CAP_BYTES} more bytes of output were dropped]"


# 5. Model resolution: --model > LIVE_SWE_MODEL > config file > provider key > pulled local model > error.


@pytest.fixture
def no_local_model(tmp_path, monkeypatch) -> Path:
    """An empty models folder, so a model pulled on this machine does not decide the result."""
    folder = tmp_path / "models"
    folder.mkdir()
    monkeypatch.setenv("LIVE_SWE_MODELS_DIR", str(folder))
    return folder


def pull_local_default(models: Path) -> None:
    """A complete-looking pulled file (sparse: the size is what marks it complete)."""
    from live_swe.models.catalog import model_path, spec_for

    spec = spec_for(LOCAL_DEFAULT)
    path = model_path(spec)
    assert path.parent == models
    with open(path, "wb") as handle:
        handle.truncate(spec.size)


def resolved(cli_model: str | None = None) -> str:
    """What ``live-swe run`` resolves: settings merged from every source, then the defaults."""
    return default_model_name(load_settings({"model": cli_model}).model)


def write_config(home: Path, model: str) -> None:
    (home / "config.yaml").write_text(yaml.safe_dump({"model": model}))


def test_model_resolution_order(live_swe_home, no_local_model, monkeypatch):
    pull_local_default(no_local_model)
    assert resolved() == LOCAL_DEFAULT
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert resolved() == "openai/gpt-5-mini"
    write_config(live_swe_home, "ollama/from-config")
    assert resolved() == "ollama/from-config"
    monkeypatch.setenv("LIVE_SWE_MODEL", "ollama/from-env")
    assert resolved() == "ollama/from-env"
    assert resolved("ollama/from-cli") == "ollama/from-cli"


def test_an_empty_live_swe_model_falls_through_to_the_config_file(live_swe_home, no_local_model, monkeypatch):
    write_config(live_swe_home, "ollama/from-config")
    monkeypatch.setenv("LIVE_SWE_MODEL", "")
    assert resolved() == "ollama/from-config"


@pytest.mark.parametrize("variable,model", PROVIDER_DEFAULTS)
def test_each_provider_key_gives_its_default(no_local_model, monkeypatch, variable, model):
    pull_local_default(no_local_model)  # a key beats the pulled local model
    monkeypatch.setenv(variable, "key")
    assert resolved() == model
    assert model.split("/")[0] in variable.lower()


def test_with_no_model_anywhere_the_error_lists_the_options(no_local_model):
    with pytest.raises(ModelError) as error:
        resolved()
    message = str(error.value)
    for option in ("--model", "LIVE_SWE_MODEL", "live-swe models pull qwen2.5-coder-0.5b",
                   *(variable for variable, _ in PROVIDER_DEFAULTS)):
        assert option in message


def test_an_incomplete_local_model_does_not_count_as_pulled(no_local_model):
    from live_swe.models.catalog import model_path, spec_for

    model_path(spec_for(LOCAL_DEFAULT)).write_bytes(b"partial download")
    with pytest.raises(ModelError, match="no model to use"):
        resolved()


# 6. litellm: timeouts are retried, context-window errors are not.


class ScriptedServer:
    """An OpenAI-compatible /chat/completions on loopback; each request takes the next planned answer:
    ``("sleep", seconds)`` answers late, ``(status, error)`` fails, and with none left it succeeds."""

    def __init__(self):
        self.plan: list[tuple] = []
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests += 1
                status, payload = 200, {
                    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": "answered"}}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
                }
                if server.plan:
                    kind, detail = server.plan.pop(0)
                    if kind == "sleep":
                        time.sleep(detail)
                    else:
                        status, payload = kind, {"error": detail}
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting: that is the point of a late answer

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()


@pytest.fixture
def openai_server():
    server = ScriptedServer()
    yield server
    server.http.shutdown()
    server.http.server_close()


def litellm_model(server: ScriptedServer, timeout: float = 10) -> tuple[LitellmModel, list[float]]:
    model = LitellmModel("openai/live-swe-test-model", api_base=server.url, api_key="sk-test", timeout=timeout,
                         max_retries=0)
    waits: list[float] = []
    model.sleep = waits.append  # keep the backoff schedule, skip the waiting
    return model, waits


def test_litellm_retries_a_timed_out_request(openai_server):
    openai_server.plan = [("sleep", 3), ("sleep", 3)]
    model, waits = litellm_model(openai_server, timeout=1)
    reply = model.query([{"role": "user", "content": "hi"}])
    assert reply.content == "answered"
    assert openai_server.requests == 3
    assert len(waits) == 2  # one backoff per timeout; an awaited late answer would have ended at 1 request


def test_litellm_does_not_retry_a_context_window_error(openai_server):
    openai_server.plan = [(400, {
        "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in "
                   "9000 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
    })]
    model, waits = litellm_model(openai_server)
    with pytest.raises(ModelError, match="ContextWindowExceeded"):
        model.query([{"role": "user", "content": "a very long history"}])
    assert openai_server.requests == 1
    assert waits == []
