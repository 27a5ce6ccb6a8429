"""git as the kernel runs it: a fixed, minimal environment and configuration.

A repository's config, hooks and attributes are data the agent may have written (its commands can
reach ``.git/`` unless sandboxed, and a session directory may come from elsewhere). So the kernel's
git never runs a program on their behalf:

- the environment is built from nothing: no system or global config (``GIT_CONFIG_NOSYSTEM``,
  ``GIT_CONFIG_GLOBAL=/dev/null``), none of the caller's ``GIT_*`` variables, no prompt;
- fixed settings turn off hooks, fsmonitor, external diff, pagers, editors, askpass, credential
  helpers, ssh commands, signing and automatic gc (:data:`FIXED_CONFIG`);
- each key of the repository's own config that names a program (filter, diff and merge drivers,
  remote helpers, per-URL credential helpers...) is overridden with an empty value, found by one
  ``git config --list`` (includes followed) before the command;
- the repository is named explicitly (``GIT_DIR`` and ``GIT_WORK_TREE``), so ``core.worktree``
  cannot move the work tree and the ownership check needs no global ``safe.directory``;
- talking to a remote goes through :func:`isolated_repository`: a throwaway repository with a config
  of its own, so ``url.*.insteadOf`` or a rewritten remote in the work repository change nothing.

Settings travel as ``GIT_CONFIG_COUNT`` variables: ``git -c`` without showing in the process list.
:func:`shell_prelude` gives commands that run inside an environment (bash) the same rules.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from live_swe.errors import InfrastructureError

Config = Sequence[tuple[str, str]]

FIXED_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.hooksPath", os.devnull),
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("core.askPass", ""),
    ("core.sshCommand", "ssh"),
    ("core.gitProxy", ""),
    ("core.alternateRefsCommand", ""),
    ("core.attributesFile", os.devnull),
    ("credential.helper", ""),
    ("diff.external", ""),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("log.showSignature", "false"),
    ("gpg.program", "false"),
    ("protocol.ext.allow", "never"),
    ("submodule.recurse", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
)

# Keys of a repository's config whose value is a program git would run (config's canonical form:
# section and name in lower case, the middle part as written).
PROGRAM_KEYS = (r"^(filter\..+\.(clean|smudge|process)|diff\..+\.(command|textconv)|merge\..+\.driver"
                r"|remote\..+\.(uploadpack|receivepack|vcs)|credential\..+\.helper|gpg\..+\.program)$")
_PROGRAM_KEY_RE = re.compile(PROGRAM_KEYS)

# What the kernel's git keeps of the caller's environment: finding programs and the network.
_KEPT_VARIABLES = ("PATH", "HOME", "TMPDIR", "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY",
                   "HTTPS_PROXY", "NO_PROXY", "all_proxy", "ALL_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR")


class GitFailed(InfrastructureError):
    """A git command exited non-zero (or could not start); callers turn it into their own error."""

    def __init__(self, args: Sequence[str], returncode: int, stderr: str, stdout: str = ""):
        self.command = list(args)
        self.returncode = returncode
        self.stderr = stderr
        self.stdout = stdout
        super().__init__(f"`git {self.command[0] if self.command else ''}` failed: {self.detail[:500]}")

    @property
    def detail(self) -> str:
        return (self.stderr or self.stdout or f"exit status {self.returncode}").strip()


class NotARepository(GitFailed):
    """No git repository at (or above) the path."""


@dataclass(frozen=True)
class Identity:
    name: str
    email: str

    def config(self) -> list[tuple[str, str]]:
        return [("user.name", self.name), ("user.email", self.email)]


def environment(config: Config = ()) -> dict[str, str]:
    """The environment of one kernel git process: a few variables of ours, then every setting."""
    env = {name: os.environ[name] for name in _KEPT_VARIABLES if name in os.environ}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    settings = [*FIXED_CONFIG, *config]
    env["GIT_CONFIG_COUNT"] = str(len(settings))
    for index, (key, value) in enumerate(settings):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def neutralizing(keys: Sequence[str]) -> list[tuple[str, str]]:
    """Overrides that leave git nothing to run for the program-naming ``keys`` among ``keys``."""
    overrides = []
    for key in keys:
        if _PROGRAM_KEY_RE.match(key):
            overrides.append((key, ""))
            if key.startswith("filter."):
                overrides.append((key.rsplit(".", 1)[0] + ".required", "false"))
    return overrides


def top_of(path: Path) -> Path:
    """The work tree holding ``path``: the nearest folder (``path`` included) with a ``.git`` entry."""
    start = Path(path).absolute()
    for folder in (start, *start.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    raise NotARepository(["rev-parse"], 128, f"{path}: not a git repository (no .git here or above)")


class Git:
    """git for one repository: a work tree (``repo``, its ``.git`` found above it) or a bare ``git_dir``.

    ``scan=False`` is for repositories whose config the kernel writes itself (it rewrites it before use).
    """

    def __init__(self, repo: Path | None = None, *, git_dir: Path | None = None, work_tree: Path | None = None,
                 config: Config = (), env: dict[str, str] | None = None, scan: bool = True):
        if repo is not None:
            self.cwd = Path(repo).absolute()
            work_tree = top_of(self.cwd)
            git_dir = work_tree / ".git"
        else:
            self.cwd = Path(work_tree or git_dir or ".").absolute()
        self.git_dir = Path(git_dir).absolute() if git_dir is not None else None
        self.work_tree = Path(work_tree).absolute() if work_tree is not None else None
        self.config = list(config)
        self.extra_env = dict(env or {})
        self.scan = scan

    def _environment(self, config: Config) -> dict[str, str]:
        settings = list(self.config) + list(config)
        if self.scan and self.git_dir is not None:
            settings = self._neutralizers() + settings
        env = environment(settings)
        env.update(self.extra_env)
        if self.git_dir is not None:
            env["GIT_DIR"] = str(self.git_dir)
        if self.work_tree is not None:
            env["GIT_WORK_TREE"] = str(self.work_tree)
        return env

    def _neutralizers(self) -> list[tuple[str, str]]:
        listed = _run(["config", "--list", "--name-only", "-z"], self._where(), self._bare_environment(), None, None)
        return neutralizing(listed.stdout.decode("utf-8", "replace").split("\0")) if listed.returncode == 0 else []

    def _bare_environment(self) -> dict[str, str]:
        env = environment(self.config)
        env["GIT_DIR"] = str(self.git_dir)
        return env

    def run(self, *args: str, input: str | bytes | None = None, config: Config = (), binary: bool = False,
            check: bool = True, timeout: float | None = None) -> str | bytes:
        """git ``args``; its standard output (text unless ``binary``). Raises :class:`GitFailed`."""
        data = input.encode() if isinstance(input, str) else input
        done = _run(list(args), self._where(), self._environment(config), data, timeout)
        if check and done.returncode != 0:
            raise GitFailed(args, done.returncode, done.stderr.decode("utf-8", "replace"),
                            done.stdout.decode("utf-8", "replace"))
        return done.stdout if binary else done.stdout.decode("utf-8", "replace")

    def succeeds(self, *args: str, config: Config = ()) -> bool:
        return _run(list(args), self._where(), self._environment(config), None, None).returncode == 0

    def _where(self) -> Path:
        """The folder git runs in: the given one, or (a work tree not made yet) the git directory."""
        return self.cwd if self.cwd.is_dir() or self.git_dir is None else self.git_dir

    def common_dir(self) -> Path:
        """Where the objects are (a linked work tree's main repository)."""
        path = Path(str(self.run("rev-parse", "--git-common-dir")).strip())
        return path if path.is_absolute() else (self.cwd / path).resolve()


def _run(args: list[str], cwd: Path, env: dict[str, str], data: bytes | None,
         timeout: float | None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "--no-pager", *args], cwd=cwd, env=env, input=data, capture_output=True,
                              stdin=None if data is not None else subprocess.DEVNULL, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as exc:
        raise GitFailed(args, -1, f"could not run git: {exc}") from None


def init(path: Path, *, bare: bool = False, initial_branch: str = "main") -> None:
    """A new repository at ``path`` (a work tree with ``.git``, or bare)."""
    path.mkdir(parents=True, exist_ok=True)
    done = _run(["init", "--quiet", *(["--bare"] if bare else []), f"--initial-branch={initial_branch}", str(path)],
                path, environment(), None, None)
    if done.returncode != 0:
        raise GitFailed(["init"], done.returncode, done.stderr.decode("utf-8", "replace"))


@contextmanager
def isolated_repository(objects_from: Git) -> Iterator[Git]:
    """A throwaway bare repository that reads ``objects_from``'s objects (git alternates) and has a
    config of its own: for fetching, listing and pushing by URL, whatever the work repository's config says."""
    with tempfile.TemporaryDirectory(prefix="live-swe-git-") as tmp:
        path = Path(tmp)
        init(path, bare=True)
        (path / "objects" / "info" / "alternates").write_text(str(objects_from.common_dir() / "objects") + "\n")
        yield Git(git_dir=path, scan=False)


def user_identity(repo: Path) -> Identity | None:
    """The person's own name and email, as their git setup gives them for ``repo`` (environment, global
    and repository config). Read once, before the agent runs; the kernel then passes it explicitly."""
    name, email = os.environ.get("GIT_AUTHOR_NAME"), os.environ.get("GIT_AUTHOR_EMAIL")
    if not (name and email):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        try:
            env["GIT_DIR"] = str(top_of(repo) / ".git")
        except NotARepository:
            pass
        done = subprocess.run(["git", "config", "--get-regexp", r"^user\.(name|email)$"], cwd=repo, env=env,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL)
        found = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
        name, email = name or found.get("user.name"), email or found.get("user.email")
    return Identity(name, email) if name and email else None


def repository_problem(path: Path) -> str | None:
    """Why ``path`` cannot be worked in (not a directory, not a git repository with a commit), or None."""
    if not Path(path).is_dir():
        return f"{path}: repository directory does not exist"
    try:
        Git(path).run("rev-parse", "--verify", "--quiet", "HEAD^{commit}", timeout=30)
        return None
    except NotARepository:
        said = ""
    except GitFailed as exc:
        said = f" (git said: {exc.stderr.strip()[:200]})" if exc.stderr.strip() else ""
    return (f"{path} is not a git repository with at least one commit{said}. "
            "Run `git init && git add -A && git commit -m init` there first.")


# Never part of a patch or a starting point: live-swe's own folder, and interpreter caches that
# running the tests leaves behind (binary, different on every run, never part of a fix).
PATCH_EXCLUDES = (".live-swe", "**/__pycache__/**", "**/*.pyc")


def repository_root(path: Path) -> Path:
    """The top of the work tree ``path`` is in (a folder inside a repository means the repository)."""
    try:
        return Path(str(Git(path).run("rev-parse", "--show-toplevel", timeout=30)).strip()).resolve()
    except (NotARepository, GitFailed):
        return Path(path).resolve()


# -- the same rules for git run by a shell inside an environment (local sandbox or container) ------------

SHELL_GIT = "_lsw_git"


def shell_prelude() -> str:
    """bash defining ``_lsw_git``: git with none of the shell's ``GIT_*`` variables, no system or global
    config, the fixed settings, and the repository's program-naming keys emptied."""
    fixed = " ".join(f"-c {shlex.quote(f'{key}={value}')}" for key, value in FIXED_CONFIG)
    return (
        'for _v in $(compgen -e); do [[ $_v == GIT_* ]] && unset "$_v"; done; '
        "export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0; "
        f"_lsw_c=({fixed}); "
        'while IFS= read -r _k; do [[ -n $_k ]] || continue; _lsw_c+=(-c "$_k="); '
        '[[ $_k == filter.* ]] && _lsw_c+=(-c "${_k%.*}.required=false"); '
        f'done <<< "$(command git "${{_lsw_c[@]}}" config --name-only --get-regexp {shlex.quote(PROGRAM_KEYS)} 2>/dev/null)"; '
        f'{SHELL_GIT}() {{ command git --no-pager "${{_lsw_c[@]}}" "$@"; }}; '
    )
