"""The ``live-swe`` command. Each sub-command module imports only typer at the top and loads its
machinery inside the command, so ``--help`` stays fast (no litellm, textual, docker, swebench)."""

from __future__ import annotations

import sys

import typer

from live_swe.cli import (
    bench_cmd,
    demo_cmd,
    github_cmd,
    godel_cmd,
    grade_cmd,
    models_cmd,
    run_cmd,
    sessions_cmd,
    tools_cmd,
    tui_cmd,
)

app = typer.Typer(
    name="live-swe",
    help="A software-engineering agent that evolves its own tools and scaffold while it works.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)



def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"live-swe {version('live-swe')}")
        except PackageNotFoundError:  # run from a checkout that was never installed
            print("live-swe (not installed: run `pip install -e .` in the checkout)")
        raise typer.Exit()


@app.callback()
def _options(show_version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                               help="Print the installed version and exit.")) -> None:
    """A software-engineering agent that evolves its own tools and scaffold while it works."""


app.command("run")(run_cmd.run)
app.command("resume")(run_cmd.resume)
app.command("tui")(tui_cmd.tui)
app.command("demo")(demo_cmd.demo)
app.command("validate")(godel_cmd.validate)
app.command("evolve")(godel_cmd.evolve)
app.command("grade")(grade_cmd.grade)
bench_cmd.app.command("grade")(grade_cmd.bench_grade)
app.add_typer(sessions_cmd.app, name="sessions", help="List, show, export and inspect sessions.")
app.add_typer(tools_cmd.app, name="tools", help="The tool library: list and promote tools.")
app.add_typer(models_cmd.app, name="models", help="Embedded local models: pull and list.")
app.add_typer(bench_cmd.app, name="bench", help="Benchmarks: batch runs, evaluation, images.")
app.add_typer(github_cmd.app, name="github", help="GitHub: turn an issue into a pull request.")
app.add_typer(godel_cmd.archive_app, name="archive", help="The archive of evolved scaffolds.")
app.add_typer(godel_cmd.scaffold_app, name="scaffold", help="Scaffolds: promote a validated scaffold.")


def main() -> None:
    # No arguments: the interactive UI in a terminal; elsewhere (a pipe, CI) the full help.
    if len(sys.argv) == 1:
        sys.argv.append("tui" if sys.stdin.isatty() and sys.stdout.isatty() else "--help")
    app()


if __name__ == "__main__":
    main()
