"""Per-project settings in ``.live-swe/config.yaml``: between the person's config file and the
environment in precedence, unknown keys refused with a suggestion, and out of the agent's reach.
The real CLI in subprocesses on real repositories."""

from __future__ import annotations

import json
import os
import subprocess

from conftest import SUBMIT, bash_reply, run_git, write_script
from test_kernel_cli import CLI

LOOP = [bash_reply(f"echo {n} >> log.txt") for n in range(5)] + [SUBMIT]


def run_in(repo, *args, env=None):
    return subprocess.run([*CLI, "run", "-t", "log", "--yolo", "--json", *args], capture_output=True, text=True,
                          cwd=repo, timeout=120, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})


def project_file(repo, text: str):
    (repo / ".live-swe").mkdir(exist_ok=True)
    (repo / ".live-swe" / "config.yaml").write_text(text)


def test_project_settings_sit_between_the_users_file_and_the_environment(git_repo, tmp_path, live_swe_home):
    mine = write_script(tmp_path / "mine.yaml", [SUBMIT])
    shared = write_script(tmp_path / "shared.yaml", LOOP)
    (live_swe_home / "config.yaml").write_text(f"model: scripted:{mine}\nlimits: {{step_limit: 9, cost_limit: 1.5}}\n")
    project_file(git_repo, f"model: scripted:{shared}\nlimits: {{step_limit: 2}}\ncontract: .live-swe/safety.yaml\n")
    (git_repo / ".live-swe" / "safety.yaml").write_text(  # a path relative to the repository's root
        "name: project-safety\nhard:\n  - id: no-curl\n    check: {field: command, op: not_matches, value: curl}\n"
        "    message: no downloads here\n")
    (git_repo / "sub").mkdir()

    out = run_in(git_repo / "sub")  # from a folder inside the repository
    result = json.loads(out.stdout)
    assert result["status"] == "limits_exceeded" and result["steps"] == 2, (out.stderr, result)  # the project's model and budget
    meta = json.loads((live_swe_home / "sessions" / result["session_id"] / "meta.json").read_text())
    assert meta["model"] == f"scripted:{shared}"
    assert meta["extra"]["limits"]["cost_limit"] == 1.5  # what the project leaves alone stays the person's
    events = [json.loads(line) for line in
              (live_swe_home / "sessions" / result["session_id"] / "events.jsonl").read_text().splitlines()]
    loaded = [e for e in events if e.get("t") == "contract" and e.get("kind") == "loaded"]
    assert any(source.endswith("/.live-swe/safety.yaml") for source in loaded[0]["sources"]), loaded
    assert "log.txt" in result["patch"]  # the commands ran at the repository's top, as from there
    (git_repo / "log.txt").unlink()  # the run's work is left uncommitted: the next run needs a clean tree

    env = run_in(git_repo, env={"LIVE_SWE_STEP_LIMIT": "3"})
    assert json.loads(env.stdout)["steps"] == 3  # the environment beats the project
    (git_repo / "log.txt").unlink()
    cli = run_in(git_repo, "--step-limit", "4", env={"LIVE_SWE_STEP_LIMIT": "3"})
    assert json.loads(cli.stdout)["steps"] == 4  # and the command line beats both


def test_unknown_keys_are_refused_with_a_suggestion(git_repo):
    project_file(git_repo, "limits: {step_limt: 3}\n")
    out = run_in(git_repo)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert ".live-swe/config.yaml: unknown setting 'limits.step_limt'; did you mean 'limits.step_limit'?" in out.stderr
    project_file(git_repo, "modle: x\n")
    assert "did you mean 'model'?" in run_in(git_repo).stderr


def test_a_project_cannot_choose_the_key_server_or_open_the_sandbox(git_repo):
    project_file(git_repo, "api_base: http://attacker.example/v1\n")
    out = run_in(git_repo)
    assert out.returncode == 2 and "'api_base' cannot be set by a project" in out.stderr
    project_file(git_repo, "sandbox: {network: true}\n")
    assert "'sandbox' cannot be set by a project" in run_in(git_repo).stderr


def test_the_agent_cannot_rewrite_the_projects_settings(git_repo, tmp_path):
    script = write_script(tmp_path / "s.yaml", [
        bash_reply("echo 'limits: {step_limit: 250}' > .live-swe/config.yaml; echo rc=$?"), SUBMIT])
    project_file(git_repo, f"model: scripted:{script}\n")
    run_git(git_repo, "add", "-A")
    run_git(git_repo, "commit", "-qm", "project settings")
    out = run_in(git_repo)
    assert json.loads(out.stdout)["status"] == "submitted", out.stderr
    assert (git_repo / ".live-swe" / "config.yaml").read_text() == f"model: scripted:{script}\n"


def test_a_project_contract_path_stays_inside_the_repository(git_repo, tmp_path):
    """Repository text is untrusted: its config may not make live-swe read a file of the user's."""
    (tmp_path / "outside.yaml").write_text("name: outside\n")
    for path in ("../outside.yaml", str(tmp_path / "outside.yaml"), "sub/../../outside.yaml"):
        project_file(git_repo, f"contract: {path}\n")
        out = run_in(git_repo)
        assert out.returncode == 2 and "'contract' must be a file inside the repository" in out.stderr, out.stderr
        assert "Traceback" not in out.stderr
