"""``live-swe github resolve``: turn an issue into a pull request (what the GitHub Action runs)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

from live_swe.cli.common import (
    EXIT_NOT_SUBMITTED,
    fail,
    fail_as_json,
    friendly,
    print_json,
    shown,
    with_archive_scaffolds,
)
from live_swe.events import Event
from live_swe.wording import github_line

app = typer.Typer(no_args_is_help=True, add_completion=False)


@app.callback()
def _group() -> None:
    """GitHub: turn an issue into a pull request, or continue one on review comments."""


def _stderr(line: str) -> None:
    print(f"[live-swe] {shown(line)}", file=sys.stderr, flush=True)


def _progress(event: Event) -> None:
    line = github_line(event)
    if line is not None:
        _stderr(line)


@app.command("resolve")
@friendly
def resolve(
    repo: str = typer.Option(None, "--repo", help="OWNER/NAME (default: $GITHUB_REPOSITORY)."),
    issue: int = typer.Option(..., "--issue", "--pr", min=1,
                              help="The issue to resolve, or a pull request to continue with its review comments."),
    base: str = typer.Option(None, "--base", help="Base branch (default: the branch checked out)."),
    draft: bool = typer.Option(False, "--draft", help="Open the pull request as a draft."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object at the end."),
    model: str = typer.Option(None, "--model", "-m", help="scripted:PATH, local/NAME or a litellm model."),
    step_limit: int = typer.Option(None, "--step-limit", min=1),
    cost_limit: float = typer.Option(None, "--cost-limit", min=0, help="US dollars."),
    actor: str = typer.Option(None, "--actor", help="Who triggered the run (default: $GITHUB_ACTOR)."),
    workdir: Path = typer.Option(None, "--workdir", help="The checked-out repository (default: the current directory)."),
    repo_instructions: bool = typer.Option(True, "--repo-instructions/--no-repo-instructions",
                                           help="Put the base branch's AGENTS.md (or CLAUDE.md, CONVENTIONS.md) "
                                                "into the first prompt."),
) -> None:
    """Resolve an issue: run the agent on branch live-swe/issue-N and open or update its pull request.

    Given a pull request, continue it: the agent works on its branch with the review comments as its
    task, and the change is pushed there.

    Reads GITHUB_TOKEN and GITHUB_API_URL from the environment (never from the command line).
    """
    from live_swe.github.api import GitHubClient
    from live_swe.github.resolve import ResolveOptions, ResolveOutcome, branch_name, resolve_issue
    from live_swe.runner import RunHooks

    # Filled in as the flow goes: when a late step fails, the JSON still names the branch that was
    # pushed and the pull request that was opened.
    outcome = ResolveOutcome("error", branch_name(issue))
    with_archive_scaffolds()
    if as_json:
        fail_as_json(outcome.to_json)

    repo = repo or os.environ.get("GITHUB_REPOSITORY")
    if not repo:
        fail("give the repository with --repo OWNER/NAME (or set GITHUB_REPOSITORY)")
    client = GitHubClient.from_environment(repo, log=_stderr)
    options = ResolveOptions(
        repo=repo, issue=issue, workdir=(workdir or Path.cwd()).resolve(), base=base, draft=draft, model=model,
        step_limit=step_limit, cost_limit=cost_limit, actor=actor, repo_instructions=repo_instructions,
    )
    hooks = RunHooks(observers=[_progress])
    outcome = resolve_issue(options, client, hooks, log=_stderr, outcome=outcome)
    if as_json:
        print_json(outcome.to_json())
    elif outcome.pr_url:
        print(outcome.pr_url)
    if not outcome.ok:
        raise typer.Exit(EXIT_NOT_SUBMITTED)
