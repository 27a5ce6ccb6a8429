"""Shared by the TUI tests: an app on a real repository with a scripted model, and waiting on it."""

from __future__ import annotations

import time
from pathlib import Path

from live_swe.models.base import Reply
from live_swe.models.scripted import ScriptedModel
from live_swe.session.store import SessionStore
from live_swe.tui.app import LiveSweApp
from live_swe.tui.bridge import ApprovalMode

SIZE = (130, 40)


class ScriptFactory:
    """Hands out one scripted model per run and keeps it, so a test can see what the model was sent."""

    def __init__(self, *scripts: list[str]):
        self.scripts = list(scripts)
        self.models: list[ScriptedModel] = []

    def __call__(self, name: str) -> ScriptedModel:
        model = ScriptedModel([Reply(r) for r in self.scripts.pop(0)], name="scripted")
        self.models.append(model)
        return model


def make_app(repo: Path, *scripts: list[str], mode: ApprovalMode = ApprovalMode.CONFIRM, session_id: str = "s1",
             task: str = "", **kwargs) -> tuple[LiveSweApp, ScriptFactory]:
    factory = ScriptFactory(*scripts)
    app = LiveSweApp(repo, "scripted", model_factory=factory, store=SessionStore.default(), session_id=session_id,
                     approval_mode=mode, clock=lambda: 0.0, task=task, **kwargs)
    return app, factory


async def wait_until(pilot, condition, what: str, timeout: float = 20.0) -> None:
    """Let the app process messages until ``condition()`` holds (the agent runs in a thread)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; screen is {pilot.app.screen!r}, state {pilot.app.state}")
        await pilot.pause()


async def wait_for_screen(pilot, screen_type, timeout: float = 20.0):
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, screen_type), screen_type.__name__, timeout)
    return pilot.app.screen


async def wait_for_run(pilot) -> None:
    """The agent's worker has ended and the app has handled everything it posted."""
    await pilot.app.workers.wait_for_complete()
    await wait_until(pilot, lambda: pilot.app.state == "finished", "the run to finish")
    await pilot.pause()


async def type_text(pilot, text: str) -> None:
    await pilot.press(*[{" ": "space"}.get(ch, ch) for ch in text])


async def start_task(pilot, task: str) -> None:
    """Type ``task`` into the task box and run it (Ctrl+R)."""
    await pilot.click("#task")
    await type_text(pilot, task)
    await pilot.press("ctrl+r")
