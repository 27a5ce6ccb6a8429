"""The variables a scaffold's templates are rendered with, defined once: the loop renders with them,
and the gate for an edited template checks it renders over a sample of them."""

from __future__ import annotations

from typing import Any

from live_swe.scaffolding.scaffold import Scaffold

# Every template gets these; each role's template also its own.
BASE_VARIABLES = ("repo_dir", "scaffold_dir", "action_format", "command_timeout", "tools", "step", "model")
ROLE_VARIABLES: dict[str, tuple[str, ...]] = {
    "system": (),
    "instance": ("task", "repo_map", "repo_instructions"),
    "observation": ("output", "truncated", "reflection"),
    "format_error": ("error",),
    "reflection": (),
}


def template_context(scaffold: Scaffold, *, repo_dir: str, scaffold_dir: str, command_timeout: float, step: int,
                     model: str, **role: Any) -> dict[str, Any]:
    """The context a template of ``scaffold`` renders over; ``role`` adds (or replaces) variables."""
    context = {
        "repo_dir": repo_dir,
        "scaffold_dir": scaffold_dir,
        "action_format": scaffold.policy.action_format,
        "command_timeout": command_timeout,
        "tools": [{"name": t.name, "description": t.description, "usage": t.usage} for t in scaffold.tools],
        "step": step,
        "model": model,
    }
    context.update(role)
    return context


def sample_context() -> dict[str, Any]:
    """A context every template must render over (the gate for template edits uses it too)."""
    return {
        "task": "Fix the off-by-one error in utils.slice_window.",
        "repo_dir": "/testbed",
        "repo_map": "utils.py:\n  def slice_window(items, size)",
        "repo_instructions": "# AGENTS.md\nRun the tests with `python -m pytest -q`.",
        "action_format": "text",
        "command_timeout": 60,
        "tools": [{"name": "find-def", "description": "Find a definition", "usage": "find-def NAME"}],
        "step": 3,
        "model": "anthropic/claude-sonnet-4-5",
        "output": {"text": "ok", "returncode": 0, "timed_out": False, "head": "ok", "tail": "", "elided_chars": 0},
        "truncated": False,
        "reflection": "",
        "error": "no bash block found",
        "scaffold_dir": "/opt/live-swe/scaffold",
    }
