"""The ``live-swe`` command. Sub-commands import their machinery lazily so ``--help`` stays fast."""

from __future__ import annotations

import sys

import typer

from live_swe.cli import run_cmd, sessions_cmd

app = typer.Typer(
    name="live-swe",
    help="A software-engineering agent that evolves its own tools and scaffold while it works.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

app.command("run")(run_cmd.run)
app.command("resume")(run_cmd.resume)
app.add_typer(sessions_cmd.app, name="sessions", help="List, show, export and inspect sessions.")


def _register_optional() -> None:
    """Sub-command groups built by other parts of the project; each is a small module."""
    import importlib

    for module, name, help_text in (
        ("live_swe.cli.models_cmd", "models", "Embedded local models: pull and list."),
        ("live_swe.cli.tools_cmd", "tools", "The tool library: list and promote tools."),
        ("live_swe.cli.bench_cmd", "bench", "Benchmarks: batch runs, evaluation, images."),
        ("live_swe.cli.github_cmd", "github", "GitHub: turn an issue into a pull request."),
        ("live_swe.cli.archive_cmd", "archive", "The archive of evolved scaffolds."),
        ("live_swe.cli.scaffold_cmd", "scaffold", "Scaffolds: promote a validated scaffold."),
    ):
        try:
            sub = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name == module:
                continue
            raise
        app.add_typer(sub.app, name=name, help=help_text)
    for module, attr, name in (
        ("live_swe.cli.tui_cmd", "tui", "tui"),
        ("live_swe.cli.demo_cmd", "demo", "demo"),
        ("godel.cli", "validate", "validate"),
        ("godel.cli", "evolve", "evolve"),
    ):
        try:
            sub = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name == module:
                continue
            raise
        app.command(name)(getattr(sub, attr))


_register_optional()


def main() -> None:
    # No arguments in a terminal opens the interactive UI (when it is installed).
    if len(sys.argv) == 1 and sys.stdin.isatty() and sys.stdout.isatty():
        sys.argv.append("tui")
    app()


if __name__ == "__main__":
    main()
