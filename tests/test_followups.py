"""Follow-ups: after a run ends, the person asks for more and the same agent goes on, with the same
conversation, tools and scaffold, on top of its own changes. Real subprocesses, real repositories."""

from __future__ import annotations

import json

from conftest import SUBMIT, bash_reply, run_git, write_script
from test_evolution_support import simple_tool, tool_reply
from test_kernel_cli import cli

from live_swe.session.store import SessionStore

COUNT_LINES = '[ "$1" = --help ] && { echo "usage: NAME FILE"; exit 0; }\nwc -l < "$1"'
FIX = bash_reply("sed -i 's/a - b/a + b/' calc.py", "The sign is wrong.")
ADD_TEST = bash_reply("printf 'from calc import add\\nassert add(2, 3) == 5\\n' > test_calc.py", "A test.")


def messages_of(session_id: str) -> list[dict]:
    events, _ = SessionStore.default().open(session_id).events()
    return [e["message"] for e in events if e.get("t") == "message"]


def test_run_continue_goes_on_with_the_same_conversation_tools_and_changes(git_repo, tmp_path):
    # One script for the whole conversation: the follow-up picks up where the first run stopped.
    script = write_script(tmp_path / "s.yaml", [
        tool_reply("count-lines", simple_tool("count-lines", COUNT_LINES)), FIX, SUBMIT,
        bash_reply("count-lines calc.py", "My tool from before."), ADD_TEST, SUBMIT,
    ])
    first = json.loads(cli("run", "-t", "Fix add in calc.py", "--repo", str(git_repo), "-m", f"scripted:{script}",
                           "--yolo", "--json").stdout)
    assert first["status"] == "submitted" and first["steps"] == 3
    assert "test_calc.py" not in first["patch"]

    out = cli("run", "--continue", first["session_id"], "--task", "also add a test", "--yolo", "--json")
    assert out.returncode == 0, out.stderr
    second = json.loads(out.stdout)
    assert second["session_id"] == first["session_id"] and second["status"] == "submitted"
    assert second["steps"] == 6  # the step count goes on
    # the patch is the whole conversation's work, against the session's starting commit
    assert "+    return a + b" in second["patch"] and "+assert add(2, 3) == 5" in second["patch"]
    assert "count-lines" not in second["patch"]

    messages = messages_of(first["session_id"])
    roles = [m["role"] for m in messages]
    # the first run (3 steps, the last one the submission), then the follow-up in the same conversation
    assert roles[:9] == ["system", "user", "assistant", "user", "assistant", "user", "assistant", "user", "assistant"]
    follow_up = messages[7]["content"]
    assert "also add a test" in follow_up and "Fix add in calc.py" in messages[1]["content"]
    tool_step = messages[9]["content"]  # the observation of `count-lines calc.py`: the tool still works
    assert "2" in tool_step and "command not found" not in tool_step
    assert (git_repo / "test_calc.py").exists()
    assert run_git(git_repo, "log", "--oneline").count("\n") == 1  # nothing committed behind the person's back


def test_a_follow_up_has_budgets_of_its_own_and_an_interrupted_one_resumes(git_repo, tmp_path):
    script = write_script(tmp_path / "s.yaml", [
        FIX, SUBMIT, bash_reply("echo a >> log.txt"), bash_reply("echo b >> log.txt"), SUBMIT,
    ])
    first = json.loads(cli("run", "-t", "fix", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo",
                           "--step-limit", "2", "--json").stdout)
    assert first["status"] == "submitted" and first["steps"] == 2  # used the whole step budget
    second = json.loads(cli("run", "--continue", first["session_id"], "-t", "log two lines", "--yolo",
                            "--step-limit", "1", "--json").stdout)
    assert second["status"] == "limits_exceeded" and second["steps"] == 3  # one more step, this turn's budget
    # resuming the follow-up keeps its turn's budget (not the first turn's, long spent)
    done = json.loads(cli("resume", first["session_id"], "--yolo", "--step-limit", "5", "--json").stdout)
    assert done["status"] == "submitted" and done["steps"] == 5
    assert (git_repo / "log.txt").read_text().split() == ["a", "b"]
    assert "+    return a + b" in done["patch"] and "+b" in done["patch"]


def test_continue_refuses_what_it_cannot_honour(git_repo, tmp_path):
    script = write_script(tmp_path / "s.yaml", [SUBMIT])
    first = json.loads(cli("run", "-t", "x", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo",
                           "--json").stdout)
    other_model = cli("run", "--continue", first["session_id"], "-t", "more", "-m", f"scripted:{script}", "--yolo")
    assert other_model.returncode == 2 and "leave out --model" in other_model.stderr
    assert "Traceback" not in other_model.stderr
    unknown = cli("run", "--continue", "no-such-session", "-t", "more", "--yolo")
    assert unknown.returncode == 2 and "no-such-session" in unknown.stderr and "Traceback" not in unknown.stderr
    no_task = cli("run", "--continue", first["session_id"], "--yolo")
    assert no_task.returncode == 2 and "--task" in no_task.stderr
