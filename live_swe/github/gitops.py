"""The git side of the issue flow (GitPython): base, branch, commit the submitted patch, push.

Authentication for pushes and fetches is an ``http.<remote>.extraheader`` given to that one git
process through ``GIT_CONFIG_COUNT`` variables — the same as ``git -c``, but not visible in the
process list — and only for https remotes. Nothing is written to ``.git/config``; file and ssh
remotes get no header at all.
"""

from __future__ import annotations

import base64
import os
import tempfile
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from live_swe.errors import UserError
from live_swe.github.redact import redact

BOT_NAME = "github-actions[bot]"
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"


class GitError(UserError):
    """A git step of the flow failed; the message is redacted and says what to check."""


@dataclass(frozen=True)
class Identity:
    name: str
    email: str

    @classmethod
    def for_actor(cls, actor: str | None) -> Identity:
        if actor:
            return cls(actor, f"{actor}@users.noreply.github.com")
        return cls(BOT_NAME, BOT_EMAIL)


def auth_environment(remote_url: str, token: str | None) -> dict[str, str]:
    """Variables that give one git process an Authorization header for an https remote."""
    env = {"GIT_TERMINAL_PROMPT": "0"}
    parsed = urllib.parse.urlsplit(remote_url)
    if not token or parsed.scheme != "https" or not parsed.hostname:
        return env
    scope = f"https://{parsed.netloc.rpartition('@')[2]}/"
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    key = f"http.{scope}.extraheader"
    env.update({
        "GIT_CONFIG_COUNT": "2",
        # An empty value first clears a header a checkout step may have persisted (two
        # Authorization headers make GitHub refuse the push).
        "GIT_CONFIG_KEY_0": key, "GIT_CONFIG_VALUE_0": "",
        "GIT_CONFIG_KEY_1": key, "GIT_CONFIG_VALUE_1": f"AUTHORIZATION: basic {basic}",
    })
    return env


def secret_forms(token: str | None) -> list[str]:
    """The token and the encoded form that goes into the header, both to be masked."""
    if not token:
        return []
    return [token, base64.b64encode(f"x-access-token:{token}".encode()).decode()]


class Checkout:
    """The checked-out repository the agent works in."""

    def __init__(self, path: Path, token: str | None = None):
        import git

        try:
            self.repo = git.Repo(path)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise GitError(f"{path} is not a git repository; run the action after actions/checkout, "
                           "or pass --workdir PATH") from None
        if self.repo.bare:
            raise GitError(f"{path} is a bare repository; give a checkout with a work tree")
        self.path = Path(self.repo.working_tree_dir)
        self.token = token

    # -- helpers
    def _git(self, *args: str, remote: bool = False, env: dict[str, str] | None = None) -> str:
        import git

        full_env = dict(env or {})
        if remote:
            full_env.update(auth_environment(self.remote_url(), self.token))
        try:
            return self.repo.git.execute(["git", *args], env=full_env or None)  # merged over os.environ
        except git.GitCommandError as exc:
            detail = redact(f"{(exc.stderr or exc.stdout or '').strip()}", secret_forms(self.token))
            raise GitError(f"git {args[0]} failed in {self.path}: {detail[:1000]}") from None

    def remote_url(self) -> str:
        try:
            return self.repo.remotes.origin.url
        except (AttributeError, IndexError):
            raise GitError(f"{self.path} has no `origin` remote to push to") from None

    # -- steps
    def ensure_safe(self) -> None:
        """A clean checkout whose config holds no credential the agent could read."""
        if self.repo.is_dirty(untracked_files=True):
            raise GitError(f"{self.path} has uncommitted changes; live-swe needs a clean checkout so the pull "
                           "request holds only the agent's change")
        # Through git itself, so included files (where newer checkouts keep credentials) count too.
        import git

        try:
            found = self.repo.git.config("--show-origin", "--get-regexp", r"^http\..*extraheader$")
        except git.GitCommandError:
            found = ""  # exit status 1: no such setting
        if found.strip():
            where = found.split()[0].removeprefix("file:")
            raise GitError(f"git config ({where}) holds an auth header (http.*.extraheader) that the agent could "
                           "read; check out with `persist-credentials: false`")
        parsed = urllib.parse.urlsplit(self.remote_url())
        if parsed.password:
            raise GitError("the `origin` URL embeds a credential that the agent could read; use a plain URL "
                           "and GITHUB_TOKEN")

    def resolve_base(self, base: str | None) -> tuple[str, str]:
        """The base branch's name and commit. Without --base, the branch that is checked out."""
        if not base:
            if self.repo.head.is_detached:
                raise GitError(f"{self.path} is on a detached HEAD; pass --base BRANCH")
            name = self.repo.active_branch.name
            if name.startswith("live-swe/"):
                raise GitError(f"{self.path} has live-swe's own branch {name} checked out; pass --base BRANCH "
                               "(or check out the base branch) so the change is not stacked on an earlier run")
            return name, self.repo.head.commit.hexsha
        if base.startswith("-"):
            raise GitError(f"--base {base!r} is not a branch name")
        try:
            self._git("fetch", "--quiet", "--no-tags", "origin", f"+refs/heads/{base}:refs/remotes/origin/{base}",
                      remote=True)
            return base, self.repo.commit(f"refs/remotes/origin/{base}").hexsha
        except GitError as fetch_error:
            if base in self.repo.heads:
                return base, self.repo.heads[base].commit.hexsha
            raise GitError(f"base branch {base!r} is neither on origin nor local: {fetch_error}") from None

    def start_branch(self, branch: str, base_sha: str) -> None:
        self._git("checkout", "--quiet", "-B", branch, base_sha)

    def commit_patch(self, patch: str, base_sha: str, message: str, author: Identity, committer: Identity) -> str:
        """Commit exactly the submitted patch on top of the base, whatever the agent did to the index."""
        self._git("reset", "--quiet", base_sha)  # the branch back to the base, work tree untouched
        with tempfile.NamedTemporaryFile("w", suffix=".diff", delete=False) as handle:
            handle.write(patch)
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as msg:
            msg.write(message)
        try:
            self._git("apply", "--cached", "--binary", "--whitespace=nowarn", handle.name)
            self._git("commit", "--quiet", "--no-verify", "-F", msg.name, env={
                "GIT_AUTHOR_NAME": author.name, "GIT_AUTHOR_EMAIL": author.email,
                "GIT_COMMITTER_NAME": committer.name, "GIT_COMMITTER_EMAIL": committer.email,
            })
        finally:
            os.unlink(handle.name)
            os.unlink(msg.name)
        return self.repo.head.commit.hexsha

    def diffstat(self, base_sha: str) -> str:
        return self._git("diff", "--stat", base_sha, "HEAD")

    def remote_sha(self, branch: str) -> str:
        out = self._git("ls-remote", "origin", f"refs/heads/{branch}", remote=True)
        return out.split()[0] if out.strip() else ""

    def push(self, branch: str) -> None:
        """Push HEAD to ``origin/branch``, replacing a previous run's commit only if it is still the tip."""
        expected = self.remote_sha(branch)
        self._git("push", "--quiet", f"--force-with-lease=refs/heads/{branch}:{expected}", "origin",
                  f"HEAD:refs/heads/{branch}", remote=True)
