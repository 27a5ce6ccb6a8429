"""What happens to the developer's repository around a run: their own uncommitted changes are
put aside and restored, and the agent's work is kept as a commit on a new branch, discarded,
or (after keeping) undone. GitPython drives git; nothing here ever deletes the user's changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from live_swe.errors import UserError

EXCLUDED_PREFIXES = (".live-swe/",)
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
    def __init__(self, path: Path):
        import git

        try:
            self.repo = git.Repo(Path(path), search_parent_directories=False)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
            raise UserError(f"{path} is not a git repository; run `git init` there (or pass --repo PATH)") from exc
        self.path = Path(self.repo.working_tree_dir)

    # -- the user's own changes
    def user_changes(self) -> list[str]:
        """Uncommitted changes (staged, unstaged, untracked), as `git status --short` lines."""
        out = self.repo.git.status("--porcelain", "--untracked-files=all")
        return [line for line in out.splitlines() if line and not line[3:].startswith(EXCLUDED_PREFIXES)]

    def stash_user_changes(self, session_id: str) -> str:
        """Put the user's changes aside (untracked files too); returns the stash commit to restore."""
        self.repo.git.stash("push", "--include-untracked", "-m", f"live-swe: your changes, set aside during session {session_id}")
        return self.repo.git.rev_parse("stash@{0}")

    def restore_user_changes(self, stash_sha: str) -> str | None:
        """Bring the set-aside changes back. None on success, else what to do (the stash is kept)."""
        import git

        listed = self.repo.git.stash("list", "--format=%H").splitlines()
        if stash_sha not in listed:
            return f"the set-aside changes ({stash_sha[:10]}) are no longer in `git stash list`"
        ref = f"stash@{{{listed.index(stash_sha)}}}"
        try:
            self.repo.git.stash("pop", "--index", ref)
        except git.GitCommandError:
            try:
                self.repo.git.stash("pop", ref)
            except git.GitCommandError as exc:
                return (f"your changes could not be restored on top of the agent's work ({_first_line(exc)}); "
                        f"they are safe in {ref}: run `git stash pop` when ready")
        return None

    # -- the agent's changes
    def agent_paths(self, base: str) -> list[str]:
        """Paths that differ from ``base`` in the working tree (new files included)."""
        changed = self.repo.git.diff("--name-only", "-z", base, "--").split("\0")
        untracked = self.repo.git.ls_files("--others", "--exclude-standard", "-z").split("\0")
        paths = {p for p in changed + untracked if p and not p.startswith(EXCLUDED_PREFIXES)}
        return sorted(paths)

    def apply_patch(self, patch: str) -> None:
        """Bring a patch made elsewhere (a container) into this working tree."""
        import tempfile

        import git

        if not patch.strip():
            return
        with tempfile.NamedTemporaryFile("w", suffix=".diff", delete=False) as handle:
            handle.write(patch)
        try:
            self.repo.git.apply("--binary", "--whitespace=nowarn", handle.name)
        except git.GitCommandError as exc:
            raise UserError(f"the agent's patch does not apply to {self.path}: {_first_line(exc)}") from exc
        finally:
            Path(handle.name).unlink(missing_ok=True)

    def keep(self, session_id: str, task: str, base: str) -> KeptCommit:
        """Commit the agent's changes on a new branch ``live-swe/<session>`` and stay on it."""
        import git

        branch = f"live-swe/{session_id}"
        if branch in [h.name for h in self.repo.heads]:
            raise UserError(f"branch {branch} already exists; delete it or keep this work under another session")
        paths = self.agent_paths(base)
        if not paths:
            raise UserError("the agent changed nothing; there is nothing to keep")
        previous_sha = self.repo.head.commit.hexsha
        previous_ref = self.repo.head.ref.path if not self.repo.head.is_detached else previous_sha
        # A new branch at HEAD, switched to without touching the working tree or index.
        self.repo.git.branch(branch)
        self.repo.git.symbolic_ref("HEAD", f"refs/heads/{branch}")
        try:
            self.repo.git.add("-A", "--", *paths)
            self.repo.git.commit("-m", commit_message(task, session_id), "--", *paths)
        except git.GitCommandError as exc:
            self._switch_back(previous_ref, previous_sha)
            self.repo.git.branch("-D", branch)
            raise UserError(f"git could not commit the agent's work: {_first_line(exc)}") from exc
        return KeptCommit(branch, self.repo.head.commit.hexsha, previous_ref, previous_sha)

    def undo(self, kept: KeptCommit) -> None:
        """Take back a kept commit: back on the previous branch, the agent's changes uncommitted again."""
        if self.repo.head.is_detached or self.repo.head.ref.path != f"refs/heads/{kept.branch}":
            raise UserError(f"the repository is no longer on {kept.branch}; undo it by hand with git")
        if self.repo.head.commit.hexsha != kept.sha:
            raise UserError(f"{kept.branch} has moved past the agent's commit; undo it by hand with git")
        self._switch_back(kept.previous_ref, kept.previous_sha)
        self.repo.git.branch("-D", kept.branch)

    def discard(self, base: str) -> list[str]:
        """Throw the agent's changes away (the user's own were set aside before the run)."""
        paths = self.agent_paths(base)
        tracked = set(self.repo.git.ls_tree("-r", "--name-only", "-z", base).split("\0"))
        restore = [p for p in paths if p in tracked]
        if self.repo.head.commit.hexsha != base and not self.repo.head.is_detached:
            self.repo.git.reset("--mixed", base)  # the agent committed on the branch itself
        if restore:
            self.repo.git.checkout(base, "--", *restore)
            self.repo.git.reset("-q", base, "--", *restore)
        for rel in paths:
            if rel not in tracked:
                (self.path / rel).unlink(missing_ok=True)
        return paths

    def _switch_back(self, previous_ref: str, previous_sha: str) -> None:
        if previous_ref.startswith("refs/"):
            self.repo.git.symbolic_ref("HEAD", previous_ref)
        else:
            self.repo.git.update_ref("--no-deref", "HEAD", previous_sha)
        self.repo.git.reset("-q", "--mixed", previous_sha)  # index back; the working tree is untouched


def _first_line(exc: Exception) -> str:
    text = getattr(exc, "stderr", "") or str(exc)
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0][:300] if lines else type(exc).__name__
