"""Checks on hooks: what they return is valid, a new hooks source survives a smoke run, and which
hooks provably change nothing (so they need no worker)."""

from __future__ import annotations

from typing import Any

from live_swe.contracts.notes import probe_messages, stripped_from_messages, stripped_from_observation
from live_swe.evolution.hook_process import START_TIMEOUT, HookFailure, HookProcess, HooksUnavailable

MAX_TEXT_CHARS = 1_000_000
_ROLES = {"system", "user", "assistant", "tool"}
SMOKE_TIMEOUT = 3.0


# -- validation of what hooks return --------------------------------------------------------------

def valid_text(value: Any, hook: str) -> str:
    if not isinstance(value, str):
        raise HookFailure(f"{hook} returned {type(value).__name__}, not a string")
    if len(value) > MAX_TEXT_CHARS:
        raise HookFailure(f"{hook} returned {len(value)} characters; the limit is {MAX_TEXT_CHARS}")
    return value


def valid_messages(value: Any, hook: str = "transform_messages") -> list[dict[str, Any]]:
    if not isinstance(value, list) or not value:
        raise HookFailure(f"{hook} must return a non-empty list of messages, got {type(value).__name__}")
    for index, message in enumerate(value):
        if not isinstance(message, dict):
            raise HookFailure(f"{hook}: message {index} is {type(message).__name__}, not an object")
        if message.get("role") not in _ROLES:
            raise HookFailure(f"{hook}: message {index} has role {message.get('role')!r}; expected one of {sorted(_ROLES)}")
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise HookFailure(f"{hook}: message {index} content is {type(content).__name__}, not a string")
    if sum(len(m.get("content") or "") for m in value) > 20 * MAX_TEXT_CHARS:
        raise HookFailure(f"{hook} returned more than {20 * MAX_TEXT_CHARS} characters of messages")
    return value


_SAMPLE_MESSAGES = [
    {"role": "system", "content": "You are live-swe."},
    {"role": "user", "content": "Please solve this task."},
    {"role": "assistant", "content": "THOUGHT: look around.\n\n```bash\nls\n```"},
    {"role": "user", "content": "<returncode>0</returncode>\n<output>\ncalc.py\n</output>"},
]


def smoke_test(source: str, filename: str = "hooks.py", *, host, timeout: float = SMOKE_TIMEOUT) -> str | None:
    """Load ``source`` in a fresh worker started by ``host`` and call each hook it defines on sample
    inputs. Raises :class:`HooksUnavailable` where the environment cannot run hooks at all."""
    process = HookProcess(source, filename, host=host)
    try:
        hooks = process.start(timeout=max(timeout, START_TIMEOUT))
        probe = probe_messages(_SAMPLE_MESSAGES)  # the contract's notes must survive every hook
        if "transform_observation" in hooks:
            text = valid_text(process.call("transform_observation", [probe[-1]["content"], 1], timeout),
                              "transform_observation")
            problem = stripped_from_observation(text)
            if problem:
                return problem
        if "transform_messages" in hooks:
            problem = stripped_from_messages(valid_messages(process.call("transform_messages", [probe, 1], timeout)))
            if problem:
                return problem
        if "after_step" in hooks:
            valid_text(process.call("after_step", [1, "ls", 0], timeout), "after_step")
    except HooksUnavailable:
        raise
    except HookFailure as exc:
        return str(exc)
    finally:
        process.close()
    return None


def passthrough_hooks(source: str) -> frozenset[str]:
    """Hooks that provably change nothing: ``return <first argument>`` for the transforms,
    ``return ""`` / ``return None`` for after_step, after an optional docstring, undecorated and
    defined once. The kernel reads the code (ast) but never runs it; calls to such hooks are
    skipped, which keeps the seed scaffold's per-step cost free of worker round trips.
    """
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return frozenset()
    definitions: dict[str, list[ast.stmt]] = {}
    for node in tree.body:
        for name in _bound_names(node):
            definitions.setdefault(name, []).append(node)
    trivial = set()
    for name in ("transform_observation", "transform_messages", "after_step"):
        nodes = definitions.get(name, [])
        if len(nodes) != 1 or not isinstance(nodes[0], ast.FunctionDef) or nodes[0].decorator_list:
            continue
        function = nodes[0]
        body = function.body[1:] if _is_docstring(function.body[0]) else function.body
        if len(body) != 1 or not isinstance(body[0], ast.Return):
            continue
        value = body[0].value
        params = [a.arg for a in function.args.args]
        if name == "after_step":
            if value is None or (isinstance(value, ast.Constant) and value.value in ("", None)):
                trivial.add(name)
        elif params and isinstance(value, ast.Name) and value.id == params[0]:
            trivial.add(name)
    return frozenset(trivial)


def _bound_names(node) -> list[str]:
    import ast

    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    names = []
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            names.append(child.id)
        elif isinstance(child, (ast.Import, ast.ImportFrom)):
            names.extend((alias.asname or alias.name).split(".")[0] for alias in child.names)
    return names


def _is_docstring(node) -> bool:
    import ast

    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


