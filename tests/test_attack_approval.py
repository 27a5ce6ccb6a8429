"""The read-only approval mode runs "harmless" readers without asking. A reader that runs a command
through a prompt expansion (``echo '\\044(id)'; echo ${_@P}``) or reads the kernel's environment
(``cat /proc/$PPID/environ``) is asked for, like any ``$``, backtick, redirection or path outside the
repository. The real TUI driven with Textual's pilot, on a real repository."""

from __future__ import annotations

import pytest
from conftest import SUBMIT, bash_reply
from tui_helpers import SIZE, make_app, type_text, wait_for_screen

from live_swe.command_safety import is_harmless
from live_swe.tui.bridge import ApprovalMode
from live_swe.tui.screens import ApprovalScreen, FinishScreen
from live_swe.tui.widgets import StepCard

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def test_read_only_mode_asks_before_a_prompt_expansion_or_a_read_of_the_kernel(git_repo, tmp_path):
    witness = tmp_path / "ran"
    expansion = f"echo '\\044(touch {witness})'; echo ${{_@P}}"
    replies = [bash_reply(expansion), bash_reply("cat /proc/$PPID/environ"), bash_reply("cat /proc/self/environ"),
               bash_reply("cat calc.py"), SUBMIT]
    app, factory = make_app(git_repo, replies, mode=ApprovalMode.READ_ONLY)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.click("#task")
        await type_text(pilot, "Fix add")
        await pilot.press("ctrl+r")
        for command in (expansion, "cat /proc/$PPID/environ", "cat /proc/self/environ"):
            screen = await wait_for_screen(pilot, ApprovalScreen)
            assert screen.command == command and not witness.exists()
            await pilot.press("r")
            await type_text(pilot, "no")
            await pilot.press("enter")
        await wait_for_screen(pilot, FinishScreen)  # the plain reader and the submission ran without asking
        cards = {c.step: c for c in app.query(StepCard)}
        assert [cards[s].review for s in (1, 2, 3)] == ["rejected: no"] * 3
        assert "return a - b" in cards[4].output
    assert not witness.exists()
    assert "GITHUB" not in str(factory.models[0].seen)


@pytest.mark.parametrize("command", [
    "echo '\\044(id)'; echo ${_@P}", "cat /proc/$PPID/environ", "cat /proc/self/environ", "echo $HOME",
    "cat ~/.ssh/id_rsa", "cat ../other/secret", "cat src/../../x", "ls /", "find / -name id_rsa",
    "grep -r key /etc", "grep -f/etc/passwd x", "grep --file=/etc/shadow x", "head -c 10 /dev/urandom",
    "cat link-out", "echo `id`", "diff <(ls) b", "cat a > b",
])
def test_readers_outside_the_repository_or_with_expansions_are_asked_for(git_repo, command):
    (git_repo / "link-out").symlink_to("/etc/hostname")
    assert not is_harmless(command, git_repo)


@pytest.mark.parametrize("command", [
    "cat calc.py", "ls -la", "git diff HEAD~1", "git log HEAD~1..HEAD", "grep -rn 'def add' .",
    "find . -name '*.py'", "cat {repo}/calc.py", "head -n 5 calc.py && tail -n 5 calc.py", "date -u +%s",
])
def test_readers_inside_the_repository_still_run(git_repo, command):
    assert is_harmless(command.format(repo=git_repo), git_repo)
