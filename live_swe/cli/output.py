"""How ``run`` and ``resume`` report: lines on the terminal (text), one JSON object at the end
(``--json``, with the fields of Claude Code's ``-p --output-format json``), or one JSON event per
line as the run goes, that object last (``--output-format stream-json``, for scripts and CI logs)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from live_swe.cli.common import fail, print_json
from live_swe.events import Event

FORMATS = ("text", "json", "stream-json")
FORMAT_HELP = ("text (default), json (one object at the end; the same as --json) or stream-json (one JSON "
               "event per line as the run goes: messages, steps, scaffold changes, contract results, the end; "
               "then the same object as json, with \"t\": \"result\").")


class RunOutput:
    def __init__(self, as_json: bool, output_format: str | None, progress: Callable[[Event], None]):
        chosen = output_format or ("json" if as_json else "text")
        if chosen not in FORMATS:
            fail(f"unknown output format {chosen!r}; use {', '.join(FORMATS)}")
        if as_json and chosen != "json":
            fail(f"--json is --output-format json; leave out one of --json and --output-format {chosen}")
        self.format = chosen
        self.started = time.monotonic()
        self._progress = progress

    @property
    def machine(self) -> bool:
        """JSON on stdout: nothing else may be printed there, and the terminal's lines stay off."""
        return self.format != "text"

    def observers(self) -> list[Callable[[Event], None]]:
        return {"text": [self._progress], "json": [], "stream-json": [_stream]}[self.format]

    def fields(self, result: dict[str, Any]) -> dict[str, Any]:
        """The end object: the result, and the run's measure (is_error: it did not submit)."""
        from live_swe.session.store import RunStatus

        return {**result, "num_steps": result.get("steps", 0),
                "duration_ms": int((time.monotonic() - self.started) * 1000),
                "is_error": result.get("status") != RunStatus.SUBMITTED}

    def final(self, result: dict[str, Any]) -> None:
        end = self.fields(result)
        # the stream's closing object (no session event: it is never logged)
        _print_line({"t": "result", **end} if self.format == "stream-json" else end)


def _stream(event: Event) -> None:
    _print_line(event.record())  # the event as the session's log holds it


def _print_line(data: dict[str, Any]) -> None:
    print_json(data)  # one line, redacted like the session's log (an event may quote a command's output)
    sys.stdout.flush()  # a reader of the stream sees each event as it happens
