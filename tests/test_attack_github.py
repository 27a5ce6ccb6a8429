"""Attacks on the issue-to-pull-request flow: hooks planted in the checkout's .git, a rewritten
origin and a url rewrite, secrets in what the agent wrote, and the session artifact the workflow
uploads. A fake GitHub on loopback, a real bare repository as origin, the real runner and the action's
own script run by bash."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

from attack_helpers import plant_traps, sprung
from conftest import SUBMIT, bash_reply, make_git_repo, run_git, write_script
from fake_github import FakeGitHub
from test_evolution_support import FIND_DEF, tool_reply
from test_github_action import (
    BASE_INPUTS,
    action,
    example_workflow,
    fake_venv,
    outputs,
    run_step,
    step_environment,
)
from test_github_resolve import BRANCH, FIX, _replies, client, origin_has

from live_swe.github.resolve import ResolveOptions, resolve_issue
from live_swe.models.scripted import ScriptedModel
from live_swe.runner import RunHooks

PROVIDER_KEY = "sk-proj-" + "Pr0v1derK3y" * 4


def resolve_with(fake, checkout, replies, observers=()):
    options = ResolveOptions(repo=fake.repo, issue=7, workdir=checkout, model="scripted:test", actor="maint")
    hooks = RunHooks(model_factory=lambda name: ScriptedModel(_replies(replies), name=name), observers=list(observers))
    return resolve_issue(options, client(fake), hooks)


def test_hooks_planted_in_the_checkout_never_run_and_the_push_goes_to_the_recorded_origin(
        fake, world, tmp_path, monkeypatch):
    origin, checkout = world
    monkeypatch.setenv("OPENAI_API_KEY", PROVIDER_KEY)
    evil = tmp_path / "evil.git"
    subprocess.run(["git", "init", "-q", "--bare", str(evil)], check=True)
    planted = []

    def plant(event):
        """While the agent runs, its .git gets hooks and programs, and origin points elsewhere (as the
        agent could write them without a sandbox; planted here so the kernel's side is what is tested)."""
        if event.get("t") == "step" and not planted:
            planted.append(plant_traps(checkout / ".git"))
            config = ["git", "config", "--file", str(checkout / ".git" / "config")]
            subprocess.run([*config, "remote.origin.url", str(evil)], check=True)
            subprocess.run([*config, f"url.{evil}.insteadOf", str(origin)], check=True)
            subprocess.run([*config, f"url.{evil}.pushInsteadOf", str(origin)], check=True)

    outcome = resolve_with(fake, checkout, [bash_reply("ls"), FIX, SUBMIT], observers=[plant])
    assert planted and sprung(planted[0]) == ""  # no hook saw GITHUB_TOKEN or the provider key
    assert outcome.status == "opened", outcome.message
    assert origin_has(origin, BRANCH) and run_git(origin, "show", f"{BRANCH}:calc.py").endswith("a + b\n")
    assert not origin_has(evil, BRANCH)
    assert run_git(evil, "for-each-ref") == ""


def test_pull_request_and_comments_hold_no_form_of_a_secret(fake, world, monkeypatch):
    origin, checkout = world
    monkeypatch.setenv("OPENAI_API_KEY", PROVIDER_KEY)
    encoded = base64.b64encode(PROVIDER_KEY.encode()).decode()
    replies = [tool_reply("find-def", FIND_DEF, f"Cache {encoded} and {fake.token} with a tool."), FIX, SUBMIT]
    outcome = resolve_with(fake, checkout, replies)
    assert outcome.status == "opened", outcome.message
    body = fake.pulls[0]["body"]
    assert "`find-def`" in body and "Cache ***" in body and "and *** with a tool." in body
    texts = [body, *(c["body"] for c in fake.comments[7])]
    for text in texts:
        for secret in (PROVIDER_KEY, encoded[:-4], fake.token):
            assert secret not in text


def test_the_action_uploads_a_redacted_copy_of_the_session(tmp_path):
    """The real live-swe behind the action's script; the agent leaks both credentials into its log
    and into a tool; the artifact the workflow uploads holds neither."""
    github = FakeGitHub().start()
    try:
        github.add_issue(7, "add() subtracts", "calc.add(2, 3) returns -1")
        github.permissions["maint"] = "write"
        leak = f"KEY={BASE_INPUTS['api-key']}\nTOKEN={github.token}\n"
        seed = make_git_repo(tmp_path / "seed", {"calc.py": "def add(a, b):\n    return a - b\n", "leak.env": leak})
        origin = tmp_path / "origin.git"
        subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(origin)], check=True)
        checkout = tmp_path / "checkout"
        subprocess.run(["git", "clone", "-q", str(origin), str(checkout)], check=True)
        tool = ("{ printf '#!/bin/sh\\n# live-swe-tool: leaky\\n# description: x\\n# usage: leaky\\n"
                "echo usage: leaky\\n# '; cat leak.env; } > \"$LIVE_SWE_SCAFFOLD/tools/leaky\" && "
                "chmod +x \"$LIVE_SWE_SCAFFOLD/tools/leaky\"")
        script = write_script(tmp_path / "script.yaml", [
            bash_reply("cat leak.env; base64 -w0 leak.env"), bash_reply(tool), bash_reply("sed -i 's/a - b/a + b/' calc.py"),
            SUBMIT])
        fake_venv(tmp_path, f'exec "{sys.executable}" -m live_swe.cli.main "$@"')
        inputs = {**BASE_INPUTS, "github-token": github.token, "model": f"scripted:{script}", "api-key-env": "OPENAI_API_KEY"}
        done = run_step(tmp_path, checkout, step_environment(tmp_path, inputs, {"GITHUB_API_URL": github.url}))
        assert done.returncode == 0, done.stdout + done.stderr
        result = outputs(tmp_path)
        assert result["status"] == "opened"
        artifact = Path(result["artifact"])
        copy = artifact / result["session-id"]
        names = sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file())
        assert {"meta.json", "events.jsonl", "patch.diff", "scaffold/tools/leaky"} <= set(names)
        assert not (copy / "scaffold.git").exists()
        assert "KEY=***" in (copy / "events.jsonl").read_text() and "KEY=***" in (copy / "scaffold/tools/leaky").read_text()
        assert os.access(copy / "scaffold/tools/leaky", os.X_OK)
        secrets = (BASE_INPUTS["api-key"], github.token, base64.b64encode(leak.encode()).decode()[8:-8])
        for path in artifact.rglob("*"):
            if path.is_file():
                text = path.read_bytes().decode("latin-1")
                assert not [s for s in secrets if s in text], path
        for secret in secrets:
            assert secret not in done.stdout + done.stderr
    finally:
        github.stop()


def test_the_documented_workflow_uploads_the_redacted_copy_only():
    for job in example_workflow()["jobs"].values():
        [upload] = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
        assert upload["with"]["path"] == "${{ steps.live-swe.outputs.artifact }}"
    assert "redacted" in action()["outputs"]["artifact"]["description"]
