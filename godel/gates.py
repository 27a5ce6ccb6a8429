"""The evolution gates applied to a whole child scaffold before it is evaluated.

A child must pass what a mid-task change must pass: the schema (unknown keys refused), budgets only
tightened relative to its parent, every template renders over the sample context, hooks.py compiles,
imports only the standard library and survives a smoke run in the hook worker, and each new or
changed tool passes the tool gates. These are the session gates of :mod:`live_swe.evolution`, run
in the same confinement as a session's: the child's hooks and tools run only inside a bubblewrap
sandbox (the local environment), never in this process or unconfined beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

from live_swe.config import KernelLimits
from live_swe.environments.local import LocalEnvironment
from live_swe.evolution.gates import Refused, check_scaffold
from live_swe.evolution.hook_checks import smoke_test
from live_swe.evolution.tool_gates import tool_problem
from live_swe.scaffolding.scaffold import ScaffoldError, load_scaffold


def _changed_tools(parent_dir: Path, child_dir: Path, tools_dir: str) -> list[Path]:
    import filecmp

    folder = child_dir / tools_dir
    if not folder.is_dir():
        return []
    changed = []
    for path in sorted(folder.iterdir()):
        before = parent_dir / tools_dir / path.name
        if not before.is_file() or not path.is_file() or not filecmp.cmp(before, path, shallow=False):
            changed.append(path)
    return changed


def check_child(parent_dir: Path, child_dir: Path, kernel: KernelLimits | None = None) -> list[str]:
    """Every reason ``child_dir`` may not enter the archive (empty when it passes)."""
    kernel = kernel or KernelLimits()
    parent_dir, child_dir = Path(parent_dir), Path(child_dir)
    try:
        parent = load_scaffold(parent_dir)
    except ScaffoldError as exc:
        return [f"parent scaffold unreadable: {exc}"]
    with LocalEnvironment(child_dir, scaffold_dir=child_dir, tools_subdir=parent.policy.tools_dir) as env:
        try:
            scaffold = check_scaffold(child_dir, parent, kernel,
                                      smoke=lambda source, name: smoke_test(source, name, host=env))
        except Refused as exc:
            return [str(exc)]
        problems = []
        for path in _changed_tools(parent_dir, child_dir, scaffold.policy.tools_dir):
            problem = tool_problem(path, env, str(path))
            if problem:
                problems.append(f"tool {path.name}: {problem}")
    return problems


def summarize(problems: list[str]) -> str:
    return json.dumps(problems)[:2000] if len(problems) > 1 else (problems[0] if problems else "")
