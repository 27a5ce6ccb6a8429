"""``live-swe sessions ...``: list, show and export sessions.

Whatever a session holds is shown redacted of the secrets this process holds, and on a terminal
with control characters written out (a session may come from elsewhere: its task, events and patch
are data, never escape sequences for your terminal).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from live_swe.cli.common import fail, friendly, print_json, shown, shown_exact
from live_swe.contracts.report import contract_lines
from live_swe.infra.redact import redact

app = typer.Typer(no_args_is_help=True, add_completion=False)


@app.command("list")
@friendly
def list_sessions(as_json: bool = typer.Option(False, "--json")) -> None:
    """All sessions, oldest first."""
    from live_swe.session.store import SessionStore

    metas, damaged = SessionStore.default().scan()
    if as_json:
        print_json([
            {"id": m.id, "status": m.status, "task": m.task, "model": m.model, "steps": m.steps, "cost": m.cost,
             "created_at": m.created_at} for m in metas
        ] + [{"id": name, "status": "damaged", "problem": problem} for name, problem in damaged])
        return
    if not metas and not damaged:
        print("no sessions yet; start one with `live-swe run --task ...`")
    for m in metas:
        task = " ".join(m.task.split())[:60]
        print(shown(f"{m.id}  {m.status:<16} {m.steps:>4} steps  ${m.cost:>7.4f}  {task}"))
    for name, problem in damaged:
        print(shown(f"{name}  {'damaged':<16} {problem}"))


@app.command("show")
@friendly
def show(session_id: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """One session: task, model, status, steps, cost and patch."""
    from live_swe.evolution.history import evolution_summary
    from live_swe.grading.session import current_grade
    from live_swe.session.export import summary
    from live_swe.session.store import SessionStore
    from live_swe.session.view import SessionView
    from live_swe.wording import change_counts

    session = SessionStore.default().open(session_id)
    view = SessionView.read(session)
    data = summary(session, view)
    data["grade"] = current_grade(session).to_json()
    data.update(evolution_summary(session, view))
    if as_json:
        print_json(data)
        return
    for key in ("id", "status", "model", "env", "steps", "cost", "created_at", "exit_message"):
        print(shown(f"{key:>13}: {data[key]}"))
    print(shown(f"{'task':>13}: {data['task'].strip()}"))
    if "tools" in data:
        print(shown(f"{'tools':>13}: {', '.join(data['tools']) or '-'}"))
        print(f"{'scaffold':>13}: {change_counts(view.scaffold_changes)} (`live-swe sessions log {data['id']}`)")
    if data.get("grade"):
        from live_swe.grading.grade import Grade
        from live_swe.grading.report import headline

        print(shown(f"{'grade':>13}: {headline(Grade.from_json(data['grade']))} (`live-swe grade {data['id']}`)"))
    if data.get("contract"):
        for line in contract_lines(data["contract"]):
            print(shown(line))
    for problem in data["log_problems"]:
        print(shown(f"      warning: {problem}"))
    if data["patch"]:
        print("\n" + shown_exact(data["patch"]))


@app.command("export")
@friendly
def export(
    session_id: str,
    fmt: str = typer.Option("mini", "--format", help="mini: a mini-swe-agent trajectory file. session: a "
                            "redacted copy of the session folder (to share or upload), written into --out DIR."),
    out: Path = typer.Option(None, "--out", "-o", help="Write here instead of standard output."),
) -> None:
    """Export a session's trajectory, or a redacted copy of the whole session."""
    from live_swe.session.export import mini_trajectory, redacted_copy
    from live_swe.session.store import SessionStore

    if fmt == "session":
        if out is None:
            fail("--format session writes a folder: give it with --out DIR")
        target = redacted_copy(SessionStore.default().open(session_id), out)
        print(shown(f"wrote a redacted copy of session {session_id} to {target}"))
        return
    if fmt != "mini":
        fail(f"unknown export format {fmt!r}; the supported formats are mini and session")
    text = redact(json.dumps(mini_trajectory(SessionStore.default().open(session_id)), indent=2))
    if out:
        out.write_text(text)
        print(shown(f"wrote {out}"))
    else:
        print(text)


@app.command("log")
@friendly
def scaffold_log(session_id: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """One line per scaffold change: step, accepted or not, files, the agent's reason (and why not)."""
    from live_swe.session.store import SessionStore
    from live_swe.session.view import SessionView, change_json
    from live_swe.wording import change_log_line

    changes = SessionView.read(SessionStore.default().open(session_id)).scaffold_changes
    if as_json:
        print_json([change_json(change) for change in changes])
        return
    if not changes:
        print(f"session {session_id} made no scaffold changes")
    for change in changes:
        print(shown(change_log_line(change)))


@app.command("diff")
@friendly
def scaffold_diff(
    session_id: str,
    rev: str = typer.Argument(None, help="One change (a commit from `sessions log`); default: all changes."),
) -> None:
    """The scaffold's evolution as a diff: one commit, or everything since the starting scaffold."""
    from live_swe.evolution.history import history_of
    from live_swe.session.store import SessionStore

    history = history_of(SessionStore.default().open(session_id))
    if not history.exists():
        fail(f"session {session_id} has no scaffold history (it started before self-evolution was recorded)")
    print(shown_exact(history.diff(rev)), end="")
