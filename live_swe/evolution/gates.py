"""The gates a scaffold rewrite (scaffold.yaml, prompts, hooks.py) passes before it is committed.

In order: the schema (unknown keys rejected), the tools folder unchanged, budgets only tightened,
every prompt template renders in the sandboxed Jinja environment with strict undefined over the
context its role gets at run time, and the hooks file compiles, imports only the standard library
and passes a smoke run in a fresh hook worker. A failing gate raises :class:`Refused` with a
message meant for the model: what is wrong, where, and what it may do instead.
"""

from __future__ import annotations

import ast
import signal
import sys
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from types import MappingProxyType
from typing import Any

from live_swe.agent.limits import loosened
from live_swe.config import KernelLimits, budget_amount
from live_swe.contracts.load import loosened as contract_loosened
from live_swe.errors import ToldToModel
from live_swe.scaffolding.context import BASE_VARIABLES, ROLE_VARIABLES, sample_context
from live_swe.scaffolding.files import NotARegularFile, read_regular_text
from live_swe.scaffolding.policy import ScaffoldPolicy
from live_swe.scaffolding.render import render
from live_swe.scaffolding.scaffold import PROMPTS_DIR, Scaffold, ScaffoldError, load_policy

# Rendered prompts larger than this are refused: a template must not flood the context.
MAX_RENDERED_CHARS = 200_000

RENDER_SECONDS = 2.0


class Refused(ToldToModel):
    """A gate refused the change; the message says why."""


class _RenderTooSlow(Exception):
    pass


@contextmanager
def _deadline(seconds: float):
    """Interrupt a render that runs too long (the sandbox bounds range(), not nested loops).

    On the main thread a timer signal does it; elsewhere (the TUI runs the agent in a worker
    thread, where signals cannot be used) a trace function checks the clock as the render runs."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        with _traced_deadline(seconds):
            yield
        return

    def expire(signum, frame):
        raise _RenderTooSlow()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def _traced_deadline(seconds: float):
    end = time.monotonic() + seconds
    previous = sys.gettrace()

    def check(frame, event, arg):
        if time.monotonic() > end:
            raise _RenderTooSlow()  # raised into the running render; Python also drops the tracer
        return check

    sys.settrace(check)
    try:
        yield
    finally:
        sys.settrace(previous)


def role_contexts(role: str) -> list[dict[str, Any]]:
    """Contexts a template of ``role`` must render over: the sample and its other branches."""
    sample = sample_context()
    variant = dict(sample)
    variant.update(
        action_format="tool_call" if sample["action_format"] == "text" else "text",
        model="local/qwen2.5-coder-0.5b",
        tools=[],
        repo_map="",
        repo_instructions="",
        truncated=True,
        reflection="<reflection>Reflect briefly.</reflection>",
        output={**sample["output"], "text": "", "returncode": 1, "timed_out": True,
                "head": "first part", "tail": "last part", "elided_chars": 1234},
    )
    keys = BASE_VARIABLES + ROLE_VARIABLES.get(role, tuple(sample))
    return [{k: context[k] for k in keys if k in context} for context in (sample, variant)]


def _relative(text: str, root: Path) -> str:
    return text.replace(f"{root}/", "")


def check_policy(root: Path, previous: ScaffoldPolicy | None, kernel: KernelLimits) -> ScaffoldPolicy:
    try:
        policy = load_policy(root)
    except ScaffoldError as exc:
        raise Refused(_relative(str(exc), root)) from None
    if previous is None:
        return policy
    if policy.tools_dir != previous.tools_dir:
        raise Refused(f"scaffold.yaml: tools_dir cannot change during a session (it is {previous.tools_dir!r}; "
                      "the environment has that folder on PATH)")
    dropped = contract_loosened(previous.contract, policy.contract)
    if dropped:
        raise Refused("scaffold.yaml: contract rules may only be added, and this removes or changes " + "; ".join(dropped))
    raised = loosened(previous.limits, policy.limits, kernel)
    if raised:
        raise Refused("scaffold.yaml: budgets may only be tightened, and this raises " + "; ".join(raised))
    above = [
        f"{key}: {value} is above the kernel's {getattr(kernel, key)}"
        for key, value in policy.limits.model_dump().items()
        if value is not None and budget_amount(key, value) > budget_amount(key, getattr(kernel, key))
        and value != getattr(previous.limits, key)
    ]
    if above:
        raise Refused("scaffold.yaml: budgets belong to the kernel; a scaffold may only lower them (" + "; ".join(above) + ")")
    return policy


def check_templates(root: Path, policy: ScaffoldPolicy) -> dict[str, str]:
    """Each prompt renders, for its role, over the sample context and its variant."""
    prompts = (root / PROMPTS_DIR).resolve()
    templates: dict[str, str] = {}
    for role, filename in policy.prompts.model_dump().items():
        shown = f"{PROMPTS_DIR}/{filename}"
        path = (prompts / filename).resolve()
        if prompts not in path.parents:
            raise Refused(f"scaffold.yaml: prompts.{role} = {filename!r} points outside {PROMPTS_DIR}/")
        try:
            source = read_regular_text(path)
        except FileNotFoundError:
            raise Refused(f"{shown}: the {role} template named in scaffold.yaml is missing") from None
        except NotARegularFile:
            raise Refused(f"{shown}: must be a regular file (not a link, FIFO or device)") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise Refused(f"{shown}: cannot be read as text ({exc.__class__.__name__})") from None
        for context in role_contexts(role):
            try:
                with _deadline(RENDER_SECONDS):
                    text = render(source, context)
            except _RenderTooSlow:
                raise Refused(f"{shown}: took more than {RENDER_SECONDS:g}s to render for the {role} prompt") from None
            except Exception as exc:  # noqa: BLE001 - any render failure refuses the template
                line = getattr(exc, "lineno", None)
                where = f" (line {line})" if line else ""
                raise Refused(f"{shown}{where}: does not render for the {role} prompt: "
                              f"{exc.__class__.__name__}: {exc}; the variables it gets are "
                              f"{', '.join(sorted(context))}") from None
            if len(text) > MAX_RENDERED_CHARS:
                raise Refused(f"{shown}: renders to {len(text)} characters; the limit is {MAX_RENDERED_CHARS}")
        templates[role] = source
    return templates


def import_problems(tree: ast.AST) -> list[str]:
    """Imports of anything but the standard library, and imports the check cannot read."""
    problems = []
    stdlib = sys.stdlib_module_names
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                problems.append(f"line {node.lineno}: relative import (hooks are one file; only the standard library)")
                continue
            names = [node.module or ""]
        elif isinstance(node, ast.Call):
            func = node.func
            dotted = func.id if isinstance(func, ast.Name) else (
                f"{func.value.id}.{func.attr}" if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else "")
            if dotted in ("__import__", "importlib.import_module", "import_module"):
                arg = node.args[0] if node.args else None
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    names = [arg.value]
                else:
                    problems.append(f"line {node.lineno}: {dotted}() with a computed name cannot be checked")
                    continue
        for name in names:
            top = name.split(".")[0]
            if top not in stdlib:
                problems.append(f"line {node.lineno}: imports {name!r}, which is not in the standard library")
    return problems


def check_hooks_source(source: str, filename: str) -> None:
    try:
        tree = ast.parse(source, filename=filename)
        compile(tree, filename, "exec")
    except SyntaxError as exc:
        raise Refused(f"{filename} (line {exc.lineno}): does not compile: {exc.msg}") from None
    except ValueError as exc:
        raise Refused(f"{filename}: does not compile: {exc}") from None
    problems = import_problems(tree)
    if problems:
        raise Refused(f"{filename}: hooks may import only the standard library: " + "; ".join(problems))


def hooks_filename(policy: ScaffoldPolicy) -> str | None:
    name = policy.hooks
    if name is None:
        return None
    if "/" in name or "\\" in name or name.startswith(".") or not name.endswith(".py"):
        raise Refused(f"scaffold.yaml: hooks = {name!r} must be a plain .py file name in the scaffold folder "
                      "(or null for no hooks)")
    return name


def check_scaffold(
    root: Path,
    previous: Scaffold | None,
    kernel: KernelLimits,
    *,
    smoke: Callable[[str, str], str | None],
    previous_hooks: str | None = None,
) -> Scaffold:
    """Gate the scaffold files under ``root``; return the scaffold they make (tools not set).

    ``smoke(source, filename)`` runs hooks in a fresh worker and returns a problem or None; it is
    skipped when the hooks source equals ``previous_hooks`` (already smoke-tested and committed).
    """
    policy = check_policy(root, previous.policy if previous else None, kernel)
    templates = check_templates(root, policy)
    name = hooks_filename(policy)
    if name is not None:
        path = root / name
        try:
            source = read_regular_text(path)
        except FileNotFoundError:
            raise Refused(f"{name}: named as the hooks file in scaffold.yaml but missing; "
                          "restore it, or set `hooks: null` for no hooks") from None
        except NotARegularFile:
            raise Refused(f"{name}: must be a regular file (not a link, FIFO or device)") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise Refused(f"{name}: cannot be read as text ({exc.__class__.__name__})") from None
        if source != previous_hooks:
            check_hooks_source(source, name)
            problem = smoke(source, name)
            if problem:
                raise Refused(f"{name}: failed its smoke run in the hook worker: {problem}")
    return Scaffold(root=root, policy=policy, templates=MappingProxyType(templates))
