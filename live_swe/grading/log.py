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
from collections.abc import Iterable
from typing import Any

from live_swe import events as ev
from live_swe.grading.plans import extract_plan
from live_swe.grading.trajectory import ScaffoldChange, Step, ToolChange, Trajectory
from live_swe.session.store import RunStatus, Session
from live_swe.session.view import SessionView

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

    def event(self, event: ev.Event) -> None:
        match event:
            case ev.Message() if event.message:
                self.message(event.step, event.message)
            case ev.Step():
                step = self.step(event.step)
                step.command, step.returncode, step.timed_out = event.command, event.returncode or 0, event.timed_out
                self.last_command_step = event.step
            case ev.FormatError():
                self.step(event.step).format_error = event.reason or "format error"
            case ev.Review():
                self.step(event.step).review = event.decision
            case ev.ToolChange():
                self._tool(event)
            case ev.ScaffoldChange() if (event.step or 0) > 0:
                self.step(event.step).scaffold.append(ScaffoldChange(
                    event.step, event.kind, tuple(event.files), event.why, event.reason))
            case ev.End():
                self.status, self.exit_message = event.status or "unknown", event.message

    def _tool(self, event: ev.ToolChange) -> None:
        number = event.step or 0
        change = ToolChange(number, event.kind, event.name, event.why)
        if number <= 0:
            if change.kind == "registered":
                self.start_tools.append(change.name)
        else:
            self.step(number).tools.append(change)

    def trajectory(self, task: str, patch: str, status: str | None) -> Trajectory:
        status = status or self.status
        if status == RunStatus.SUBMITTED and self.last_command_step in self.steps:
            last = self.steps[self.last_command_step]
            last.submitted = not last.observation  # the submission has no observation
        steps = [self.steps[n] for n in sorted(self.steps)]
        return Trajectory(task=task, steps=steps, status=status, exit_message=self.exit_message, patch=patch,
                          start_tools=tuple(self.start_tools))


def trajectory_from_events(events: Iterable[ev.Event | dict[str, Any]], *, task: str = "", patch: str = "",
                           status: str | None = None) -> Trajectory:
    """The trajectory a session log records (``status``: how it ended, when known better elsewhere)."""
    reader = _Reader()
    for event in events:
        reader.event(ev.parse(event))
    return reader.trajectory(task, patch, status)


def load_trajectory(session: Session) -> Trajectory:
    """A session's trajectory: its log, task, status and patch."""
    view = SessionView.read(session)
    meta = session.meta
    status = meta.status if meta.status != RunStatus.RUNNING else None
    return trajectory_from_events(view.events, task=meta.task, patch=session.patch(), status=status)


# -- the grade event ---------------------------------------------------------------------------------

def grade_event(grade: dict[str, Any]) -> ev.GradeRecorded:
    """The log line a judged grade is saved as (appended after the run's own events)."""
    return ev.GradeRecorded(grade=grade)


def saved_grade(events: Iterable[ev.Event | dict[str, Any]]) -> dict[str, Any] | None:
    """The last grade saved in the log, if it graded the run as it now stands (no step came after it)."""
    found, steps_after = None, 0
    for event in map(ev.parse, events):
        if isinstance(event, ev.GradeRecorded) and event.grade:
            found, steps_after = event.grade, 0
        elif isinstance(event, ev.Step):
            steps_after += 1
    return found if found is not None and steps_after == 0 else None
