"""Hooks the agent writes run in an isolated worker; a hook that raises, hangs or prints garbage
falls back to the last good hooks.py, the model is told, and the run still finishes."""

from __future__ import annotations

import json
import os

import pytest
from conftest import SUBMIT, bash_reply
from test_evolution_support import (
    ON_EACH_ENVIRONMENT,
    environment,
    events_of,
    observation,
    run_script,
    session_dir,
    write_file_command,
)

from live_swe.evolution import hook_client, hook_process
from live_swe.evolution.history import ScaffoldHistory
from live_swe.resources import resource_path

MISBEHAVIOUR = {
    "raises": 'raise ValueError("boom on purpose")',
    "hangs": "while True:\n                pass",
    "prints garbage": 'print("garbage, not a reply")',
    "crashes": "import os; os._exit(3)",
}
WHY = {
    "raises": "transform_observation raised ValueError: boom on purpose",
    "hangs": "transform_observation did not return within 2s",
    "prints garbage": "reply is not JSON",
    "crashes": "the hook worker exited (status 3) during transform_observation",
}


def tagging_hooks(misbehaviour: str) -> str:
    """Hooks that tag every observation, and misbehave when the output says TRIGGER (the smoke
    run's sample output does not, so they pass the gate and fail only at run time)."""
    return f'''def transform_observation(observation, step):
    if "TRIGGER" in observation:
        if True:
            {misbehaviour}
    return "[hooked] " + observation
'''


@ON_EACH_ENVIRONMENT
@pytest.mark.parametrize("kind", list(MISBEHAVIOUR))
def test_a_failing_hook_falls_back_to_the_last_good_hooks_and_the_run_finishes(git_repo, kind, env_name, request,
                                                                               monkeypatch):
    env, image = environment(request, env_name)
    monkeypatch.setattr(hook_client, "CALL_TIMEOUT", 2.0)  # the hanging hook costs 2s, not the default
    result, model = run_script(git_repo, [
        bash_reply(write_file_command("hooks.py", tagging_hooks(MISBEHAVIOUR[kind])), "Tag observations."),
        bash_reply("echo hello"),
        bash_reply("echo TRIGGER"),
        bash_reply("echo after"),
        SUBMIT,
    ], env=env, image=image)
    assert result.status == "submitted", result.message
    assert observation(model, 2).startswith("[hooked] ")  # the accepted hooks ran
    fallback = observation(model, 3)
    assert not fallback.startswith("[hooked]") and "TRIGGER" in fallback  # the observation itself is kept
    assert "hooks.py failed (transform_observation: " in fallback and WHY[kind] in fallback
    assert "rolled back to the last version that worked" in fallback
    assert not observation(model, 4).startswith("[hooked]")

    commit, rollback = events_of(result.session_id, "scaffold")
    assert commit["kind"] == "commit" and commit["files"] == ["hooks.py"]
    assert rollback["kind"] == "rollback" and rollback["step"] == 3 and rollback["files"] == ["hooks.py"]
    assert WHY[kind] in rollback["why"] and rollback["rev"]
    # hooks.py is the last version that worked (the seed's), committed as the rollback
    directory = session_dir(result.session_id)
    seed = resource_path("scaffold", "hooks.py").read_bytes()
    assert (directory / "scaffold" / "hooks.py").read_bytes() == seed
    history = ScaffoldHistory(directory / "scaffold.git", directory / "scaffold")
    assert history.head() == rollback["rev"] and history.file_at("HEAD", "hooks.py") == seed
    assert history.revisions()[0].subject == "step 3: roll back hooks.py"


def test_rollback_goes_to_the_previous_good_version_not_the_seed(git_repo):
    good = 'def after_step(step, command, returncode):\n    return "note from hooks v1"\n'
    bad = ('def after_step(step, command, returncode):\n    if command.startswith("echo TRIGGER"):\n'
           '        raise RuntimeError("v2 is broken")\n    return "note from hooks v2"\n')
    result, model = run_script(git_repo, [
        bash_reply(write_file_command("hooks.py", good), "Leave myself a note."),
        bash_reply(write_file_command("hooks.py", bad), "A better note."),
        bash_reply("echo TRIGGER"),
        bash_reply("echo after"),
        SUBMIT,
    ])
    assert result.status == "submitted"
    # the hooks of the last accepted commit run each step: v1 after step 2, v2 at step 3 (it fails)
    assert "note from hooks v1" in observation(model, 2)
    assert "RuntimeError: v2 is broken" in observation(model, 3) and "note from hooks v2" not in observation(model, 3)
    assert "note from hooks v1" in observation(model, 4)
    assert (session_dir(result.session_id) / "scaffold" / "hooks.py").read_text() == good
    commit_v1 = events_of(result.session_id, "scaffold")[0]["rev"]
    assert f"(commit {commit_v1[:8]})" in observation(model, 3)


def test_transform_messages_changes_what_the_model_sees_not_the_log(git_repo):
    hooks = '''def transform_messages(messages, step):
    out = []
    for index, message in enumerate(messages):
        if message["role"] == "user" and 1 < index < len(messages) - 1:
            message = dict(message, content="[compacted by hooks]")
        out.append(message)
    return out
'''
    result, model = run_script(git_repo, [
        bash_reply(write_file_command("hooks.py", hooks), "Compact old observations."),
        bash_reply("echo first-output"),
        bash_reply("echo second-output"),
        SUBMIT,
    ])
    assert result.status == "submitted"
    observations = [m["content"] for m in model.seen[3] if m["role"] == "user"][1:]
    assert observations[:-1] == ["[compacted by hooks]"] * 2 and "second-output" in observations[-1]
    logged = [e["message"]["content"] for e in events_of(result.session_id, "message")]
    assert any("<output>\nfirst-output" in text for text in logged)  # the log keeps the full conversation


def test_hooks_run_isolated_without_credentials_with_limits_and_outside_the_kernel(git_repo, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-must-not-leak")
    hooks = '''import json, os, resource, sys


def after_step(step, command, returncode):
    return "PROBE " + json.dumps({
        "env": sorted(os.environ), "values": " ".join(os.environ.values()),
        "as": resource.getrlimit(resource.RLIMIT_AS)[0], "cpu": resource.getrlimit(resource.RLIMIT_CPU)[0],
        "pid": os.getpid(), "path": sys.path, "cwd": os.getcwd(),
    })
'''
    result, model = run_script(git_repo, [
        bash_reply(write_file_command("hooks.py", hooks), "Probe."),
        bash_reply("echo probe"),
        SUBMIT,
    ])
    assert result.status == "submitted"
    text = observation(model, 2)
    probe = json.loads(text[text.index("PROBE ") + 6:].splitlines()[0])
    assert not any("KEY" in k or "TOKEN" in k for k in probe["env"])
    assert "must-not-leak" not in probe["values"]
    assert probe["as"] == hook_process.MEMORY_BYTES and probe["cpu"] == hook_process.CPU_SECONDS
    assert probe["pid"] != os.getpid()
    assert not any("site-packages" in p for p in probe["path"])  # only the standard library imports
    assert str(session_dir(result.session_id)) not in probe["cwd"]
    import sys

    assert "live_swe_hooks" not in sys.modules  # the worker's module name; never loaded here


@pytest.mark.parametrize("sandbox", ["bubblewrap", "none"])
def test_a_hook_worker_dies_with_a_killed_kernel_even_mid_call(git_repo, sandbox):
    import signal
    import subprocess
    import sys

    from conftest import live_processes, wait_until_no_process

    memory = (1 << 30) + os.getpid()  # its limits are on its command line: they find it
    kernel = subprocess.Popen([sys.executable, "-c", (
        "from live_swe.environments.local import LocalEnvironment\n"
        "from live_swe.evolution.hook_process import HookProcess\n"
        f"env = LocalEnvironment({str(git_repo)!r}, sandbox={sandbox!r})\n"
        "p = HookProcess('import time\\ndef after_step(s, c, r):\\n    time.sleep(1000)\\n    return \"\"\\n',"
        f" host=env, memory={memory})\n"
        "p.start()\nprint('started', flush=True)\np.call('after_step', [1, 'ls', 0], timeout=1000)\n")],
        stdout=subprocess.PIPE, text=True)
    assert kernel.stdout.readline().strip() == "started"
    token = f"{memory},"
    assert live_processes(token), "the hook worker is not running"
    kernel.send_signal(signal.SIGKILL)
    kernel.wait()
    left = wait_until_no_process(token, within=10)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == [], "the hook worker outlived the kernel"
