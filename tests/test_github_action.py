"""action.yml and the example workflow: no expressions in scripts, minimal permissions, and the
action's resolve script run for real with bash (against the fake GitHub for the end-to-end case)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO_ROOT, SUBMIT, bash_reply, make_git_repo, run_git, write_script
from fake_github import FakeGitHub

ACTION = REPO_ROOT / "action.yml"
DOCS = REPO_ROOT / "docs" / "github-action.md"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
MINIMAL = {"contents": "write", "pull-requests": "write", "issues": "write"}


def action() -> dict:
    return yaml.safe_load(ACTION.read_text())


def example_workflow() -> dict:
    blocks = re.findall(r"```yaml\n(.*?)```", DOCS.read_text(), re.S)
    assert blocks, "docs/github-action.md has no ```yaml example"
    return yaml.safe_load(blocks[0])


def test_action_is_composite_with_the_inputs_users_need():
    data = action()
    assert data["runs"]["using"] == "composite"
    for name in ("model", "api-key", "step-limit", "cost-limit", "base", "draft", "issue-number", "actor"):
        assert name in data["inputs"], name
    assert data["inputs"]["issue-number"]["default"] == (
        "${{ github.event.issue.number || github.event.pull_request.number }}")
    assert data["inputs"]["actor"]["default"] == "${{ github.actor }}"


def test_no_expression_inside_any_run_script():
    steps = action()["runs"]["steps"]
    scripts = [step["run"] for step in steps if "run" in step]
    assert len(scripts) == 2
    for script in scripts:
        assert "${{" not in script
    # and the values reach the scripts through env: instead
    resolve = next(step for step in steps if step.get("id") == "resolve")
    assert resolve["env"]["GITHUB_TOKEN"] == "${{ inputs.github-token }}"
    assert resolve["env"]["LIVE_SWE_PROVIDER_API_KEY"] == "${{ inputs.api-key }}"
    assert resolve["env"]["LIVE_SWE_INPUT_ISSUE"] == "${{ inputs.issue-number }}"


def test_install_uses_the_actions_own_path():
    install = next(step for step in action()["runs"]["steps"] if step.get("name") == "Install live-swe")
    assert '"$GITHUB_ACTION_PATH"' in install["run"] and "pip install" in install["run"]


def test_example_workflow_has_minimal_permissions_and_limits():
    workflow = example_workflow()
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert triggers == {"issues": {"types": ["labeled"]}, "issue_comment": {"types": ["created"]},
                        "pull_request_review": {"types": ["submitted"]},
                        "pull_request_review_comment": {"types": ["created"]}}
    top = workflow.get("permissions")
    for name, job in workflow["jobs"].items():
        assert job.get("permissions", top) == MINIMAL, name
        assert 0 < job["timeout-minutes"] <= 120
        condition = job["if"]
        assert "github.event.label.name == 'live-swe'" in condition
        assert "'/live-swe fix'" in condition and "author_association" in condition
        assert "!github.event.issue.pull_request" in condition
        # on pull requests, only people associated with the repository (the action checks write access)
        for body in ("github.event.comment.body, '/live-swe')", "github.event.review.body, '/live-swe')"):
            assert body in condition
        assert condition.count("author_association") == 4
        checkout = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout"))
        assert checkout["with"]["persist-credentials"] is False
        for step in job["steps"]:
            assert "${{" not in step.get("run", "")
        action_step = next(s for s in job["steps"] if "live-swe@" in s.get("uses", ""))
        assert action_step["with"]["api-key"] == "${{ secrets.ANTHROPIC_API_KEY }}"
        assert float(action_step["with"]["cost-limit"]) > 0


# -- the resolve script, run by bash as the runner would

def resolve_step() -> dict:
    return next(step for step in action()["runs"]["steps"] if step.get("id") == "resolve")


def step_environment(tmp_path: Path, inputs: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """The step's env: with its expressions evaluated the way the runner would."""
    declared = action()["inputs"]
    values = {f"inputs.{name}": str(spec.get("default", "")) for name, spec in declared.items()}
    values.update({f"inputs.{k}": v for k, v in inputs.items()})
    values["runner.temp"] = str(tmp_path / "runner-temp")

    def evaluate(text: str) -> str:
        def one(match: re.Match) -> str:
            value = values[match[1]]
            assert "${{" not in value, f"{match[1]} needs a value in this test"
            return value
        return EXPRESSION.sub(one, str(text))

    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "LIVE_SWE_"))}
    env.update({k: evaluate(v) for k, v in resolve_step()["env"].items()})
    (tmp_path / "runner-temp").mkdir(exist_ok=True)
    env.update({"RUNNER_TEMP": str(tmp_path / "runner-temp"), "GITHUB_OUTPUT": str(tmp_path / "output")})
    env.update(extra)
    return env


def fake_venv(tmp_path: Path, live_swe_body: str) -> None:
    bin_dir = tmp_path / "runner-temp" / "live-swe-venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "live-swe").write_text(f"#!/bin/sh\n{live_swe_body}\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)


def run_step(tmp_path: Path, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", resolve_step()["run"]], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=180)


def outputs(tmp_path: Path) -> dict[str, str]:
    path = tmp_path / "output"
    return dict(line.split("=", 1) for line in path.read_text().splitlines()) if path.exists() else {}


HOSTILE = "$(touch PWNED)`touch PWNED`;touch PWNED"
BASE_INPUTS = {"issue-number": "7", "actor": "maint", "repository": "octo/calc", "github-token": "ghs_tokenvalue1234",
               "api-key": "sk-provider-secret-98765", "model": "anthropic/claude-sonnet-4-5"}


def test_script_passes_inputs_as_quoted_arguments_and_hides_the_key(tmp_path):
    recorder = ('printf "%s\\n" "$@" > "$RUNNER_TEMP/argv"; env > "$RUNNER_TEMP/env"; '
                'echo \'{"status": "opened", "branch": "live-swe/issue-7", "pr_number": 8, '
                '"pr_url": "https://github.example/o/r/pull/8", "session_id": "s1", "steps": 2, "cost": 0.5}\'')
    fake_venv(tmp_path, recorder)
    env = step_environment(tmp_path, {**BASE_INPUTS, "base": HOSTILE, "actor": HOSTILE}, {})
    done = run_step(tmp_path, tmp_path, env)
    assert done.returncode == 0, done.stdout + done.stderr
    argv = (tmp_path / "runner-temp" / "argv").read_text().splitlines()
    assert argv == ["github", "resolve", "--json", "--repo", "octo/calc", "--issue", "7", "--actor", HOSTILE,
                    "--model", "anthropic/claude-sonnet-4-5", "--step-limit", "100", "--cost-limit", "3",
                    "--base", HOSTILE, "--draft"]
    assert not list(tmp_path.rglob("PWNED"))
    seen = dict(line.split("=", 1) for line in (tmp_path / "runner-temp" / "env").read_text().splitlines()
                if "=" in line)
    assert seen["ANTHROPIC_API_KEY"] == "sk-provider-secret-98765"
    assert "LIVE_SWE_PROVIDER_API_KEY" not in seen
    assert seen["GITHUB_TOKEN"] == "ghs_tokenvalue1234" and seen["LIVE_SWE_WALL_TIME_LIMIT"] == "2400"
    assert outputs(tmp_path) == {"status": "opened", "pr-number": "8", "pr-url": "https://github.example/o/r/pull/8",
                                 "branch": "live-swe/issue-7", "session-id": "s1", "message": "",
                                 "home": str(tmp_path / "runner-temp" / "live-swe-home")}
    assert "sk-provider-secret" not in done.stdout + done.stderr


@pytest.mark.parametrize("inputs, message", [
    ({"issue-number": ""}, "issue-number is not a number"),
    ({"issue-number": "7; rm -rf /"}, "issue-number is not a number"),
    ({"cost-limit": "lots"}, "cost-limit must be a number"),
    ({"model": "mystery", "api-key": "sk-abcdefgh12345"}, "set api-key-env"),
    ({"api-key-env": "PATH"}, "api-key-env must contain API_KEY, TOKEN or SECRET"),
])
def test_script_rejects_bad_inputs_before_running(tmp_path, inputs, message):
    fake_venv(tmp_path, 'touch "$RUNNER_TEMP/ran"')
    done = run_step(tmp_path, tmp_path, step_environment(tmp_path, {**BASE_INPUTS, **inputs}, {}))
    assert done.returncode == 2 and f"::error::{message}" in done.stdout
    assert not (tmp_path / "runner-temp" / "ran").exists()


def test_script_fails_the_step_when_live_swe_fails(tmp_path):
    fake_venv(tmp_path, 'echo "live-swe: error: 401 Unauthorized" >&2; exit 2')
    done = run_step(tmp_path, tmp_path, step_environment(tmp_path, BASE_INPUTS, {}))
    assert done.returncode == 2 and outputs(tmp_path)["status"] == "error"
    assert outputs(tmp_path)["message"] == ""


def test_script_passes_the_reason_of_a_failure_as_one_line(tmp_path):
    (tmp_path / "result.json").write_text(json.dumps({
        "status": "failed", "branch": "live-swe/issue-7", "pr_number": None, "pr_url": None, "session_id": "s1",
        "steps": 4, "cost": 0.1, "message": "the step limit\nof 4 was reached"}) + "\n")
    fake_venv(tmp_path, f'cat "{tmp_path / "result.json"}"; exit 1')
    done = run_step(tmp_path, tmp_path, step_environment(tmp_path, BASE_INPUTS, {}))
    assert done.returncode == 1
    result = outputs(tmp_path)
    assert result["status"] == "failed" and result["message"] == "the step limit of 4 was reached"
    assert result["pr-number"] == "" and "message" in action()["outputs"]


def test_action_end_to_end_against_fake_github(tmp_path):
    """The real live-swe behind the action's script: issue in, branch and pull request out."""
    fake = FakeGitHub().start()
    try:
        fake.add_issue(7, "add() subtracts $(touch PWNED)", "calc.add(2, 3) returns -1")
        fake.permissions["maint"] = "write"
        seed = make_git_repo(tmp_path / "seed", {"calc.py": "def add(a, b):\n    return a - b\n"})
        origin = tmp_path / "origin.git"
        subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(origin)], check=True)
        checkout = tmp_path / "checkout"
        subprocess.run(["git", "clone", "-q", str(origin), str(checkout)], check=True)
        script = write_script(tmp_path / "script.yaml", [
            bash_reply("env | sort"), bash_reply("sed -i 's/a - b/a + b/' calc.py"), SUBMIT])
        fake_venv(tmp_path, f'exec "{sys.executable}" -m live_swe.cli.main "$@"')
        inputs = {**BASE_INPUTS, "github-token": fake.token, "model": f"scripted:{script}",
                  "api-key-env": "OPENAI_API_KEY", "draft": "false"}
        done = run_step(tmp_path, checkout, step_environment(tmp_path, inputs, {"GITHUB_API_URL": fake.url}))
        assert done.returncode == 0, done.stdout + done.stderr
        result = outputs(tmp_path)
        assert result["status"] == "opened" and result["pr-number"] == "8"
        assert run_git(origin, "show", "live-swe/issue-7:calc.py").endswith("a + b\n")
        assert fake.pulls[0]["draft"] is False
        assert not list(tmp_path.rglob("PWNED"))
        sessions = Path(result["home"]) / "sessions" / result["session-id"]
        log = (sessions / "events.jsonl").read_text()
        assert "PATH=" in log  # the agent listed its environment ...
        for secret in (fake.token, BASE_INPUTS["api-key"]):  # ... and saw neither credential
            assert secret not in log and secret not in done.stdout + done.stderr
            assert secret not in fake.pulls[0]["body"]
    finally:
        fake.stop()


def test_outputs_keep_what_was_done_when_a_late_step_fails(tmp_path):
    """live-swe stopped on an error after the push and the pull request: the outputs still say so."""
    (tmp_path / "result.json").write_text(json.dumps({
        "status": "error", "branch": "live-swe/issue-7", "pr_number": 8, "pr_url": "https://github.example/o/r/pull/8",
        "session_id": "s1", "steps": 3, "cost": 0.2, "message": "401 Unauthorized for comment 1001"}) + "\n")
    fake_venv(tmp_path, f'cat "{tmp_path / "result.json"}"; exit 2')
    done = run_step(tmp_path, tmp_path, step_environment(tmp_path, BASE_INPUTS, {}))
    result = outputs(tmp_path)
    assert done.returncode == 2 and result["status"] == "error"
    assert result["branch"] == "live-swe/issue-7" and result["pr-number"] == "8"
    assert result["pr-url"] == "https://github.example/o/r/pull/8" and result["message"].startswith("401")


def test_action_continues_a_pull_request_against_fake_github(tmp_path):
    """The action given a pull request's number (a review event's): one more commit on its branch."""
    fake = FakeGitHub().start()
    try:
        fake.permissions["maint"] = "write"
        seed = make_git_repo(tmp_path / "seed", {"calc.py": "def add(a, b):\n    return a + b\n"})
        run_git(seed, "checkout", "-q", "-b", "feature")
        (seed / "calc.py").write_text("def add(a, b):\n    return a + b  # feature\n")
        run_git(seed, "-c", "user.name=d", "-c", "user.email=d@e", "commit", "-qam", "feature")
        origin = tmp_path / "origin.git"
        subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(origin)], check=True)
        checkout = tmp_path / "checkout"
        subprocess.run(["git", "clone", "-q", "--branch", "main", str(origin), str(checkout)], check=True)
        head = run_git(origin, "rev-parse", "feature").strip()
        fake.add_pull(5, head="feature", title="Feature $(touch PWNED)", sha=head)
        fake.add_review(5, "maint", "/live-swe rename add to plus")
        script = write_script(tmp_path / "script.yaml", [bash_reply("sed -i 's/def add/def plus/' calc.py"), SUBMIT])
        fake_venv(tmp_path, f'exec "{sys.executable}" -m live_swe.cli.main "$@"')
        inputs = {**BASE_INPUTS, "issue-number": "5", "github-token": fake.token, "model": f"scripted:{script}",
                  "api-key-env": "OPENAI_API_KEY"}
        done = run_step(tmp_path, checkout, step_environment(tmp_path, inputs, {"GITHUB_API_URL": fake.url}))
        assert done.returncode == 0, done.stdout + done.stderr
        result = outputs(tmp_path)
        assert result["status"] == "updated" and result["pr-number"] == "5" and result["branch"] == "feature"
        assert run_git(origin, "rev-parse", "feature~1").strip() == head
        assert run_git(origin, "show", "feature:calc.py").startswith("def plus(a, b):")
        assert len(fake.pulls) == 1 and not list(tmp_path.rglob("PWNED"))
    finally:
        fake.stop()
