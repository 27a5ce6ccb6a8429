"""Shared fixtures: an isolated LIVE_SWE_HOME, real git repositories, a real Docker engine."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
BASE_IMAGE = os.environ.get("LIVE_SWE_TEST_BASE_IMAGE", "live-swe-base")


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
