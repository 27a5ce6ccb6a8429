"""The session's scaffold history: a git repository whose git directory is outside the work tree.

``sessions/<id>/scaffold/`` is the tree the agent writes; ``sessions/<id>/scaffold.git/`` is its
history, which the agent cannot reach (in docker only the tree is mounted). The first commit is
the starting scaffold; every later commit is one accepted change (or a kernel rollback).

git runs under the kernel's rules (:mod:`live_swe.infra.git`), and the history's own ``config`` is
the kernel's: before each command it is rewritten if anything else was written there (hooks,
fsmonitor, diff or filter programs never run, however they got in). Its settings pin the
repository (no hooks, no signing, no attribute or ignore files from the user's setup), so a commit
and a checkout round-trip bytes and exec bits.
"""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from live_swe.environments.base import EnvironmentError_
from live_swe.errors import UserError
from live_swe.infra import files
from live_swe.infra.git import Git, GitFailed, init
from live_swe.scaffolding.scaffold import TOOL_NAME_RE, ScaffoldError, load_policy
from live_swe.session.view import SessionView, change_json

_AUTHOR = "live-swe"
_EMAIL = "live-swe@localhost"
_CONFIG = {
    "user.name": _AUTHOR,
    "user.email": _EMAIL,
    "commit.gpgsign": "false",
    "core.hooksPath": os.devnull,
    "core.excludesFile": os.devnull,
    "core.attributesFile": os.devnull,
    "core.autocrlf": "false",
    "core.filemode": "true",
    "core.symlinks": "true",
    "core.fsmonitor": "false",
    "core.quotepath": "off",
    "gc.auto": "0",
}


def _config_text() -> str:
    sections: dict[str, list[str]] = {"core": ["\trepositoryformatversion = 0", "\tbare = false"]}
    for key, value in _CONFIG.items():
        section, name = key.split(".")
        sections.setdefault(section, []).append(f"\t{name} = {value}")
    return "".join(f"[{section}]\n" + "\n".join(lines) + "\n" for section, lines in sections.items())


CONFIG_TEXT = _config_text()
# Files that would make git read its config (and objects) from somewhere else.
_REDIRECTS = ("commondir", "gitdir", "config.worktree")


@dataclass(frozen=True)
class Revision:
    rev: str
    subject: str
    body: str
    files: tuple[str, ...]


class HistoryError(EnvironmentError_):
    """git failed on the scaffold history: an infrastructure problem, reported with the session saved."""


class ScaffoldHistory:
    def __init__(self, git_dir: Path, work_tree: Path):
        self.git_dir = Path(git_dir).absolute()
        self.work_tree = Path(work_tree).absolute()
        # agent-chosen file names are never pathspec magic
        self.git = Git(git_dir=self.git_dir, work_tree=self.work_tree, scan=False,
                       env={"GIT_LITERAL_PATHSPECS": "1"})

    # -- plumbing
    def _pin_config(self) -> None:
        """The history's config is the kernel's: anything else written there is replaced, unread."""
        path = self.git_dir / "config"
        try:
            with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as handle:
                current = handle.read()
        except OSError:
            current = None
        if current != CONFIG_TEXT.encode():
            if path.is_dir() and not path.is_symlink():
                import shutil

                shutil.rmtree(path)
            files.write_atomic(path, CONFIG_TEXT, mode=0o644)
        for name in _REDIRECTS:
            if os.path.lexists(self.git_dir / name):
                os.unlink(self.git_dir / name)

    def _run(self, *args: str, binary: bool = False, input: str | None = None) -> Any:
        if not (self.git_dir / "HEAD").exists():
            raise HistoryError(f"scaffold history {self.git_dir} does not exist")
        self._pin_config()
        try:
            return self.git.run(*args, binary=binary, input=input)
        except GitFailed as exc:
            raise HistoryError(f"scaffold history {self.git_dir}: `git {args[0]}` failed: {exc.detail[:500]}") from None

    # -- state
    def exists(self) -> bool:
        """A history with at least one commit."""
        if not (self.git_dir / "HEAD").is_file():
            return False
        try:
            self._run("rev-parse", "--verify", "--quiet", "HEAD^{commit}")
            return True
        except HistoryError:
            return False

    def create(self) -> None:
        import shutil

        if self.git_dir.exists():
            shutil.rmtree(self.git_dir)  # a start that died before its first commit
        try:  # a bare init (no work tree beside it); the work tree is passed on every later command
            init(self.git_dir, bare=True)
        except GitFailed as exc:
            raise HistoryError(f"cannot create the scaffold history {self.git_dir}: {exc.detail}") from None
        self._pin_config()

    def head(self) -> str:
        return self._run("rev-parse", "HEAD").strip()

    # -- writing
    def commit(self, message: str, paths: list[str] | None = None,
               record: Callable[[str], None] | None = None) -> str:
        """Commit ``paths`` (all of the tree when None) exactly as they are on disk; return the sha.

        ``record`` is called with the new commit before the branch moves to it, so the kernel's log
        names every commit the history holds (``resume`` adopts nothing else)."""
        if paths is None:
            self._run("add", "--all", "--force", "--", ".")
        elif paths:
            self._run("add", "--all", "--force", "--", *paths)
        tree = self._run("write-tree").strip()
        try:
            parent = ["-p", self._run("rev-parse", "--verify", "--quiet", "HEAD^{commit}").strip()]
        except HistoryError:
            parent = []  # the first commit
        sha = self._run("commit-tree", tree, "-F", "-", *parent, input=message).strip()
        if record is not None:
            record(sha)
        self.move_to(sha)
        return sha

    def move_to(self, rev: str) -> None:
        """Point the branch at ``rev`` (the work tree and index are left alone)."""
        self._run("update-ref", "HEAD", rev)

    def restore_head(self) -> list[str]:
        """Reset the work tree to the last commit exactly; return the paths that were different.

        The index is rebuilt from the commit first, so nothing written into it (stat data that hides
        a changed file) is trusted."""
        # Locks left by a process killed mid-commit; whoever restores owns the session now.
        for lock in (self.git_dir / "index.lock", self.git_dir / "HEAD.lock", *self.git_dir.glob("refs/heads/*.lock")):
            lock.unlink(missing_ok=True)
        (self.git_dir / "index").unlink(missing_ok=True)
        self._run("read-tree", "HEAD")
        status = self._run("status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored")
        changed = sorted({item[3:] for item in status.split("\0") if len(item) > 3})
        if changed:
            self._run("reset", "--quiet", "--hard", "HEAD")
            self._run("clean", "-ffdxq")
        return changed

    # -- reading
    def file_at(self, rev: str, path: str) -> bytes | None:
        try:
            return self._run("cat-file", "blob", f"{rev}:{path}", binary=True)
        except HistoryError:
            return None

    def mode_at(self, rev: str, path: str) -> int | None:
        line = self._run("ls-tree", rev, "--", path).strip()
        return int(line.split()[0], 8) & 0o777 if line else None

    def files_at(self, rev: str, directory: str = "") -> list[str]:
        args = ["ls-tree", "-r", "--name-only", rev]
        if directory:
            args += ["--", directory.rstrip("/") + "/"]
        return [line for line in self._run(*args).splitlines() if line]

    def revisions(self, rev: str = "HEAD") -> list[Revision]:
        """Newest first."""
        out = self._run("log", "--no-show-signature", "--format=%x1e%H%x1f%s%x1f%b%x1f", "--name-only", rev)
        result = []
        for record in out.split("\x1e"):
            if not record.strip():
                continue
            rev, subject, body, files = (record.split("\x1f") + ["", "", "", ""])[:4]
            result.append(Revision(rev.strip(), subject.strip(), body.strip(),
                                   tuple(f for f in files.splitlines() if f.strip())))
        return result

    def is_commit(self, rev: str) -> bool:
        try:
            self._run("cat-file", "-e", f"{rev}^{{commit}}")
            return True
        except HistoryError:
            return False

    def is_ancestor(self, ancestor: str, rev: str) -> bool:
        try:
            self._run("merge-base", "--is-ancestor", ancestor, rev)
            return True
        except HistoryError:
            return False

    def changed_files(self, old: str, new: str) -> list[str]:
        return [f for f in self._run("diff", "--no-ext-diff", "--no-textconv", "--name-only", "-z", old, new)
                .split("\0") if f]

    def resolve(self, rev: str) -> str:
        try:
            return self._run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
        except HistoryError:
            raise UserError(f"no scaffold revision {rev!r} in {self.git_dir}; "
                            "`live-swe sessions log ID` lists the revisions") from None

    def root_commit(self) -> str:
        return self._run("rev-list", "--max-parents=0", "HEAD").split()[0]

    def diff(self, rev: str | None = None) -> str:
        """One commit's change (against its parent), or everything since the starting scaffold."""
        plain = ("--binary", "--no-ext-diff", "--no-textconv")
        if rev is None:
            return self._run("diff", *plain, self.root_commit(), "HEAD")
        sha = self.resolve(rev)
        parents = self._run("rev-list", "--parents", "-n", "1", sha).split()[1:]
        if not parents:
            return self._run("show", "--format=", *plain, sha)
        return self._run("diff", *plain, parents[0], sha)

    def show(self, rev: str) -> str:
        """One commit: its subject, then its diffstat and diff (what the TUI shows for a change)."""
        return self._run("show", "--stat", "-p", "--no-ext-diff", "--no-textconv", "--format=%s%n", rev)

    def export_head(self, target: Path) -> None:
        """Write the last commit's files into ``target`` (bytes and exec bits), nothing else."""
        data = self._run("archive", "--format=tar", "HEAD", binary=True)
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            archive.extractall(target, filter="data")


def history_of(session) -> ScaffoldHistory:
    return ScaffoldHistory(session.history_dir, session.scaffold_dir)


def export_accepted(session, target: Path) -> bool:
    """Copy a session's last accepted scaffold (not whatever a killed step left) into ``target``.

    Returns False when the session has no history, so the caller copies its work tree instead.
    """
    history = history_of(session)
    if not history.exists():
        return False
    history.export_head(Path(target))
    return True


def registered_tools(session) -> list[str]:
    """Names of the tools in the session's last accepted scaffold (each passed the tool gates)."""

    history = history_of(session)
    if not history.exists():
        return []
    try:
        tools_dir = load_policy(session.scaffold_dir).tools_dir
    except ScaffoldError:
        tools_dir = "tools"
    names = []
    for path in history.files_at("HEAD", tools_dir):
        name = path[len(tools_dir) + 1 :]
        if "/" not in name and TOOL_NAME_RE.match(name):
            names.append(name)
    return sorted(names)


def evolution_summary(session, view: SessionView) -> dict[str, Any]:
    """What ``sessions show --json`` adds: registered tools and the list of scaffold changes."""
    try:
        tools = registered_tools(session)
    except HistoryError:
        tools = view.tools_registered
    return {"tools": tools, "scaffold_changes": [change_json(c) for c in view.scaffold_changes]}
