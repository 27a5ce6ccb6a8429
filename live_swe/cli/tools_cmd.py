"""``live-swe tools ...``: the user's tool library (list, promote)."""

from __future__ import annotations

import json

import typer

from live_swe.cli.common import friendly, shown

app = typer.Typer(no_args_is_help=True, add_completion=False)


@app.command("list")
@friendly
def list_tools(as_json: bool = typer.Option(False, "--json")) -> None:
    """Tools in the library; every new session starts with them registered."""
    from live_swe.evolution.library import library_dir, list_tools

    tools = list_tools()
    if as_json:
        print(json.dumps([{"name": t.name, "description": t.description, "usage": t.usage, "path": str(t.path)}
                          for t in tools]))
        return
    if not tools:
        print(f"no tools in the library ({library_dir()}); promote one with `live-swe tools promote SESSION_ID NAME`")
    for tool in tools:
        print(shown(f"{tool.name:<20} {tool.description}") + "\n" + shown(f"{'':<20} usage: {tool.usage}"))


@app.command("promote")
@friendly
def promote(
    session_id: str = typer.Argument(..., help="The session that registered the tool."),
    name: str = typer.Argument(..., help="The tool's name."),
    force: bool = typer.Option(False, "--force", help="Replace a different library tool of the same name."),
) -> None:
    """Copy a tool a session registered into the library, for every later session."""
    from live_swe.evolution.library import promote as promote_tool

    path = promote_tool(session_id, name, force=force)
    print(f"promoted {name} to {path}; new sessions start with it registered")
