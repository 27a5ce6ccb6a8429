"""What happens to the developer's repository around a run: their own uncommitted changes are
put aside and restored, and the agent's work is kept as a commit on a new branch, discarded,
or (after keeping) undone. Nothing here ever deletes the user's changes.

git runs under the kernel's rules (:mod:`live_swe.infra.git`): whatever the agent wrote into
``.git/`` (hooks, fsmonitor, filters), the kernel's commit runs none of it. The commit's identity is
the person's, read once before the run and passed explicitly.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from live_swe.errors import UserError
from live_swe.infra.git import Git, GitFailed, Identity
from live_swe.session.baseline import OWN_PREFIXES as EXCLUDED_PREFIXES
from live_swe.session.baseline import uncommitted_changes

SUBJECT_CHARS = 72


@dataclass(frozen=True)
class KeptCommit:
    branch: str
    sha: str
    previous_ref: str  # refs/heads/<name>, or a sha when the repository was on a detached HEAD
    previous_sha: str


def commit_message(task: str, session_id: str) -> str:
    lines = [line.strip() for line in task.strip().splitlines() if line.strip()]
    subject = lines[0] if lines else "live-swe changes"
    if len(subject) > SUBJECT_CHARS:
        subject = subject[: SUBJECT_CHARS - 1].rstrip() + "…"
    body = task.strip()
    return f"{subject}\n\n{body}\n\nMade with live-swe, session {session_id}.\n"


class WorkTree:
    def __init__(self, path: Path, identity: Identity | None = None):
        self.path = Path(path).absolute()
        if not self.path.is_dir() or not os.path.lexists(self.path / ".git"):
            raise UserError(f"{path} is not a git repository; run `git init` there (or pass --repo PATH)")
        # agent-chosen file names are passed as paths, never as pathspec magic
        self.git = Git(self.path, config=identity.config() if identity else (), env={"GIT_LITERAL_PATHSPECS": "1"})
        # ... except for `git stash`, which names no path of ours and needs its own pathspecs: with
        # literal ones it saves untracked files but leaves them in the tree (they would join the agent's work)
        self._stash_git = Git(self.path, config=identity.config() if identity else ())

    def _git(self, *args: str) -> str:
        try:
            return str(self.git.run(*args))
        except GitFailed as exc:
            raise UserError(f"git {args[0]} failed in {self.path}: {_first_line(exc)}") from None

    def _head(self) -> str:
        return self._git("rev-parse", "HEAD").strip()

    def _branch_ref(self) -> str | None:
        """refs/heads/<name> of the branch checked out, None on a detached HEAD."""
        try:
            return str(self.git.run("symbolic-ref", "-q", "HEAD")).strip() or None
        except GitFailed:
            return None

    def files(self) -> list[str]:
        """The repository's files (tracked, and untracked ones not ignored), for ``@`` mentions."""
        listed = self._git("ls-files", "-z", "--cached", "--others", "--exclude-standard")
        return sorted({name for name in listed.split("\0") if name})

    # -- the user's own changes
    def user_changes(self) -> list[str]:
        """Uncommitted changes (staged, unstaged, untracked), as `git status --short` lines."""
        return uncommitted_changes(self.path)

    def stash_user_changes(self, session_id: str) -> str:
        """Put the user's changes aside (untracked files too); returns the stash commit to restore."""
        try:
            self._stash_git.run("stash", "push", "--include-untracked", "-m",
                                f"live-swe: your changes, set aside during session {session_id}")
        except GitFailed as exc:
            raise UserError(f"git stash failed in {self.path}: {_first_line(exc)}") from None
        return self._git("rev-parse", "stash@{0}").strip()

    def restore_user_changes(self, stash_sha: str) -> str | None:
        """Bring the set-aside changes back. None on success, else what to do (the stash is kept)."""
        listed = self._git("stash", "list", "--format=%H").splitlines()
        if stash_sha not in listed:
            return f"the set-aside changes ({stash_sha[:10]}) are no longer in `git stash list`"
        ref = f"stash@{{{listed.index(stash_sha)}}}"
        try:
            self._stash_git.run("stash", "pop", "--index", ref)
        except GitFailed:
            try:
                self._stash_git.run("stash", "pop", ref)
            except GitFailed as exc:
                return (f"your changes could not be restored on top of the agent's work ({_first_line(exc)}); "
                        f"they are safe in {ref}: run `git stash pop` when ready")
        return None

    # -- the agent's changes
    def agent_paths(self, base: str) -> list[str]:
        """Paths that differ from ``base`` in the working tree (new files included)."""
        changed = self._git("diff", "--no-ext-diff", "--no-textconv", "--name-only", "-z", base, "--").split("\0")
        untracked = self._git("ls-files", "--others", "--exclude-standard", "-z").split("\0")
        paths = {p for p in changed + untracked if p and not p.startswith(EXCLUDED_PREFIXES)}
        return sorted(paths)

    def apply_patch(self, patch: str) -> None:
        """Bring a patch made elsewhere (a container) into this working tree."""
        if not patch.strip():
            return
        try:
            self.git.run("apply", "--binary", "--whitespace=nowarn", "-", input=patch)
        except GitFailed as exc:
            raise UserError(f"the agent's patch does not apply to {self.path}: {_first_line(exc)}") from None

    def keep(self, session_id: str, task: str, base: str) -> KeptCommit:
        """Commit the agent's changes on a new branch ``live-swe/<session>`` and stay on it."""
        branch = f"live-swe/{session_id}"
        if self.git.succeeds("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"):
            raise UserError(f"branch {branch} already exists; delete it or keep this work under another session")
        paths = self.agent_paths(base)
        if not paths:
            raise UserError("the agent changed nothing; there is nothing to keep")
        previous_sha = self._head()
        previous_ref = self._branch_ref() or previous_sha
        # A new branch at HEAD, switched to without touching the working tree or index.
        self._git("branch", branch)
        self._git("symbolic-ref", "HEAD", f"refs/heads/{branch}")
        try:
            self.git.run("add", "-A", "--", *paths)
            self.git.run("commit", "--quiet", "--no-verify", "-F", "-", "--", *paths,
                         input=commit_message(task, session_id))
        except GitFailed as exc:
            self._switch_back(previous_ref, previous_sha)
            self._git("branch", "-D", branch)
            raise UserError(f"git could not commit the agent's work: {_first_line(exc)}") from None
        return KeptCommit(branch, self._head(), previous_ref, previous_sha)

    def undo(self, kept: KeptCommit) -> None:
        """Take back a kept commit: back on the previous branch, the agent's changes uncommitted again."""
        if self._branch_ref() != f"refs/heads/{kept.branch}":
            raise UserError(f"the repository is no longer on {kept.branch}; undo it by hand with git")
        if self._head() != kept.sha:
            raise UserError(f"{kept.branch} has moved past the agent's commit; undo it by hand with git")
        self._switch_back(kept.previous_ref, kept.previous_sha)
        self._git("branch", "-D", kept.branch)

    def discard(self, base: str) -> list[str]:
        """Throw the agent's changes away (the user's own were set aside before the run)."""
        paths = self.agent_paths(base)
        tracked = set(self._git("ls-tree", "-r", "--name-only", "-z", base).split("\0"))
        restore = [p for p in paths if p in tracked]
        if self._head() != base and self._branch_ref() is not None:
            self._git("reset", "--mixed", base)  # the agent committed on the branch itself
        if restore:
            self._git("checkout", base, "--", *restore)
            self._git("reset", "-q", base, "--", *restore)
        for rel in paths:
            if rel not in tracked:
                (self.path / rel).unlink(missing_ok=True)
        return paths

    def _switch_back(self, previous_ref: str, previous_sha: str) -> None:
        if previous_ref.startswith("refs/"):
            self._git("symbolic-ref", "HEAD", previous_ref)
        else:
            self._git("update-ref", "--no-deref", "HEAD", previous_sha)
        self._git("reset", "-q", "--mixed", previous_sha)  # index back; the working tree is untouched


def _first_line(exc: Exception) -> str:
    text = exc.detail if isinstance(exc, GitFailed) else str(exc)
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0][:300] if lines else type(exc).__name__
