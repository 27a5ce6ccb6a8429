"""The pieces of the main screen: status line, step cards, evolution panel, repository diff."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from rich.syntax import Syntax
from rich.text import Text
from textual.containers import Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.widgets import Collapsible, Static

from live_swe import events as ev
from live_swe import wording
from live_swe.agent.parse import BASH_BLOCK
from live_swe.evolution.history import HistoryError, ScaffoldHistory

OUTPUT_PREVIEW_CHARS = 20_000


def split_reply(message: dict[str, Any]) -> tuple[str, str]:
    """(thought, command) of an assistant message, for display only (the kernel parses for real)."""
    content = str(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        try:
            arguments = json.loads(call.get("function", {}).get("arguments") or "{}")
        except ValueError:
            arguments = {}
        command = arguments.get("command", "") if isinstance(arguments, dict) else ""
        return content.strip(), str(command)
    blocks = BASH_BLOCK.findall(content)
    thought = BASH_BLOCK.sub("", content).strip()
    thought = re.sub(r"^THOUGHT:\s*", "", thought)
    return thought, (blocks[0].strip() if blocks else "")


class StatusLine(Static):
    """run state · step · cost · elapsed · approval mode · network · model · tokens · session: what
    changes and matters most first, so a narrow terminal (80 columns) cuts only the end."""

    def show(self, *, model: str, step: int, tokens: int, cost: float, elapsed: float, mode: str,
             session: str, state: str, network: str = "off") -> None:
        minutes, seconds = divmod(int(elapsed), 60)
        text = Text()
        for label, value in (
            ("", state), ("step", str(step)), ("cost", f"${cost:.4f}"), ("time", f"{minutes:02d}:{seconds:02d}"),
            ("mode", mode), ("net", network), ("model", model or "-"), ("tokens", f"{tokens:,}"),
            ("session", session or "-"),
        ):
            if text:
                text.append(" │ ", style="dim")
            if label:
                text.append(f"{label} ", style="dim")
            text.append(value, style="bold")
        self.update(text)
        self.plain = text.plain


class StepCard(Vertical):
    """One step: the thought, the command, how it was reviewed, and its output (collapsed)."""

    DEFAULT_CSS = """
    StepCard { height: auto; border: round $primary 50%; padding: 0 1; margin: 0 0 1 0; }
    StepCard .title { text-style: bold; }
    StepCard .thought { color: $text-muted; }
    StepCard .command { background: $boost; }
    StepCard .review { color: $warning; }
    StepCard Collapsible { border: none; padding: 0; }
    """

    def __init__(self, step: int, thought: str, command: str):
        super().__init__()
        self.step = step
        self.thought = thought
        self.command = command
        self.output: str | None = None  # what the command printed (known for steps run in this app)
        self.observation = ""  # what the model was sent
        self.model_view = False  # show the observation instead of the output
        self.review = ""
        self.returncode: int | None = None
        self.timed_out = False

    def compose(self):
        yield Static(self._title(), classes="title")
        yield Static(Text(self.thought or "(no thought given)"), classes="thought")
        yield Static(Syntax(self.command or "(no command)", "bash", theme="ansi_dark", word_wrap=True),
                     classes="command")
        yield Static(Text(self.review), classes="review")
        with Collapsible(title=self._output_title(), collapsed=True):
            yield Static(Text(self.shown_output[:OUTPUT_PREVIEW_CHARS]), classes="output")

    def on_mount(self) -> None:
        self._apply()  # anything set between composing and mounting

    def set_review(self, text: str) -> None:
        self.review = text
        self._apply()

    def set_output(self, text: str) -> None:
        """What the command printed."""
        self.output = text
        self._apply()

    def set_observation(self, text: str) -> None:
        """What the model was sent for this step."""
        self.observation = text
        self._apply()

    def set_model_view(self, on: bool) -> None:
        self.model_view = on
        self._apply()

    @property
    def shown_output(self) -> str:
        """The command's own output; the model's view when asked for, or when that is all there is
        (a step shown from the log of an earlier run)."""
        if self.model_view or self.output is None:
            return self.observation
        return self.output

    def set_result(self, returncode: int, timed_out: bool = False) -> None:
        self.returncode, self.timed_out = returncode, timed_out
        self._apply()

    def _title(self) -> str:
        if self.returncode is None:
            return f"Step {self.step}"
        return f"Step {self.step} · " + ("timed out" if self.timed_out else f"exit {self.returncode}")

    def _output_title(self) -> str:
        if self.model_view or self.output is None:
            label, shown = "model view", self.observation
        else:
            label, shown = "output", self.output
        if not shown:
            return f"{label} (empty)" if self.output is not None or self.observation else "output"
        lines = len(shown.splitlines())
        return f"{label} ({lines} line{'s' if lines != 1 else ''})"

    def _apply(self) -> None:
        """Show the current fields; before the children exist, compose shows them instead."""
        try:
            self.query_one(".title", Static).update(self._title())
            self.query_one(".review", Static).update(Text(self.review))
            self.query_one(".output", Static).update(Text(self.shown_output[:OUTPUT_PREVIEW_CHARS]))
            self.query_one(Collapsible).title = self._output_title()
        except NoMatches:
            pass


class StepLog(VerticalScroll):
    """The step cards, newest at the bottom, following the agent."""

    def card(self, step: int) -> StepCard | None:
        for card in self.query(StepCard):
            if card.step == step:
                return card  # a step has at most one command card
        return None

    def last_card(self) -> StepCard | None:
        cards = list(self.query(StepCard))
        return cards[-1] if cards else None


def scaffold_diff(session_dir: Path, rev: str) -> str:
    """The accepted change ``rev`` from the session's scaffold history."""
    try:
        return ScaffoldHistory(session_dir / "scaffold.git", session_dir / "scaffold").show(rev)
    except HistoryError as exc:
        return f"(the diff of {rev[:10]} could not be read: {exc})"


class EvolutionPanel(VerticalScroll):
    """Tools registered or refused, and scaffold changes committed, rejected or rolled back."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.entries: list[dict[str, Any]] = []
        self.session_dir: Path | None = None

    def compose(self):
        yield Static("No tools or scaffold changes yet.", id="evolution-empty")

    def clear(self) -> None:
        self.entries = []
        self.query(Collapsible).remove()
        self.query_one("#evolution-empty").display = True

    def add(self, event: ev.ScaffoldChange | ev.ToolChange) -> None:
        title = wording.evolution_title(event)
        parts = wording.evolution_body(event)
        if isinstance(event, ev.ScaffoldChange):
            if event.kind == "commit" and event.rev and self.session_dir is not None:
                parts.append(scaffold_diff(self.session_dir, event.rev))
            elif event.extra.get("diff"):
                parts.append(str(event.extra["diff"]))
        body = "\n\n".join(parts)
        self.entries.append({"title": title, "body": body, "event": event})
        self.query_one("#evolution-empty").display = False
        self.mount(Collapsible(Static(_diff_text(body)), title=title, collapsed=True))


class DiffView(VerticalScroll):
    """The repository's diff against the commit the run started from."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.diff = ""

    def compose(self):
        yield Static("No changes yet.", id="diff-body")

    def show(self, diff: str) -> None:
        self.diff = diff
        body = self.query_one("#diff-body", Static)
        body.update(_diff_text(diff) if diff.strip() else "No changes yet.")


def _diff_text(diff: str) -> Text:
    text = Text()
    for line in diff.splitlines():
        style = ""
        if line.startswith("+") and not line.startswith("+++"):
            style = "green"
        elif line.startswith("-") and not line.startswith("---"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        text.append(line + "\n", style=style)
    return text


class GradeView(VerticalScroll):
    """The finished run's grade: one line per metric, then the findings with their steps."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lines: list[str] = []

    def compose(self):
        yield Static("", id="grade-body")

    def show(self, lines: list[str]) -> None:
        self.lines = list(lines)
        self.query_one("#grade-body", Static).update(Text("\n".join(self.lines)))
