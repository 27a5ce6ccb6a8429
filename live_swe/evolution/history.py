"""The session's scaffold history: a git repository whose git directory is outside the work tree.

``sessions/<id>/scaffold/`` is the tree the agent writes; ``sessions/<id>/scaffold.git/`` is its
history, which the agent cannot reach (in docker only the tree is mounted). The first commit is
the starting scaffold; every later commit is one accepted change (or a kernel rollback).

Git runs with the repository's own configuration pinned (no hooks, no signing, no attribute or
ignore files from the user's setup), so a commit and a checkout round-trip bytes and exec bits.
"""

from __future__ import annotations

import io
import os
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from live_swe.environments.base import EnvironmentError_

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
        self._git = None

    # -- plumbing
    @property
    def git(self):
        if self._git is None:
            import git

            cmd = git.Git(str(self.work_tree))
            cmd.update_environment(
                GIT_DIR=str(self.git_dir),
                GIT_WORK_TREE=str(self.work_tree),
                GIT_LITERAL_PATHSPECS="1",  # agent-chosen file names are never pathspec magic
                GIT_CONFIG_NOSYSTEM="1",
                GIT_TERMINAL_PROMPT="0",
            )
            self._git = cmd
        return self._git

    def _run(self, *args: str, **kwargs: Any) -> str:
        import git

        try:
            return self.git.execute(["git", *args], **kwargs)
        except git.GitCommandError as exc:
            raise HistoryError(f"scaffold history {self.git_dir}: `git {args[0]}` failed: {exc.stderr.strip()[:500]}") from exc

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
        self.git_dir.mkdir(parents=True)
        import git

        try:  # a bare init (no work tree beside it); the work tree is passed on every later command
            git.Git().execute(["git", "init", "--quiet", "--bare", "--initial-branch=main", str(self.git_dir)])
        except git.GitCommandError as exc:
            raise HistoryError(f"cannot create the scaffold history {self.git_dir}: {exc.stderr.strip()}") from exc
        # One write instead of a `git config` process per key.
        sections: dict[str, list[str]] = {"core": ["\tbare = false"]}
        for key, value in _CONFIG.items():
            section, name = key.split(".")
            sections.setdefault(section, []).append(f"\t{name} = {value}")
        with (self.git_dir / "config").open("a") as handle:
            for section, lines in sections.items():
                handle.write(f"[{section}]\n" + "\n".join(lines) + "\n")

    def head(self) -> str:
        return self._run("rev-parse", "HEAD").strip()

    # -- writing
    def commit(self, message: str, paths: list[str] | None = None) -> str:
        """Commit ``paths`` (all of the tree when None) exactly as they are on disk; return the sha."""
        if paths is None:
            self._run("add", "--all", "--force", "--", ".")
        elif paths:
            self._run("add", "--all", "--force", "--", *paths)
        self._run("commit", "--quiet", "--allow-empty", "--no-verify", "-m", message)
        return self.head()

    def restore_head(self) -> list[str]:
        """Reset the work tree to the last commit exactly; return the paths that were different."""
        # Locks left by a process killed mid-commit; whoever restores owns the session now.
        for lock in (self.git_dir / "index.lock", self.git_dir / "HEAD.lock", *self.git_dir.glob("refs/heads/*.lock")):
            lock.unlink(missing_ok=True)
        status = self._run("status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored")
        changed = sorted({item[3:] for item in status.split("\0") if len(item) > 3})
        if changed:
            self._run("reset", "--quiet", "--hard", "HEAD")
            self._run("clean", "-ffdxq")
        return changed

    # -- reading
    def file_at(self, rev: str, path: str) -> bytes | None:
        import git

        try:
            return self.git.execute(["git", "cat-file", "blob", f"{rev}:{path}"], stdout_as_string=False,
                                    strip_newline_in_stdout=False)
        except git.GitCommandError:
            return None

    def mode_at(self, rev: str, path: str) -> int | None:
        line = self._run("ls-tree", rev, "--", path).strip()
        return int(line.split()[0], 8) & 0o777 if line else None

    def files_at(self, rev: str, directory: str = "") -> list[str]:
        args = ["ls-tree", "-r", "--name-only", rev]
        if directory:
            args += ["--", directory.rstrip("/") + "/"]
        return [line for line in self._run(*args).splitlines() if line]

    def revisions(self) -> list[Revision]:
        """Newest first."""
        out = self._run("log", "--format=%x1e%H%x1f%s%x1f%b%x1f", "--name-only", "HEAD")
        result = []
        for record in out.split("\x1e"):
            if not record.strip():
                continue
            rev, subject, body, files = (record.split("\x1f") + ["", "", "", ""])[:4]
            result.append(Revision(rev.strip(), subject.strip(), body.strip(),
                                   tuple(f for f in files.splitlines() if f.strip())))
        return result

    def resolve(self, rev: str) -> str:
        try:
            return self._run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
        except HistoryError:
            from live_swe.errors import UserError

            raise UserError(f"no scaffold revision {rev!r} in {self.git_dir}; "
                            "`live-swe sessions log ID` lists the revisions") from None

    def root_commit(self) -> str:
        return self._run("rev-list", "--max-parents=0", "HEAD").split()[0]

    def diff(self, rev: str | None = None) -> str:
        """One commit's change (against its parent), or everything since the starting scaffold."""
        if rev is None:
            return self._run("diff", "--binary", self.root_commit(), "HEAD", strip_newline_in_stdout=False)
        sha = self.resolve(rev)
        parents = self._run("rev-list", "--parents", "-n", "1", sha).split()[1:]
        if not parents:
            return self._run("show", "--format=", "--binary", sha, strip_newline_in_stdout=False)
        return self._run("diff", "--binary", parents[0], sha, strip_newline_in_stdout=False)

    def export_head(self, target: Path) -> None:
        """Write the last commit's files into ``target`` (bytes and exec bits), nothing else."""
        data = self.git.execute(["git", "archive", "--format=tar", "HEAD"], stdout_as_string=False)
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
    from live_swe.scaffolding.scaffold import TOOL_NAME_RE, ScaffoldError, load_policy

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


def scaffold_changes(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "step": e.get("step"),
            "files": list(e.get("files") or []),
            "accepted": e.get("kind") == "commit",
            "reason": e.get("reason", ""),
            "kind": e.get("kind"),
            "why": e.get("why", ""),
            "rev": e.get("rev", ""),
        }
        for e in events
        if e.get("t") == "scaffold"
    ]


def evolution_summary(session, events: list[dict[str, Any]]) -> dict[str, Any]:
    """What ``sessions show --json`` adds: registered tools and the list of scaffold changes."""
    try:
        tools = registered_tools(session)
    except HistoryError:
        tools = sorted({e["name"] for e in events if e.get("t") == "tool" and e.get("kind") == "registered"})
    return {"tools": tools, "scaffold_changes": scaffold_changes(events)}
