"""The bubblewrap sandbox that confines everything the agent runs on ``--env local``.

What a sandboxed process sees:

- the machine's root file system, read-only; ``/dev`` and ``/proc`` of its own (its own PID
  namespace: no process of the kernel or of the machine), its own IPC and host name, a new session;
- ``/tmp``, ``/var/tmp`` and your home directory replaced by empty private folders it may write
  (``HOME`` points there), except the folders your ``PATH`` points into (toolchains such as
  ``~/.pyenv`` or ``~/.cargo``), shown read-only; a repository in ``/tmp`` keeps its parent folder
  as it is (read-only, the other entries in it hidden), so ``ls -la`` shows the same ``..``;
- ``/run`` (the Docker engine's socket, the system bus) and ``$LIVE_SWE_HOME`` (sessions, their
  history and logs, models, the tool library, the config) replaced by empty read-only folders,
  except the session's own scaffold tree, writable;
- the repository writable, except its git machinery (``config``, ``hooks``, ``info``, a
  worktree's ``.git`` file and ``commondir``) and live-swe's own installation, read-only;
- an environment built from nothing (PATH, HOME, locale, terminal, the scaffold variables): no
  variable of the kernel's, and no network unless the user allows it.

``--die-with-parent`` ties it to the kernel: if live-swe dies (``kill -9`` included), every process
in the sandbox dies with it.
"""

from __future__ import annotations

import functools
import glob
import importlib.util
import os
import pwd
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import live_swe
from live_swe.config import home
from live_swe.environments.base import EnvironmentError_

BWRAP = "bwrap"
SANDBOX_MODES = ("bubblewrap", "none")
_PROBE_TIMEOUT_S = 15.0
# Credentials that may sit inside a toolchain folder re-exposed from the home directory.
_HOME_SECRETS = (".cargo/credentials", ".cargo/credentials.toml", ".local/share/keyrings", ".local/share/live-swe")


class SandboxUnavailable(EnvironmentError_):
    """bubblewrap cannot run here; the message names the ways on."""


def refusal(reason: str) -> str:
    return (f"--env local runs every command in a bubblewrap sandbox, which cannot run here ({reason}). "
            "Install bubblewrap (Debian/Ubuntu: `sudo apt install bubblewrap`; it needs unprivileged user "
            "namespaces), use `--env docker`, or pass `--sandbox none` to run the agent's commands unconfined.")


@functools.cache
def unavailable_reason() -> str | None:
    """Why bubblewrap cannot confine commands on this machine, or None. Probed once per process."""
    if not sys.platform.startswith("linux"):
        return f"{sys.platform} has no Linux namespaces"
    binary = shutil.which(BWRAP)
    if binary is None:
        return "no `bwrap` program on PATH"
    argv = [binary, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--unshare-net", "--die-with-parent", "--new-session", "--", "true"]
    try:
        probe = subprocess.run(argv, env=_base_environment(), stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=_PROBE_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"`bwrap` could not be started: {exc}"
    if probe.returncode != 0:
        said = probe.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"`bwrap` failed: {said[-1] if said else f'exit status {probe.returncode}'}"
    return None


def require() -> str:
    """The bwrap program; raises :class:`SandboxUnavailable` (one clear line) where it cannot run."""
    reason = unavailable_reason()
    if reason:
        raise SandboxUnavailable(refusal(reason))
    return shutil.which(BWRAP) or BWRAP


# -- what the sandbox hides and shows ------------------------------------------------------------

def _real_home() -> Path | None:
    candidates = [os.environ.get("HOME")]
    try:
        candidates.append(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        pass
    for candidate in candidates:
        if candidate and os.path.isabs(candidate) and os.path.realpath(candidate) != "/" and os.path.isdir(candidate):
            return Path(os.path.realpath(candidate))
    return None


def _live_swe_home() -> Path:
    return Path(os.path.realpath(home()))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _existing(paths: Iterable[str | Path]) -> list[Path]:
    found = []
    for path in paths:
        real = Path(os.path.realpath(path))
        if real.exists() and real not in found:
            found.append(real)
    return found


def _homes() -> list[Path]:
    homes = [_real_home()] + ([Path("/root")] if os.getuid() == 0 else [])
    return [h for h in _existing(h for h in homes if h is not None) if h.is_dir() and str(h) != "/"]


def _scratch_paths() -> list[Path]:
    """Replaced by empty private folders the sandbox may write: scratch space and the home."""
    return [p for p in _existing(["/tmp", "/var/tmp", *_homes()]) if p.is_dir() and str(p) != "/"]


def _sealed_paths() -> list[Path]:
    """Replaced by empty read-only folders: sockets (the Docker engine's, the bus) and live-swe's data."""
    paths: list[str | Path] = ["/run", "/var/run", _live_swe_home()]
    docker_host = os.environ.get("DOCKER_HOST", "")
    if docker_host.startswith("unix://"):
        paths.append(os.path.dirname(docker_host[len("unix://"):]) or "/")
    return [p for p in _existing(paths) if p.is_dir() and str(p) != "/"]


def _toolchains() -> list[Path]:
    """Folders of the home that the kernel's PATH (and its own interpreter) live in: shown
    read-only, so the agent finds the same python, node or cargo the user has."""
    homes = _homes()
    shown: set[Path] = set()
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        real = Path(os.path.realpath(entry)) if entry else None
        home = next((h for h in homes if real is not None and h in real.parents), None)
        if home is not None and real.is_dir():
            shown.add(home / real.relative_to(home).parts[0])  # e.g. ~/.pyenv for ~/.pyenv/shims
    base = Path(os.path.realpath(sys.base_prefix))
    if any(h in base.parents for h in homes):
        shown.add(base)
    lsh = _live_swe_home()
    shown = {p for p in shown if p.is_dir() and not _inside(p, lsh)}
    return sorted(p for p in shown if not any(q != p and q in p.parents for q in shown))


def _git_machinery(repo: Path) -> tuple[list[Path], list[Path]]:
    """(git folders outside the repository that git must write to, paths to keep read-only)."""
    git_dir, protected = _git_dir(repo)
    if git_dir is None:
        return [], protected
    common = git_dir
    try:
        pointer = (git_dir / "commondir").read_text().strip()
        if pointer:
            common = Path(os.path.realpath(git_dir / pointer))
    except OSError:
        pass
    writable: list[Path] = []
    for folder in {git_dir, common}:
        if folder.is_dir():
            writable.append(folder)
            protected += _git_settings(folder)
    return writable, protected


def _git_dir(repo: Path) -> tuple[Path | None, list[Path]]:
    """The repository's git folder (a ``.git`` file's ``gitdir:`` followed), and that file to keep read-only."""
    dot = next((folder / ".git" for folder in (repo, *repo.parents) if (folder / ".git").exists()), None)
    if dot is None:
        return None, []
    if not dot.is_file():
        return Path(os.path.realpath(dot)), []
    try:
        text = dot.read_text(errors="replace").strip()
    except OSError:
        return None, [dot]
    pointer = text.partition("gitdir:")[2].strip() if text.startswith("gitdir:") else ""
    return (Path(os.path.realpath(dot.parent / pointer)) if pointer else None), [dot]


def _git_settings(folder: Path) -> list[Path]:
    """What in a git folder would run code or redirect git if the agent rewrote it (config, hooks, ...)."""
    for name in ("hooks", "info"):
        try:
            (folder / name).mkdir(exist_ok=True)  # a missing one could be created by the agent
        except OSError:
            pass
    names = ("config", "config.worktree", "hooks", "info", "commondir", "gitdir")
    protected = [folder / name for name in names if (folder / name).exists()]
    for module in glob.glob(str(folder / "modules" / "*")):
        protected += [Path(module) / n for n in ("config", "hooks", "info") if (Path(module) / n).exists()]
    return protected


def _installation() -> list[Path]:
    """live-swe's own code and interpreter: never writable, even inside the repository."""
    # The Gödel engine sits above the kernel: find its folder without importing it.
    godel = importlib.util.find_spec("godel")
    engine = [Path(folder) for folder in godel.submodule_search_locations or []] if godel else []
    paths = [Path(live_swe.__file__).parent, *engine, sys.prefix, sys.base_prefix, sys.exec_prefix]
    return _existing(paths)


_SHARED_SCRATCH = ("/tmp", "/var/tmp")
_MAX_SIBLINGS = 200


def _parent_as_is(repo: Path) -> tuple[Path, list[Path]] | None:
    """A repository in the shared scratch space (``/tmp/x/repo``) keeps its parent folder as it is,
    read-only, with every other entry in it hidden: ``ls -la`` shows the same ``..`` inside as
    outside, so a run at temperature 0 repeats (the demo). Elsewhere the parent is a fresh folder."""
    parent = repo.parent
    if not any(Path(root) in parent.parents for root in _existing(_SHARED_SCRATCH)):
        return None
    try:
        siblings = [entry for entry in parent.iterdir() if entry.name != repo.name]
    except OSError:
        return None
    return (parent, siblings) if len(siblings) <= _MAX_SIBLINGS else None


def mount_arguments(writable: list[Path], *, extra_protected: Iterable[Path] = (),
                    parent_as_is: tuple[Path, list[Path]] | None = None) -> list[str]:
    """bwrap's file-system arguments, in order: the read-only root, the hidden folders, the
    toolchains shown read-only, the repository's parent as it is (``_parent_as_is``), the
    ``writable`` folders, and protected paths inside them read-only. A hidden folder inside one
    shown again (``$LIVE_SWE_HOME`` inside the repository) is hidden again."""
    sealed = _sealed_paths()
    hidden = sorted({*_scratch_paths(), *sealed}, key=lambda p: len(p.parts))
    writable = sorted(_existing(writable), key=lambda p: len(p.parts))
    # outermost first; one inside another gets its own (e.g. sealed in /tmp)
    args = ["--ro-bind", "/", "/", *_tmpfs(hidden)]
    mounted: list[Path] = list(hidden)

    def hide_again_inside(folder: Path) -> None:
        for path in hidden:
            if path != folder and folder in path.parents:
                args.extend(["--tmpfs", str(path)])
                mounted.append(path)

    for path in _toolchains():
        if not any(_inside(path, w) for w in writable):
            args += ["--ro-bind", str(path), str(path), *_mask_secrets(path)]
            hide_again_inside(path)
    if parent_as_is is not None:
        parent, siblings = parent_as_is
        args += ["--ro-bind", str(parent), str(parent)]
        args += _hide_siblings(siblings, hidden, mounted, sealed)
        hide_again_inside(parent)
    for folder in writable:
        args += ["--bind", str(folder), str(folder)]
        hide_again_inside(folder)
    for path in _existing([*extra_protected, *_installation()]):
        if any(_inside(path, w) for w in writable):
            args += ["--ro-bind", str(path), str(path)]
    for path in dict.fromkeys(mounted):
        if path in sealed:  # last: the mount points made inside them (the scaffold) exist by now
            args += ["--remount-ro", str(path)]
    return args


def _tmpfs(paths: list[Path]) -> list[str]:
    return [arg for path in paths for arg in ("--tmpfs", str(path))]


def _hide_siblings(siblings: list[Path], hidden: list[Path], mounted: list[Path], sealed: list[Path]) -> list[str]:
    """The other entries of a parent shown as it is: folders become empty and sealed, files empty."""
    args: list[str] = []
    for entry in siblings:
        if entry.is_symlink() or entry in hidden:
            continue  # a link leads where the sandbox shows or hides; a hidden folder is hidden below
        if entry.is_dir():
            args += ["--tmpfs", str(entry)]
            mounted.append(entry)
            sealed.append(entry)
        elif entry.exists():
            args += ["--ro-bind", "/dev/null", str(entry)]
    return args


def _mask_secrets(toolchain: Path) -> list[str]:
    home = toolchain.parent
    args = []
    for relative in _HOME_SECRETS:
        path = home / relative
        if _inside(path, toolchain) and path.exists() and not path.is_symlink():
            args += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
    return args


def private_home() -> str:
    home = _real_home()
    return str(home) if home is not None else "/tmp"


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a sandboxed process, built from nothing."""
    env = _base_environment()
    env.update(extra or {})
    return env


def _base_environment() -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH") or "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": private_home(),
        "TMPDIR": "/tmp",
        "LANG": os.environ.get("LANG") or "C.UTF-8",
        "TERM": os.environ.get("TERM") or "dumb",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
    }
    for name in ("LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    return env


def namespace_arguments(*, network: bool, as_pid_1: bool) -> list[str]:
    args = ["--proc", "/proc", "--dev", "/dev", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--hostname", "live-swe"]
    if not network:
        args.append("--unshare-net")
    if as_pid_1:
        args.append("--as-pid-1")
    if os.getuid() == 0:
        args += ["--cap-drop", "ALL"]
    return args


def command_sandbox(repo: Path, scaffold: Path | None, *, network: bool) -> list[str]:
    """bwrap's arguments (without the program) for the session's long-lived command sandbox."""
    repo = Path(os.path.realpath(repo))
    git_writable, git_protected = _git_machinery(repo)
    writable = [repo, *git_writable] + ([Path(os.path.realpath(scaffold))] if scaffold else [])
    # the project's live-swe settings (model, budgets) are the person's to change, not the agent's
    protected = [*git_protected, repo / ".live-swe"]
    return [*mount_arguments(writable, extra_protected=protected, parent_as_is=_parent_as_is(repo)),
            *namespace_arguments(network=network, as_pid_1=True), "--chdir", str(repo)]


def worker_sandbox(interpreter: str) -> list[str]:
    """bwrap's arguments for a hook worker: nothing writable but its private /tmp, no network; the
    ``interpreter``'s folder and its standard library shown read-only wherever they are."""
    hidden = [*_scratch_paths(), *_sealed_paths()]
    args = mount_arguments([])
    for path in _existing([Path(interpreter).parent, sys.base_prefix]):
        if any(h in path.parents or h == path for h in hidden):  # e.g. a virtual environment in /tmp
            args += ["--ro-bind", str(path), str(path)]
    return [*args, *namespace_arguments(network=False, as_pid_1=False), "--chdir", "/tmp"]
