"""The git side of the issue flow: base, branch, commit the submitted patch, push.

git runs under the kernel's rules (:mod:`live_swe.infra.git`): hooks the agent planted in
``.git/hooks`` (``post-commit``, ``pre-push``...), fsmonitor, filters and credential helpers never
run. The push goes to the ``origin`` URL recorded before the agent ran, from a throwaway repository
with a config of its own, so a rewritten ``origin`` or a ``url.*.insteadOf`` the agent wrote
receives nothing (and never the token).

Authentication for pushes and fetches is an ``http.<remote>.extraheader`` given to that one git
process through ``GIT_CONFIG_COUNT`` variables — the same as ``git -c``, but not visible in the
process list — and only for https remotes. Nothing is written to ``.git/config``; file and ssh
remotes get no header at all.
"""

from __future__ import annotations

import base64
import os
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from live_swe.errors import UserError
from live_swe.infra.git import Git, GitFailed, isolated_repository
from live_swe.infra.git import Identity as _Identity
from live_swe.infra.redact import redact

BOT_NAME = "github-actions[bot]"
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"


class GitError(UserError):
    """A git step of the flow failed; the message is redacted and says what to check."""


@dataclass(frozen=True)
class Identity(_Identity):
    @classmethod
    def for_actor(cls, actor: str | None) -> Identity:
        if actor:
            return cls(actor, f"{actor}@users.noreply.github.com")
        return cls(BOT_NAME, BOT_EMAIL)


def auth_config(remote_url: str, token: str | None) -> list[tuple[str, str]]:
    """Settings that give one git process an Authorization header for an https remote."""
    parsed = urllib.parse.urlsplit(remote_url)
    if not token or parsed.scheme != "https" or not parsed.hostname:
        return []
    scope = f"https://{parsed.netloc.rpartition('@')[2]}/"
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    key = f"http.{scope}.extraheader"
    # An empty value first clears a header a checkout step may have persisted (two Authorization
    # headers make GitHub refuse the push).
    return [(key, ""), (key, f"AUTHORIZATION: basic {basic}")]


def secret_forms(token: str | None) -> list[str]:
    """The token and the encoded form that goes into the header, both to be masked."""
    if not token:
        return []
    return [token, base64.b64encode(f"x-access-token:{token}".encode()).decode()]


class Checkout:
    """The checked-out repository the agent works in."""

    def __init__(self, path: Path, token: str | None = None):
        path = Path(path).absolute()
        if not os.path.lexists(path / ".git"):
            if (path / "HEAD").is_file() and (path / "objects").is_dir():
                raise GitError(f"{path} is a bare repository; give a checkout with a work tree")
            raise GitError(f"{path} is not a git repository; run the action after actions/checkout, "
                           "or pass --workdir PATH")
        self.path = path
        self.git = Git(path)
        self.token = token
        # Where the branch is pushed: origin as it is now, before the agent runs.
        self.push_url = self._origin_url()

    # -- helpers
    def _git(self, *args: str, remote: bool = False, config: list[tuple[str, str]] | None = None,
             repo: Git | None = None) -> str:
        settings = list(config or [])
        if remote:
            settings += auth_config(self.remote_url(), self.token)
        try:
            return str((repo or self.git).run(*args, config=settings))
        except GitFailed as exc:
            detail = redact(exc.detail, secret_forms(self.token))
            raise GitError(f"git {args[0]} failed in {self.path}: {detail[:1000]}") from None

    def _origin_url(self) -> str | None:
        try:
            return str(self.git.run("config", "--get", "remote.origin.url")).strip() or None
        except GitFailed:
            return None

    def remote_url(self) -> str:
        """The ``origin`` URL recorded when the checkout was opened (before the agent ran)."""
        if not self.push_url:
            raise GitError(f"{self.path} has no `origin` remote to push to")
        return self.push_url

    def _head(self) -> str:
        return self._git("rev-parse", "--verify", "HEAD^{commit}").strip()

    # -- steps
    def ensure_safe(self) -> None:
        """A clean checkout whose config holds no credential the agent could read."""
        if self._git("status", "--porcelain", "--untracked-files=all").strip():
            raise GitError(f"{self.path} has uncommitted changes; live-swe needs a clean checkout so the pull "
                           "request holds only the agent's change")
        # Through git itself, so included files (where newer checkouts keep credentials) count too.
        try:
            found = str(self.git.run("config", "--show-origin", "--get-regexp", r"^http\..*extraheader$"))
        except GitFailed:
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
            try:
                ref = str(self.git.run("symbolic-ref", "-q", "HEAD")).strip()
            except GitFailed:
                raise GitError(f"{self.path} is on a detached HEAD; pass --base BRANCH") from None
            name = ref.removeprefix("refs/heads/")
            if name.startswith("live-swe/"):
                raise GitError(f"{self.path} has live-swe's own branch {name} checked out; pass --base BRANCH "
                               "(or check out the base branch) so the change is not stacked on an earlier run")
            return name, self._head()
        if base.startswith("-"):
            raise GitError(f"--base {base!r} is not a branch name")
        try:
            self._git("fetch", "--quiet", "--no-tags", self.remote_url(),
                      f"+refs/heads/{base}:refs/remotes/origin/{base}", remote=True)
            return base, self._git("rev-parse", "--verify", f"refs/remotes/origin/{base}^{{commit}}").strip()
        except GitError as fetch_error:
            try:
                return base, str(self.git.run("rev-parse", "--verify", f"refs/heads/{base}^{{commit}}")).strip()
            except GitFailed:
                raise GitError(f"base branch {base!r} is neither on origin nor local: {fetch_error}") from None

    def position(self) -> str:
        """What is checked out now: a branch's name, or the commit of a detached HEAD."""
        try:
            return str(self.git.run("symbolic-ref", "-q", "--short", "HEAD")).strip()
        except GitFailed:
            return self._head()

    def return_to(self, position: str) -> bool:
        """Check ``position`` out again when the work tree is clean. With changes left (an agent that
        stopped without submitting), stay, so nothing is lost: False."""
        if self._git("status", "--porcelain", "--untracked-files=all").strip():
            return False
        self._git("checkout", "--quiet", position, "--")
        return True

    def start_branch(self, branch: str, base_sha: str) -> None:
        self._git("checkout", "--quiet", "-B", branch, base_sha)

    def commit_patch(self, patch: str, base_sha: str, message: str, author: Identity, committer: Identity) -> str:
        """Commit exactly the submitted patch on top of the base, whatever the agent did to the index.

        Hooks are off (``core.hooksPath=/dev/null``): a ``post-commit`` the agent planted never runs."""
        self._git("reset", "--quiet", base_sha)  # the branch back to the base, work tree untouched
        try:
            self.git.run("apply", "--cached", "--binary", "--whitespace=nowarn", "-", input=patch)
            self.git.run("commit", "--quiet", "--no-verify", "-F", "-", input=message, config=[
                ("author.name", author.name), ("author.email", author.email),
                ("committer.name", committer.name), ("committer.email", committer.email),
            ])
        except GitFailed as exc:
            detail = redact(exc.detail, secret_forms(self.token))
            raise GitError(f"git {exc.command[0]} failed in {self.path}: {detail[:1000]}") from None
        return self._head()

    def diffstat(self, base_sha: str) -> str:
        return self._git("diff", "--no-ext-diff", "--no-textconv", "--stat", base_sha, "HEAD")

    def remote_sha(self, branch: str) -> str:
        with isolated_repository(self.git) as isolated:
            out = self._git("ls-remote", self.remote_url(), f"refs/heads/{branch}", remote=True, repo=isolated)
        return out.split()[0] if out.strip() else ""

    def push(self, branch: str, expected: str | None = None) -> None:
        """Push HEAD to the recorded remote's ``branch``, replacing what is there only if it is still
        ``expected`` (default: the tip seen just before). From a throwaway repository: nothing of the
        checkout's config takes part."""
        head = self._head()
        expected = self.remote_sha(branch) if expected is None else expected
        with isolated_repository(self.git) as isolated:
            self._git("push", "--quiet", "--no-verify", f"--force-with-lease=refs/heads/{branch}:{expected}",
                      self.remote_url(), f"{head}:refs/heads/{branch}", remote=True, repo=isolated)
