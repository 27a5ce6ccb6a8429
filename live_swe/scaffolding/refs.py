"""Scaffold references (``seed``, ``session:ID``, ``path:DIR``, ``archive:NODE``) to directories.

``materialize`` copies the referenced scaffold into a session's work tree, then adds the user's
tool library (``$LIVE_SWE_HOME/tools``) so promoted tools are registered from the first step.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from live_swe.resources import resource_path
from live_swe.scaffolding.scaffold import ScaffoldError, load_scaffold

_IGNORE = shutil.ignore_patterns(".git", "__pycache__", "*.pyc")


def _export_accepted(session, target: Path) -> bool:
    """A session's last accepted scaffold from its history, never what a killed step left behind."""
    try:
        from live_swe.evolution.history import export_accepted
    except ImportError:
        return False
    return export_accepted(session, target)


def materialize(ref: str, target: Path, *, library: Path | None = None) -> None:
    """Write the scaffold named by ``ref`` into the empty directory ``target`` and validate it."""
    target.mkdir(parents=True, exist_ok=True)
    kind, _, value = ref.partition(":")
    if ref in ("seed", ""):
        shutil.copytree(resource_path("scaffold"), target, dirs_exist_ok=True, ignore=_IGNORE)
        shutil.copytree(resource_path("prompts"), target / "prompts", dirs_exist_ok=True, ignore=_IGNORE)
    elif kind == "path":
        source = Path(value).expanduser()
        if not (source / "scaffold.yaml").is_file():
            raise ScaffoldError(f"{source}: not a scaffold directory (no scaffold.yaml)")
        shutil.copytree(source, target, dirs_exist_ok=True, ignore=_IGNORE)
    elif kind == "session":
        from live_swe.session.store import SessionStore

        session = SessionStore.default().open(value)
        if not _export_accepted(session, target):  # no history: the work tree is all there is
            shutil.copytree(session.scaffold_dir, target, dirs_exist_ok=True, ignore=_IGNORE)
    elif kind == "archive":
        try:
            from godel.archive import checkout_node
        except ImportError as exc:
            raise ScaffoldError("archive references need the Gödel engine (godel.archive)") from exc
        checkout_node(value, target)
    else:
        raise ScaffoldError(
            f"unknown scaffold reference {ref!r}; use seed, session:ID, path:DIR or archive:NODE"
        )
    (target / "tools").mkdir(exist_ok=True)
    if library and library.is_dir():
        for tool in library.iterdir():
            if tool.is_file() and not (target / "tools" / tool.name).exists():
                shutil.copy2(tool, target / "tools" / tool.name)
    load_scaffold(target)  # fail now, with the file named, rather than at the first step
