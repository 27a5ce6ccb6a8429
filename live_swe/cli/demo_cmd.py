"""``live-swe demo``: the agent fixes a real bug in a small bundled repository, on the local model.

The demo repository (evals/demo/repo) is copied into a fresh git repository
(/tmp/lsw-home/demo/shop, replaced on each run, with fixed file dates so runs repeat exactly);
the agent runs headless there (no confirmations) and the command prints each step, the final patch,
and whether the demo's tests pass with it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import typer

from live_swe.cli.common import (
    EXIT_NOT_SUBMITTED,
    friendly,
    shown,
    shown_exact,
    terminal_safe,
    with_archive_scaffolds,
)
from live_swe.events import Event
from live_swe.infra.git import Git, Identity, init
from live_swe.wording import demo_line

DEMO_STEP_LIMIT = 20
DEMO_TEST_COMMAND = ("python3", "-m", "unittest", "-q")
# The demo's task, one of its wordings in evals/demo/tasks/ (from the fix spelled out to the
# symptom only; benchmarks/local_tasks.py measures the local models on all of them).
DEMO_TASK = "fix-given"


def demo_wordings() -> list[str]:
    from live_swe.resources import resource_path

    return sorted(path.stem for path in resource_path("evals", "demo", "tasks").glob("*.md"))


def demo_task(wording: str = DEMO_TASK) -> str:
    from live_swe.errors import UserError
    from live_swe.resources import resource_path

    if wording not in demo_wordings():
        raise UserError(f"no demo task {wording!r}; the demo tasks are: {', '.join(demo_wordings())}")
    return resource_path("evals", "demo", "tasks", f"{wording}.md").read_text()


# Fixed dates for the demo's files and commit: what the model sees (`ls -la`, `git log`) is the
# same on every run, so a run at temperature 0 repeats exactly.
_DEMO_TIME = 1_704_067_200  # 2024-01-01 00:00 UTC
_DEMO_GIT_DATES = {"GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z"}
_DEMO_IDENTITY = Identity("live-swe demo", "demo@live-swe.invalid")


def default_demo_dir() -> Path:
    """The same path for every user and home: the path is in the prompt, so a run repeats exactly."""
    return Path("/tmp/lsw-home/demo/shop")


def make_demo_repo(target: Path | None = None) -> Path:
    """A fresh git repository holding the demo package, committed on ``main`` (replaces ``target``)."""
    import os

    from live_swe.resources import resource_path

    repo = target or default_demo_dir()
    if repo.exists():
        shutil.rmtree(repo)
    repo.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(resource_path("evals", "demo", "repo"), repo,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    init(repo)
    git = Git(repo, config=_DEMO_IDENTITY.config(), env=_DEMO_GIT_DATES).run
    git("add", "-A")
    git("commit", "-q", "-m", "shop: initial version")
    for folder, dirs, files in os.walk(repo, topdown=False):
        for name in files + dirs:
            os.utime(os.path.join(folder, name), (_DEMO_TIME, _DEMO_TIME), follow_symlinks=False)
    git("update-index", "-q", "--refresh")  # record the new dates now, so later git commands write nothing
    for path in (repo / ".git", repo, repo.parent):
        os.utime(path, (_DEMO_TIME, _DEMO_TIME))
    return repo


def demo_tests_pass(repo: Path) -> bool:
    done = subprocess.run(DEMO_TEST_COMMAND, cwd=repo, capture_output=True, text=True, timeout=120)
    return done.returncode == 0


class _Printer:
    """Shows the run as it happens: the model's words as they stream, then each step's outcome."""

    def __init__(self) -> None:
        self.streaming = False

    def token(self, text: str) -> None:
        if not self.streaming:
            self.streaming = True
            print("", file=sys.stderr)
        print(terminal_safe(text), end="", file=sys.stderr, flush=True)

    def event(self, event: Event) -> None:
        line = demo_line(event)
        if line is None:
            return
        if self.streaming:
            print("", file=sys.stderr)
            self.streaming = False
        print(shown(line), file=sys.stderr, flush=True)


@friendly
def demo(
    model: str = typer.Option(None, "--model", "-m", help="The model to use (default: the local default model)."),
    step_limit: int = typer.Option(DEMO_STEP_LIMIT, "--step-limit", min=1),
    task: str = typer.Option(DEMO_TASK, "--task", help="Which wording of the demo's task (evals/demo/tasks/NAME.md): "
                             "fix-given, line-named, file-and-symptom or symptom-only."),
) -> None:
    """Run the agent on the bundled demo task (a one-line bug) and show its patch."""
    from live_swe.config import KernelLimits
    from live_swe.models.resolve import LOCAL_DEFAULT, make_model
    from live_swe.runner import RunHooks, RunRequest, start_run
    from live_swe.session.store import RunStatus

    with_archive_scaffolds()
    name = model or LOCAL_DEFAULT
    text = demo_task(task)
    printer = _Printer()
    loaded = make_model(name)  # a missing model fails before anything is made
    repo = make_demo_repo()
    print(f"demo repository: {repo}\nmodel: {name}\ntask:\n{text}", file=sys.stderr)
    request = RunRequest(task=text, model=name, repo=repo, limits=KernelLimits(step_limit=step_limit))
    hooks = RunHooks(observers=[printer.event], model_factory=lambda _name: loaded, on_token=printer.token)
    result = start_run(request, hooks)
    if printer.streaming:
        print("", file=sys.stderr)
    print(f"session {result.session_id}: {result.status} after {result.steps} steps"
          + (f" ({result.message})" if result.message else ""), file=sys.stderr)
    if result.patch:
        print("final patch:", file=sys.stderr)
        print(shown_exact(result.patch))
    passed = demo_tests_pass(repo)
    print(f"demo tests ({' '.join(DEMO_TEST_COMMAND)}): {'pass' if passed else 'FAIL'}", file=sys.stderr)
    if result.status != RunStatus.SUBMITTED or not passed:
        raise typer.Exit(EXIT_NOT_SUBMITTED)
