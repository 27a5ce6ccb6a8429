"""``live-swe tui``: the interactive terminal UI on a repository (``live-swe`` alone opens it)."""

from __future__ import annotations

from pathlib import Path

import typer

from live_swe.cli.common import fail, friendly, with_archive_scaffolds
from live_swe.cli.confinement import check_confinement
from live_swe.cli.run_cmd import NETWORK_HELP, SANDBOX_HELP


@friendly
def tui(
    repo: Path = typer.Option(Path("."), "--repo", help="The git repository to work in."),
    model: str = typer.Option(None, "--model", "-m", help="scripted:PATH, replay:PATH, local/NAME or a litellm model."),
    inline: bool = typer.Option(False, "--inline", help="Draw below the prompt and keep the terminal's scrollback."),
    env: str = typer.Option(None, "--env", help="local (default) or docker."),
    image: str = typer.Option(None, "--image", help="Docker image (docker env)."),
    mode: str = typer.Option("confirm", "--mode", help="Approval mode: confirm, auto or read-only (F2 switches)."),
    task: str = typer.Option("", "--task", "-t", help="Start with this task in the task box."),
    network: bool = typer.Option(None, "--network/--no-network", help=NETWORK_HELP),
    sandbox: str = typer.Option("bubblewrap", "--sandbox", help=SANDBOX_HELP),
    repo_instructions: bool = typer.Option(True, "--repo-instructions/--no-repo-instructions",
                                           help="Put the repository's AGENTS.md (or CLAUDE.md, CONVENTIONS.md) "
                                                "into the first prompt."),
) -> None:
    """Work with the agent interactively: watch it, steer it, keep or discard what it did."""
    import sys

    if not (sys.stdin.isatty() and sys.stdout.isatty()):  # else it would draw into a pipe until killed
        fail("the terminal UI needs a terminal (stdin and stdout); without one, use "
             "`live-swe run --task TEXT --yolo`")
    try:
        import textual  # noqa: F401
    except ImportError:
        fail("the terminal UI needs textual, a dependency of live-swe: pip install textual")
    from live_swe.config import load_settings
    from live_swe.models.resolve import default_model_name
    from live_swe.tui.app import LiveSweApp, run_app
    from live_swe.tui.bridge import ApprovalMode
    from live_swe.tui.worktree import WorkTree

    with_archive_scaffolds()
    if mode not in {m.value for m in ApprovalMode}:
        fail(f"unknown approval mode {mode!r}; use confirm, auto or read-only")
    settings = load_settings({"model": model, "env": env, "image": image, "sandbox.network": network}, project=repo)
    if settings.env not in ("local", "docker"):
        fail(f"unknown environment {settings.env!r}; use local or docker")
    check_confinement(settings.env, sandbox)
    root = WorkTree(repo.resolve()).path  # a clear error now if it is not a git repository
    app = LiveSweApp(root, default_model_name(settings.model), env=settings.env, image=settings.image,
                     limits=settings.limits, approval_mode=ApprovalMode(mode), task=task,
                     network=settings.sandbox.network, sandbox=sandbox, repo_instructions=repo_instructions,
                     contract_files=(Path(settings.contract),) if settings.contract else ())
    run_app(app, inline=inline)
