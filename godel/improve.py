"""Make a child scaffold: the agent, running with its parent's scaffold, edits a git repository
holding a copy of that scaffold, following the self-improvement task. The child is the tree the
repository holds when the run ends.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from live_swe.config import KernelLimits
from live_swe.infra.git import Git, Identity, init
from live_swe.runner import RunHooks, RunRequest, start_run
from live_swe.session.store import RunStatus

_IGNORE = shutil.ignore_patterns(".git", "__pycache__", "*.pyc")


@dataclass(frozen=True)
class Improvement:
    scaffold_dir: Path
    cost: float
    session_id: str
    status: str
    message: str = ""


# improve(parent_scaffold_dir, task, workdir) -> Improvement
Improve = Callable[[Path, str, Path], Improvement]


def scaffold_repository(parent_scaffold: Path, repo: Path) -> None:
    """A fresh git repository whose first commit is the parent's scaffold."""
    if repo.exists():
        shutil.rmtree(repo)
    shutil.copytree(parent_scaffold, repo, ignore=_IGNORE)
    init(repo)
    git = Git(repo, config=Identity("live-swe", "live-swe@localhost").config())
    git.run("add", "-A")
    git.run("commit", "-q", "-m", "parent scaffold")


class AgentImprover:
    """The default improver: ``live_swe.runner.start_run`` in the local environment."""

    def __init__(self, model: str, *, limits: Any = None, model_factory: Callable[[str], Any] | None = None):
        self.model = model
        self.limits = limits
        self.model_factory = model_factory

    def __call__(self, parent_scaffold: Path, task: str, workdir: Path) -> Improvement:
        repo = workdir / "repo"
        scaffold_repository(parent_scaffold, repo)
        request = RunRequest(
            task=task, model=self.model, repo=repo, env="local",
            scaffold_ref=f"path:{parent_scaffold}", limits=self.limits or KernelLimits(),
            extra={"godel": {"role": "improver", "workdir": str(workdir)}},
        )
        result = start_run(request, RunHooks(model_factory=self.model_factory))
        if result.status == RunStatus.INTERRUPTED:
            raise KeyboardInterrupt
        child = workdir / "scaffold"
        if child.exists():
            shutil.rmtree(child)
        shutil.copytree(repo, child, ignore=_IGNORE)
        return Improvement(child, result.cost, result.session_id, result.status, result.message)
