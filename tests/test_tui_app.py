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


async def run_to_finish(pilot, task: str = "Fix add in calc.py") -> None:
    await pilot.click("#task")
    await type_text(pilot, task)
    await pilot.press("ctrl+r")
    await wait_for_run(pilot)


async def test_edit_a_command_and_reject_one_with_a_comment(git_repo):
    replies = [bash_reply("echo wrong > calc.py"), bash_reply("rm calc.py"), FIX, SUBMIT]
    app, factory = make_app(git_repo, replies)
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.click("#task")
        await type_text(pilot, "Fix add")
        await pilot.press("ctrl+r")
        await wait_for_screen(pilot, ApprovalScreen)
        await pilot.press("e")
        editor = app.screen.query_one("#editor")  # a multi-line editor, holding the command
        assert editor.text == "echo wrong > calc.py"
        editor.text = "sed -i 's/a - b/a+b/' calc.py"
        await pilot.press("ctrl+s")
        await wait_for_screen(pilot, ApprovalScreen)
        assert app.screen.command == "rm calc.py"
        await pilot.press("r")
        await type_text(pilot, "never delete files")
        await pilot.press("enter")
        await wait_for_screen(pilot, ApprovalScreen)
        await pilot.press("a")  # approve all from now on
        await wait_for_screen(pilot, FinishScreen)
        cards = {c.step: c for c in app.query(StepCard)}
        assert cards[1].review == "edited to: sed -i 's/a - b/a+b/' calc.py"
        assert cards[2].review == "rejected: never delete files"
        assert app.bridge.mode is ApprovalMode.AUTO
    model = factory.models[0]
    # the edited command ran instead of the proposed one, the rejected one never ran
    assert (git_repo / "calc.py").read_text() == "def add(a, b):\n    return a+b\n"
    assert "The user rejected this command; it was not run. The user says: never delete files" in \
        model.seen[2][-1]["content"]


async def test_read_only_mode_runs_readers_and_asks_for_writers(git_repo):
    app, _ = make_app(git_repo, [bash_reply("cat calc.py | grep add"), FIX, SUBMIT], mode=ApprovalMode.READ_ONLY)
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.click("#task")
        await type_text(pilot, "Fix add")
        await pilot.press("ctrl+r")
        screen = await wait_for_screen(pilot, ApprovalScreen)
        assert screen.command.startswith("sed -i")  # the reader ran without asking
        first = app.query(StepCard).first()
        assert first.returncode == 0 and "def add" in first.output
        await pilot.press("f2")  # read-only -> confirm
        assert app.bridge.mode is ApprovalMode.CONFIRM
        await pilot.press("y")
        await wait_for_screen(pilot, ApprovalScreen)  # the submission is asked for too
        await pilot.press("f2")  # confirm -> auto (for what comes next)
        assert app.bridge.mode is ApprovalMode.AUTO
        assert "mode auto" in app.query_one("#status").plain
        await pilot.press("y")
        await wait_for_screen(pilot, FinishScreen)


async def test_escape_pauses_after_the_current_command_and_the_message_reaches_the_agent(git_repo):
    app, factory = make_app(git_repo, [bash_reply("ls"), FIX, SUBMIT])
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.click("#task")
        await type_text(pilot, "Fix add")
        await pilot.press("ctrl+r")
        await wait_for_screen(pilot, ApprovalScreen)
        await pilot.press("escape")  # pause requested while the first command waits
        await pilot.press("y")
        await wait_for_screen(pilot, PauseScreen)
        assert app.state == "paused"
        assert [c.step for c in app.query(StepCard)] == [1] and app.query(StepCard).first().returncode == 0
        assert factory.models[0].calls == 1  # nothing else was asked of the model while paused
        await type_text(pilot, "use sed please")
        await pilot.press("enter")
        await wait_for_screen(pilot, ApprovalScreen)
        app.set_approval_mode("auto")
        await pilot.press("y")
        await wait_for_screen(pilot, FinishScreen)
    model = factory.models[0]
    assert model.seen[1][-1] == {"role": "user", "content": "use sed please"}
    assert (git_repo / "calc.py").read_text().endswith("a + b\n")


async def test_a_dirty_tree_is_refused_unless_set_aside_and_discard_brings_it_back(git_repo):
    (git_repo / "README.md").write_text("# calc\nmy notes\n")
    (git_repo / "scratch.txt").write_text("my own file\n")
    app, _ = make_app(git_repo, [FIX, SUBMIT], mode=ApprovalMode.AUTO)
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.click("#task")
        await type_text(pilot, "Fix add")
        await pilot.press("ctrl+r")
        screen = await wait_for_screen(pilot, DirtyTreeScreen)
        assert " M README.md" in screen.changes and "?? scratch.txt" in screen.changes
        await pilot.press("escape")  # refuse: nothing runs
        await pilot.pause()
        assert app.state == "idle" and not app.workers
        await pilot.press("ctrl+r")
        await wait_for_screen(pilot, DirtyTreeScreen)
        await pilot.press("s")  # set them aside for the run
        await wait_for_screen(pilot, FinishScreen)
        assert "my notes" not in app.screen.patch and "+    return a + b" in app.screen.patch
        assert "scratch" not in app.screen.patch  # untracked files were set aside too
        await pilot.press("d")
        await wait_until(pilot, lambda: app.stash is None, "the user's changes to come back")
    assert (git_repo / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"  # discarded
    assert (git_repo / "README.md").read_text() == "# calc\nmy notes\n"  # the user's changes, intact
    assert (git_repo / "scratch.txt").read_text() == "my own file\n"
    assert run_git(git_repo, "stash", "list") == ""
    assert branches(git_repo) == ["main"]


async def test_keep_commits_only_the_agents_work_and_undo_takes_the_commit_back(git_repo):
    (git_repo / "README.md").write_text("# calc\nmy notes\n")
    app, _ = make_app(git_repo, [FIX, bash_reply("echo 'def sub(a, b):\n    return a - b' > extra.py"), SUBMIT],
                      mode=ApprovalMode.AUTO)
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.click("#task")
        await type_text(pilot, "Fix add and add sub")
        await pilot.press("ctrl+r")
        await wait_for_screen(pilot, DirtyTreeScreen)
        await pilot.press("s")
        await wait_for_screen(pilot, FinishScreen)
        await pilot.press("k")
        await wait_until(pilot, lambda: app.kept is not None and app.stash is None, "the commit")
        kept = app.kept
        assert kept.branch == "live-swe/s1"
        assert run_git(git_repo, "show", "--name-only", "--format=", "HEAD").split() == ["calc.py", "extra.py"]
        assert (git_repo / "README.md").read_text() == "# calc\nmy notes\n"  # back, still uncommitted
        await pilot.press("f6")
        await wait_until(pilot, lambda: app.kept is None, "the undo")
    assert run_git(git_repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert branches(git_repo) == ["main"]
    status = run_git(git_repo, "status", "--porcelain").splitlines()
    assert sorted(status) == [" M README.md", " M calc.py", "?? extra.py"]  # nothing lost, nothing committed
    assert (git_repo / "calc.py").read_text().endswith("a + b\n")


async def test_quitting_while_the_agent_waits_stops_it_and_saves_the_session(git_repo):
    app, _ = make_app(git_repo, [FIX, SUBMIT])
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.click("#task")
        await type_text(pilot, "Fix add")
        await pilot.press("ctrl+r")
        await wait_for_screen(pilot, ApprovalScreen)
        await pilot.press("ctrl+q")
        await app.workers.wait_for_complete()
        await wait_until(pilot, lambda: not app.is_running, "the app to exit")
    from live_swe.session.store import SessionStore

    meta = SessionStore.default().open("s1").meta
    assert meta.status == "interrupted"
    assert (git_repo / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"  # the command never ran


async def test_quitting_while_a_long_command_runs_kills_it_at_once(git_repo):
    import time

    app, _ = make_app(git_repo, [bash_reply("echo started > started.txt; sleep 120; echo late > late.txt"), SUBMIT],
                      mode=ApprovalMode.AUTO)
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.click("#task")
        await type_text(pilot, "Wait a while")
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: (git_repo / "started.txt").exists(), "the command to start")
        quit_at = time.monotonic()
        await pilot.press("ctrl+q")
        await app.workers.wait_for_complete()
        await wait_until(pilot, lambda: not app.is_running, "the app to exit")
    assert time.monotonic() - quit_at < 15  # not the command's 120 s
    from live_swe.session.store import SessionStore

    assert SessionStore.default().open("s1").meta.status == "interrupted"
    assert not (git_repo / "late.txt").exists()


async def test_status_line_shows_model_step_tokens_cost_and_time(git_repo):
    ticks = iter([100.0, 100.0] + [165.0] * 1000)
    app, _ = make_app(git_repo, [FIX, SUBMIT], mode=ApprovalMode.AUTO)
    app._clock = lambda: next(ticks)
    async with app.run_test(size=(130, 40)) as pilot:
        await run_to_finish(pilot)
        line = app.query_one("#status").plain
        tokens = app.bridge.model.tokens
        assert tokens > 0
        for part in ("model scripted", "step 2", f"tokens {tokens:,}", "cost $0.0000", "time 01:05",
                     "session s1", "finished"):
            assert part in line, (part, line)


@pytest.mark.parametrize("network", [False, True])
async def test_status_line_says_whether_the_agent_has_the_network_and_the_run_uses_that(git_repo, network):
    probe = bash_reply("cat /proc/net/dev | grep -c ':' ; ls /sys/class/net 2>/dev/null | wc -l")
    app, factory = make_app(git_repo, [probe, SUBMIT], mode=ApprovalMode.AUTO, network=network)
    async with app.run_test(size=(130, 40)) as pilot:
        assert f"net {'on' if network else 'off'}" in app.query_one("#status").plain
        await run_to_finish(pilot)
        assert f"net {'on' if network else 'off'}" in app.query_one("#status").plain
    from live_swe.session.store import SessionStore

    assert SessionStore.default().open("s1").meta.extra["sandbox"] == {"mode": "bubblewrap", "network": network}
    interfaces = int(factory.models[0].seen[1][-1]["content"].split("<output>\n")[1].split()[0])
    assert (interfaces > 1) is network  # an empty network namespace has only its loopback


async def test_evolution_panel_lists_tools_and_scaffold_changes_with_their_diffs(git_repo):
    from test_evolution_support import FIND_DEF, tool_reply, write_file_command

    bad_policy = bash_reply(write_file_command("scaffold.yaml", "version: 1\nno_such_key: true\n"), "Try a setting.")
    tighter = bash_reply("sed -i 's/step_limit: null/step_limit: 40/' \"$LIVE_SWE_SCAFFOLD/scaffold.yaml\"",
                         "A short task needs few steps.")
    app, _ = make_app(git_repo, [tool_reply("find-def", FIND_DEF), bad_policy, tighter, SUBMIT],
                      mode=ApprovalMode.AUTO)
    async with app.run_test(size=(130, 40)) as pilot:
        await run_to_finish(pilot)
        entries = app.query_one("#evolution").entries
        titles = [e["title"] for e in entries]
        assert "✓ step 1: scaffold commit: tools/find-def" in titles
        assert "✓ step 1: tool find-def registered" in titles
        assert "✗ step 2: scaffold reject: scaffold.yaml" in titles
        assert "✓ step 3: scaffold commit: scaffold.yaml" in titles
        by_title = {e["title"]: e["body"] for e in entries}
        assert "+# live-swe-tool: find-def" in by_title["✓ step 1: scaffold commit: tools/find-def"]
        assert "no_such_key" in by_title["✗ step 2: scaffold reject: scaffold.yaml"]
        committed = by_title["✓ step 3: scaffold commit: scaffold.yaml"]
        assert "-  step_limit: null" in committed and "+  step_limit: 40" in committed
        assert "reason: A short task needs few steps." in committed


async def test_resume_a_session_from_the_picker(git_repo):
    from live_swe.tui.screens import SessionPicker

    # the first run stops when its script runs out, after one command
    app, _ = make_app(git_repo, [FIX], mode=ApprovalMode.AUTO, session_id="first")
    async with app.run_test(size=(130, 40)) as pilot:
        await run_to_finish(pilot)
        assert app.result is None or app.result.status == "error"
    # The resumed run is given the whole script again (as `--model scripted:FILE` reads it again): it
    # continues where the log stops, with the second reply, not the first a second time.
    app, factory = make_app(git_repo, [FIX, SUBMIT], mode=ApprovalMode.AUTO)
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.press("f3")
        picker = await wait_for_screen(pilot, SessionPicker)
        assert [m.id for m in picker.metas] == ["first"]
        await pilot.press("enter")
        await wait_for_screen(pilot, FinishScreen)
        assert app.session_id == "first" and app.result.status == "submitted"
        assert [c.step for c in app.query(StepCard)] == [1, 2]  # the earlier step is shown too
        assert "+    return a + b" in app.result.patch
    assert factory.models[0].seen[0][-1]["role"] == "user"  # it went on from the saved conversation
    assert len(factory.models[0].seen) == 1  # one query: the submission
    app, _ = make_app(git_repo, [SUBMIT], session_id="later")
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.press("f3")
        picker = await wait_for_screen(pilot, SessionPicker)
        assert picker.metas == []  # "first" is submitted now: finished, not offered


async def test_a_finished_run_shows_its_grade_in_a_tab(git_repo):
    from live_swe.tui.widgets import GradeView

    plan = "PLAN:\n1. Read add() in calc.py\n2. Fix the operator\n3. Run a check\n\n"
    app, _ = make_app(git_repo, [plan + bash_reply("cat calc.py"), bash_reply("cat calc.py", "Again."), FIX, SUBMIT],
                      mode=ApprovalMode.AUTO)
    async with app.run_test(size=(130, 40)) as pilot:
        assert not app.query("#grade-tab")  # no grade before a run has ended
        await run_to_finish(pilot)
        await wait_until(pilot, lambda: bool(app.query(GradeView)) and app.query_one(GradeView).lines, "the grade")
        lines = app.query_one(GradeView).lines
        assert lines[0].startswith("GPA ") and "GF 1/3" in lines[0]
        assert ("Goal fulfillment: 1/3 — step 3: the edit(s) at step(s) 3 (calc.py) were never followed by a run of "
                "the code or the tests") in lines
        assert any(line.startswith("Execution efficiency: 2/3 — step 2: `cat calc.py`") for line in lines)
        assert "- step 3: the edit(s) at step(s) 3 (calc.py) were never followed by a run of the code or the tests " \
               "[unverified_edit, major]" in lines
        # the next run starts without the old grade
        app.query_one("#task").disabled = False
        app._reset_run_view("another task")
        await pilot.pause()
        assert not app.query("#grade-tab")


async def test_contract_violations_show_in_the_steps_and_an_unrestored_one_drops_to_confirm_mode(git_repo, live_swe_home):
    (live_swe_home / "contracts").mkdir()
    (live_swe_home / "contracts" / "tiny.yaml").write_text(
        "name: tiny\nsoft:\n  - id: tiny-diff\n    check: {field: diff_lines, op: le, value: 3}\n    message: keep it tiny\n"
        "recovery: {k: 1, max_attempts: 1, fallback: reduce_autonomy}\n")
    script = [bash_reply("git push"), bash_reply("seq 1 10 > n.txt"), bash_reply("ls"), bash_reply("rm n.txt"), SUBMIT]
    app, _ = make_app(git_repo, script, mode=ApprovalMode.AUTO)
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.click("#task")
        await type_text(pilot, "Fix add")
        await pilot.press("ctrl+r")
        screen = await wait_for_screen(pilot, ApprovalScreen)  # step 4: the person is asked now
        assert app.bridge.mode is ApprovalMode.CONFIRM and "rm n.txt" in screen.command
        notes = [str(n.render()) for n in app.query(".note")]
        assert any("step 1: no-git-push (blocked)" in n for n in notes), notes
        assert any("step 2: tiny-diff (soft, detected): keep it tiny" in n for n in notes), notes
        assert any("every command now needs your confirmation" in n for n in notes), notes
        await pilot.press("y")
        await wait_for_screen(pilot, ApprovalScreen)  # the submission too
        await pilot.press("y")
        await wait_for_screen(pilot, FinishScreen)


async def test_resuming_with_f3_sets_the_users_own_changes_aside_and_discard_gives_them_back(git_repo):
    from live_swe.tui.screens import SessionPicker

    app, _ = make_app(git_repo, [FIX], mode=ApprovalMode.AUTO, session_id="first")
    async with app.run_test(size=(130, 40)) as pilot:  # stops after one command: the script runs out
        await run_to_finish(pilot)
    # between the runs the person writes a line of their own and a file
    (git_repo / "README.md").write_text("# calc\nmy notes\n")
    (git_repo / "scratch.txt").write_text("my own file\n")
    # a resumed scripted model goes on after the replies the log holds (the first, FIX)
    app, _ = make_app(git_repo, [FIX, bash_reply("echo more >> calc.py"), SUBMIT], mode=ApprovalMode.AUTO)
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.press("f3")
        await wait_for_screen(pilot, SessionPicker)
        await pilot.press("enter")
        screen = await wait_for_screen(pilot, DirtyTreeScreen)
        assert " M README.md" in screen.changes and "?? scratch.txt" in screen.changes
        assert not any("calc.py" in line for line in screen.changes)  # the session's own work is not the person's
        await pilot.press("s")
        await wait_for_screen(pilot, FinishScreen)
        patch = app.screen.patch
        sess = app.store.open(app.session_id)
        print("META", sess.meta.status, sess.meta.exit_message)
        for line in sess.events_path.read_text().splitlines()[-8:]:
            print("EV", line[:300])
        assert "my notes" not in patch and "scratch" not in patch
        assert "+    return a + b" in patch and "+more" in patch  # the earlier edit, and the new one
        await pilot.press("d")
        await wait_until(pilot, lambda: app.stash is None, "the set-aside changes to come back")
    assert (git_repo / "README.md").read_text() == "# calc\nmy notes\n"  # never discarded
    assert (git_repo / "scratch.txt").read_text() == "my own file\n"
    assert run_git(git_repo, "stash", "list") == ""
    assert branches(git_repo) == ["main"]
