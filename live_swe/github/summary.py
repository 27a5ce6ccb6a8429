"""What live-swe writes on GitHub: the pull request body and its comments on the issue.

The body says what changed (diffstat), which tools the agent made and which scaffold changes it
committed or had refused (from the session's ``tool`` / ``scaffold`` events, when there are any),
the trajectory's grade (one line per metric), and the run's steps, cost and model. Text the agent
wrote is flattened to one line and cannot @-mention anyone. Every string goes through ``redact``
before it leaves.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from live_swe.contracts.report import contract_report
from live_swe.evolution.history import scaffold_changes
from live_swe.infra.redact import redact

MARKER = "<!-- live-swe -->"  # marks our own comments, so a rerun does not feed them back to the agent


@dataclass
class RunFacts:
    issue: int
    session_id: str
    model: str
    status: str
    steps: int
    cost: float
    message: str = ""


def _line(text: Any, limit: int = 200) -> str:
    """Agent-written text as one harmless Markdown line."""
    flat = " ".join(str(text or "").split())
    flat = flat.replace("@", "@\u200b").replace("<", "&lt;").replace("`", "'")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def tools_made(events: Iterable[dict[str, Any]]) -> list[str]:
    names: list[str] = []
    for event in events:
        # step 0 registrations are the starting scaffold's tools, not ones the agent made
        made_in_run = isinstance(event.get("step"), int) and event["step"] > 0
        if event.get("t") == "tool" and event.get("kind") == "registered" and event.get("name") and made_in_run:
            name = str(event["name"])
            if name not in names:
                names.append(name)
    return names


def _scaffold_line(event: dict[str, Any]) -> str:
    files = ", ".join(_line(f, 80) for f in event.get("files") or []) or "no files listed"
    step = f"step {event.get('step')}" if event.get("step") is not None else "a step"
    kind = event.get("kind")
    if kind == "commit":
        rev = str(event.get("rev") or "")[:10]
        why = f": {_line(event.get('reason'))}" if event.get("reason") else ""
        return f"- committed at {step} ({files}){f' `{rev}`' if rev else ''}{why}"
    verb = "refused by the gates" if kind == "reject" else "rolled back"
    return f"- {verb} at {step} ({files}): {_line(event.get('why') or event.get('reason'))}"


def contract_section(events: list[dict[str, Any]], steps: int) -> list[str]:
    """The behavioural contract's record: each violation, what the kernel did, and the figures."""
    report = contract_report(events, steps)
    if report is None:
        return []
    lines = [f"- {_line(v, 300)}" for v in report["violations"]] or ["None."]
    return ["### Contract violations", *lines,
            f"- compliance: hard {report['hard_compliance']:.2f}, soft {report['soft_compliance']:.2f}; "
            f"drift {report['drift']:.2f}; reliability {report['reliability']:.2f}", ""]


def pr_body(facts: RunFacts, diffstat: str, events: list[dict[str, Any]], secrets: Iterable[str] = (),
            grade_lines: Iterable[str] = ()) -> str:
    """``grade_lines``: the trajectory's grade, one line per metric (``live_swe.grading.report``)."""
    tools = tools_made(events)
    grade = [f"- {_line(line, 300)}" for line in grade_lines]
    changes = scaffold_changes(events)
    parts = [
        MARKER,
        f"Fixes #{facts.issue}",
        "",
        "This pull request was written by the live-swe agent. Review it like any other contribution.",
        "",
        "### What changed",
        "```",
        diffstat.strip("\n") or "(no files)",
        "```",
        "",
        "### Tools the agent made",
        "\n".join(f"- `{_line(name, 60)}`" for name in tools) if tools else "None.",
        "",
        "### Scaffold changes",
        "\n".join(_scaffold_line(e) for e in changes) if changes else "None.",
        "",
        *(["### Trajectory grade (0-3 per metric; `live-swe grade` explains it)", *grade, ""] if grade else []),
        *contract_section(events, facts.steps),
        "### Run",
        f"- steps: {facts.steps}",
        f"- cost: ${facts.cost:.4f}",
        f"- model: `{_line(facts.model, 120)}`",
        f"- session: `{facts.session_id}` (`live-swe sessions show {facts.session_id}` on the runner)",
    ]
    return redact("\n".join(parts) + "\n", secrets)


def pr_title(issue: int, title: str) -> str:
    return f"Fix #{issue}: {' '.join(title.split())[:200]}"


def commit_message(issue: int, title: str, session_id: str) -> str:
    subject = pr_title(issue, title)
    if len(subject) > 72:
        subject = subject[:71] + "…"
    return f"{subject}\n\nResolves #{issue}. Written by live-swe (session {session_id}).\n"


def refusal_comment(actor: str, permission: str) -> str:
    return (f"{MARKER}\nlive-swe did not run: @{actor} triggered it but has `{_line(permission, 20)}` permission on "
            "this repository, and only people with write access can start it. A maintainer can add the label or "
            "comment the command instead.\n")


def failure_comment(facts: RunFacts, reason: str, secrets: Iterable[str] = ()) -> str:
    text = (f"{MARKER}\nlive-swe could not resolve this issue, so nothing was pushed.\n\n"
            f"- reason: {_line(reason, 500)}\n"
            f"- status: `{facts.status}` after {facts.steps} steps, cost ${facts.cost:.4f}\n"
            f"- model: `{_line(facts.model, 120)}`, session `{facts.session_id}`\n")
    return redact(text, secrets)


def error_comment(reason: str, secrets: Iterable[str] = (), pushed: str | None = None,
                  pull_url: str | None = None) -> str:
    """Why the flow stopped, and what it left behind: the reader must not look for a branch that isn't
    there, nor miss one that is."""
    if pull_url:
        what = f"live-swe pushed the branch `{pushed}` and opened or updated {pull_url}, but then stopped"
    elif pushed:
        what = f"live-swe pushed the branch `{pushed}`, but the pull request could not be opened"
    else:
        what = "live-swe stopped before finishing, so nothing was pushed"
    return redact(f"{MARKER}\n{what}: {_line(reason, 500)}\n", secrets)


def link_comment(pr_number: int, pr_url: str, updated: bool, facts: RunFacts) -> str:
    verb = "updated" if updated else "opened"
    return (f"{MARKER}\nlive-swe {verb} pull request #{pr_number} for this issue: {pr_url}\n"
            f"({facts.steps} steps, ${facts.cost:.4f})\n")
