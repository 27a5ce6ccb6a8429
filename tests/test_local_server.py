"""A local model server through the ordinary litellm path: llama-cpp-python's own OpenAI-compatible
server (``python -m llama_cpp.server``) serving the embedded SmolLM2 on loopback, reached as
``--model openai/smollm2 --api-base URL``, with streaming, a model litellm has no price for, and the
step and time budgets holding (marker ``llm``: a real model answers)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from live_swe.config import KernelLimits
from live_swe.models import catalog
from live_swe.models.litellm_model import LitellmModel
from live_swe.runner import RunHooks, RunRequest, start_run
from live_swe.session.store import SessionStore

pytestmark = [pytest.mark.llm, pytest.mark.slow]

ALIAS = "smollm2"
READY_WAIT_S = 180


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    """The server on a free loopback port, ready to answer; stopped (its process group) at the end."""
    pytest.importorskip("llama_cpp", reason="needs the local runtime: pip install 'live-swe[local]'")
    for module in ("uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings"):
        pytest.importorskip(module, reason="needs llama-cpp-python's server: pip install -e '.[dev,local]'")
    from conftest import MODELS_CACHE

    saved = os.environ.get(catalog.MODELS_DIR_ENV)
    os.environ[catalog.MODELS_DIR_ENV] = str(MODELS_CACHE)
    try:
        if not catalog.is_installed("smollm2-135m"):
            catalog.pull("smollm2-135m", print)
        path = catalog.model_path(catalog.spec_for("smollm2-135m"))
    finally:
        if saved is None:
            os.environ.pop(catalog.MODELS_DIR_ENV, None)
        else:
            os.environ[catalog.MODELS_DIR_ENV] = saved
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--model_alias", ALIAS,
             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--seed", "1234",
             "--n_threads", str(len(os.sched_getaffinity(0))), "--verbose", "False"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"},
        )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + READY_WAIT_S
        while True:
            if server.poll() is not None:
                pytest.fail(f"the llama.cpp server exited ({server.returncode}):\n{log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as answer:
                    if ALIAS in answer.read().decode():
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the llama.cpp server did not answer in {READY_WAIT_S} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(server.pid, 15)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, 9)
            server.wait()


def test_litellm_streams_a_real_model_from_a_local_server(llama_server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a local server needs none; the client asks for one
    model = LitellmModel(f"openai/{ALIAS}", api_base=llama_server, temperature=0, max_tokens=40)
    pieces: list[str] = []
    reply = model.query([{"role": "user", "content": "Name three colours."}], on_token=pieces.append)
    assert len(pieces) > 3 and "".join(pieces) == reply.content and reply.content.strip()
    assert reply.usage.prompt_tokens > 0 and 0 < reply.usage.completion_tokens <= 40
    assert reply.cost == 0.0 and f"openai/{ALIAS}: no price known" in reply.note
    again = model.query([{"role": "user", "content": "Name three colours."}])  # not streamed
    assert again.content == reply.content  # temperature 0: the same answer either way
    assert again.note == ""  # the note is given once per model


def test_a_run_through_make_model_streams_and_the_budgets_hold(llama_server, git_repo, monkeypatch):
    """The configured server (LIVE_SWE_API_BASE, LIVE_SWE_MAX_TOKENS) reached by the ordinary model
    resolution; the replies stream through the loop; cost stays $0 with one note in the log; the
    run ends on its step limit, another on its wall-time limit."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("LIVE_SWE_API_BASE", llama_server)
    monkeypatch.setenv("LIVE_SWE_MAX_TOKENS", "48")
    streamed: list[str] = []
    request = RunRequest(task="The function `add` in calc.py subtracts instead of adding. Fix it.",
                         model=f"openai/{ALIAS}", repo=git_repo,
                         limits=KernelLimits(step_limit=3, max_format_errors=3, cost_limit=0.01))
    result = start_run(request, RunHooks(on_agent=lambda agent: setattr(agent, "on_token", streamed.append)))
    assert result.status in ("limits_exceeded", "format_error"), result.message
    assert result.cost == 0.0
    events, problems = SessionStore.default().open(result.session_id).events()
    assert problems == []
    replies = [e["message"]["content"] for e in events if e["t"] == "message" and e["message"]["role"] == "assistant"]
    assert len(replies) == result.steps and "".join(streamed) == "".join(replies)
    notes = [e for e in events if e["t"] == "note"]
    assert len(notes) == 1 and notes[0]["step"] == 1 and "counts as $0" in notes[0]["text"]
    if result.status == "limits_exceeded":
        assert result.steps == 3 and "step limit" in result.message

    timed = RunRequest(task="List the files.", model=f"openai/{ALIAS}", repo=git_repo,
                       limits=KernelLimits(step_limit=50, max_format_errors=50, wall_time_limit=2))
    result = start_run(timed, RunHooks())
    assert result.status == "limits_exceeded" and "wall-time limit" in result.message and result.steps < 50


def test_the_cli_reaches_the_server_with_api_base(llama_server, git_repo, tmp_path):
    """``live-swe run --model openai/NAME --api-base URL`` in a child process: the flag wins over a
    wrong server in the config file; the note is said once on stderr; --json reports cost 0."""
    home = Path(os.environ["LIVE_SWE_HOME"])
    (home / "config.yaml").write_text("api_base: http://127.0.0.1:9/v1\nmax_tokens: 48\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    done = subprocess.run(
        [sys.executable, "-m", "live_swe.cli.main", "run", "--model", f"openai/{ALIAS}", "--api-base", llama_server,
         "--task", "Say which files exist.", "--repo", str(git_repo), "--yolo", "--step-limit", "2", "--json"],
        capture_output=True, text=True, timeout=600, env=env,
    )
    result = json.loads(done.stdout)
    assert result["status"] in ("limits_exceeded", "format_error") and result["cost"] == 0.0, done.stderr
    assert "Traceback" not in done.stderr
    meta = SessionStore.default().open(result["session_id"]).meta
    assert meta.extra["api_base"] == llama_server  # resume finds the same server
    plain = subprocess.run(
        [sys.executable, "-m", "live_swe.cli.main", "run", "--model", f"openai/{ALIAS}", "--api-base", llama_server,
         "--task", "Say which files exist.", "--repo", str(git_repo), "--yolo", "--step-limit", "2"],
        capture_output=True, text=True, timeout=600, env=env,
    )
    assert plain.stderr.count("no price known") == 1, plain.stderr
    assert "cost $0.0000" in plain.stderr
