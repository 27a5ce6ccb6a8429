"""How the session log's events read for people, in one place: the progress line of ``live-swe run``
and ``live-swe github``, the lines of ``sessions show`` and ``sessions log``, the TUI's entries and the
pull request's body all word an event through these functions. (The notes the model reads are the
guard's, in ``live_swe.evolution.notes``.)"""

from __future__ import annotations

from live_swe import events as ev

# A scaffold change's kind, as people read it.
CHANGE_WORDS = {"commit": "accepted", "reject": "refused", "rollback": "rolled back"}
CHANGE_MARKS = {"commit": "✓", "reject": "✗", "rollback": "↶"}

# Contract event kinds: contained hard violations, and every kind that is a violation to report.
CONTAINED = ("blocked", "reverted", "masked")
HARD_KINDS = CONTAINED + ("violated",)
VIOLATION_KINDS = HARD_KINDS + ("detected", "persistent", "final_revert")
_CONTRACT_VERBS = {"blocked": "blocked", "reverted": "reverted", "masked": "masked", "violated": "NOT contained",
                   "detected": "soft, detected", "persistent": "soft, persistent"}


def change_word(kind: str) -> str:
    return CHANGE_WORDS.get(kind, kind)


def change_summary(change: ev.ScaffoldChange) -> str:
    """``accepted prompts/system.j2: why``: the one line a progress display shows for a change."""
    line = f"{change_word(change.kind)} {', '.join(change.files) or '-'}"
    return line + (f": {change.why[:160]}" if change.why else "")


def change_log_line(change: ev.ScaffoldChange) -> str:
    """One ``sessions log`` line: step, accepted or not, commit, files, the agent's reason, the gates' why."""
    line = (f"step {change.step if change.step is not None else '-':>4}  {change_word(change.kind):<11} "
            f"{change.rev[:8]:<8}  {', '.join(change.files) or '-'}")
    line += f"  — {change.reason}" if change.reason else ""
    line += f"  [{change.why}]" if change.why else ""
    return " ".join(line.split("\n"))


def change_counts(changes: list[ev.ScaffoldChange]) -> str:
    """``2 accepted, 1 refused, 0 rolled back``."""
    return ", ".join(f"{sum(c.kind == kind for c in changes)} {word}" for kind, word in CHANGE_WORDS.items())


def evolution_title(event: ev.ScaffoldChange | ev.ToolChange) -> str:
    """The title of the TUI's entry for a tool or scaffold change."""
    if isinstance(event, ev.ToolChange):
        mark = "✓" if event.kind == "registered" else "✗"
        return f"{mark} step {event.step or 0}: tool {event.name or '?'} {event.kind}"
    files = ", ".join(event.files) or "(no files)"
    return f"{CHANGE_MARKS.get(event.kind, '·')} step {event.step or 0}: scaffold {event.kind}: {files}"


def contract_line(event: ev.ContractEvent) -> str:
    """One line per violation, for people: ``sessions show``, the PR body, the TUI."""
    if event.kind == "final_revert":
        return f"step {event.step}: patch cleaned: {', '.join(event.extra.get('files') or [])} reset"
    verb = _CONTRACT_VERBS.get(event.kind, event.kind)
    message = f": {event.extra['message']}" if event.extra.get("message") else ""
    return f"step {event.step}: {event.rule} ({verb}){message}"


def contract_progress_line(event: ev.ContractEvent) -> str | None:
    """The line a progress display shows for a contract event, or None for those it skips."""
    kind, step = event.kind, event.step
    if kind in VIOLATION_KINDS:
        return "contract " + contract_line(event)
    if kind == "recovered":
        return f"contract step {step}: {event.rule} recovered within {event.extra.get('within')} steps"
    if kind in ("autonomy", "escalate"):
        return f"contract step {step}: {event.extra.get('reason')}; every command now needs your confirmation"
    if kind == "fallback":
        return f"contract step {step}: {event.rule} not restored; fallback: {event.extra.get('fallback')}"
    return None


def first_line(text: str, limit: int = 100) -> str:
    return (text.splitlines() or [""])[0][:limit]


def progress_line(event: ev.Event) -> str | None:
    """The one line a progress display (``live-swe run``, ``live-swe github``) shows, or None."""
    match event:
        case ev.Step():
            return f"[step {event.step}] rc={event.returncode} $ {first_line(event.command)}"
        case ev.FormatError():
            return f"[step {event.step}] format error: {event.reason}"
        case ev.ScaffoldChange():
            return f"[step {event.step}] scaffold {event.kind}: {event.summary or change_summary(event)}"
        case ev.ToolChange():
            return f"[step {event.step}] tool {event.kind} {event.name}".rstrip()
        case ev.ContractEvent():
            line = contract_progress_line(event)
            return f"live-swe: {line}" if line else None
        case ev.Note():
            return f"live-swe: {event.text}"
    return None


# -- the TUI's step cards and notes
def review_text(review: ev.Review) -> str:
    """How a person's decision on a command reads on its step card."""
    return {"approve": "approved", "edit": f"edited to: {review.command}",
            "reject": f"rejected: {review.comment or '(no comment)'}"}.get(review.decision, review.decision)


def instructions_title(event: ev.RepoInstructions) -> str:
    return f"Repository instructions: {', '.join(event.files)} ({event.chars:,} characters)"


def evolution_body(event: ev.ScaffoldChange | ev.ToolChange) -> list[str]:
    """The parts of the TUI's entry for a change, before any diff: the agent's reason, the gates' why."""
    if isinstance(event, ev.ToolChange):
        return [event.why or ("ready for the next step" if event.kind == "registered" else "")]
    return ([f"reason: {event.reason}"] if event.reason else []) + ([f"why: {event.why}"] if event.why else [])


# -- kernel-events: the demo's own progress lines ---------------------------------------------------------
def demo_line(event: ev.Event) -> str | None:
    """The line ``live-swe demo`` shows under the streamed reply, or None."""
    match event:
        case ev.Step():
            return f"  -> [step {event.step}] exit code {event.returncode}"
        case ev.FormatError():
            return f"  -> [step {event.step}] format error: {event.reason}"
        case ev.Note():
            return f"live-swe: {event.text}"
    return None


def github_line(event: ev.Event) -> str | None:
    """The line ``live-swe github resolve`` logs (the Action's log) for a step or a change, or None."""
    match event:
        case ev.Step():
            return f"step {event.step} rc={event.returncode} $ {first_line(event.command)}"
        case ev.FormatError():
            return f"step {event.step}: format error"
        case ev.ScaffoldChange():
            return f"step {event.step}: scaffold {event.kind}"
        case ev.ToolChange():
            return f"step {event.step}: tool {event.kind} {event.name}".rstrip()
    return None


# -- the pull request's body
def change_markdown(change: ev.ScaffoldChange, flatten) -> str:
    """A scaffold change as a line of the pull request's body; ``flatten`` makes agent-written text one
    harmless Markdown line (``live_swe.github.summary.one_line``)."""
    files = ", ".join(flatten(f, 80) for f in change.files) or "no files listed"
    step = f"step {change.step}" if change.step is not None else "a step"
    if change.kind == "commit":
        rev = change.rev[:10]
        why = f": {flatten(change.reason)}" if change.reason else ""
        return f"- committed at {step} ({files}){f' `{rev}`' if rev else ''}{why}"
    verb = "refused by the gates" if change.kind == "reject" else "rolled back"
    return f"- {verb} at {step} ({files}): {flatten(change.why or change.reason)}"
