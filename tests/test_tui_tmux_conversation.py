"""The conversation in a real terminal (tmux): the repository's instructions shown, the dialogs'
keys on screen, a follow-up typed after the run continuing the same session, and the UI refusing
to start without a terminal. Read back from the screen (capture-pane) and from git."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from conftest import SUBMIT, bash_reply, run_git, write_script
from test_tui_tmux import open_tui

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

FIX = bash_reply("sed -i 's/a - b/a + b/' calc.py", "Fix the sign.")
ADD_TEST = bash_reply("echo 'assert add(2, 3) == 5' > test_calc.py", "A test.")


def test_follow_up_in_the_terminal_continues_the_session_and_keep_takes_it_all(git_repo, tmp_path, live_swe_home):
    (git_repo / "AGENTS.md").write_text("Always add a test.\n")
    run_git(git_repo, "add", "-A")
    run_git(git_repo, "commit", "-qm", "agents")
    script = write_script(tmp_path / "replies.yaml", [FIX, SUBMIT, ADD_TEST, SUBMIT])
    tmux = open_tui(git_repo, script, live_swe_home)
    try:
        tmux.wait_for("Ctrl+R to run it")
        tmux.type_into_box("Make add() add")
        tmux.keys("C-r")
        screen = tmux.wait_for("The agent wants to run")
        assert "Approve [y]" in screen and "Reject [r]" in screen  # the keys, on the buttons
        tmux.keys("y")
        tmux.wait_for("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
        tmux.keys("y")
        screen = tmux.wait_for("Follow up [f]")
        assert "Keep [k]" in screen and "a commit on a new branch, live-swe/" in screen
        tmux.wait_for("k Keep")  # the dialog's keys, in its footer  # the dialog's keys, in its footer
        tmux.keys("f")
        tmux.wait_for("Type a follow-up")
        tmux.type_into_box("also add a test")
        tmux.keys("C-r")
        screen = tmux.wait_for("test_calc.py")  # straight on: no question about "your" uncommitted changes
        assert "uncommitted changes" not in screen
        tmux.keys("y")
        tmux.wait_for("step 4 │")
        tmux.wait_for("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
        tmux.keys("y")
        screen = tmux.wait_for("submitted after 4 steps")
        tmux.keys("k")
        tmux.wait_for("Kept as commit")
        tmux.quit_app()
    finally:
        subprocess.run(["tmux", "kill-session", "-t", tmux.name], capture_output=True)
    assert sorted(run_git(git_repo, "show", "--name-only", "--format=", "HEAD").split()) == ["calc.py", "test_calc.py"]
    assert "Follow-up: also add a test" in run_git(git_repo, "log", "-1", "--format=%B")
    assert run_git(git_repo, "status", "--porcelain") == ""


def test_tui_without_a_terminal_exits_at_once_with_a_clear_error(git_repo):
    out = subprocess.run([sys.executable, "-m", "live_swe.cli.main", "tui", "--repo", str(git_repo)],
                         capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert out.returncode == 2 and "needs a terminal" in out.stderr and "Traceback" not in out.stderr
