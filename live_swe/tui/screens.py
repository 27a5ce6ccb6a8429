"""Modal questions: confirm a command, message a paused agent, pick a session, finish a run."""

from __future__ import annotations

from rich.syntax import Syntax
from rich.text import Text
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from live_swe.agent.interfaces import Decision
from live_swe.tui.widgets import _diff_text

MODAL_CSS = """
{name} {{ align: center middle; }}
{name} > Vertical {{ width: 90%; max-width: 110; height: auto; max-height: 90%; border: thick $accent;
    background: $surface; padding: 1 2; }}
{name} .question {{ text-style: bold; margin-bottom: 1; }}
{name} Horizontal {{ height: auto; margin-top: 1; }}
{name} Button {{ margin-right: 1; min-width: 8; }}
{name} Input {{ margin-top: 1; }}
"""


def keyed(label: str, key: str) -> Text:
    """A button label with its key, as plain text: a string would be read as markup, and "[y]" vanish."""
    return Text(f"{label} [{key}]")


class ApprovalScreen(ModalScreen[Decision]):
    """The agent wants to run a command: approve, edit it (a multi-line editor: a heredoc is one
    command), or reject it with a comment."""

    DEFAULT_CSS = MODAL_CSS.format(name="ApprovalScreen") + (
        "ApprovalScreen #editor { height: auto; min-height: 5; max-height: 20; margin-top: 1; }")
    BINDINGS = [
        Binding("y", "approve", "Approve"),
        Binding("e", "edit", "Edit"),
        Binding("r", "reject", "Reject"),
        Binding("a", "approve_all", "Approve all"),
        Binding("ctrl+s", "run_edited", "Run edited", priority=True),
        Binding("escape", "close_input", "Back", priority=True),
    ]

    def __init__(self, command: str):
        super().__init__()
        self.command = command
        self._editing: str | None = None  # "edit" or "reject" while the editor or input is open

    def compose(self):
        with Vertical():
            yield Label("The agent wants to run:", classes="question")
            yield Static(Syntax(self.command, "bash", theme="ansi_dark", word_wrap=True), id="command")
            with Horizontal(id="choices"):
                yield Button(keyed("Approve", "y"), id="approve", variant="success")
                yield Button(keyed("Edit", "e"), id="edit")
                yield Button(keyed("Reject", "r"), id="reject", variant="error")
                yield Button(keyed("Approve all", "a"), id="approve_all", variant="warning")
            yield TextArea(self.command, id="editor", language=None, soft_wrap=True, show_line_numbers=True)
            yield Input(id="answer")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#answer", Input).display = False
        self.query_one("#editor", TextArea).display = False
        self.query_one("#approve", Button).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("run_edited",):
            return self._editing == "edit"
        if action == "close_input":
            return self._editing is not None
        if action in ("approve", "approve_all", "edit", "reject"):
            return self._editing is None  # False: left out of the footer
        return True

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
        if self._editing is not None:
            return
        self._set_editing("edit")
        editor = self.query_one("#editor", TextArea)
        editor.border_title = "the command to run instead (Ctrl+S runs it, Esc goes back)"
        editor.display = True
        editor.focus()

    def action_reject(self) -> None:
        if self._editing is not None:
            return
        self._set_editing("reject")
        answer = self.query_one("#answer", Input)
        answer.value, answer.placeholder, answer.display = "", "why not? (sent to the agent; Enter to reject)", True
        answer.focus()

    def action_run_edited(self) -> None:
        text = self.query_one("#editor", TextArea).text.strip()
        if self._editing == "edit" and text:
            self.dismiss(Decision("edit", command=text))

    def action_close_input(self) -> None:
        self.query_one("#editor", TextArea).display = False
        self.query_one("#answer", Input).display = False
        self._set_editing(None)
        self.query_one("#approve", Button).focus()

    def _set_editing(self, kind: str | None) -> None:
        self._editing = kind
        self.refresh_bindings()  # the footer shows the keys that work now

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if self._editing == "reject":
            self.dismiss(Decision("reject", comment=event.value.strip()))


class PauseScreen(ModalScreen[str]):
    """The agent is paused between steps: a message for it, or nothing, and it goes on."""

    DEFAULT_CSS = MODAL_CSS.format(name="PauseScreen")

    def compose(self):
        with Vertical():
            yield Label("The agent is paused. Tell it something, then press Enter to let it go on:",
                        classes="question")
            yield Input(placeholder="a message for the agent (empty: just go on)", id="message")
        yield Footer()

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
                    Option(Text(f"{m.id}  {m.status:<15} {m.steps:>3} steps  {' '.join(m.task.split())[:50]}"), id=m.id)
                    for m in self.metas
                ])
            else:
                yield Static("No sessions yet.")
        yield Footer()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class FinishScreen(ModalScreen[str]):
    """The run ended: keep the work as a commit on a new branch, discard it, or decide later."""

    DEFAULT_CSS = MODAL_CSS.format(name="FinishScreen") + "FinishScreen #patch { height: auto; max-height: 35vh; }"
    BINDINGS = [
        Binding("k", "choose('keep')", "Keep"),
        Binding("d", "choose('discard')", "Discard"),
        Binding("f", "choose('follow_up')", "Follow up"),
        Binding("escape", "choose('later')", "Later"),
    ]

    def __init__(self, summary: str, patch: str, branch: str):
        super().__init__()
        self.summary = summary
        self.patch = patch
        self.branch = branch

    def compose(self):
        with Vertical():
            yield Label(Text(self.summary), classes="question")  # a model's error text is not markup
            with VerticalScroll(id="patch"):
                yield Static(_diff_text(self.patch) if self.patch.strip() else Text("The agent changed nothing."))
            if self.patch.strip():
                yield Static(Text(f"Keep: a commit on a new branch, {self.branch}."))
            with Horizontal():  # short labels: the row fits an 80-column terminal
                if self.patch.strip():  # nothing changed: nothing to keep or discard
                    yield Button(keyed("Keep", "k"), id="keep", variant="success")
                    yield Button(keyed("Discard", "d"), id="discard", variant="error")
                yield Button(keyed("Follow up", "f"), id="follow_up", variant="primary")
                yield Button(keyed("Decide later", "esc"), id="later")
        yield Footer()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "choose" and parameters and parameters[0] in ("keep", "discard") and not self.patch.strip():
            return False  # nothing changed: nothing to keep or discard (and no key for it in the footer)
        return True

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
                yield Button(keyed("Set aside and run", "s"), id="yes", variant="warning")
                yield Button(keyed("Cancel", "esc"), id="no")
        yield Footer()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_choose(self, choice: bool) -> None:
        self.dismiss(choice)
