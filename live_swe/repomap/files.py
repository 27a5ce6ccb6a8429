"""Which files of a repository the map reads: tracked and untracked-but-not-ignored source files."""

from __future__ import annotations

import os
from pathlib import Path

from live_swe.infra.git import Git, GitFailed
from live_swe.repomap.languages import language_for

# third-party code (vendor/, _vendor/) is not the repository's own and would crowd the map
_SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "vendor", "_vendor", "__pycache__", ".venv", "venv", ".tox", ".live-swe",
              "build", "dist", ".mypy_cache", ".pytest_cache"}


def source_files(repo: Path) -> list[tuple[str, str]]:
    """``(relative path, language)`` for each mapped file, sorted by path."""
    listed = _git_files(repo)
    if listed is None:
        listed = _walk(repo)
    found = []
    for rel in listed:
        language = language_for(rel)
        if language and not any(part in _SKIP_DIRS for part in rel.split("/")[:-1]):
            found.append((rel, language))
    return sorted(found)


def _git_files(repo: Path) -> list[str] | None:
    try:
        out = Git(repo).run("ls-files", "-z", "--cached", "--others", "--exclude-standard", binary=True, timeout=60)
    except GitFailed:
        return None
    return [p for p in out.decode("utf-8", "replace").split("\0") if p]


def _walk(repo: Path) -> list[str]:
    found = []
    prefix = len(str(repo)) + 1
    for directory, dirs, names in os.walk(repo):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".")]
        rel_dir = directory[prefix:].replace(os.sep, "/")
        found.extend(f"{rel_dir}/{name}" if rel_dir else name for name in names if language_for(name))
    return found
