"""A secret the kernel holds (a provider key, GITHUB_TOKEN) leaks into what a command prints — here
from a file in the repository, as a command could read it from anywhere — plainly, base64-encoded,
as git's basic-auth header, JSON-escaped, into a tool the agent registers and into the patch. It
reaches neither the model, nor the event log, nor meta.json, patch.diff, `sessions show/export/log`,
nor `run --json`. The real loop with a scripted model, the real CLI."""

from __future__ import annotations

import base64
import json
import os
import subprocess

import pytest
from attack_helpers import CLI, cli
from conftest import SUBMIT, bash_reply, make_git_repo, write_script
from test_evolution_support import session_dir

from live_swe.models.base import Reply
from live_swe.models.scripted import ScriptedModel
from live_swe.runner import RunHooks, RunRequest, start_run

KEY = "sk-ant-api03-" + "Zq8xW2vBn5" * 5
TOKEN = "ghs_" + "T0k3nValue" * 3
LEAK = f"ANTHROPIC_API_KEY={KEY}\nGITHUB_TOKEN={TOKEN}\n"

REPLIES = [
    bash_reply("cat config/leak.env", "Look at the config."),
    bash_reply("base64 -w0 config/leak.env; echo; base64 -w0 < <(printf 'xy'; cat config/leak.env); echo"),
    bash_reply("printf 'x-access-token:%s' \"$(sed -n 's/^GITHUB_TOKEN=//p' config/leak.env)\" | base64 -w0; echo"),
    bash_reply("python3 -c 'import json; print(json.dumps({\"env\": open(\"config/leak.env\").read()}))'"),
    bash_reply("{ printf '#!/bin/sh\\n# live-swe-tool: leaky\\n# description: calls the API with '; "
               "sed -n 's/^ANTHROPIC_API_KEY=//p' config/leak.env; printf '# usage: leaky\\necho usage: leaky\\n'; } "
               "> \"$LIVE_SWE_SCAFFOLD/tools/leaky\" && chmod +x \"$LIVE_SWE_SCAFFOLD/tools/leaky\"", "A tool."),
    bash_reply("cp config/leak.env notes.txt && sed -i 's/a - b/a + b/' calc.py", "Fix it."),
    SUBMIT,
]


def encoded_forms(value: str) -> list[str]:
    """Pieces of ``value``'s base64 encoding, at each byte alignment, that only ``value`` determines."""
    pieces = []
    for prefix in (b"", b"x", b"xy"):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(prefix + value.encode()).decode()
            pieces.append(encoded[4:-4])
    return pieces


SECRET_FORMS = [KEY, TOKEN, *encoded_forms(KEY), *encoded_forms(TOKEN),
                base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()[20:-4]]


def leaked(text: str) -> list[str]:
    return [form for form in SECRET_FORMS if form in text]


@pytest.fixture
def leaky(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    return make_git_repo(tmp_path / "repo", {"calc.py": "def add(a, b):\n    return a - b\n", "config/leak.env": LEAK})


def test_a_leaked_key_reaches_neither_the_model_nor_any_session_file_or_export(leaky):
    model = ScriptedModel([Reply(r) for r in REPLIES])
    result = start_run(RunRequest(task="Fix add", model="scripted:test", repo=leaky),
                       RunHooks(model_factory=lambda name: model))
    assert result.status == "submitted", result.message
    sent = json.dumps(model.seen)
    assert leaked(sent) == []
    assert "ANTHROPIC_API_KEY=***" in sent and "GITHUB_TOKEN=***" in sent  # it did leak, and was masked
    assert "calls the API with ***" in sent  # the tool's description, in the system prompt
    folder = session_dir(result.session_id)
    for name in ("events.jsonl", "meta.json", "patch.diff"):
        assert leaked((folder / name).read_text()) == [], name
    # the copy of the leaked file never reaches the patch (the contract undid it); the fix does
    patch = (folder / "patch.diff").read_text()
    assert "notes.txt" not in patch and "ANTHROPIC_API_KEY" not in patch and "+    return a + b" in patch
    env = {**os.environ, "ANTHROPIC_API_KEY": KEY, "GITHUB_TOKEN": TOKEN}
    for args in (["show", result.session_id], ["show", result.session_id, "--json"], ["export", result.session_id],
                 ["log", result.session_id, "--json"], ["list", "--json"]):
        out = cli("sessions", *args, env=env)
        assert out.returncode == 0, out.stderr
        assert leaked(out.stdout + out.stderr) == [], args


def test_run_json_prints_no_secret(leaky, tmp_path):
    script = write_script(tmp_path / "s.yaml", REPLIES)
    env = {**os.environ, "ANTHROPIC_API_KEY": KEY, "GITHUB_TOKEN": TOKEN}
    out = subprocess.run([*CLI, "run", "-t", "Fix add", "--repo", str(leaky), "-m", f"scripted:{script}", "--yolo",
                          "--json"], capture_output=True, text=True, env=env, timeout=180, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert "notes.txt" not in result["patch"] and "+    return a + b" in result["patch"]
    assert leaked(out.stdout + out.stderr) == []


def test_a_hook_that_adds_a_secret_to_the_messages_is_redacted_too(leaky):
    """The agent copies the leaked key into its hooks, which add it to every query."""
    write_hooks = bash_reply(
        "key=$(sed -n 's/^ANTHROPIC_API_KEY=//p' config/leak.env) && "
        "printf 'def transform_messages(messages, step):\\n"
        "    return messages + [{\"role\": \"user\", \"content\": \"note: %s\"}]\\n' \"$key\" "
        "> \"$LIVE_SWE_SCAFFOLD/hooks.py\"", "A hook.")
    model = ScriptedModel([Reply(r) for r in [write_hooks, bash_reply("echo hi"), SUBMIT]])
    result = start_run(RunRequest(task="Fix add", model="scripted:test", repo=leaky),
                       RunHooks(model_factory=lambda name: model))
    assert result.status == "submitted", result.message
    assert KEY in (session_dir(result.session_id) / "scaffold" / "hooks.py").read_text()  # the hook holds it
    assert "note: ***" in json.dumps(model.seen[-1])
    assert leaked(json.dumps(model.seen)) == []


def test_batch_predictions_and_results_never_hold_a_key(tmp_path, monkeypatch):
    """preds.jsonl goes to the harness and is often shared: a patch that carries the key (a command
    copied it into a file) is written masked, plainly and in its encoded forms."""
    from live_swe.bench.preds import JsonlAppender, read_preds

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    patch = f"+api_key = {KEY}\n+encoded = {base64.b64encode(KEY.encode()).decode()}\n"
    with JsonlAppender(tmp_path / "preds.jsonl") as preds:
        preds.append({"instance_id": "x__y-1", "model_name_or_path": "m", "model_patch": patch})
    written = (tmp_path / "preds.jsonl").read_text()
    assert not [form for form in [KEY, *encoded_forms(KEY)] if form in written]
    assert "***" in read_preds(tmp_path / "preds.jsonl")["x__y-1"]["model_patch"]
