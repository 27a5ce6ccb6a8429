"""Faults on this machine: the person's own changes, kills and signals, two processes, damaged
session files, a full disk. Real git, real subprocesses, real signals; only the model is scripted."""

from __future__ import annotations

import json
import subprocess

from attack_support import CLI
from conftest import SUBMIT, bash_reply, make_git_repo, run_git, write_script

from live_swe.session.store import SessionStore

FIX = bash_reply("sed -i 's/a - b/a + b/' calc.py", "The sign is wrong.")


def live_swe(*args: str, cwd=None, timeout: float = 180, **popen) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          stdin=subprocess.DEVNULL, **popen)


def _dirty(repo):
    """The person's own work in progress: staged, unstaged (in the file the agent fixes) and untracked."""
    (repo / "README.md").write_text("# calc\nstaged notes\n")
    run_git(repo, "add", "README.md")
    (repo / "calc.py").write_text("# my own comment\ndef add(a, b):\n    return a - b\n")
    (repo / "scratch.txt").write_text("my own file\n")


def test_a_dirty_tree_is_refused_and_allow_dirty_starts_from_it_with_only_the_agents_patch(tmp_path):
    repo = make_git_repo(tmp_path / "repo", {"calc.py": "def add(a, b):\n    return a - b\n", "README.md": "# calc\n"})
    _dirty(repo)
    status_before = run_git(repo, "status", "--porcelain")
    script = write_script(tmp_path / "s.yaml", [FIX, SUBMIT])
    refused = live_swe("run", "-t", "fix add", "--repo", str(repo), "-m", f"scripted:{script}", "--yolo", "--json")
    assert refused.returncode == 2
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "uncommitted change" in lines[0] and "--allow-dirty" in lines[0], refused.stderr
    assert SessionStore.default().list() == []
    assert run_git(repo, "status", "--porcelain") == status_before

    done = live_swe("run", "-t", "fix add", "--repo", str(repo), "-m", f"scripted:{script}", "--yolo", "--json",
                    "--allow-dirty")
    result = json.loads(done.stdout)
    assert result["status"] == "submitted", done.stderr
    patch = result["patch"]
    assert "+    return a + b" in patch and "-    return a - b" in patch
    for users in ("+# my own comment", "staged notes", "scratch.txt", "README.md"):
        assert users not in patch  # exactly the agent's change
    # the person's changes are where they were: still staged, still unstaged, still untracked
    assert (repo / "calc.py").read_text() == "# my own comment\ndef add(a, b):\n    return a + b\n"
    assert run_git(repo, "diff", "--cached", "--name-only").split() == ["README.md"]
    assert (repo / "scratch.txt").read_text() == "my own file\n"
    assert run_git(repo, "log", "--oneline").count("\n") == 1 and run_git(repo, "stash", "list") == ""
    assert run_git(repo, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/main"]
