"""``live-swe sessions ...``: list, show and export sessions."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from live_swe.cli.common import fail, friendly

app = typer.Typer(no_args_is_help=True, add_completion=False)


@app.command("list")
@friendly
def list_sessions(as_json: bool = typer.Option(False, "--json")) -> None:
    """All sessions, oldest first."""
    from live_swe.session.store import SessionStore

    metas = SessionStore.default().list()
    if as_json:
        print(json.dumps([
            {"id": m.id, "status": m.status, "task": m.task, "model": m.model, "steps": m.steps, "cost": m.cost,
             "created_at": m.created_at} for m in metas
        ]))
        return
    if not metas:
        print("no sessions yet; start one with `live-swe run --task ...`")
    for m in metas:
        task = " ".join(m.task.split())[:60]
        print(f"{m.id}  {m.status:<16} {m.steps:>4} steps  ${m.cost:>7.4f}  {task}")


@app.command("show")
@friendly
def show(session_id: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """One session: task, model, status, steps, cost and patch."""
    from live_swe.session.export import summary
    from live_swe.session.store import SessionStore

    data = summary(SessionStore.default().open(session_id))
    if as_json:
        print(json.dumps(data))
        return
    for key in ("id", "status", "model", "env", "steps", "cost", "created_at", "exit_message"):
        print(f"{key:>13}: {data[key]}")
    print(f"{'task':>13}: {data['task'].strip()}")
    for problem in data["log_problems"]:
        print(f"      warning: {problem}")
    if data["patch"]:
        print("\n" + data["patch"])


@app.command("export")
@friendly
def export(
    session_id: str,
    fmt: str = typer.Option("mini", "--format", help="mini: a mini-swe-agent trajectory file."),
    out: Path = typer.Option(None, "--out", "-o", help="Write here instead of standard output."),
) -> None:
    """Export a session's trajectory."""
    from live_swe.session.export import mini_trajectory
    from live_swe.session.store import SessionStore

    if fmt != "mini":
        fail(f"unknown export format {fmt!r}; the supported format is mini")
    text = json.dumps(mini_trajectory(SessionStore.default().open(session_id)), indent=2)
    if out:
        out.write_text(text)
        print(f"wrote {out}")
    else:
        print(text)
