"""Shared fixtures: an isolated LIVE_SWE_HOME, real git repositories, a real Docker engine."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from fake_github import FakeGitHub

from live_swe.github.summary import MARKER

# A suite started in the background of a non-interactive shell (`nohup ... &`) inherits SIGINT
# ignored, and so would every live-swe process a test starts: the Ctrl-C tests would then test
# nothing but that. A handled SIGINT here is reset to the default in each child at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO_ROOT = Path(__file__).resolve().parent.parent
BASE_IMAGE = os.environ.get("LIVE_SWE_TEST_BASE_IMAGE", "live-swe-base")
collect_ignore = ["fixtures"]  # data: repositories copied into images, with tests of their own


@pytest.fixture(autouse=True)
def live_swe_home(tmp_path_factory, monkeypatch) -> Path:
    """Every test gets its own LIVE_SWE_HOME, and no provider keys leak in from the machine."""
    home = tmp_path_factory.mktemp("live-swe-home")
    monkeypatch.setenv("LIVE_SWE_HOME", str(home))
    monkeypatch.delenv("LIVE_SWE_MODEL", raising=False)
    for key in list(os.environ):
        if key.endswith("_API_KEY"):
            monkeypatch.delenv(key, raising=False)
    return home


def run_git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def make_git_repo(path: Path, files: dict[str, str]) -> Path:
    """A real git repository with ``files`` committed on ``main``."""
    path.mkdir(parents=True, exist_ok=True)
    run_git(path, "init", "-q", "-b", "main")
    run_git(path, "config", "user.email", "dev@example.com")
    run_git(path, "config", "user.name", "Dev")
    for name, text in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    run_git(path, "add", "-A")
    run_git(path, "commit", "-q", "-m", "initial")
    return path


@pytest.fixture
def git_repo(tmp_path) -> Path:
    return make_git_repo(
        tmp_path / "repo",
        {
            "calc.py": "def add(a, b):\n    return a - b\n",
            "README.md": "# calc\n",
        },
    )


@pytest.fixture
def fake(monkeypatch):
    """A fake GitHub on loopback with issue #7, and the variables the action sets pointing at it."""


    server = FakeGitHub().start()
    server.add_issue(7, "add() subtracts instead of adding",
                     "calc.add(2, 3) returns -1.\n$(echo pwned) `rm -rf /` ${{ github.token }}",
                     comments=[("alice", "confirmed on main"), ("github-actions[bot]", f"{MARKER}\nold status")])
    server.permissions.update({"maint": "maintain", "owner": "admin", "reader": "read", "triager": "triage"})
    monkeypatch.setenv("GITHUB_TOKEN", server.token)
    monkeypatch.setenv("GITHUB_API_URL", server.url)
    monkeypatch.delenv("GITHUB_ACTOR", raising=False)
    yield server
    server.stop()


@pytest.fixture
def world(tmp_path):
    """A bare ``origin`` and a clean checkout of it on main."""
    seed = make_git_repo(tmp_path / "seed", {"calc.py": "def add(a, b):\n    return a - b\n", "README.md": "# calc\n"})
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(origin)], check=True)
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", str(origin), str(checkout)], check=True)
    return origin, checkout


def write_script(path: Path, replies: list) -> Path:
    """A scripted-model file (YAML) of raw replies."""
    import yaml

    path.write_text(yaml.safe_dump(replies, sort_keys=False))
    return path


def bash_reply(command: str, thought: str = "Next step.") -> str:
    return f"THOUGHT: {thought}\n\n```bash\n{command}\n```"


SUBMIT = bash_reply("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "Done.")

# The embedded models, pulled once into a cache that outlives test runs (CI downloads them once).
MODELS_CACHE = Path(os.environ.get("LIVE_SWE_MODELS_CACHE", "~/.cache/live-swe/models")).expanduser()


@pytest.fixture
def models(monkeypatch):
    """``models(name)`` -> ``local/NAME``, pulled into the persistent cache first if missing."""
    pytest.importorskip("llama_cpp", reason="needs the local runtime: pip install 'live-swe[local]'")
    from live_swe.models import catalog

    monkeypatch.setenv(catalog.MODELS_DIR_ENV, str(MODELS_CACHE))

    def need(name: str) -> str:
        if not catalog.is_installed(name):
            catalog.pull(name, print)
        return f"local/{name}"

    return need


def _engine_up() -> bool:
    try:
        import docker

        docker.from_env(timeout=5).ping()
        return True
    except Exception:  # noqa: BLE001 - any failure means no engine here
        return False


@pytest.fixture(scope="session")
def docker_client():
    """A real Docker engine. Skips only where none can run; in CI a missing engine is a failure."""
    if not _engine_up():
        if os.environ.get("CI"):
            pytest.fail("CI must provide a Docker engine (see .ci/run)")
        pytest.skip("no Docker engine is running on this machine")
    import docker

    return docker.from_env()


@pytest.fixture(scope="session")
def base_image(docker_client) -> str:
    """The local base image (debootstrap + docker import), built once if missing."""
    from docker.errors import ImageNotFound

    try:
        docker_client.images.get(BASE_IMAGE)
    except ImageNotFound:
        subprocess.run(["bash", str(REPO_ROOT / "evals/base/build.sh"), BASE_IMAGE], check=True)
    return BASE_IMAGE


def labelled_containers(docker_client, label: str) -> list[dict]:
    """Containers (running or not) carrying ``label`` (``key=value``), as the engine lists them.

    One list call, no per-container inspect: a container removed meanwhile cannot make it fail."""
    return docker_client.api.containers(all=True, filters={"label": label})


def live_processes(token: str) -> list[int]:
    """PIDs (as this machine sees them) of live processes whose command line contains ``token``.

    Commands in the sandbox see their own PID namespace, so tests find them by what they run."""
    found = []
    needle = token.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
            with open(f"/proc/{entry}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in cmdline and state not in ("Z", "X"):
            found.append(int(entry))
    return found


def wait_until_no_process(token: str, within: float = 5.0) -> list[int]:
    """Wait until no live process runs ``token``; return those still running after ``within``."""
    import time

    deadline = time.monotonic() + within
    while True:
        left = live_processes(token)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


SWEBENCH_LAYOUT = Path(__file__).resolve().parent / "fixtures" / "swebench_layout"


@pytest.fixture(scope="session")
def swebench_layout_image(docker_client, base_image) -> str:
    """An offline replica of the official SWE-bench image layout (tests/fixtures/swebench_layout):
    conda's base `python` first on PATH, the repository at /testbed importable only in the conda env
    `testbed`, which /root/.bashrc activates. Tagged by the fixture's content; built once, then kept."""
    import hashlib

    from docker.errors import ImageNotFound

    digest = hashlib.sha256()
    for path in sorted(SWEBENCH_LAYOUT.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(SWEBENCH_LAYOUT).as_posix().encode() + b"\0" + path.read_bytes())
    tag = f"live-swe-test-swebench-layout:{digest.hexdigest()[:12]}"
    try:
        docker_client.images.get(tag)
    except ImageNotFound:
        docker_client.images.build(path=str(SWEBENCH_LAYOUT), tag=tag, buildargs={"BASE": base_image}, rm=True)
    return tag
