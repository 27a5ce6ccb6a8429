"""Snapshots of the main screens (pytest-textual-snapshot). Fixed session id and clock, real git
repositories at a fixed path, scripted models: the pictures only change when the UI does.

Update them after an intended change with ``python -m pytest tests/test_tui_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import SUBMIT, bash_reply, make_git_repo
from tui_helpers import SIZE, make_app, wait_for_run, wait_for_screen

from live_swe.tui.bridge import ApprovalMode
from live_swe.tui.screens import ApprovalScreen, FinishScreen

FIX = bash_reply("sed -i 's/a - b/a + b/' calc.py", "The sign is wrong.")
TASK = "Fix add() in calc.py: it subtracts."


@pytest.fixture
def fixed_repo(tmp_path_factory) -> Path:
    """The repository at the same path every run, so nothing path-dependent varies."""
    path = Path("/tmp/live-swe-tui-snapshots/repo")
    shutil.rmtree(path.parent, ignore_errors=True)
    repo = make_git_repo(path, {"calc.py": "def add(a, b):\n    return a - b\n", "README.md": "# calc\n"})
    yield repo
    shutil.rmtree(path.parent, ignore_errors=True)


def test_snapshot_idle_with_a_task(snap_compare, fixed_repo):
    app, _ = make_app(fixed_repo, [FIX, SUBMIT], task=TASK)
    assert snap_compare(app, terminal_size=SIZE)


def test_snapshot_confirming_a_command(snap_compare, fixed_repo):
    app, _ = make_app(fixed_repo, [FIX, SUBMIT], task=TASK)

    async def run_before(pilot):
        await pilot.press("ctrl+r")
        await wait_for_screen(pilot, ApprovalScreen)
        app.clear_notifications()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_finished_run_keep_or_discard(snap_compare, fixed_repo):
    app, _ = make_app(fixed_repo, [FIX, SUBMIT], task=TASK, mode=ApprovalMode.AUTO)

    async def run_before(pilot):
        await pilot.press("ctrl+r")
        await wait_for_run(pilot)
        await wait_for_screen(pilot, FinishScreen)
        app.clear_notifications()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_steps_and_evolution_panel(snap_compare, fixed_repo):
    from test_evolution_support import simple_tool, tool_reply

    app, _ = make_app(fixed_repo, [tool_reply("count-lines", simple_tool("count-lines")), FIX, SUBMIT], task=TASK,
                      mode=ApprovalMode.AUTO)

    async def run_before(pilot):
        await pilot.press("ctrl+r")
        await wait_for_run(pilot)
        await wait_for_screen(pilot, FinishScreen)
        await pilot.press("escape")  # decide later
        app.query_one("#right").active = "evolution-tab"
        app.clear_notifications()
        await pilot.wait_for_scheduled_animations()
        app.query_one("#steps").scroll_end(animate=False)  # where an animated scroll would stop, at once
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
