"""``live-swe run`` and ``live-swe resume``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from live_swe.cli.common import (
    CONTRACT_HELP,
    EXIT_NOT_SUBMITTED,
    fail,
    fail_as_json,
    friendly,
    shown,
    shown_exact,
    with_archive_scaffolds,
)
from live_swe.cli.confinement import check_confinement
from live_swe.cli.output import FORMAT_HELP, RunOutput
from live_swe.events import Event
from live_swe.infra.stop_signals import stop_signals_interrupt
from live_swe.wording import progress_line

NETWORK_HELP = "Let the agent's commands use the network (local env; off by default, or sandbox.network in the config)."
SANDBOX_HELP = ("bubblewrap (the default on --env local) or none: run the agent's commands, tools and hooks "
                "unconfined on this machine.")


def _progress(event: Event) -> None:
    line = progress_line(event)
    if line is not None:
        print(shown(line), file=sys.stderr)


def _approver(yolo: bool):
    if yolo:
        return None
    if not sys.stdin.isatty():
        fail("no terminal to confirm commands in; pass --yolo to let the agent run commands without confirmation")
    from live_swe.cli.approval import TerminalApprover

    return TerminalApprover()


def _hooks(yolo: bool, output: RunOutput):
    """Who approves, and who watches: with a person confirming, the agent's reasoning is shown
    before each command it asks for."""
    from live_swe.cli.approval import show_thought
    from live_swe.runner import RunHooks

    approver = _approver(yolo)
    observers = output.observers()
    if approver is not None and not output.machine:
        observers = [show_thought, *observers]
    return RunHooks(approver=approver, observers=observers)


def _report(result, output: RunOutput) -> None:
    from live_swe.session.store import RunStatus

    if output.machine:
        output.final(result.to_json())
    else:
        print(shown(f"session {result.session_id}: {result.status} after {result.steps} steps, cost ${result.cost:.4f}"
                    + (f" ({result.message})" if result.message else "")), file=sys.stderr)
        if result.patch:
            print(shown_exact(result.patch))
    if result.status != RunStatus.SUBMITTED:
        raise typer.Exit(EXIT_NOT_SUBMITTED)


@friendly
def run(
    task: str = typer.Option(None, "--task", "-t", help="What to do, as text."),
    task_file: Path = typer.Option(None, "--task-file", help="Read the task from a file."),
    repo: Path = typer.Option(None, "--repo", help="The git repository to work in (default: this directory; "
                              "in docker: copied in, or without one here, the image's own at --repo-dir)."),
    repo_dir: str = typer.Option("/testbed", "--repo-dir", help="Where the repository is inside the container."),
    model: str = typer.Option(None, "--model", "-m", help="scripted:PATH, replay:PATH, local/NAME or a litellm model."),
    api_base: str = typer.Option(None, "--api-base", help="The model's server, e.g. http://127.0.0.1:8080/v1 for "
                                 "--model openai/NAME (llama.cpp's server, vLLM, LM Studio), or Ollama's for ollama/NAME."),
    env: str = typer.Option(None, "--env", help="local (default) or docker."),
    image: str = typer.Option(None, "--image", help="Docker image (docker env)."),
    scaffold: str = typer.Option(None, "--scaffold", help="seed, session:ID, path:DIR or archive:NODE."),
    yolo: bool = typer.Option(False, "--yolo", help="Run commands without asking."),
    step_limit: int = typer.Option(None, "--step-limit", min=1),
    cost_limit: float = typer.Option(None, "--cost-limit", min=0),
    wall_time_limit: float = typer.Option(None, "--wall-time-limit", help="Seconds."),
    command_timeout: float = typer.Option(None, "--command-timeout", help="Seconds per command."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object at the end."),
    output_format: str = typer.Option(None, "--output-format", help=FORMAT_HELP),
    network: bool = typer.Option(None, "--network/--no-network", help=NETWORK_HELP),
    sandbox: str = typer.Option(None, "--sandbox", help=SANDBOX_HELP),
    repo_instructions: bool = typer.Option(True, "--repo-instructions/--no-repo-instructions",
                                           help="Put the repository's AGENTS.md (or CLAUDE.md, CONVENTIONS.md) "
                                                "into the first prompt."),
    continue_id: str = typer.Option(None, "--continue", metavar="ID",
                                    help="Continue session ID with this task as a follow-up: the same conversation, "
                                         "tools and scaffold, on top of its changes (budgets: per follow-up)."),
    contract: list[Path] = typer.Option(None, "--contract", help=CONTRACT_HELP),
    allow_dirty: bool = typer.Option(False, "--allow-dirty", help="Start on a repository with uncommitted "
                                     "changes, taking its tree as it is as the starting point: they stay, "
                                     "and the patch is only the agent's change (refused by default)."),
) -> None:
    """Run the agent on a task in a repository."""
    from live_swe.config import load_settings
    from live_swe.models.resolve import default_model_name
    from live_swe.runner import RunRequest, start_run
    from live_swe.session.store import new_session_id

    with_archive_scaffolds()
    session_id = continue_id or new_session_id()
    output = RunOutput(as_json, output_format, _progress)
    if output.machine:
        fail_as_json(lambda: _failed_run(session_id, output))
    if bool(task) == bool(task_file):
        fail("give the task with exactly one of --task TEXT or --task-file PATH")
    if task_file:
        try:
            task = task_file.read_text()
        except OSError as exc:
            fail(f"cannot read the task file {task_file}: {exc.strerror}")
    if continue_id:
        fixed = {"--repo": repo, "--model": model, "--api-base": api_base, "--env": env, "--image": image,
                 "--scaffold": scaffold, "--command-timeout": command_timeout, "--contract": contract or None,
                 "--allow-dirty": allow_dirty or None}
        given = [name for name, value in fixed.items() if value is not None]
        if given:
            fail(f"--continue goes on where session {continue_id} ran, with its model and scaffold; "
                 f"leave out {', '.join(given)}")
        _continue(continue_id, task, yolo, output, network, sandbox,
                  {"step_limit": step_limit, "cost_limit": cost_limit, "wall_time_limit": wall_time_limit})
        return
    sandbox = sandbox or "bubblewrap"
    settings = load_settings({
        "model": model, "api_base": api_base, "env": env, "image": image, "scaffold": scaffold,
        "limits.step_limit": step_limit, "limits.cost_limit": cost_limit,
        "limits.wall_time_limit": wall_time_limit, "limits.command_timeout": command_timeout,
        "sandbox.network": network,
    }, project=repo or Path.cwd())
    if settings.env not in ("local", "docker"):
        fail(f"unknown environment {settings.env!r}; use local or docker")
    check_confinement(settings.env, sandbox)
    host_repo = _host_repository(repo, settings.env, repo_dir)
    if host_repo is not None and not allow_dirty:
        from live_swe.session.baseline import dirty_tree_message, uncommitted_changes

        changes = uncommitted_changes(host_repo)
        if changes:
            fail(dirty_tree_message(host_repo, changes))
    hooks = _hooks(yolo, output)
    request = RunRequest(
        task=task,
        model=default_model_name(settings.model),
        repo=host_repo,
        env=settings.env,
        image=settings.image,
        repo_dir=repo_dir,
        scaffold_ref=settings.scaffold,
        limits=settings.limits,
        session_id=session_id,
        sandbox=sandbox,
        network=settings.sandbox.network,
        api_base=settings.api_base,
        repo_instructions=_instructions(host_repo, output.machine) if repo_instructions else None,
        contract_files=list(contract or ()) + ([Path(settings.contract)] if settings.contract else []),
        allow_dirty=allow_dirty,
    )
    with stop_signals_interrupt():
        result = start_run(request, hooks)
    _report(result, output)


def _instructions(host_repo: Path | None, quiet: bool):
    """The repository's instructions for agents, seen from this directory (said on stderr)."""
    from live_swe.repo_instructions import from_work_tree

    found = from_work_tree(host_repo, Path.cwd()) if host_repo is not None else None
    if found is not None and not quiet:
        print(shown(f"live-swe: repository instructions: {found.summary()}"), file=sys.stderr)
    return found


def _continue(session_id: str, task: str, yolo: bool, output: RunOutput, network: bool | None,
              sandbox: str | None, budgets: dict[str, Any]) -> None:
    """``run --continue ID``: the follow-up joins the session's conversation (resume_run does the rest)."""
    from live_swe.runner import resume_run

    hooks, confinement = _resumed_hooks(session_id, yolo, output, network, sandbox)
    _report(resume_run(session_id, hooks, limit_overrides=budgets, sandbox=confinement, follow_up=task), output)


def _resumed_hooks(session_id: str, yolo: bool, output: RunOutput, network: bool | None, sandbox: str | None):
    """The hooks and the confinement for going on with a session, checked against how it ran."""
    from live_swe.session.store import SessionStore

    meta = SessionStore.default().open(session_id).meta
    recorded = meta.extra.get("sandbox") or {}
    confinement = {k: v for k, v in {"mode": sandbox, "network": network}.items() if v is not None}
    check_confinement(meta.env, confinement.get("mode") or recorded.get("mode", "bubblewrap"))
    return _hooks(yolo, output), confinement


def _failed_run(session_id: str, output: RunOutput) -> dict[str, Any]:
    """The JSON object of a run that could not start or run: its session, if one was made."""
    from live_swe.session.store import SessionStore

    made = SessionStore.default().exists(session_id)
    failed = {"session_id": session_id if made else None, "steps": 0, "cost": 0.0, "patch": "", "model": None,
              "input_tokens": 0, "output_tokens": 0}
    return {**output.fields(failed), "is_error": True}


def _host_repository(repo: Path | None, env: str, repo_dir: str) -> Path | None:
    """The host repository to work in (local) or to copy in (docker), checked before anything starts.

    In docker without ``--repo``, this directory is copied in when it is a repository; otherwise the
    image's own repository at ``repo_dir`` is used (SWE-bench images)."""
    from live_swe.infra.git import repository_problem, repository_root

    if repo is None and env == "docker":
        if repository_problem(Path.cwd()) is not None:
            print(f"live-swe: this directory is not a git repository: using the one inside the image at {repo_dir}",
                  file=sys.stderr)
            return None
        return repository_root(Path.cwd())
    path = (repo or Path(".")).resolve()
    problem = repository_problem(path)
    if problem:
        fail(problem)
    return repository_root(path)  # from a folder inside it, the whole repository


@friendly
def resume(
    session_id: str = typer.Argument(..., help="The session to continue."),
    yolo: bool = typer.Option(False, "--yolo", help="Run commands without asking."),
    step_limit: int = typer.Option(None, "--step-limit", min=1, help="A new step budget (total, not additional)."),
    cost_limit: float = typer.Option(None, "--cost-limit", min=0, help="A new cost budget in USD (total)."),
    wall_time_limit: float = typer.Option(None, "--wall-time-limit", help="A new wall-time budget in seconds (total)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object at the end."),
    output_format: str = typer.Option(None, "--output-format", help=FORMAT_HELP),
    network: bool = typer.Option(None, "--network/--no-network", help=NETWORK_HELP + " Default: as the session ran."),
    sandbox: str = typer.Option(None, "--sandbox", help=SANDBOX_HELP + " Default: as the session ran."),
) -> None:
    """Continue a session from where it stopped, with its evolved scaffold (and, given, new budgets)."""
    from live_swe.runner import resume_run

    output = RunOutput(as_json, output_format, _progress)
    if output.machine:
        fail_as_json(lambda: _failed_run(session_id, output))
    hooks, confinement = _resumed_hooks(session_id, yolo, output, network, sandbox)
    overrides = {"step_limit": step_limit, "cost_limit": cost_limit, "wall_time_limit": wall_time_limit}
    with stop_signals_interrupt():
        result = resume_run(session_id, hooks, limit_overrides=overrides, sandbox=confinement)
    _report(result, output)
