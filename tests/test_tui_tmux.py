"""The real app in a real terminal (tmux): type a task, approve a command, see the result, keep
the commit. Everything is read back from the screen (capture-pane) and from git."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
import uuid

import pytest
from conftest import SUBMIT, bash_reply, run_git, write_script

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    def __init__(self, name: str):
        self.name = name

    def run(self, *args: str) -> str:
        return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.name)

    def wait_for(self, text: str, timeout: float = 60.0) -> str:
        """Poll the screen until ``text`` shows (a deadline, not a fixed sleep)."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if text in screen:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared; the screen shows:\n{screen}")
            time.sleep(0.2)

    def quit_app(self, timeout: float = 30.0) -> None:
        """Ctrl+Q, then wait until the app (the session's only program) has exited."""
        self.keys("C-q")
        deadline = time.monotonic() + timeout
        while self.name in subprocess.run(["tmux", "ls"], capture_output=True, text=True).stdout:
            assert time.monotonic() < deadline, "the app did not exit on Ctrl+Q"
            time.sleep(0.2)

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.name, *keys)

    def type(self, text: str) -> None:
        self.run("send-keys", "-t", self.name, "-l", text)

    def type_into_box(self, text: str, attempts: int = 3) -> None:
        """Type into a one-line text box and check it arrived whole; keys that race the app's start-up
        with the terminal's own replies can land out of order, so clear the line and type again."""
        for _ in range(attempts):
            self.type(text)
            try:
                self.wait_for(text, timeout=10)
                return
            except AssertionError:
                self.keys("End", *["BSpace"] * (len(text) + 10))
        raise AssertionError(f"could not type {text!r}; the screen shows:\n{self.screen()}")


def open_tui(repo, script, live_swe_home) -> Tmux:
    """``live-swe tui`` on ``repo`` with a scripted model, in a new tmux session."""
    name = f"live-swe-test-{uuid.uuid4().hex[:8]}"
    command = " ".join(shlex.quote(part) for part in [
        "env", f"LIVE_SWE_HOME={live_swe_home}", "TERM=xterm-256color",
        sys.executable, "-m", "live_swe.cli.main", "tui", "--repo", str(repo), "--model", f"scripted:{script}",
    ])
    tmux = Tmux(name)
    tmux.run("new-session", "-d", "-s", name, "-x", "150", "-y", "45", command)
    tmux.run("resize-window", "-t", name, "-x", "150", "-y", "45")
    return tmux


def test_type_a_task_approve_a_command_see_the_result_and_keep_the_commit(git_repo, tmp_path, live_swe_home):
    script = write_script(tmp_path / "replies.yaml", [bash_reply("sed -i 's/a - b/a + b/' calc.py", "Fix the sign."),
                                                      SUBMIT])
    tmux = open_tui(git_repo, script, live_swe_home)
    name = tmux.name
    try:
        tmux.wait_for("Ctrl+R to run it")
        tmux.type_into_box("Make add() add in calc.py")
        tmux.keys("C-r")
        screen = tmux.wait_for("The agent wants to run")
        assert "sed -i 's/a - b/a + b/' calc.py" in screen
        tmux.keys("y")
        tmux.wait_for("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")  # the next command, asked for in turn
        tmux.keys("y")
        screen = tmux.wait_for("a commit on a new branch, live-swe/")
        assert "submitted after 2 steps" in screen
        assert "+    return a + b" in screen  # the result: the repository's diff
        tmux.keys("k")
        tmux.wait_for("Kept as commit")
        screen = tmux.wait_for("Step 2 · exit 0")  # the step cards, once the dialog is gone
        assert "sed -i 's/a - b/a + b/' calc.py" in screen and "+    return a + b" in screen
        tmux.quit_app()
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    [branch] = run_git(git_repo, "branch", "--list", "live-swe/*", "--format=%(refname:short)").split()
    assert run_git(git_repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == branch
    assert run_git(git_repo, "log", "-1", "--format=%s").strip() == "Make add() add in calc.py"
    assert (git_repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert run_git(git_repo, "status", "--porcelain") == ""


@pytest.mark.parametrize("inline", [True, False])
def test_inline_keeps_the_terminals_scrollback(git_repo, tmp_path, live_swe_home, inline):
    script = write_script(tmp_path / "replies.yaml", [SUBMIT])
    name = f"live-swe-test-{uuid.uuid4().hex[:8]}"
    app = " ".join(shlex.quote(part) for part in [
        "env", f"LIVE_SWE_HOME={live_swe_home}", "TERM=xterm-256color", sys.executable, "-m", "live_swe.cli.main",
        "tui", "--repo", str(git_repo), "--model", f"scripted:{script}", *(["--inline"] if inline else []),
    ])
    tmux = Tmux(name)
    tmux.run("new-session", "-d", "-s", name, "-x", "150", "-y", "45",
             f"bash --norc -c 'echo EARLIER-OUTPUT-MARKER; {app}; echo APP-EXITED; sleep 30'")
    try:
        screen = tmux.wait_for("Ctrl+R to run it")
        assert ("EARLIER-OUTPUT-MARKER" in screen) is inline  # the full-screen mode covers it
        tmux.keys("C-q")
        screen = tmux.wait_for("APP-EXITED")
        assert "EARLIER-OUTPUT-MARKER" in screen
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)


def test_live_swe_without_arguments_in_a_terminal_opens_the_app_on_this_repository(git_repo, tmp_path,
                                                                                    live_swe_home):
    script = write_script(tmp_path / "replies.yaml", [SUBMIT])
    name = f"live-swe-test-{uuid.uuid4().hex[:8]}"
    app = " ".join(shlex.quote(part) for part in [
        "env", f"LIVE_SWE_HOME={live_swe_home}", f"LIVE_SWE_MODEL=scripted:{script}", "TERM=xterm-256color",
        sys.executable, "-m", "live_swe.cli.main",
    ])
    tmux = Tmux(name)
    tmux.run("new-session", "-d", "-s", name, "-x", "150", "-y", "45", f"cd {shlex.quote(str(git_repo))} && {app}")
    try:
        screen = tmux.wait_for("Ctrl+R to run it")
        assert f"Task for {git_repo.name}" in screen  # on the repository it was started in
        tmux.quit_app()
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    # without a terminal (a pipe, CI) the same command prints the usage instead of starting the app
    piped = subprocess.run([sys.executable, "-m", "live_swe.cli.main"], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=60, cwd=git_repo)
    assert piped.returncode == 0 and "Usage" in piped.stdout and "Run the agent on a task" in piped.stdout
