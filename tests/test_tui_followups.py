"""The terminal UI as a conversation: after a run, typing a follow-up continues the same session on
top of its own work; the dialogs say their keys; a new session starts with an empty evolution panel.
The real app (Textual's Pilot) on a real repository, the model scripted."""

from __future__ import annotations

import pytest
from conftest import SUBMIT, bash_reply, run_git
from test_evolution_support import simple_tool, tool_reply
from tui_helpers import make_app, start_task, type_text, wait_for_run, wait_for_screen, wait_until

from live_swe.tui.bridge import ApprovalMode
from live_swe.tui.screens import ApprovalScreen, DirtyTreeScreen, FinishScreen
from live_swe.tui.widgets import EvolutionPanel, StepCard

pytestmark = pytest.mark.anyio

FIX = bash_reply("sed -i 's/a - b/a + b/' calc.py", "The sign is wrong.")
ADD_TEST = bash_reply("printf 'from calc import add\\nassert add(2, 3) == 5\\n' > test_calc.py", "A test.")


@pytest.fixture
def anyio_backend():
    return "asyncio"


def button_labels(screen) -> list[str]:
    from textual.widgets import Button

    return [str(b.label) for b in screen.query(Button)]


async def test_a_follow_up_continues_the_conversation_and_keep_takes_all_its_work(git_repo):
    (git_repo / "notes.txt").write_text("my own notes\n")  # the person's change, set aside for the run
    app, factory = make_app(git_repo, [FIX, SUBMIT], [FIX, SUBMIT, ADD_TEST, SUBMIT], mode=ApprovalMode.AUTO)
    async with app.run_test(size=(130, 40)) as pilot:
        await start_task(pilot, "Fix add in calc.py")
        await wait_for_screen(pilot, DirtyTreeScreen)
        await pilot.press("s")
        finish = await wait_for_screen(pilot, FinishScreen)
        assert "Follow up [f]" in button_labels(finish)
        assert "my own notes" not in finish.patch, finish.patch
        await pilot.press("f")
        await pilot.pause()
        assert app.query_one("#task").text == "" and "follow-up" in str(app.query_one("#hint").render())
        await type_text(pilot, "also add a test")
        await pilot.press("ctrl+r")  # no "uncommitted changes" question: the tree holds the agent's own work
        await wait_for_run(pilot)
        finish = await wait_for_screen(pilot, FinishScreen)
        assert app.session_id == "s1" and app.result.steps == 4
        assert "+    return a + b" in finish.patch and "+assert add(2, 3) == 5" in finish.patch
        assert "my own notes" not in finish.patch
        assert [c.step for c in app.query(StepCard)] == [1, 2, 3, 4]  # the conversation so far, then the follow-up
        assert any("You: also add a test" in str(n.render()) for n in app.query(".follow-up"))
        await pilot.press("k")
        await wait_until(pilot, lambda: app.kept is not None and app.stash is None, "the commit")
    sent = factory.models[1].seen[0]  # what the model got for the follow-up's first step
    assert "Fix add in calc.py" in sent[1]["content"] and "also add a test" in sent[-1]["content"]
    assert [m["role"] for m in sent][-2:] == ["assistant", "user"]  # the submission, answered by the follow-up
    assert sorted(run_git(git_repo, "show", "--name-only", "--format=", "HEAD").split()) == ["calc.py", "test_calc.py"]
    message = run_git(git_repo, "log", "-1", "--format=%B")
    assert message.startswith("Fix add in calc.py") and "Follow-up: also add a test" in message
    assert (git_repo / "notes.txt").read_text() == "my own notes\n"  # back after the conversation


async def test_dialogs_show_their_keys_and_keep_is_not_offered_when_nothing_changed(git_repo):
    app, _ = make_app(git_repo, [SUBMIT])
    async with app.run_test(size=(130, 40)) as pilot:
        await start_task(pilot, "Look around")
        approval = await wait_for_screen(pilot, ApprovalScreen)
        assert button_labels(approval) == ["Approve [y]", "Edit [e]", "Reject [r]", "Approve all [a]"]
        await pilot.press("y")
        finish = await wait_for_screen(pilot, FinishScreen)
        assert button_labels(finish) == ["Follow up [f]", "Decide later [esc]"]  # no Keep, no Discard
        await pilot.press("k")  # nothing to keep: the key does nothing
        await pilot.pause()
        assert isinstance(app.screen, FinishScreen) and app.kept is None


async def test_a_new_task_starts_a_new_session_with_an_empty_evolution_panel(git_repo):
    count = '[ "$1" = --help ] && { echo "usage: NAME FILE"; exit 0; }\nwc -l < "$1"'
    app, _ = make_app(git_repo, [tool_reply("count-lines", simple_tool("count-lines", count)), SUBMIT], [SUBMIT],
                      mode=ApprovalMode.AUTO)
    async with app.run_test(size=(130, 40)) as pilot:
        await start_task(pilot, "Make a tool")
        await wait_for_screen(pilot, FinishScreen)
        assert len(app.query_one(EvolutionPanel).entries) == 2  # the scaffold commit, the tool
        await pilot.press("escape")  # decide later
        await pilot.press("ctrl+n")  # a new task, not a follow-up
        app._fixed_session_id = "s2"
        task = app.query_one("#task")
        task.text = ""
        await start_task(pilot, "Something else")
        await wait_for_run(pilot)
        assert app.session_id == "s2"
        assert app.query_one(EvolutionPanel).entries == []
        assert app.query_one("#evolution-empty").display


def test_set_aside_takes_untracked_files_out_of_the_tree_and_brings_them_back(git_repo):
    from live_swe.infra.git import user_identity
    from live_swe.tui.worktree import WorkTree

    (git_repo / "notes.txt").write_text("my own notes\n")
    (git_repo / "README.md").write_text("# calc\nmine\n")
    tree = WorkTree(git_repo, identity=user_identity(git_repo))
    stash = tree.stash_user_changes("s1")
    assert run_git(git_repo, "status", "--porcelain") == ""  # nothing of the person's is left to mix in
    assert not (git_repo / "notes.txt").exists()
    assert tree.restore_user_changes(stash) is None
    assert (git_repo / "notes.txt").read_text() == "my own notes\n"
    assert (git_repo / "README.md").read_text() == "# calc\nmine\n"


HEREDOC = "cat > notes.txt <<'EOF'\nfirst line\nsecond line\nEOF"


async def test_editing_a_heredoc_uses_a_multi_line_editor(git_repo):
    app, _ = make_app(git_repo, [bash_reply(HEREDOC), SUBMIT])
    async with app.run_test(size=(130, 40)) as pilot:
        await start_task(pilot, "Write notes")
        screen = await wait_for_screen(pilot, ApprovalScreen)
        await pilot.press("e")
        editor = screen.query_one("#editor")
        assert editor.text == HEREDOC and editor.has_focus  # the whole command, every line
        await pilot.press("end", "enter")  # Enter is a new line (after the first), not "run"
        await type_text(pilot, "third")
        assert isinstance(app.screen, ApprovalScreen)
        await pilot.press("ctrl+s")
        await wait_for_screen(pilot, ApprovalScreen)  # the submission, asked for in turn
        await pilot.press("y")
        await wait_for_screen(pilot, FinishScreen)
        [card] = [c for c in app.query(StepCard) if c.step == 1]
        [submission] = [c for c in app.query(StepCard) if c.step == 2]
        assert submission.output == "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n"
    assert (git_repo / "notes.txt").read_text() == "third\nfirst line\nsecond line\n"  # the edited heredoc ran
    assert card.review.startswith("edited to: cat > notes.txt <<'EOF'\nthird\nfirst line")


async def test_an_expanded_step_shows_the_commands_output_and_model_view_is_a_toggle(git_repo):
    app, _ = make_app(git_repo, [bash_reply("cat calc.py"), SUBMIT], mode=ApprovalMode.AUTO)
    async with app.run_test(size=(130, 40)) as pilot:
        await start_task(pilot, "Read")
        await wait_for_screen(pilot, FinishScreen)
        await pilot.press("escape")
        [card] = [c for c in app.query(StepCard) if c.step == 1]
        assert card.shown_output == "def add(a, b):\n    return a - b\n"  # as the command printed it
        assert "<returncode>" not in card.shown_output and "Reflect" not in card.shown_output
        await pilot.press("f8")
        assert "<returncode>0</returncode>" in card.shown_output  # what the model was sent
        assert "model view" in card.query_one("Collapsible").title
        await pilot.press("f8")
        assert card.shown_output.startswith("def add")


async def test_the_footer_shows_the_keys_of_the_screen_in_front_and_f5_switches_tabs(git_repo):
    from textual.widgets import TabbedContent

    app, _ = make_app(git_repo, [FIX, SUBMIT])
    async with app.run_test(size=(80, 24)) as pilot:
        async def footer_keys() -> set[str]:
            from textual.widgets._footer import FooterKey

            await pilot.pause()
            return {key.description for key in app.screen.query(FooterKey) if not key.disabled}

        assert app.query_one("#right", TabbedContent).active == "diff-tab"
        await pilot.press("f5")
        assert app.query_one("#right", TabbedContent).active == "evolution-tab"
        await pilot.press("f5")
        assert app.query_one("#right", TabbedContent).active == "diff-tab"
        keys = await footer_keys()
        assert {"Run task", "Diff/Evolution", "Model view"} <= keys
        assert "Keep / discard" not in keys and "Undo commit" not in keys and "Pause & message" not in keys
        await start_task(pilot, "Fix add")
        await wait_for_screen(pilot, ApprovalScreen)
        assert app.query_one("#status").plain.startswith("running")  # first, where 80 columns keep it
        keys = await footer_keys()
        assert {"Approve", "Edit", "Reject", "Approve all"} <= keys and "Run task" not in keys
        assert app.screen.query("Footer")
        await pilot.press("e")
        keys = await footer_keys()
        assert "Run edited" in keys and "Approve" not in keys
