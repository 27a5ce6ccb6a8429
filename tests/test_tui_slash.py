"""The task box's slash commands and @ mentions: the rules on their own, then in the real app on a
real repository (a scripted model, as in the other TUI tests)."""

from __future__ import annotations

import pytest
from conftest import SUBMIT, bash_reply, make_git_repo
from tui_helpers import make_app, type_text, wait_for_run, wait_until

from live_swe.session.store import SessionStore
from live_swe.tui.bridge import ApprovalMode
from live_swe.tui.slash import SlashCommand, attach_mentions, complete, completions, parse_command


@pytest.fixture
def anyio_backend():
    return "asyncio"


FILES = ["README.md", "shop/cart.py", "shop/catalog.py", "tests/test_cart.py"]


def test_a_command_is_the_whole_box_and_a_path_is_a_task():
    assert parse_command("/mode auto") == SlashCommand("mode", "auto")
    assert parse_command("  /help  ") == SlashCommand("help")
    assert parse_command("/nonsense") == SlashCommand("nonsense")  # reported as unknown, not run as a task
    assert parse_command("/usr/lib/libfoo.so is missing") is None
    assert parse_command("/mode auto\nthen fix the bug") is None
    assert parse_command("Fix /mode handling") is None


def test_mentions_name_repository_files_only_and_are_attached():
    task = attach_mentions("Fix the total in @shop/cart.py, see @tests/test_cart.py and @nowhere.py; mail a@b.c",
                           set(FILES))
    assert task.startswith("Fix the total in shop/cart.py, see tests/test_cart.py and @nowhere.py; mail a@b.c")
    assert task.endswith("\n\nFiles the person pointed at: shop/cart.py, tests/test_cart.py")
    assert attach_mentions("no mention here", set(FILES)) == "no mention here"


def test_completion_by_path_then_by_name():
    assert completions("shop/c", FILES) == ["shop/cart.py", "shop/catalog.py"]
    assert completions("cart", FILES) == ["shop/cart.py"]  # by file name
    assert complete("shop/ca", FILES) == "shop/ca"  # two matches share no longer prefix
    assert complete("shop/car", FILES) == "shop/cart.py"
    assert complete("te", FILES) == "tests/test_cart.py"
    assert complete("zzz", FILES) == "zzz"


@pytest.fixture
def shop_repo(tmp_path):
    return make_git_repo(tmp_path / "shop-repo", {"calc.py": "def add(a, b):\n    return a - b\n",
                                                  "shop/cart.py": "TOTAL = 0\n", "README.md": "# shop\n"})


@pytest.mark.anyio
async def test_slash_commands_change_the_app_and_start_nothing(shop_repo, live_swe_home):
    app, factory = make_app(shop_repo, [SUBMIT])
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.click("#task")
        await type_text(pilot, "/mode auto")
        await pilot.press("ctrl+r")
        assert app.bridge.mode is ApprovalMode.AUTO and app.query_one("#task").text == ""
        await type_text(pilot, "/model local/smollm2-135m")
        await pilot.press("ctrl+r")
        assert app.model_name == "local/smollm2-135m"
        await type_text(pilot, "/bogus")
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert any("Unknown command /bogus" in n.message for n in app._notifications)
        await type_text(pilot, "/undo")
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert any("/undo is not available now" in n.message for n in app._notifications)
    assert factory.models == [] and SessionStore.default().list() == []  # no run, no session


@pytest.mark.anyio
async def test_tab_completes_a_mention_and_the_agent_gets_the_file(shop_repo, live_swe_home):
    app, factory = make_app(shop_repo, [bash_reply("cat shop/cart.py"), SUBMIT], mode=ApprovalMode.AUTO)
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.click("#task")
        await type_text(pilot, "Fix the total in @car")
        assert "shop/cart.py" in str(app.query_one("#hint").render())
        await pilot.press("tab")
        await wait_until(pilot, lambda: app.query_one("#task").text.endswith("@shop/cart.py"), "the completion")
        await pilot.press("ctrl+r")
        await wait_for_run(pilot)
    first_prompt = factory.models[0].seen[0][1]["content"]
    assert "Fix the total in shop/cart.py" in first_prompt
    assert "Files the person pointed at: shop/cart.py" in first_prompt
