"""Seams the loop is given: the scaffold guard, hooks, approval and observers.

The kernel's defaults live here; self-evolution (gates, the hook worker) plugs in richer ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from live_swe.events import Event
from live_swe.scaffolding.scaffold import Scaffold, discover_tools

# Appends an event to the session log and tells the observers (Agent.emit).
Emit = Callable[[Event], None]


class ScaffoldGuard(Protocol):
    """Owns the session's scaffold: the current accepted version and the check after each step."""

    @property
    def current(self) -> Scaffold: ...

    def after_step(self, step: int, reason: str) -> list[str]:
        """Look at the scaffold tree; gate, commit or revert changes. Returns notes for the model."""

    def attach(self, emit: Emit) -> None:
        """Log through the agent (``emit`` appends an event to the session and tells observers)."""

    def close(self, step: int) -> None:
        """The run ends after ``step``: check what the last step left."""


class Hooks(Protocol):
    def transform_observation(self, observation: str, step: int) -> str: ...

    def transform_messages(self, messages: list[dict[str, Any]], step: int) -> list[dict[str, Any]]: ...

    def after_step(self, step: int, command: str, returncode: int) -> str: ...

    def attach(self, emit: Emit) -> None: ...

    def close(self, step: int) -> None:
        """The run ends: stop whatever runs the hooks."""


class _Quiet:
    """A seam with nothing to log and nothing to stop."""

    def attach(self, emit: Emit) -> None:
        pass

    def close(self, step: int) -> None:
        pass


class StaticScaffold(_Quiet):
    """A read-only scaffold: tools are rediscovered at each step boundary, nothing else changes."""

    def __init__(self, scaffold: Scaffold):
        self._scaffold = scaffold

    @property
    def current(self) -> Scaffold:
        return self._scaffold

    def after_step(self, step: int, reason: str) -> list[str]:
        tools = tuple(discover_tools(self._scaffold.tools_path))
        if tools != self._scaffold.tools:
            self._scaffold = replace(self._scaffold, tools=tools)
        return []


class NoHooks(_Quiet):
    def transform_observation(self, observation: str, step: int) -> str:
        return observation

    def transform_messages(self, messages, step):
        return messages

    def after_step(self, step: int, command: str, returncode: int) -> str:
        return ""


@dataclass(frozen=True)
class Decision:
    kind: Literal["approve", "edit", "reject"]
    command: str = ""
    comment: str = ""


# Reviews each command before it runs (the TUI and the CLI's confirm mode); None runs everything.
Approver = Callable[[str], Decision]
# Receives every event the session logs, typed (progress displays, the TUI).
Observer = Callable[[Event], None]
