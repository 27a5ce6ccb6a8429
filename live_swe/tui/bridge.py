"""Between the agent's worker thread and the interface.

The agent runs in a thread worker. What it reports (events, streamed tokens, the repository
diff) is posted to the app as messages, which is thread-safe and never blocks the agent. When
the agent needs the person (a command to confirm, a pause), the worker thread blocks on a
``Future`` that the interface completes; quitting completes it with ``STOP`` so the worker
never hangs.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from enum import StrEnum
from typing import Any

from textual.message import Message

from live_swe import events as ev
from live_swe.agent.interfaces import Decision
from live_swe.command_safety import is_harmless
from live_swe.models.base import ModelWrapper

STOP = object()  # what a pending question is answered with when the person quits


class ApprovalMode(StrEnum):
    CONFIRM = "confirm"  # ask for every command
    AUTO = "auto"  # run everything
    READ_ONLY = "read-only"  # run harmless readers, ask for the rest

    def next(self) -> ApprovalMode:
        order = list(ApprovalMode)
        return order[(order.index(self) + 1) % len(order)]


class AgentEvent(Message):
    def __init__(self, event: ev.Event):
        super().__init__()
        self.event = event


class TokensStreamed(Message):
    def __init__(self, text: str):
        super().__init__()
        self.text = text


class CommandOutput(Message):
    """What a step's command printed, as it printed it (the model is sent the observation built from it)."""

    def __init__(self, step: int, text: str):
        super().__init__()
        self.step = step
        self.text = text


class DiffUpdated(Message):
    def __init__(self, diff: str):
        super().__init__()
        self.diff = diff


class ApprovalRequested(Message):
    def __init__(self, command: str, answer: Future):
        super().__init__()
        self.command = command
        self.answer = answer


class PauseReached(Message):
    """The agent stopped between steps; answer with a message for it (or "" to go on)."""

    def __init__(self, answer: Future):
        super().__init__()
        self.answer = answer


class MeteredModel(ModelWrapper):
    """Counts the tokens a model used (the status line shows them); otherwise the model itself."""

    def __init__(self, model):
        super().__init__(model)
        self.prompt_tokens = 0
        self.completion_tokens = 0
        if hasattr(model, "skip"):  # scripted and replay models go on where a resumed log stops
            self.skip = model.skip

    def query(self, messages, *, tools=None, on_token=None):
        reply = self.inner.query(messages, tools=tools, on_token=on_token)
        self.prompt_tokens += reply.usage.prompt_tokens
        self.completion_tokens += reply.usage.completion_tokens
        return reply

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class AgentBridge:
    def __init__(self, app, mode: ApprovalMode = ApprovalMode.CONFIRM):
        self.app = app
        self.mode = mode
        self.agent = None
        self.model: MeteredModel | None = None
        self.stop_requested = threading.Event()
        self.pause_requested = threading.Event()
        self._pending: Future | None = None
        self._lock = threading.Lock()

    # -- wiring (RunHooks)
    def model_factory(self, make):
        def factory(name: str):
            self.model = MeteredModel(make(name))
            return self.model

        return factory

    def attach(self, agent) -> None:
        """RunHooks.on_agent: keep the agent, to message it and to stop its command."""
        self.agent = agent

    # -- called on the worker thread
    def approve(self, command: str) -> Decision:
        if self.stop_requested.is_set():
            raise KeyboardInterrupt
        repo = self.agent.env.repo_dir if self.agent is not None else None
        if self.mode is ApprovalMode.AUTO or (self.mode is ApprovalMode.READ_ONLY and is_harmless(command, repo)):
            return Decision("approve")
        answer = self._ask(lambda future: ApprovalRequested(command, future))
        if answer is STOP:
            raise KeyboardInterrupt
        return answer

    def before_step(self) -> None:
        if self.stop_requested.is_set():
            raise KeyboardInterrupt
        if not self.pause_requested.is_set():
            return
        text = self._ask(PauseReached)
        self.pause_requested.clear()
        if text is STOP:
            raise KeyboardInterrupt
        if text and text.strip() and self.agent is not None:
            self.agent.send_user_message(text.strip())  # goes in before this step's query

    def on_output(self, step: int, output) -> None:
        self.app.post_message(CommandOutput(step, output.text))

    def on_token(self, text: str) -> None:
        self.app.post_message(TokensStreamed(text))

    def observe(self, event: ev.Event) -> None:
        self.app.post_message(AgentEvent(event))
        if isinstance(event, ev.ContractEvent) and event.kind in ("autonomy", "escalate"):
            self.mode = ApprovalMode.CONFIRM  # a soft violation not restored: the person confirms each command
        if isinstance(event, ev.Step) and self.agent is not None and self.agent.patch_fn is not None:
            try:
                diff = self.agent.patch_fn()
            except Exception as exc:  # noqa: BLE001 - a diff we cannot show must not stop the agent
                diff = f"(the diff could not be computed: {exc})"
            self.app.post_message(DiffUpdated(diff))

    def _ask(self, make_message) -> Any:
        future: Future = Future()
        with self._lock:
            if self.stop_requested.is_set():
                return STOP
            self._pending = future
        self.app.post_message(make_message(future))
        try:
            return future.result()
        finally:
            with self._lock:
                self._pending = None

    # -- called on the interface's thread
    def request_stop(self) -> None:
        """Stop now: the running command is killed, a question the agent waits on is answered STOP,
        and the loop ends at the next step boundary."""
        with self._lock:
            self.stop_requested.set()
            pending = self._pending
        if pending is not None:
            answer(pending, STOP)
        if self.agent is not None:
            self.agent.env.interrupt()  # a command that runs for minutes must not keep the user waiting

    def request_pause(self) -> None:
        self.pause_requested.set()


def answer(future: Future, value: Any) -> None:
    if not future.done():
        future.set_result(value)
