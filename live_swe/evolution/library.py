"""The user's tool library, ``$LIVE_SWE_HOME/tools``: tools promoted from sessions.

A new session's scaffold gets every library tool (``refs.materialize`` copies them), and the
guard gates and registers them before the first step. Promotion takes the tool exactly as the
session committed it (not whatever its work tree holds) and re-runs the static gates.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from live_swe.config import home
from live_swe.errors import UserError
from live_swe.evolution.history import history_of, registered_tools
from live_swe.evolution.tool_gates import name_problem, static_problem
from live_swe.scaffolding.scaffold import ToolInfo, discover_tools, load_policy
from live_swe.session.store import SessionStore


def library_dir() -> Path:
    return home() / "tools"


def list_tools() -> list[ToolInfo]:
    return discover_tools(library_dir())


def promote(session_id: str, name: str, *, force: bool = False) -> Path:
    """Copy the tool ``name`` registered in ``session_id`` into the library; return its new path."""
    problem = name_problem(name)
    if problem:
        raise UserError(f"cannot promote {name!r}: {problem}")
    session = SessionStore.default().open(session_id)
    registered = registered_tools(session)
    if name not in registered:
        known = ", ".join(registered) or "none"
        raise UserError(f"{name!r} is not a registered tool of session {session_id} (registered: {known}); "
                        "only tools that passed the gates in a session can be promoted")
    history = history_of(session)
    tools_dir = load_policy(session.scaffold_dir).tools_dir
    data = history.file_at("HEAD", f"{tools_dir}/{name}")
    mode = history.mode_at("HEAD", f"{tools_dir}/{name}")
    if data is None or mode is None:
        raise UserError(f"session {session_id}: {tools_dir}/{name} is missing from its scaffold history")
    library = library_dir()
    library.mkdir(parents=True, exist_ok=True)
    target = library / name
    if target.exists() and not force:
        if target.read_bytes() == data:
            return target
        raise UserError(f"the library already has a different tool named {name!r} ({target}); "
                        "pass --force to replace it")
    with tempfile.TemporaryDirectory(dir=library, prefix=".promote-") as scratch:
        staged = Path(scratch) / name
        staged.write_bytes(data)
        os.chmod(staged, mode | 0o755)
        problem = static_problem(staged, name)
        if problem:
            raise UserError(f"cannot promote {name!r} from session {session_id}: it fails the tool gates: {problem}")
        os.replace(staged, target)
    return target
