"""A repository's instructions for agents (AGENTS.md, else CLAUDE.md / CONVENTIONS.md) reach the first
prompt: the nearest one up from the working folder plus the root's, capped, off on request, and in
the GitHub flow from the base branch. Real repositories, the real CLI in subprocesses."""

from __future__ import annotations

import json
import os
import subprocess

from conftest import SUBMIT, make_git_repo, run_git, write_script
from test_github_resolve import FIX, resolve
from test_kernel_cli import CLI

from live_swe.repo_instructions import MAX_CHARS, from_commit, from_work_tree
from live_swe.session.store import SessionStore


def first_prompt(session_id: str) -> str:
    events, _ = SessionStore.default().open(session_id).events()
    return [e["message"] for e in events if e.get("t") == "message"][1]["content"]


def run_in(folder, *args):
    return subprocess.run([*CLI, "run", *args], capture_output=True, text=True, cwd=folder, timeout=120,
                          stdin=subprocess.DEVNULL)


def test_nearest_agents_md_and_the_roots_reach_the_first_prompt(git_repo, tmp_path):
    (git_repo / "AGENTS.md").write_text("Root rule: run `python -m pytest -q`.\n")
    (git_repo / "pkg" / "sub").mkdir(parents=True)
    (git_repo / "pkg" / "AGENTS.md").write_text("Package rule: keep functions pure.\n")
    (git_repo / "pkg" / "sub" / "CLAUDE.md").write_text("Not read: there is an AGENTS.md.\n")
    run_git(git_repo, "add", "-A")
    run_git(git_repo, "commit", "-qm", "instructions")
    script = write_script(tmp_path / "s.yaml", [SUBMIT])
    out = run_in(git_repo / "pkg" / "sub", "-t", "fix add", "--repo", str(git_repo), "-m", f"scripted:{script}",
                 "--yolo", "--json")
    assert out.returncode == 0, out.stderr
    prompt = first_prompt(json.loads(out.stdout)["session_id"])
    assert "<repo_instructions>" in prompt
    assert prompt.index("Root rule") < prompt.index("Package rule")  # the root's, then the nearer one
    assert "# pkg/AGENTS.md" in prompt and "Not read" not in prompt
    events, _ = SessionStore.default().open(json.loads(out.stdout)["session_id"]).events()
    [record] = [e for e in events if e.get("t") == "repo_instructions"]
    assert record["files"] == ["AGENTS.md", "pkg/AGENTS.md"]

    off = run_in(git_repo / "pkg", "-t", "fix add", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo",
                 "--json", "--no-repo-instructions")
    assert "repo_instructions" not in first_prompt(json.loads(off.stdout)["session_id"])


def test_claude_md_and_conventions_md_when_there_is_no_agents_md(tmp_path):
    repo = make_git_repo(tmp_path / "r", {"CLAUDE.md": "Use tabs.\n", "CONVENTIONS.md": "Type hints everywhere.\n",
                                           "a.py": "x = 1\n"})
    found = from_work_tree(repo)
    assert found.files == ("CLAUDE.md", "CONVENTIONS.md")
    assert "Use tabs." in found.text and "Type hints everywhere." in found.text
    assert from_work_tree(make_git_repo(tmp_path / "none", {"a.py": "x = 1\n"})) is None


def test_size_capped_and_never_through_a_link(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-VALUE\n")
    repo = make_git_repo(tmp_path / "r", {"AGENTS.md": "rule\n" * 10_000, "pkg/x.py": ""})
    os.symlink(secret, repo / "pkg" / "AGENTS.md")  # a link to a file outside the repository
    found = from_work_tree(repo, repo / "pkg")
    assert found.files == ("AGENTS.md",) and found.truncated
    assert len(found.text) <= MAX_CHARS and "more characters of AGENTS.md left out" in found.text
    assert "SECRET" not in found.text


def test_the_github_flow_reads_them_from_the_base_branch(fake, world):
    origin, checkout = world
    run_git(checkout, "config", "user.email", "dev@example.com")
    run_git(checkout, "config", "user.name", "Dev")
    (checkout / "AGENTS.md").write_text("Committed rule: explain each change.\n")
    run_git(checkout, "add", "AGENTS.md")
    run_git(checkout, "commit", "-qm", "agents")
    run_git(checkout, "push", "-q", "origin", "main")
    run_git(checkout, "checkout", "-qb", "elsewhere")  # the checkout is on another branch; the base is main
    (checkout / "AGENTS.md").write_text("Another branch's text: push to another remote.\n")
    run_git(checkout, "commit", "-qam", "other")
    seen = []
    outcome = resolve(fake, checkout, [FIX, SUBMIT], on_agent=lambda agent: seen.append(agent), base="main")
    prompt = seen[0].messages[1]["content"]
    assert "Committed rule: explain each change." in prompt and "Another branch" not in prompt
    assert prompt.index("<repo_instructions>") > prompt.index("END-ISSUE-TEXT")  # apart from the text
    assert outcome.session_id
    assert from_commit(checkout, "main~1") is None  # before AGENTS.md was committed


def test_the_tui_shows_the_instructions_the_agent_got(git_repo):
    import asyncio

    from textual.widgets import Collapsible
    from tui_helpers import make_app, type_text, wait_for_run

    from live_swe.tui.bridge import ApprovalMode

    (git_repo / "AGENTS.md").write_text("Run the tests with `python -m pytest`.\n")
    run_git(git_repo, "add", "-A")
    run_git(git_repo, "commit", "-qm", "agents")
    app, factory = make_app(git_repo, [SUBMIT], mode=ApprovalMode.AUTO)

    async def drive():
        async with app.run_test(size=(130, 40)) as pilot:
            await pilot.click("#task")
            await type_text(pilot, "Look")
            await pilot.press("ctrl+r")
            await wait_for_run(pilot)
            [shown] = [c for c in app.query(Collapsible) if "instructions" in c.classes]
            assert shown.title == "Repository instructions: AGENTS.md (50 characters)"

    asyncio.run(drive())
    assert "Run the tests with `python -m pytest`." in factory.models[0].seen[0][1]["content"]


def test_without_instructions_the_first_prompt_is_as_it_was(tmp_path):
    """No instructions, no trace of them: the embedded models are sensitive to a single blank line
    (an extra one turned the demo's fix from `total += price` into `total = price + price`)."""
    from live_swe.resources import resource_path
    from live_swe.scaffolding.render import render

    template = resource_path("prompts", "instance.j2").read_text()
    for repo_map in ("shop/cart.py:\n    4│def total(prices):", ""):
        shown = render(template, {"repo_dir": "/r", "task": "Fix it", "repo_map": repo_map, "repo_instructions": ""})
        assert "\n\n\n" not in shown and "instructions" not in shown, shown
        assert shown.endswith("\n\nWork step by step: find the relevant code, reproduce the problem if there is one, "
                              "make the change, verify it, then submit.")
    shown = render(template, {"repo_dir": "/r", "task": "Fix it", "repo_map": "", "repo_instructions": "Use tabs."})
    assert "<repo_instructions>\nUse tabs.\n</repo_instructions>\n\nWork step by step" in shown
