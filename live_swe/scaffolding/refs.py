"""Scaffold references (``seed``, ``session:ID``, ``path:DIR``, ``archive:NODE``) to directories.

``materialize`` copies the referenced scaffold into a session's work tree, then adds the user's
tool library (``$LIVE_SWE_HOME/tools``) so promoted tools are registered from the first step.

``seed`` and ``path:DIR`` are resolved here. The other kinds belong to layers above this one, which
fill ``SOURCES`` in: ``live_swe.runner`` (``session:ID``) and ``godel.archive`` (``archive:NODE``).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from live_swe.resources import resource_path
from live_swe.scaffolding.scaffold import ScaffoldError, load_scaffold

IGNORE = shutil.ignore_patterns(".git", "__pycache__", "*.pyc")

# Reference kind (``session``, ``archive``) -> writes the scaffold the value names into a directory.
ScaffoldSource = Callable[[str, Path], None]
SOURCES: dict[str, ScaffoldSource] = {}
_OWNERS = {"session": "live_swe.runner", "archive": "the Gödel engine (godel.archive)"}


def materialize(ref: str, target: Path, *, library: Path | None = None) -> None:
    """Write the scaffold named by ``ref`` into the empty directory ``target`` and validate it."""
    target.mkdir(parents=True, exist_ok=True)
    kind, _, value = ref.partition(":")
    if ref in ("seed", ""):
        shutil.copytree(resource_path("scaffold"), target, dirs_exist_ok=True, ignore=IGNORE)
        shutil.copytree(resource_path("prompts"), target / "prompts", dirs_exist_ok=True, ignore=IGNORE)
    elif kind == "path":
        source = Path(value).expanduser()
        if not (source / "scaffold.yaml").is_file():
            raise ScaffoldError(f"{source}: not a scaffold directory (no scaffold.yaml)")
        shutil.copytree(source, target, dirs_exist_ok=True, ignore=IGNORE)
    elif kind in SOURCES:
        SOURCES[kind](value, target)
    elif kind in _OWNERS:  # a program that uses the resolver without loading the layer that resolves it
        raise ScaffoldError(f"{kind} references are resolved by {_OWNERS[kind]}, which this program did not load")
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
