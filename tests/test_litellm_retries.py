"""litellm models against a real OpenAI-compatible server on loopback: timeouts are retried,
context-window errors are not."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from live_swe.models.base import ModelError
from live_swe.models.litellm_model import LitellmModel

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
