"""Where a run starts in a repository that holds the person's own uncommitted changes.

The patch is the repository's diff against the starting commit, so a run started on a dirty tree
would report the person's edits as the agent's. ``live-swe run`` therefore refuses a dirty tree;
with ``--allow-dirty`` the starting point is a commit of the tree as it is (made with a throwaway
index: the person's index, branch and files are untouched, no ref is written), so the patch is
exactly the agent's change. The commit object lives in the repository's object store, where
``resume`` finds it again (git prunes unreferenced objects only after two weeks).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from live_swe.errors import UserError
from live_swe.infra.git import PATCH_EXCLUDES, Git, GitFailed

# live-swe's own folder in a repository: never the person's change nor the agent's
OWN_PREFIXES = (".live-swe/",)
_IDENTITY = [("user.name", "live-swe"), ("user.email", "live-swe@localhost")]
_EXCLUDES = [f":(exclude,glob){pattern}" for pattern in PATCH_EXCLUDES]


def uncommitted_changes(repo: Path) -> list[str]:
    """The person's uncommitted changes (staged, unstaged, untracked), as `git status --short` lines."""
    try:
        out = str(Git(repo).run("status", "--porcelain", "--untracked-files=all", timeout=120))
    except GitFailed as exc:
        raise UserError(f"git status failed in {repo}: {exc.detail.splitlines()[0][:300]}") from None
    return [line for line in out.splitlines() if line and not line[3:].startswith(OWN_PREFIXES)]


def dirty_tree_message(repo: Path, changes: list[str]) -> str:
    listed = ", ".join(" ".join(line.split()) for line in changes[:5]) + (" …" if len(changes) > 5 else "")
    return (f"{repo} has {len(changes)} uncommitted change(s) ({listed}); they would be mixed into the agent's "
            "patch. Commit or stash them first, or pass --allow-dirty to start from the tree as it is "
            "(your changes stay where they are and the patch is only the agent's)")


@contextmanager
def _tree_index(repo: Path) -> Iterator[Git]:
    """git for ``repo`` with a throwaway index holding the working tree as it is (live-swe's own
    folders and interpreter caches left out, as in a patch)."""
    with tempfile.TemporaryDirectory(prefix="live-swe-baseline-") as scratch:
        index = os.path.join(scratch, "index")
        git = Git(repo, env={"GIT_INDEX_FILE": index})
        real = Path(str(Git(repo).run("rev-parse", "--absolute-git-dir")).strip()) / "index"
        if real.is_file():
            # with its time (copy2): git trusts the stat of entries older than the index file, so a
            # fresh time would hide a change made in the second the real index was written
            shutil.copy2(real, index)  # git then re-reads only the files whose stat changed
        else:
            git.run("read-tree", "HEAD")
        git.run("add", "-A", "--", ".", *_EXCLUDES, timeout=600)
        yield git


def working_tree_commit(repo: Path, session_id: str) -> str:
    """A commit of the working tree as it is now (parent: HEAD), written without touching the
    person's index or refs. The tree equal to HEAD's gives HEAD itself."""
    try:
        with _tree_index(repo) as git:
            tree = str(git.run("write-tree")).strip()
            head = str(git.run("rev-parse", "HEAD")).strip()
            if tree == str(git.run("rev-parse", "HEAD^{tree}")).strip():
                return head
            message = f"live-swe: the starting point of session {session_id} (uncommitted changes included)"
            return str(git.run("commit-tree", tree, "-p", head, "-m", message, config=_IDENTITY)).strip()
    except GitFailed as exc:
        raise UserError(f"could not record the tree of {repo} as the starting point: "
                        f"{exc.detail.splitlines()[0][:300] if exc.detail else exc}") from None


def working_tree_patch(repo: Path, base: str) -> str:
    """The working tree's diff against ``base``, made as the session's patch is made."""
    try:
        with _tree_index(repo) as git:
            return str(git.run("diff", "--cached", "--binary", "--no-ext-diff", "--no-textconv", base, "--", ".",
                               *_EXCLUDES, config=[("core.quotepath", "off")], timeout=600))
    except GitFailed as exc:
        raise UserError(f"could not compare {repo} with the session's starting commit: "
                        f"{exc.detail.splitlines()[0][:300] if exc.detail else exc}") from None


def changed_paths(patch: str) -> dict[str, str]:
    """Each file's part of a patch, by path (``diff --git a/P b/P`` headers)."""
    parts: dict[str, str] = {}
    for chunk in re.split(r"(?m)^(?=diff --git )", patch):
        header = chunk.split("\n", 1)[0]
        if header.startswith("diff --git "):
            parts[header.rsplit(" b/", 1)[-1]] = chunk
    return parts


def changes_not_in(repo: Path, base: str, session_patch: str) -> list[str]:
    """The uncommitted changes in ``repo`` that are not the session's own (its saved patch), as
    `git status --short` lines: what a person wrote while the session was stopped."""
    changes = uncommitted_changes(repo)
    if not changes:
        return []
    now, saved = changed_paths(working_tree_patch(repo, base)), changed_paths(session_patch)
    foreign = {path for path in now.keys() | saved.keys() if now.get(path) != saved.get(path)}
    return [line for line in changes if _status_path(line) in foreign]


def _status_path(line: str) -> str:
    path = line[3:]
    return path.split(" -> ", 1)[-1].strip('"')
