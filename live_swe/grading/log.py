"""The grading package's one contact with the session log: events in, a :class:`Trajectory` out;
and the ``grade`` event a judged grade is saved as.

Event kinds read here (written by ``agent/loop.py``, ``evolution/guard.py`` and ``runner.py``):
``message`` (the conversation, by step), ``step`` (the command that ran, its return code),
``format_error``, ``review``, ``tool``, ``scaffold`` and ``end``. Everything else is skipped, so an
older or newer log still reads. The observation a step's command produced is the next user (or
tool) message of that step; its output is what the observation template put between ``<output>``
tags (head and tail when truncated), or the whole message when a scaffold's template has no tags.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from live_swe.grading.plans import extract_plan
from live_swe.grading.trajectory import ScaffoldChange, Step, ToolChange, Trajectory
from live_swe.session.store import RunStatus, Session

GRADE_EVENT = "grade"
_OUTPUT = re.compile(r"<output>\n?(.*?)\n?</output>", re.DOTALL)
_HEAD_TAIL = re.compile(r"<output_head>\n?(.*?)\n?</output_head>.*?<output_tail>\n?(.*?)\n?</output_tail>", re.DOTALL)


def output_of(observation: str) -> tuple[str, bool]:
    """The command output inside an observation message, and whether only its head and tail were shown."""
    match = _OUTPUT.search(observation)
    if match:
        return match.group(1), False
    match = _HEAD_TAIL.search(observation)
    if match:
        return match.group(1) + "\n[...]\n" + match.group(2), True
    return observation, False


def _tool_call_command(message: dict[str, Any]) -> str | None:
    for call in message.get("tool_calls") or []:
        try:
            arguments = json.loads((call.get("function") or {}).get("arguments") or "{}")
        except ValueError:
            return None
        command = arguments.get("command") if isinstance(arguments, dict) else None
        return command if isinstance(command, str) else None
    return None


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


class _Reader:
    """Folds the events of one session into steps, in log order."""

    def __init__(self) -> None:
        self.steps: dict[int, Step] = {}
        self.status, self.exit_message = "unknown", ""
        self.start_tools: list[str] = []
        self.last_command_step: int | None = None

    def step(self, number: int) -> Step:
        if number not in self.steps:
            self.steps[number] = Step(number)
        return self.steps[number]

    def message(self, number: int, message: dict[str, Any]) -> None:
        role, content = message.get("role"), str(message.get("content") or "")
        if number <= 0:
            return  # the system prompt and the task
        step = self.step(number)
        if role == "assistant":
            if step.reply or step.command is not None:  # a step retried after a resume: the later attempt counts
                self.steps[number] = step = Step(number, user_note=step.user_note)
            step.reply = content
            step.plan = extract_plan(content, number)
            step.command = _tool_call_command(message) if message.get("tool_calls") else None
        elif role in ("user", "tool"):
            if not step.reply and not step.observation:
                step.user_note = content
            elif not step.observation and not step.format_error:
                step.observation = content
                step.output, step.truncated = output_of(content)

    def event(self, event: dict[str, Any]) -> None:
        kind, number = event.get("t"), _int(event.get("step"))
        if kind == "message" and isinstance(event.get("message"), dict):
            self.message(number, event["message"])
        elif kind == "step" and isinstance(event.get("command"), str):
            step = self.step(number)
            step.command = event["command"]
            step.returncode = _int(event.get("returncode"))
            step.timed_out = bool(event.get("timed_out"))
            self.last_command_step = number
        elif kind == "format_error":
            self.step(number).format_error = str(event.get("reason") or "format error")
        elif kind == "review":
            self.step(number).review = str(event.get("decision") or "")
        elif kind == "tool":
            change = ToolChange(number, str(event.get("kind") or ""), str(event.get("name") or ""),
                                str(event.get("why") or ""))
            if number <= 0:
                if change.kind == "registered":
                    self.start_tools.append(change.name)
            else:
                self.step(number).tools.append(change)
        elif kind == "scaffold" and number > 0:
            self.step(number).scaffold.append(ScaffoldChange(
                number, str(event.get("kind") or ""), tuple(str(f) for f in event.get("files") or []),
                str(event.get("why") or ""), str(event.get("reason") or "")))
        elif kind == "end":
            self.status, self.exit_message = str(event.get("status") or "unknown"), str(event.get("message") or "")

    def trajectory(self, task: str, patch: str, status: str | None) -> Trajectory:
        status = status or self.status
        if status == RunStatus.SUBMITTED and self.last_command_step in self.steps:
            last = self.steps[self.last_command_step]
            last.submitted = not last.observation  # the submission has no observation
        steps = [self.steps[n] for n in sorted(self.steps)]
        return Trajectory(task=task, steps=steps, status=status, exit_message=self.exit_message, patch=patch,
                          start_tools=tuple(self.start_tools))


def trajectory_from_events(events: list[dict[str, Any]], *, task: str = "", patch: str = "",
                           status: str | None = None) -> Trajectory:
    """The trajectory a session log records (``status``: how it ended, when known better elsewhere)."""
    reader = _Reader()
    for event in events:
        reader.event(event)
    return reader.trajectory(task, patch, status)


def load_trajectory(session: Session) -> Trajectory:
    """A session's trajectory: its log, task, status and patch."""
    events, _problems = session.events()
    meta = session.meta
    status = meta.status if meta.status != "running" else None
    return trajectory_from_events(events, task=meta.task, patch=session.patch(), status=status)


# -- the grade event ---------------------------------------------------------------------------------

def grade_event(grade: dict[str, Any]) -> dict[str, Any]:
    """The log line a judged grade is saved as (appended after the run's own events)."""
    return {"t": GRADE_EVENT, "grade": grade, "ts": round(time.time(), 3)}


def saved_grade(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last grade saved in the log, if it graded the run as it now stands (no step came after it)."""
    found, steps_after = None, 0
    for event in events:
        if event.get("t") == GRADE_EVENT and isinstance(event.get("grade"), dict):
            found, steps_after = event["grade"], 0
        elif event.get("t") == "step":
            steps_after += 1
    return found if found is not None and steps_after == 0 else None
