"""Modal questions: confirm a command, message a paused agent, pick a session, finish a run."""

from __future__ import annotations

from rich.syntax import Syntax
from rich.text import Text
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from live_swe.agent.interfaces import Decision
from live_swe.tui.widgets import _diff_text

MODAL_CSS = """
{name} {{ align: center middle; }}
{name} > Vertical {{ width: 90%; max-width: 110; height: auto; max-height: 90%; border: thick $accent;
    background: $surface; padding: 1 2; }}
{name} .question {{ text-style: bold; margin-bottom: 1; }}
{name} Horizontal {{ height: auto; margin-top: 1; }}
{name} Button {{ margin-right: 1; }}
{name} Input {{ margin-top: 1; }}
"""


class ApprovalScreen(ModalScreen[Decision]):
    """The agent wants to run a command: approve, edit it, or reject it with a comment."""

    DEFAULT_CSS = MODAL_CSS.format(name="ApprovalScreen")
    BINDINGS = [
        Binding("y", "approve", "Approve"),
        Binding("e", "edit", "Edit"),
        Binding("r", "reject", "Reject"),
        Binding("a", "approve_all", "Approve all"),
    ]

    def __init__(self, command: str):
        super().__init__()
        self.command = command
        self._editing: str | None = None  # "edit" or "reject" while the input is open

    def compose(self):
        with Vertical():
            yield Label("The agent wants to run:", classes="question")
            yield Static(Syntax(self.command, "bash", theme="ansi_dark", word_wrap=True), id="command")
            with Horizontal():
                yield Button("Approve [y]", id="approve", variant="success")
                yield Button("Edit [e]", id="edit")
                yield Button("Reject [r]", id="reject", variant="error")
                yield Button("Approve all [a]", id="approve_all", variant="warning")
            yield Input(id="answer", classes="-hidden")

    def on_mount(self) -> None:
        self.query_one("#answer", Input).display = False
        self.query_one("#approve", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.run_action(event.button.id)

    def action_approve(self) -> None:
        if self._editing is None:
            self.dismiss(Decision("approve"))

    def action_approve_all(self) -> None:
        if self._editing is None:
            self.app.set_approval_mode("auto")
            self.dismiss(Decision("approve"))

    def action_edit(self) -> None:
        self._open_input("edit", self.command, "the command to run instead (Enter to run it)")

    def action_reject(self) -> None:
        self._open_input("reject", "", "why not? (sent to the agent; Enter to reject)")

    def _open_input(self, kind: str, value: str, placeholder: str) -> None:
        if self._editing is not None:
            return
        self._editing = kind
        answer = self.query_one("#answer", Input)
        answer.value, answer.placeholder, answer.display = value, placeholder, True
        answer.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if self._editing == "edit":
            if text:
                self.dismiss(Decision("edit", command=text))
        elif self._editing == "reject":
            self.dismiss(Decision("reject", comment=text))


class PauseScreen(ModalScreen[str]):
    """The agent is paused between steps: a message for it, or nothing, and it goes on."""

    DEFAULT_CSS = MODAL_CSS.format(name="PauseScreen")

    def compose(self):
        with Vertical():
            yield Label("The agent is paused. Tell it something, then press Enter to let it go on:",
                        classes="question")
            yield Input(placeholder="a message for the agent (empty: just go on)", id="message")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)


class SessionPicker(ModalScreen[str | None]):
    """Earlier sessions, newest first; Enter resumes one."""

    DEFAULT_CSS = MODAL_CSS.format(name="SessionPicker") + "SessionPicker OptionList { height: auto; max-height: 20; }"
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, metas):
        super().__init__()
        self.metas = list(metas)

    def compose(self):
        with Vertical():
            yield Label("Resume a session (Enter) or Esc to cancel:", classes="question")
            if self.metas:
                yield OptionList(*[
                    Option(f"{m.id}  {m.status:<15} {m.steps:>3} steps  {' '.join(m.task.split())[:50]}", id=m.id)
                    for m in self.metas
                ])
            else:
                yield Static("No sessions yet.")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class FinishScreen(ModalScreen[str]):
    """The run ended: keep the work as a commit on a new branch, discard it, or decide later."""

    DEFAULT_CSS = MODAL_CSS.format(name="FinishScreen") + "FinishScreen #patch { height: auto; max-height: 20; }"
    BINDINGS = [
        Binding("k", "choose('keep')", "Keep"),
        Binding("d", "choose('discard')", "Discard"),
        Binding("escape", "choose('later')", "Later"),
    ]

    def __init__(self, summary: str, patch: str, branch: str):
        super().__init__()
        self.summary = summary
        self.patch = patch
        self.branch = branch

    def compose(self):
        with Vertical():
            yield Label(self.summary, classes="question")
            with VerticalScroll(id="patch"):
                yield Static(_diff_text(self.patch) if self.patch.strip() else Text("The agent changed nothing."))
            with Horizontal():
                yield Button(f"Keep as a commit on {self.branch} [k]", id="keep", variant="success")
                yield Button("Discard [d]", id="discard", variant="error")
                yield Button("Decide later [esc]", id="later")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id)

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)


class DirtyTreeScreen(ModalScreen[bool]):
    """The repository has uncommitted changes: set them aside for the run (restored after), or stop."""

    DEFAULT_CSS = MODAL_CSS.format(name="DirtyTreeScreen")
    BINDINGS = [Binding("s", "choose(True)", "Set aside"), Binding("escape", "choose(False)", "Cancel")]

    def __init__(self, changes: list[str]):
        super().__init__()
        self.changes = changes

    def compose(self):
        shown = "\n".join(self.changes[:15]) + (f"\n… and {len(self.changes) - 15} more" if len(self.changes) > 15 else "")
        with Vertical():
            yield Label("Your repository has uncommitted changes:", classes="question")
            yield Static(Text(shown))
            yield Static("live-swe will not mix them with the agent's work. Set them aside (git stash) for "
                         "the run and restore them afterwards, or cancel and commit them yourself.")
            with Horizontal():
                yield Button("Set aside and run [s]", id="yes", variant="warning")
                yield Button("Cancel [esc]", id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_choose(self, choice: bool) -> None:
        self.dismiss(choice)
