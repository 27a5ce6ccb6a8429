"""The interactive UI with the agent in a container: the work reaches the host only when kept, and
quitting mid-run removes the container."""

from __future__ import annotations

import pytest
from conftest import SUBMIT, bash_reply, labelled_containers, run_git
from tui_helpers import make_app, type_text, wait_for_run, wait_for_screen, wait_until

from live_swe.tui.bridge import ApprovalMode
from live_swe.tui.screens import ApprovalScreen, FinishScreen

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

FIX = bash_reply("sed -i 's/a - b/a + b/' calc.py && echo note > notes.txt", "The sign is wrong.")


@pytest.fixture
def anyio_backend():
    return "asyncio"


def session_containers(docker_client, session_id: str) -> list:
    return labelled_containers(docker_client, f"live-swe.session={session_id}")


async def test_work_in_a_container_is_kept_as_a_commit_on_the_host(git_repo, base_image, docker_client):
    app, _ = make_app(git_repo, [FIX, SUBMIT], mode=ApprovalMode.AUTO, env="docker", image=base_image)
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.click("#task")
        await type_text(pilot, "Fix add")
        await pilot.press("ctrl+r")
        await wait_for_run(pilot)
        finish = await wait_for_screen(pilot, FinishScreen)
        assert "+    return a + b" in finish.patch and "+note" in finish.patch
        assert (git_repo / "calc.py").read_text().endswith("a - b\n")  # the host is untouched until kept
        assert session_containers(docker_client, "s1") == []  # the run's container is gone already
        await pilot.press("k")
        await wait_until(pilot, lambda: app.kept is not None, "the commit")
    assert run_git(git_repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "live-swe/s1"
    assert sorted(run_git(git_repo, "show", "--name-only", "--format=", "HEAD").split()) == ["calc.py", "notes.txt"]
    assert (git_repo / "calc.py").read_text().endswith("a + b\n")
    assert run_git(git_repo, "status", "--porcelain") == ""


async def test_quitting_mid_run_stops_the_agent_and_removes_its_container(git_repo, base_image, docker_client):
    app, _ = make_app(git_repo, [FIX, SUBMIT], env="docker", image=base_image)
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.click("#task")
        await type_text(pilot, "Fix add")
        await pilot.press("ctrl+r")
        await wait_for_screen(pilot, ApprovalScreen, timeout=60)
        assert len(session_containers(docker_client, "s1")) == 1  # the agent waits, its container runs
        await pilot.press("ctrl+q")
        await app.workers.wait_for_complete()
        await wait_until(pilot, lambda: not app.is_running, "the app to exit")
    from live_swe.session.store import SessionStore

    assert SessionStore.default().open("s1").meta.status == "interrupted"
    assert session_containers(docker_client, "s1") == []
    assert (git_repo / "calc.py").read_text().endswith("a - b\n")


async def test_quitting_while_a_long_command_runs_in_the_container_kills_it(git_repo, base_image, docker_client):
    import time

    app, _ = make_app(git_repo, [bash_reply("echo started; sleep 120"), SUBMIT], mode=ApprovalMode.AUTO,
                      env="docker", image=base_image)
    async with app.run_test(size=(130, 40)) as pilot:
        await pilot.click("#task")
        await type_text(pilot, "Wait a while")
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: _sleeping(docker_client), "the command to run", timeout=60)
        quit_at = time.monotonic()
        await pilot.press("ctrl+q")
        await app.workers.wait_for_complete()
        await wait_until(pilot, lambda: not app.is_running, "the app to exit")
    assert time.monotonic() - quit_at < 20
    from live_swe.session.store import SessionStore

    assert SessionStore.default().open("s1").meta.status == "interrupted"
    assert session_containers(docker_client, "s1") == []


def _sleeping(docker_client) -> bool:
    from docker.errors import NotFound

    for container in session_containers(docker_client, "s1"):
        try:
            top = docker_client.api.top(container["Id"])
        except NotFound:
            continue
        if any("sleep 120" in " ".join(process) for process in top.get("Processes") or []):
            return True
    return False
