"""The evolution gates applied to a whole child scaffold before it is evaluated.

A child must pass what a mid-task change must pass: the schema (unknown keys refused), budgets only
tightened relative to its parent, every template renders over the sample context, and hooks.py
compiles, imports only the standard library and survives a smoke run in a separate process. The
checks are those of :mod:`live_swe.evolution` when it is installed; otherwise the same rules are
applied here with the kernel's own primitives.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from live_swe.config import KernelLimits

SMOKE_TIMEOUT = 10.0

_SMOKE = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("live_swe_child_hooks", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
checks = {
    "transform_observation": (("<returncode>0</returncode>\n<output>ok</output>", 1), str),
    "transform_messages": (([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}], 1), list),
    "after_step": ((1, "ls", 0), str),
}
for name, (args, kind) in checks.items():
    func = getattr(module, name, None)
    if func is None:
        continue
    result = func(*args)
    if not isinstance(result, kind):
        raise SystemExit(f"{name} returned {type(result).__name__}, expected {kind.__name__}")
    json.dumps(result)
print("ok")
"""


def _schema_and_budgets(parent_dir: Path, child_dir: Path, kernel: KernelLimits) -> tuple[list[str], object]:
    from live_swe.agent.limits import loosened
    from live_swe.scaffolding.scaffold import ScaffoldError, load_scaffold

    try:
        child = load_scaffold(child_dir)
    except ScaffoldError as exc:
        return [f"schema: {exc}"], None
    problems = []
    try:
        parent = load_scaffold(parent_dir)
        raised = loosened(parent.policy.limits, child.policy.limits, kernel)
        if raised:
            problems.append("budgets raised: " + ", ".join(raised))
        above = [f"{key}: {value} is above the kernel's {getattr(kernel, key)}"
                 for key, value in child.policy.limits.model_dump().items()
                 if value is not None and value > getattr(kernel, key)
                 and value != getattr(parent.policy.limits, key)]
        if above:
            problems.append("budgets belong to the kernel; a scaffold may only lower them (" + "; ".join(above) + ")")
    except ScaffoldError as exc:
        problems.append(f"parent scaffold unreadable: {exc}")
    return problems, child


def _templates(child) -> list[str]:
    from live_swe.scaffolding.render import TemplateError, render
    from live_swe.scaffolding.scaffold import sample_context

    problems = []
    for role, source in child.templates.items():
        try:
            render(source, sample_context())
        except TemplateError as exc:
            problems.append(f"template {role} ({child.policy.prompts.model_dump()[role]}) does not render: {exc}")
    return problems


def _hooks(child) -> list[str]:
    path = child.hooks_path
    if path is None or not path.exists():
        return []
    source = path.read_text(errors="replace")
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        return [f"hooks: {path.name} does not compile: {exc.msg} (line {exc.lineno})"]
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            if name.split(".")[0] not in sys.stdlib_module_names:
                return [f"hooks: {path.name} imports {name!r}; only the standard library is allowed"]
    try:
        result = subprocess.run([sys.executable, "-I", "-c", _SMOKE, str(path)], capture_output=True, text=True,
                                timeout=SMOKE_TIMEOUT, env={"PATH": "/usr/bin:/bin"}, cwd=path.parent)
    except subprocess.TimeoutExpired:
        return [f"hooks: the smoke run of {path.name} did not finish within {SMOKE_TIMEOUT:.0f}s"]
    if result.returncode != 0 or result.stdout.strip() != "ok":
        detail = (result.stderr.strip().splitlines() or [result.stdout.strip()] or ["no output"])[-1]
        return [f"hooks: the smoke run of {path.name} failed: {detail[:300]}"]
    return []


def _fallback_check(parent_dir: Path, child_dir: Path, kernel: KernelLimits) -> list[str]:
    problems, child = _schema_and_budgets(parent_dir, child_dir, kernel)
    if child is None:
        return problems
    return problems + _templates(child) + _hooks(child)


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


def _evolution_check(parent_dir: Path, child_dir: Path, kernel: KernelLimits) -> list[str]:
    """The session gates of live_swe.evolution, applied to the child as one change to its parent."""
    from live_swe.environments.local import LocalEnvironment
    from live_swe.evolution.gates import Refused, check_scaffold
    from live_swe.evolution.hook_worker import smoke_test
    from live_swe.evolution.tool_gates import tool_problem
    from live_swe.scaffolding.scaffold import ScaffoldError, load_scaffold

    try:
        parent = load_scaffold(parent_dir)
    except ScaffoldError as exc:
        return [f"parent scaffold unreadable: {exc}"]
    try:
        scaffold = check_scaffold(child_dir, parent, kernel, smoke=smoke_test)
    except Refused as exc:
        return [str(exc)]
    problems = []
    env = LocalEnvironment(child_dir, scaffold_dir=child_dir, tools_subdir=scaffold.policy.tools_dir)
    for path in _changed_tools(parent_dir, child_dir, scaffold.policy.tools_dir):
        problem = tool_problem(path, env, str(path))
        if problem:
            problems.append(f"tool {path.name}: {problem}")
    return problems


def check_child(parent_dir: Path, child_dir: Path, kernel: KernelLimits | None = None) -> list[str]:
    """Every reason ``child_dir`` may not enter the archive (empty when it passes)."""
    kernel = kernel or KernelLimits()
    try:
        import live_swe.evolution.gates  # noqa: F401 - the session gates, when installed
    except ImportError:
        return _fallback_check(Path(parent_dir), Path(child_dir), kernel)
    return _evolution_check(Path(parent_dir), Path(child_dir), kernel)


def summarize(problems: list[str]) -> str:
    return json.dumps(problems)[:2000] if len(problems) > 1 else (problems[0] if problems else "")
