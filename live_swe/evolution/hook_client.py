"""The loop's ``Hooks``: :class:`HookClient` runs the hooks of the guard's last accepted scaffold in
a worker (:mod:`live_swe.evolution.hook_process`), validates what they return
(:mod:`live_swe.evolution.hook_checks`), and on any failure answers as if there were no hooks, tells
the hook fallback (:mod:`live_swe.evolution.hook_fallback`, which rolls hooks.py back to the last
version that worked at the step boundary), and lets the loop go on.
"""

from __future__ import annotations

from typing import Any

from live_swe.evolution.hook_checks import passthrough_hooks, valid_messages, valid_text
from live_swe.evolution.hook_process import (
    CALL_TIMEOUT,
    HookFailure,
    HookProcess,
    HooksUnavailable,
    source_digest,
)


class HookClient:
    """The loop's ``Hooks``: the accepted hooks.py, run in a worker, with fallback on failure.

    The worker is started by the guard's environment. While hooks load or run, the fallback keeps a
    mark of which hooks are live, so that a run that dies meanwhile resumes with the last good ones."""

    def __init__(self, guard, *, call_timeout: float | None = None):
        self.guard = guard
        self.fallback = guard.hook_fallback
        self.call_timeout = call_timeout  # None: CALL_TIMEOUT
        self._process: HookProcess | None = None
        self._digest: str | None = None
        self._passthrough: tuple[str, frozenset[str]] = ("", frozenset())

    def _skippable(self, hook: str) -> bool:
        accepted = self.guard.hooks_source()
        if accepted is None:
            return False
        source = accepted[1]
        if self._passthrough[0] != source:
            self._passthrough = (source, passthrough_hooks(source))
        return hook in self._passthrough[1]

    def _worker(self) -> HookProcess | None:
        """The worker for the guard's accepted hooks, (re)started when they changed."""
        accepted = self.guard.hooks_source()
        if accepted is None:
            self._stop()
            return None
        filename, source = accepted
        digest = source_digest(source)
        if self.fallback.disabled(digest):
            self._stop()
            return None
        if self._process is not None and self._digest == digest and self._process.alive:
            return self._process
        self._stop()
        process = HookProcess(source, filename, host=self.guard.env)
        self._digest = digest
        self.fallback.live(digest)
        try:
            process.start()
        except HooksUnavailable as exc:
            self.fallback.off(digest, str(exc))
            return None
        except HookFailure as exc:
            self._fail("load", str(exc))
            return None
        finally:
            self.fallback.live(None)
        self._process = process
        return process

    def _call(self, hook: str, args: list[Any], validate, fallback: Any, step: int) -> Any:
        if self._skippable(hook):
            return fallback
        process = self._worker()
        if process is None or hook not in process.hooks:
            return fallback
        self.fallback.live(self._digest)
        try:
            timeout = self.call_timeout if self.call_timeout is not None else CALL_TIMEOUT
            return validate(process.call(hook, args, timeout), hook)
        except HookFailure as exc:
            self._fail(hook, str(exc))
            return fallback
        finally:
            self.fallback.live(None)

    def _fail(self, hook: str, why: str) -> None:
        digest = self._digest
        self._stop()
        if digest is not None:
            self.fallback.failed(digest, hook, why)

    def _stop(self) -> None:
        if self._process is not None:
            self._process.close()
            self._process = None

    # -- the Hooks protocol
    def transform_observation(self, observation: str, step: int) -> str:
        return self._call("transform_observation", [observation, step], valid_text, observation, step)

    def transform_messages(self, messages: list[dict[str, Any]], step: int) -> list[dict[str, Any]]:
        return self._call("transform_messages", [messages, step], valid_messages, messages, step)

    def after_step(self, step: int, command: str, returncode: int) -> str:
        return self._call("after_step", [step, command, returncode], valid_text, "", step)

    def attach(self, emit) -> None:
        """Nothing to log itself: the fallback logs through the guard."""

    def close(self, step: int | None = None) -> None:
        self._stop()
