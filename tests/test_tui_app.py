"""The interactive UI driven with Textual's pilot, on real git repositories, with scripted models."""

from __future__ import annotations

import pytest
from conftest import SUBMIT, bash_reply, run_git
from tui_helpers import make_app, type_text, wait_for_run, wait_for_screen, wait_until

from live_swe.tui.bridge import ApprovalMode
from live_swe.tui.screens import ApprovalScreen, DirtyTreeScreen, FinishScreen, PauseScreen
from live_swe.tui.widgets import StepCard

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


FIX = bash_reply("sed -i 's/a - b/a + b/' calc.py", "The sign is wrong.")


def branches(repo) -> list[str]:
    return run_git(repo, "branch", "--format=%(refname:short)").split()


async def test_type_task_confirm_each_command_stream_and_keep_commit(git_repo):
    app, factory = make_app(git_repo, [FIX, SUBMIT])
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.click("#task")
        await type_text(pilot, "Fix add in calc.py")
        await pilot.press("ctrl+r")
        screen = await wait_for_screen(pilot, ApprovalScreen)
        assert screen.command == "sed -i 's/a - b/a + b/' calc.py"
        assert (git_repo / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"  # not run before approval
        await pilot.press("y")
        screen = await wait_for_screen(pilot, ApprovalScreen)
        assert "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in screen.command
        await pilot.press("y")
        finish = await wait_for_screen(pilot, FinishScreen)
        assert "+    return a + b" in finish.patch
        cards = list(app.query(StepCard))
        assert [c.step for c in cards] == [1, 2]
        assert cards[0].thought == "The sign is wrong." and cards[0].returncode == 0
        assert cards[0].review == "approved"
        assert "".join(app.streamed) == FIX + SUBMIT  # replies were streamed as they arrived
        assert "+    return a + b" in app.query_one("#diff").diff
        await pilot.press("k")
        await wait_until(pilot, lambda: app.kept is not None, "the commit")
    assert factory.models[0].seen[0][1]["content"].count("Fix add in calc.py") == 1
    assert run_git(git_repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "live-swe/s1"
    assert run_git(git_repo, "log", "-1", "--format=%s").strip() == "Fix add in calc.py"
    assert run_git(git_repo, "show", "--name-only", "--format=", "HEAD").split() == ["calc.py"]
    assert run_git(git_repo, "status", "--porcelain") == ""
    assert run_git(git_repo, "rev-parse", "HEAD~1") == run_git(git_repo, "rev-parse", "main")
