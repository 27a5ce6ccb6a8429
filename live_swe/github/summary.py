"""What live-swe writes on GitHub: the pull request body and its comments on the issue.

The body says what changed (diffstat), which tools the agent made and which scaffold changes it
committed or had refused (from the session's ``tool`` / ``scaffold`` events, when there are any),
the trajectory's grade (one line per metric), and the run's steps, cost and model. It opens with
the agent's own summary of its change (the THOUGHT of its submitting reply), quoted. Text the agent
wrote mentions nobody, references no issue, and cannot close anything or hide the rest of the body
(:func:`agent_words`); short fields are flattened to one line. Every string goes through ``redact``
before it leaves.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from live_swe.contracts.report import contract_report
from live_swe.infra.redact import redact
from live_swe.session.view import SessionView
from live_swe.wording import change_markdown

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


SUMMARY_CHARS = 3000
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")  # @user, @org/team
_REFERENCE = re.compile(r"#(?=\d)")  # #12, owner/repo#12: links, and closing targets
# GitHub's closing keywords, when something follows that could name an issue (#12, o/r#12, a URL)
_CLOSING_WORD = re.compile(r"\b(clos|fix|resolv)(e[sd]?|es|ed)?\b(?=\s*:?\s*(?:[\w.-]+/[\w.-]+)?(?:#|https?://))",
                           re.IGNORECASE)
_FENCE = re.compile(r"^\s*(```|~~~)")


def _defused(text: str) -> str:
    """No HTML, no ping, no issue link or closing: a zero-width space breaks each, the text reads the same."""
    text = text.replace("<", "&lt;")
    text = _MENTION.sub("@\u200b", text)
    text = _CLOSING_WORD.sub(lambda m: m[1][0] + "\u200b" + m[0][1:], text)
    return _REFERENCE.sub("#\u200b", text)


def one_line(text: Any, limit: int = 200) -> str:
    """Agent-written text as one harmless Markdown line."""
    flat = _defused(" ".join(str(text or "").split())).replace("`", "'")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def agent_words(text: str | None, secrets: Iterable[str] = (), limit: int = SUMMARY_CHARS) -> str:
    """Text the agent wrote, as a Markdown block quote that renders as written but acts on nothing.

    No @-mention pings anyone (a zero-width space after ``@``), no ``#N`` links or closes an issue
    (one after ``#``, and one inside closing words such as "fixes"), no HTML renders (``<`` is
    escaped, so a ``<!-- -->`` or ``<details>`` cannot hide the rest), and a code fence left open is
    closed inside the quote. Secrets are masked first, so a cut never splits one.
    """
    text = redact((text or "").strip(), secrets)
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    lines = _defused(text).splitlines() or [""]
    if sum(1 for line in lines if _FENCE.match(line)) % 2:
        lines.append("```")
    return "\n".join(f"> {line}".rstrip() for line in lines)


def contract_section(view: SessionView, steps: int) -> list[str]:
    """The behavioural contract's record: each violation, what the kernel did, and the figures."""
    report = contract_report(view.contract_events, steps)
    if report is None:
        return []
    lines = [f"- {one_line(v, 300)}" for v in report["violations"]] or ["None."]
    return ["### Contract violations", *lines,
            f"- compliance: hard {report['hard_compliance']:.2f}, soft {report['soft_compliance']:.2f}; "
            f"drift {report['drift']:.2f}; reliability {report['reliability']:.2f}", ""]


def pr_body(facts: RunFacts, diffstat: str, view: SessionView, secrets: Iterable[str] = (),
            grade_lines: Iterable[str] = (), agent_summary: str = "") -> str:
    """``grade_lines``: the trajectory's grade, one line per metric (``live_swe.grading.report``);
    ``agent_summary``: what the agent said of its change when it submitted."""
    parts = [
        MARKER,
        f"Fixes #{facts.issue}",
        "",
        "This pull request was written by the live-swe agent. Review it like any other contribution.",
        "",
        *run_report(facts, diffstat, view, secrets, grade_lines, agent_summary),
    ]
    return redact("\n".join(parts) + "\n", secrets)


def run_report(facts: RunFacts, diffstat: str, view: SessionView, secrets: Iterable[str] = (),
               grade_lines: Iterable[str] = (), agent_summary: str = "") -> list[str]:
    """The sections a pull request body, or the comment on a continued pull request, gives of one run."""
    tools = view.tools_made
    grade = [f"- {one_line(line, 300)}" for line in grade_lines]
    changes = view.scaffold_changes
    said = agent_words(agent_summary, secrets) if agent_summary.strip() else "> (the agent gave no summary)"
    return [
        "### Summary, in the agent's words",
        said,
        "",
        "### What changed",
        "```",
        diffstat.strip("\n") or "(no files)",
        "```",
        "",
        "### Tools the agent made",
        "\n".join(f"- `{one_line(name, 60)}`" for name in tools) if tools else "None.",
        "",
        "### Scaffold changes",
        "\n".join(change_markdown(c, one_line) for c in changes) if changes else "None.",
        "",
        *(["### Trajectory grade (0-3 per metric; `live-swe grade` explains it)", *grade, ""] if grade else []),
        *contract_section(view, facts.steps),
        "### Run",
        f"- steps: {facts.steps}",
        f"- cost: ${facts.cost:.4f}",
        f"- model: `{one_line(facts.model, 120)}`",
        f"- session: `{facts.session_id}` (`live-swe sessions show {facts.session_id}` on the runner)",
    ]


def pr_title(issue: int, title: str) -> str:
    return f"Fix #{issue}: {' '.join(title.split())[:200]}"


def commit_message(issue: int, title: str, session_id: str) -> str:
    subject = pr_title(issue, title)
    if len(subject) > 72:
        subject = subject[:71] + "…"
    return f"{subject}\n\nResolves #{issue}. Written by live-swe (session {session_id}).\n"


def refusal_comment(actor: str, permission: str) -> str:
    return (f"{MARKER}\nlive-swe did not run: @{actor} triggered it but has `{one_line(permission, 20)}` permission on "
            "this repository, and only people with write access can start it. A maintainer can add the label or "
            "comment the command instead.\n")


def failure_comment(facts: RunFacts, reason: str, secrets: Iterable[str] = (), what: str = "resolve this issue") -> str:
    text = (f"{MARKER}\nlive-swe could not {what}, so nothing was pushed.\n\n"
            f"- reason: {one_line(reason, 500)}\n"
            f"- status: `{facts.status}` after {facts.steps} steps, cost ${facts.cost:.4f}\n"
            f"- model: `{one_line(facts.model, 120)}`, session `{facts.session_id}`\n")
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
    return redact(f"{MARKER}\n{what}: {one_line(reason, 500)}\n", secrets)


def link_comment(pr_number: int, pr_url: str, updated: bool, facts: RunFacts) -> str:
    verb = "updated" if updated else "opened"
    return (f"{MARKER}\nlive-swe {verb} pull request #{pr_number} for this issue: {pr_url}\n"
            f"({facts.steps} steps, ${facts.cost:.4f})\n")
