"""The trajectory the grader works on: the steps of one run, each with its stable ID (the step
number), the reply, the command, what it printed and how it ended, plus the plans the agent stated
and its tool and scaffold changes.

It is built from the session log in one place (:mod:`live_swe.grading.log`); everything else in
this package reads only this model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from live_swe.grading.commands import CommandFacts, command_facts
from live_swe.grading.plans import Plan
from live_swe.session.store import RunStatus

_FENCED = re.compile(r"```.*?(```|$)", re.DOTALL)
_THOUGHT = re.compile(r"^\s*THOUGHT\s*:\s*", re.IGNORECASE)


@dataclass(frozen=True)
class ScaffoldChange:
    step: int
    kind: str  # commit | reject | rollback
    files: tuple[str, ...]
    why: str = ""
    reason: str = ""


@dataclass(frozen=True)
class ToolChange:
    step: int
    kind: str  # registered | refused
    name: str
    why: str = ""


@dataclass
class Step:
    id: int
    reply: str = ""  # the model's whole answer (thought, plan, action)
    command: str | None = None  # what ran; None when nothing did (format error, rejected)
    observation: str = ""  # the message the model read next
    output: str = ""  # the command's output inside it
    truncated: bool = False  # the observation showed only the output's head and tail
    returncode: int | None = None
    timed_out: bool = False
    submitted: bool = False
    format_error: str = ""
    review: str = ""  # approve | edit | reject, when a person reviewed the command
    user_note: str = ""  # a message the person watching sent before this step
    plan: Plan | None = None
    scaffold: list[ScaffoldChange] = field(default_factory=list)
    tools: list[ToolChange] = field(default_factory=list)

    @cached_property
    def facts(self) -> CommandFacts:
        return command_facts(self.command or "")

    @property
    def thought(self) -> str:
        """The reply's prose: without fenced blocks and the THOUGHT label."""
        return _THOUGHT.sub("", _FENCED.sub("", self.reply)).strip()

    @property
    def failed(self) -> bool:
        return self.command is not None and not self.submitted and (self.returncode or 0) != 0


@dataclass
class Trajectory:
    task: str
    steps: list[Step]
    status: str = "unknown"  # how the run ended (submitted, limits_exceeded, ...)
    exit_message: str = ""
    patch: str = ""
    start_tools: tuple[str, ...] = ()  # tools the starting scaffold registered

    @property
    def plans(self) -> list[Plan]:
        return [s.plan for s in self.steps if s.plan is not None]

    @property
    def step_ids(self) -> set[int]:
        return {s.id for s in self.steps}

    @property
    def submitted(self) -> bool:
        return self.status == RunStatus.SUBMITTED

    def acted(self) -> list[Step]:
        """Steps whose command ran."""
        return [s for s in self.steps if s.command is not None]
