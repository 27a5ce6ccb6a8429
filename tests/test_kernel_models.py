"""Models: litellm against a real OpenAI-compatible HTTP server on loopback; replay of trajectories."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import SUBMIT, bash_reply

from live_swe.config import KernelLimits
from live_swe.models.base import ModelError
from live_swe.models.litellm_model import LitellmModel
from live_swe.models.replay import ReplayModel
from live_swe.runner import RunHooks, RunRequest, start_run


def send_json(handler: BaseHTTPRequestHandler, payload: dict) -> None:
    data = json.dumps(payload).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class FakeOpenAI:
    """Answers /chat/completions in OpenAI's response shape; failures are queued per test."""

    def __init__(self):
        self.failures: list[int] = []
        self.requests: list[dict] = []
        self.keys: list[str] = []
        self.reply_content = bash_reply("ls")
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                fake.keys.append(self.headers.get("Authorization", ""))
                if fake.failures:
                    status = fake.failures.pop(0)
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(json.dumps({"error": {"message": f"status {status}", "type": "x"}}).encode())
                    return
                send_json(self, {
                    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": fake.reply_content}}],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
                })

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def fake_openai():
    server = FakeOpenAI()
    yield server
    server.server.shutdown()


def model_for(server, name="openai/live-swe-test-model"):
    model = LitellmModel(name, api_base=server.url, api_key="sk-test", timeout=10, max_retries=0)
    model.sleep = lambda seconds: None  # keep the backoff schedule, skip the waiting
    return model


def test_litellm_reply_usage_and_unpriced_model_counts_zero(fake_openai):
    model = model_for(fake_openai)
    reply = model.query([{"role": "user", "content": "hi"}])
    assert reply.content == bash_reply("ls")
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (11, 7)
    assert reply.cost == 0.0 and "openai/live-swe-test-model: no price known" in reply.note
    again = model.query([{"role": "user", "content": "again"}])
    assert again.cost == 0.0 and again.note == ""  # said once per model


def test_litellm_retries_server_errors_and_rate_limits(fake_openai):
    fake_openai.failures = [500, 429, 503]
    reply = model_for(fake_openai).query([{"role": "user", "content": "hi"}])
    assert reply.content
    assert len(fake_openai.requests) == 4


def test_litellm_does_not_retry_authentication_or_not_found(fake_openai):
    for status, word in ((401, "Authentication"), (404, "NotFound")):
        fake_openai.requests.clear()
        fake_openai.failures = [status]
        with pytest.raises(ModelError, match=word):
            model_for(fake_openai).query([{"role": "user", "content": "hi"}])
        assert len(fake_openai.requests) == 1


def test_litellm_model_drives_the_loop(fake_openai, git_repo):
    fake_openai.reply_content = SUBMIT
    request = RunRequest(task="nothing", model="openai/live-swe-test-model", repo=git_repo)
    result = start_run(request, RunHooks(model_factory=lambda name: model_for(fake_openai, name)))
    assert result.status == "submitted"
    assert fake_openai.requests[0]["messages"][0]["role"] == "system"


class FakeOllama:
    """Answers Ollama's /api/generate (what litellm calls for ``ollama/NAME``) with scripted replies."""

    def __init__(self, replies: list[str]):
        self.requests: list[tuple[str, dict]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                fake.requests.append((self.path, body))
                payload = {}
                if self.path == "/api/generate":
                    payload = {"model": body["model"], "created_at": "2024-01-01T00:00:00Z", "done": True,
                               "response": replies.pop(0), "prompt_eval_count": 30, "eval_count": 12}
                send_json(self, payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_ollama_model_through_the_configured_server_is_free_and_drives_the_loop(git_repo, monkeypatch):
    """``ollama/NAME`` as litellm spells it, at the server set by LIVE_SWE_API_BASE; the run is
    priced $0, said once in the log, and ends by submission."""
    from live_swe.models.resolve import make_model
    from live_swe.session.store import SessionStore

    fake = FakeOllama([bash_reply("cat calc.py"), bash_reply("sed -i 's/a - b/a + b/' calc.py"), SUBMIT])
    monkeypatch.setenv("LIVE_SWE_API_BASE", fake.url)
    try:
        model = make_model("ollama/qwen2.5-coder:1.5b")
        request = RunRequest(task="add subtracts", model="ollama/qwen2.5-coder:1.5b", repo=git_repo)
        result = start_run(request, RunHooks(model_factory=lambda _name: model))
    finally:
        fake.server.shutdown()
    assert result.status == "submitted" and result.cost == 0.0 and "a + b" in result.patch
    generated = [body for path, body in fake.requests if path == "/api/generate"]
    assert len(generated) == 3 and generated[0]["model"] == "qwen2.5-coder:1.5b"
    events, _ = SessionStore.default().open(result.session_id).events()
    notes = [e["text"] for e in events if e["t"] == "note"]
    assert len(notes) == 1 and "ollama/qwen2.5-coder:1.5b" in notes[0] and "$0" in notes[0]


def test_api_base_is_an_http_url_and_the_cli_flag_wins(monkeypatch, tmp_path):
    from live_swe.config import ConfigError, config_path, load_settings

    config_path().write_text("api_base: http://127.0.0.1:1/v1\n")
    monkeypatch.setenv("LIVE_SWE_API_BASE", "http://127.0.0.1:2/v1")
    assert load_settings().api_base == "http://127.0.0.1:2/v1"
    assert load_settings({"api_base": "http://127.0.0.1:3/v1"}).api_base == "http://127.0.0.1:3/v1"
    monkeypatch.delenv("LIVE_SWE_API_BASE")
    assert load_settings().api_base == "http://127.0.0.1:1/v1"
    with pytest.raises(ConfigError, match="api_base: .*'localhost:8080' is not an http\\(s\\) URL"):
        load_settings({"api_base": "localhost:8080"})


def test_a_session_keeps_its_server_for_resume_without_credentials(fake_openai, git_repo, monkeypatch):
    """A run at --api-base (no key set: a placeholder is sent) is resumed at the same server; a URL
    with a password is saved without it."""
    from live_swe.runner import _without_credentials, resume_run
    from live_swe.session.store import SessionStore

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    request = RunRequest(task="look around", model="openai/live-swe-test-model", repo=git_repo,
                         api_base=fake_openai.url, limits=KernelLimits(step_limit=1))
    first = start_run(request)
    assert first.status == "limits_exceeded" and len(fake_openai.requests) == 1
    assert SessionStore.default().open(first.session_id).meta.extra["api_base"] == fake_openai.url
    resumed = resume_run(first.session_id, limits=KernelLimits(step_limit=2))
    assert resumed.steps == 2 and len(fake_openai.requests) == 2
    assert fake_openai.keys == ["Bearer no-key", "Bearer no-key"]
    assert _without_credentials("http://me:secret@host:8080/v1") == "http://host:8080/v1"


def test_api_base_for_a_model_not_served_over_http_is_refused():
    from live_swe.models.resolve import make_model

    with pytest.raises(ModelError, match="--api-base is for models served over HTTP"):
        make_model("local/qwen2.5-coder-0.5b", api_base="http://127.0.0.1:8080/v1")


def test_anthropic_prompt_caching_marks_system_and_last_message():
    from live_swe.models.litellm_model import _cache_control

    marked = _cache_control([{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                             {"role": "assistant", "content": "a"}, {"role": "user", "content": "last"}])
    assert marked[0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert marked[-1]["content"][0]["text"] == "last"
    assert marked[1]["content"] == "u"


def mini_v1_trajectory():
    return {
        "info": {"exit_status": "Submitted"},
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "<pr_description>fix add</pr_description>"},
            {"role": "assistant", "content": "THOUGHT: fix it\n\n```bash\nsed -i 's/a - b/a + b/' calc.py\n```"},
            {"role": "user", "content": "<returncode>0</returncode>"},
            {"role": "assistant", "content": "THOUGHT: done\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached\n```"},
        ],
        "trajectory_format": "mini-swe-agent-1",
    }


def mini_v2_trajectory():
    def call(i, command):
        return {"id": f"call_{i}", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": command})}}

    return {
        "info": {"exit_status": "Submitted"},
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "fix add"},
            {"role": "assistant", "content": "Fixing.", "tool_calls": [call(1, "sed -i 's/a - b/a + b/' calc.py")]},
            {"role": "tool", "tool_call_id": "call_1", "content": "<returncode>0</returncode>"},
            {"role": "assistant", "content": "", "tool_calls": [call(2, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")]},
        ],
        "trajectory_format": "mini-swe-agent-1.1",
    }


def test_replay_mini_swe_agent_v1_text_trajectory(git_repo, tmp_path):
    path = tmp_path / "v1.traj.json"
    path.write_text(json.dumps(mini_v1_trajectory()))
    request = RunRequest(task="fix add", model=f"replay:{path}", repo=git_repo)
    result = start_run(request)
    assert result.status == "submitted"
    assert "+    return a + b" in result.patch


def test_replay_mini_swe_agent_v2_tool_call_trajectory(git_repo, tmp_path):
    from live_swe.scaffolding.refs import materialize

    scaffold = tmp_path / "scaffold"
    materialize("seed", scaffold)
    policy = scaffold / "scaffold.yaml"
    policy.write_text(policy.read_text().replace("action_format: text", "action_format: tool_call"))
    path = tmp_path / "v2.traj.json"
    path.write_text(json.dumps(mini_v2_trajectory()))
    model = ReplayModel.from_path(path)
    assert [c.name for r in model._replies for c in r.tool_calls] == ["bash", "bash"]
    request = RunRequest(task="fix add", model=f"replay:{path}", repo=git_repo, scaffold_ref=f"path:{scaffold}")
    result = start_run(request)
    assert result.status == "submitted"
    assert "+    return a + b" in result.patch


def test_replay_of_a_file_without_assistant_turns_is_a_clear_error(tmp_path):
    path = tmp_path / "empty.json"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    with pytest.raises(ModelError, match="no assistant messages"):
        ReplayModel.from_path(path)
