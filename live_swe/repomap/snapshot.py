"""The map of a repository that lives in an environment (a benchmark image's /testbed): its
committed tree is archived there, copied out once, and mapped here, in a scratch folder that goes
with its tag cache when the map is made."""

from __future__ import annotations

import shlex
import tarfile
import tempfile
from pathlib import Path

from live_swe.environments.base import Environment, EnvironmentError_
from live_swe.repomap.mapper import RepoMapResult, build_repo_map

ARCHIVE_IN_ENV = "/tmp/live-swe-repomap.tar"


def copy_repository_out(env: Environment, dest: Path, timeout: float = 300) -> Path:
    """The environment's repository at HEAD, extracted under ``dest`` (no .git, links kept inside)."""
    archive = shlex.quote(ARCHIVE_IN_ENV)
    made = env.execute(f"git -C {shlex.quote(env.repo_dir)} archive --format=tar -o {archive} HEAD", timeout=timeout)
    if made.returncode != 0:
        raise EnvironmentError_(f"`git archive` of {env.repo_dir} failed in the environment: {made.text.strip()[:300]}")
    try:
        env.copy_out(ARCHIVE_IN_ENV, dest / "repository.tar")
    finally:
        env.execute(f"rm -f {archive}", timeout=60)
    tree = dest / "repository"
    tree.mkdir(parents=True, exist_ok=True)
    with tarfile.open(dest / "repository.tar") as archive_file:
        archive_file.extractall(tree, filter="data")  # the archive came from outside: nothing may leave `tree`
    (dest / "repository.tar").unlink()
    return tree


def environment_repo_map(env: Environment, task: str, token_budget: int) -> RepoMapResult:
    with tempfile.TemporaryDirectory(prefix="live-swe-repomap-") as scratch:
        tree = copy_repository_out(env, Path(scratch))
        return build_repo_map(tree, task, token_budget, cache_dir=Path(scratch) / "cache")
