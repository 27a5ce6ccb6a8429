"""A repository's own instructions for coding agents, for the first prompt.

``AGENTS.md`` (the cross-tool convention): the one nearest the working folder, up the tree, plus the
repository root's. Without any, ``CLAUDE.md`` and ``CONVENTIONS.md`` the same way. The text is the
repository's, so it is untrusted data for the model: it goes into the prompt (capped in size, inside
its own tag), never to a shell. Files are read as regular files only, never through a link (a link
could point at a secret outside the repository); the GitHub flow reads them from the base branch's
commit, never from the issue or the working tree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from live_swe.infra.git import Git, GitFailed
from live_swe.scaffolding.files import read_regular

PRIMARY = ("AGENTS.md",)
FALLBACK = ("CLAUDE.md", "CONVENTIONS.md")
MAX_CHARS = 8_000  # all files together: instructions must not crowd out the task and the map
MAX_FILE_BYTES = 256_000  # read no more of one file than this


@dataclass(frozen=True)
class RepoInstructions:
    files: tuple[str, ...]  # paths relative to the repository root, in prompt order (root first)
    text: str  # what goes into the prompt
    truncated: bool  # the cap cut something

    def summary(self) -> str:
        return f"{', '.join(self.files)} ({len(self.text):,} characters{', cut to fit' if self.truncated else ''})"


def from_work_tree(repo: Path, workdir: Path | None = None, max_chars: int = MAX_CHARS) -> RepoInstructions | None:
    """The instructions in ``repo``'s working tree, seen from ``workdir`` (default: the root)."""
    root = Path(repo).resolve()

    def read(relative: str) -> str | None:
        try:
            return read_regular(root / relative, MAX_FILE_BYTES).decode("utf-8", errors="replace")
        except OSError:  # missing, a link, a folder, unreadable: not instructions
            return None

    return _collect(read, _folders(root, workdir), max_chars)


def from_commit(repo: Path, commit: str, workdir: str = "", max_chars: int = MAX_CHARS) -> RepoInstructions | None:
    """The instructions as committed in ``commit`` (the GitHub flow's base branch): blobs only, no links."""
    git = Git(Path(repo))

    def read(relative: str) -> str | None:
        try:
            entry = str(git.run("ls-tree", "-z", commit, "--", relative)).split("\0")[0]
        except GitFailed:
            return None
        mode, kind = (entry.split(" ") + ["", ""])[:2]
        if kind != "blob" or mode not in ("100644", "100755"):
            return None  # a link (120000), a folder or a submodule: not instructions
        try:
            return str(git.run("cat-file", "blob", f"{commit}:{relative}"))[:MAX_FILE_BYTES]
        except GitFailed:
            return None

    parts = [p for p in PurePosixPath(workdir).parts if p not in ("", ".", "/")]
    return _collect(read, ["/".join(parts[:n]) for n in range(len(parts), -1, -1)], max_chars)


def _folders(root: Path, workdir: Path | None) -> list[str]:
    """The working folder and each folder above it up to the root, relative, nearest first."""
    if workdir is None:
        return [""]
    try:
        relative = Path(workdir).resolve().relative_to(root)
    except ValueError:  # the working folder is outside the repository: its root only
        return [""]
    parts = relative.parts
    return ["/".join(parts[:n]) for n in range(len(parts), -1, -1)]


def _collect(read: Callable[[str], str | None], folders: list[str], max_chars: int) -> RepoInstructions | None:
    for names in (PRIMARY, FALLBACK):
        found: list[tuple[str, str]] = []
        for name in names:
            texts = [(_join(folder, name), read(_join(folder, name))) for folder in folders]
            present = [(path, text) for path, text in texts if text is not None and text.strip()]
            if not present:
                continue
            nearest, root = present[0], next((p for p in present if "/" not in p[0]), None)
            found += [root] if root is not None and root != nearest else []
            found.append(nearest)
        if found:
            return _capped(found, max_chars)
    return None


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _capped(files: list[tuple[str, str]], max_chars: int) -> RepoInstructions:
    """Each file under its own heading, the whole within ``max_chars`` (each file gets an even share
    of what is left, so a long root file cannot push out the nearer, more specific one)."""
    parts, truncated = [], False
    left = max_chars
    for index, (path, text) in enumerate(files):
        share = left // (len(files) - index)
        body = text.strip()
        if len(body) > share:
            body = body[: max(share - 80, 0)].rstrip() + f"\n[... {len(body) - max(share - 80, 0):,} more characters of {path} left out]"
            truncated = True
        part = f"# {path}\n{body}"
        parts.append(part)
        left -= min(len(part), share)
    return RepoInstructions(tuple(path for path, _ in files), "\n\n".join(parts), truncated)
