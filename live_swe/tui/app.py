"""The interactive terminal UI: a task box, the agent working step by step, its evolution, the
repository diff, and what to do with the work at the end.

The agent runs in a thread worker (``live_swe.runner`` like every front end); the interface
talks to it only through :class:`~live_swe.tui.bridge.AgentBridge`, so it never blocks.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Collapsible, Footer, Static, TabbedContent, TabPane, TextArea
from textual.worker import Worker, WorkerState

from live_swe import events as ev
from live_swe import wording
from live_swe.config import KernelLimits
from live_swe.errors import UserError
from live_swe.grading.report import finding_text, headline, metric_lines
from live_swe.grading.session import current_grade
from live_swe.infra.git import Identity, user_identity
from live_swe.models.resolve import make_model
from live_swe.repo_instructions import from_work_tree
from live_swe.runner import RunHooks, RunRequest, resume_run, start_run
from live_swe.session.baseline import changes_not_in
from live_swe.session.store import RunStatus, SessionError, SessionStore, new_session_id
from live_swe.session.trust import trusted_start
from live_swe.session.view import SessionView
from live_swe.tui.bridge import (
    AgentBridge,
    AgentEvent,
    ApprovalMode,
    ApprovalRequested,
    CommandOutput,
    DiffUpdated,
    PauseReached,
    TokensStreamed,
    answer,
)
from live_swe.tui.screens import ApprovalScreen, DirtyTreeScreen, FinishScreen, PauseScreen, SessionPicker
from live_swe.tui.slash import (
    COMMANDS,
    SlashCommand,
    attach_mentions,
    complete,
    completions,
    help_text,
    mention_at,
    parse_command,
)
from live_swe.tui.widgets import (
    DiffView,
    EvolutionPanel,
    GradeView,
    StatusLine,
    StepCard,
    StepLog,
    split_reply,
)
from live_swe.tui.worktree import KeptCommit, WorkTree

CSS = """
Screen:inline { height: 80vh; }
StatusLine { height: 1; background: $panel; padding: 0 1; }
#main { height: 1fr; }
#left { width: 3fr; }
#task { height: 6; border: round $accent; }
#task:disabled { opacity: 70%; }
#hint { height: 1; color: $text-muted; padding: 0 1; }
StepLog { height: 1fr; padding: 0 1; }
#stream { height: auto; max-height: 8; color: $text-muted; padding: 0 1; }
#right { width: 2fr; }
.note { color: $accent; margin: 0 0 1 0; }
"""


_SLASH_ACTIONS = {"resume": "resume_picker", "undo": "undo_commit", "new": "new_task"}


class LiveSweApp(App):
    TITLE = "live-swe"
    CSS = CSS
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("ctrl+r", "run_task", "Run task", priority=True),
        Binding("f2", "cycle_mode", "Approval mode", priority=True),
        # priority: a confirmation dialog open on top must not swallow it; check_action lets it
        # through to the dialogs whenever the agent is not running
        Binding("escape", "pause", "Pause & message", priority=True),
        Binding("f3", "resume_picker", "Resume"),
        Binding("f4", "finish", "Keep / discard"),
        Binding("f6", "undo_commit", "Undo commit"),
        Binding("ctrl+n", "new_task", "New task"),
        Binding("f5", "next_tab", "Diff/Evolution"),
        Binding("f8", "toggle_model_view", "Model view"),
        Binding("ctrl+q", "quit", "Quit", priority=True),
        Binding("tab", "complete_mention", "Complete @path", show=False, priority=True),
    ]

    def __init__(
        self,
        repo: Path,
        model: str,
        *,
        env: str = "local",
        image: str | None = None,
        limits: KernelLimits | None = None,
        model_factory: Callable[[str], Any] | None = None,
        store: SessionStore | None = None,
        session_id: str | None = None,
        approval_mode: ApprovalMode = ApprovalMode.CONFIRM,
        clock: Callable[[], float] = time.monotonic,
        task: str = "",
        network: bool = False,
        sandbox: str = "bubblewrap",
        repo_instructions: bool = True,
        contract_files: tuple[Path, ...] = (),
    ):
        super().__init__()
        self.repo = Path(repo).resolve()
        self.model_name = model
        self.env_kind = env
        self.image = image
        self.network = network  # the local sandbox's network
        self.sandbox = sandbox
        self.read_instructions = repo_instructions  # the repository's AGENTS.md & co. into the first prompt
        self.contract_files = tuple(contract_files)  # added to the built-in, yours and the repository's
        self.instructions = None  # what the current run got (RepoInstructions)
        self.limits = limits or KernelLimits()
        self.store = store or SessionStore.default()
        self._model_factory = model_factory
        self._fixed_session_id = session_id
        self._clock = clock
        self._initial_task = task
        self.bridge = AgentBridge(self, approval_mode)
        self.state = "idle"  # idle, running, paused, stopping, finished
        self.session_id = ""
        self.task_text = ""
        self.follow_ups: list[str] = []  # what the person asked for after the first run of the conversation
        self.step = 0
        self.cost = 0.0
        self.result = None
        self.kept: KeptCommit | None = None
        self.stash: str | None = None  # the user's own changes, set aside for the run
        self._identities: dict[Path, Identity | None] = {}  # the person's git identity, read before a run
        self._started_at: float | None = None
        self._elapsed = 0.0
        self._stream = ""
        self.streamed: list[str] = []  # every streamed piece of every reply, in order
        self._worker: Worker | None = None
        self._quitting = False
        self.model_view = False  # step cards show what the model was sent instead of the output
        self._keys_state: tuple = ()
        self._repo_files: list[str] | None = None  # for @ mentions, listed once

    # -- layout
    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield TextArea(self._initial_task, id="task", soft_wrap=True, show_line_numbers=False)
                yield Static("Type the task, then Ctrl+R to run it.",
                             id="hint")
                yield StepLog(id="steps")
                yield Static("", id="stream")
            with TabbedContent(id="right", initial="diff-tab"):
                with TabPane("Diff", id="diff-tab"):
                    yield DiffView(id="diff")
                with TabPane("Evolution", id="evolution-tab"):
                    yield EvolutionPanel(id="evolution")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#task", TextArea).border_title = f"Task for {self.repo.name}"
        self.query_one("#task", TextArea).focus()
        self.refresh_status()
        self.set_interval(1.0, self.refresh_status)

    # -- status
    @property
    def elapsed(self) -> float:
        if self._started_at is not None and self.state in ("running", "paused", "stopping"):
            return self._elapsed + self._clock() - self._started_at
        return self._elapsed

    def refresh_status(self) -> None:
        if not self.query(StatusLine):  # the app is closing (its widgets are gone), or not mounted yet
            return
        keys_state = (self.state, self.result is None, self.kept is None, self.bridge.pause_requested.is_set())
        if keys_state != self._keys_state:  # what the footer offers depends on these
            self._keys_state = keys_state
            self.refresh_bindings()
        model = self.bridge.model
        self.query(StatusLine).first().show(
            model=self.model_name, step=self.step, tokens=model.tokens if model else 0, cost=self.cost,
            elapsed=self.elapsed, mode=self.bridge.mode.value, session=self.session_id, state=self.state,
            network=self.network_state,
        )

    @property
    def network_state(self) -> str:
        """What the status line says of the agent's network: off in the sandbox unless allowed."""
        if self.env_kind != "local":
            return "on (container)"
        if self.sandbox == "none":
            return "on (no sandbox)"
        return "on" if self.network else "off"

    def set_approval_mode(self, mode: str | ApprovalMode) -> None:
        self.bridge.mode = ApprovalMode(mode)
        self.refresh_status()

    # -- starting a run
    def action_run_task(self) -> None:
        if self.state in ("running", "paused", "stopping"):
            self.notify("The agent is already working.", severity="warning")
            return
        task = self.query_one("#task", TextArea).text.strip()
        if not task:
            self.notify("Type a task first.", severity="warning")
            return
        command = parse_command(task)
        if command is not None:
            self.query_one("#task", TextArea).load_text("")
            self._slash(command)
            return
        task = attach_mentions(task, set(self._files()))
        if self.conversation_open:
            self._follow_up(task)  # the tree holds the conversation's own work, not the person's changes
            return
        try:
            changes = self._worktree().user_changes()
        except UserError as exc:
            self.notify(str(exc), severity="error")
            return
        if not changes:
            self._start(task)
            return

        def decided(set_aside: bool | None) -> None:
            if set_aside:
                self._start(task, set_aside=True)
            else:
                self.notify("Nothing was run; commit or stash your changes, or set them aside here.")

        self.push_screen(DirtyTreeScreen(changes), decided)

    def _start(self, task: str, set_aside: bool = False) -> None:
        self.session_id = self._fixed_session_id or new_session_id()
        self._fixed_session_id = None  # the next run gets a fresh session
        if set_aside:
            self.stash = self._worktree().stash_user_changes(self.session_id)
            self.notify("Your uncommitted changes are set aside (git stash) and come back after the run.")
        self._reset_run_view(task)
        self.instructions = from_work_tree(self.repo, Path.cwd()) if self.read_instructions else None
        self._launch(lambda: self._run_new(task, self.session_id))

    @property
    def conversation_open(self) -> bool:
        """A run has ended and its work is neither kept nor discarded: what is typed next follows up."""
        return self.state == "finished" and self.result is not None and bool(self.session_id)

    def _follow_up(self, task: str) -> None:
        """The same agent goes on with the same conversation, on top of its own changes."""
        session_id = self.session_id
        self.follow_ups.append(task)
        self.result = None
        task_box = self.query_one("#task", TextArea)
        task_box.text = ""
        task_box.disabled = True
        self.query_one("#steps", StepLog).focus()

        def job():
            return resume_run(session_id, self._hooks(), store=self.store,
                              sandbox={"mode": self.sandbox, "network": self.network}, follow_up=task)

        self._launch(job)

    def action_new_task(self) -> None:
        """End the conversation: the next task starts a new session (unkept work counts as changes then)."""
        if self.state in ("running", "paused", "stopping"):
            return
        self.result = None
        self._show_hint()
        self.notify("The next task starts a new session.")

    def _show_hint(self) -> None:
        hint = ("Type a follow-up, Ctrl+R: the agent goes on (Ctrl+N: a new task)."
                if self.conversation_open else "Type the task, then Ctrl+R to run it.")
        self.query_one("#hint", Static).update(hint)

    def _run_new(self, task: str, session_id: str):
        request = RunRequest(task=task, model=self.model_name, repo=self.repo, env=self.env_kind, image=self.image,
                             limits=self.limits, session_id=session_id, sandbox=self.sandbox, network=self.network,
                             repo_instructions=self.instructions, contract_files=list(self.contract_files))
        return start_run(request, self._hooks(), store=self.store)

    def _hooks(self):
        make = self._model_factory or make_model
        return RunHooks(approver=self.bridge.approve, observers=[self.bridge.observe],
                        model_factory=self.bridge.model_factory(make), on_agent=self.bridge.attach,
                        on_token=self.bridge.on_token, before_step=self.bridge.before_step,
                        on_output=self.bridge.on_output)

    def _reset_run_view(self, task: str) -> None:
        self.task_text = task
        self.follow_ups = []
        self.step, self.cost, self.result, self.kept = 0, 0.0, None, None
        self._elapsed, self._stream = 0.0, ""
        self.query_one("#steps", StepLog).remove_children()
        self.query_one("#stream", Static).update("")
        self.query_one(DiffView).show("")
        if self.query("#grade-tab"):
            self.query_one("#right", TabbedContent).remove_pane("grade-tab")  # the grade of an earlier run
        evolution = self.query_one(EvolutionPanel)
        evolution.clear()  # a new session starts with the seed's evolution, not the last run's
        evolution.session_dir = self.store.root / self.session_id
        task_box = self.query_one("#task", TextArea)
        task_box.text = task
        task_box.disabled = True
        self.query_one("#steps", StepLog).focus()

    def _launch(self, job: Callable[[], Any]) -> None:
        self.bridge.stop_requested.clear()
        self.bridge.pause_requested.clear()
        self.state = "running"
        self._started_at = self._clock()
        self.refresh_status()
        self._worker = self.run_worker(job, thread=True, exit_on_error=False, name="agent", group="agent")

    # -- resuming
    def action_resume_picker(self) -> None:
        if self.state in ("running", "paused", "stopping"):
            self.notify("Wait for the agent to finish (or quit) before resuming another session.", severity="warning")
            return
        # a submitted session is finished; resuming it would run its last command again
        metas = sorted((m for m in self.store.list() if m.status != RunStatus.SUBMITTED), key=lambda m: m.created_at,
                       reverse=True)
        self.push_screen(SessionPicker(metas), self._resume)

    def _resume(self, session_id: str | None) -> None:
        if not session_id:
            return
        try:
            session = self.store.open(session_id)
            view = SessionView.read(session)
            start = trusted_start(session, view.events)  # where the session started, not what meta.json says now
        except (UserError, SessionError) as exc:
            self.notify(str(exc), severity="error", timeout=15)
            return
        if start.repo:
            self.repo = Path(start.repo)
            try:
                self._worktree()  # the person's identity, read before the agent runs again
                theirs = self._changes_since(session, start)
            except UserError as exc:
                self.notify(str(exc), severity="error", timeout=15)
                return
            if theirs:  # the person's own changes are set aside first, as for a new run

                def decided(set_aside: bool | None) -> None:
                    if not set_aside:
                        self.notify("Nothing was run; commit or stash your changes, or set them aside here.")
                    elif self._set_aside_for_resume(session, start):
                        self._resume_now(session, start, view)

                self.push_screen(DirtyTreeScreen(theirs), decided)
                return
        self._resume_now(session, start, view)

    def _changes_since(self, session, start) -> list[str]:
        """Uncommitted changes in the repository that are not the session's own work: in a container
        run every one is the person's; on local, those its saved patch does not account for."""
        if start.env != "local":
            return self._worktree().user_changes()
        return changes_not_in(self.repo, start.base_commit or "HEAD", session.patch())

    def _set_aside_for_resume(self, session, start) -> bool:
        """Stash everything (the person's changes, and the session's earlier work as the tree held it),
        then put the session's saved work back so the agent goes on from it."""
        tree = self._worktree()
        self.stash = tree.stash_user_changes(session.id)
        try:
            if start.env == "local":
                tree.apply_patch(session.patch())
        except UserError as exc:
            self._restore_user_changes()
            self.notify(f"Nothing was run: {exc}", severity="error", timeout=15)
            return False
        self.notify("Your uncommitted changes are set aside (git stash) and come back after the run.")
        return True

    def _resume_now(self, session, start, view: SessionView) -> None:
        meta = session.meta
        session_id = session.id
        self.model_name = start.model
        self.session_id = session_id
        self.instructions = None
        self._reset_run_view(meta.task)
        for event in view.events:  # what happened before, as it was shown then
            self._show_event(event)
        self._elapsed = meta.elapsed

        def job():
            return resume_run(session_id, self._hooks(), store=self.store,
                              sandbox={"mode": self.sandbox, "network": self.network})

        self._launch(job)

    # -- what the agent reports
    def on_agent_event(self, message: AgentEvent) -> None:
        self._show_event(message.event)
        self.refresh_status()

    def _show_event(self, event: ev.Event) -> None:
        log = self.query_one("#steps", StepLog)
        match event:
            case ev.Message():
                self._show_message(event, log)
            case ev.Review() | ev.Step() | ev.FormatError():
                self._show_on_card(event, log.card(event.step))
            case ev.ToolChange() | ev.ScaffoldChange():
                self.query_one(EvolutionPanel).add(event)
            case ev.RepoInstructions():
                text = self.instructions.text if self.instructions is not None else "(in the first prompt)"
                log.mount(Collapsible(Static(Text(text)), title=wording.instructions_title(event), collapsed=True,
                                      classes="instructions"))
            case ev.Resume():
                log.mount(Static(Text(f"Resumed at step {event.step}."), classes="note"))
            case ev.Note():
                log.mount(Static(Text(event.text), classes="note"))
            case ev.ContractEvent() if wording.contract_progress_line(event):
                log.mount(Static(Text(wording.contract_progress_line(event)), classes="note"))
            case ev.End():
                self.cost = event.cost or self.cost

    def on_command_output(self, message: CommandOutput) -> None:
        card = self.query_one("#steps", StepLog).card(message.step)
        if card is not None:
            card.set_output(message.text)

    def action_toggle_model_view(self) -> None:
        """Each step's output as the command printed it, or as the model was sent it."""
        self.model_view = not self.model_view
        for card in self.query(StepCard):
            card.set_model_view(self.model_view)
        self.notify("Steps show what the model was sent." if self.model_view else "Steps show the commands' output.")

    def action_next_tab(self) -> None:
        tabs = self.query_one("#right", TabbedContent)
        panes = [pane.id for pane in tabs.query(TabPane)]
        if tabs.active in panes:
            tabs.active = panes[(panes.index(tabs.active) + 1) % len(panes)]

    def _show_message(self, event: ev.Message, log: StepLog) -> None:
        msg, step = event.message, event.step
        if step == 0:
            return  # the system and task messages
        if event.follow_up:
            task = str(msg.get("content") or "").partition("<task>\n")[2].rpartition("\n</task>")[0]
            log.mount(Static(Text(f"You: {task}"), classes="note follow-up"))
        elif msg.get("role") == "assistant":
            thought, command = split_reply(msg)
            self._stream = ""
            self.query_one("#stream", Static).update("")
            card = StepCard(step, thought, command)
            card.model_view = self.model_view
            log.mount(card)
            self.step = max(self.step, step)
        elif msg.get("role") in ("user", "tool"):
            card = log.card(step)
            if card is not None and not card.observation:
                card.set_observation(str(msg.get("content") or ""))
            elif card is None:
                log.mount(Static(Text(f"You: {msg.get('content', '')}"), classes="note"))
        log.scroll_end(animate=False)

    def _show_on_card(self, event: ev.Review | ev.Step | ev.FormatError, card: StepCard | None) -> None:
        """A review, a step's result or a format error, on the card of its step."""
        if isinstance(event, ev.Step):
            self.step = max(self.step, event.step)
            self.cost = event.cost or self.cost
        if card is None:
            return
        if isinstance(event, ev.Review):
            card.set_review(wording.review_text(event))
        elif isinstance(event, ev.Step):
            card.set_result(event.returncode or 0, event.timed_out)
        else:
            card.set_review(f"format error: {event.reason}")

    def on_tokens_streamed(self, message: TokensStreamed) -> None:
        self._stream += message.text
        self.streamed.append(message.text)
        self.query_one("#stream", Static).update(Text(self._stream[-2000:]))

    def on_diff_updated(self, message: DiffUpdated) -> None:
        self.query_one(DiffView).show(message.diff)

    def on_approval_requested(self, message: ApprovalRequested) -> None:
        self.push_screen(ApprovalScreen(message.command), lambda decision: answer(message.answer, decision))

    def on_pause_reached(self, message: PauseReached) -> None:
        self.state = "paused"
        self.refresh_status()

        def sent(text: str | None) -> None:
            self.state = "running"
            self.refresh_status()
            answer(message.answer, text or "")

        self.push_screen(PauseScreen(), sent)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """What works now; the rest is left out of the footer (False), so it shows the keys that do."""
        busy = self.state in ("running", "paused", "stopping")
        available = {
            "pause": self.state == "running" and not self.bridge.pause_requested.is_set(),
            "run_task": not busy,
            "resume_picker": not busy,
            "finish": self.state == "finished" and self.result is not None,
            "undo_commit": self.kept is not None and not busy,
            "new_task": self.conversation_open,
            "complete_mention": self._mention() is not None,
        }.get(action, True)
        return bool(available)

    # -- the task box: slash commands and @ mentions
    def _slash(self, command: SlashCommand) -> None:
        name, argument = command.name, command.argument
        if name == "help":
            self.notify(help_text(), title="Commands", timeout=20)
        elif name == "model":
            if argument:
                self.model_name = argument
                self.refresh_status()
            self.notify(f"Model: {self.model_name}" + (" (from the next new session)" if self.conversation_open else ""))
        elif name == "mode":
            try:
                self.set_approval_mode(argument)
            except ValueError:
                self.notify(f"Unknown mode {argument!r}: use {COMMANDS['mode'][0][6:]}", severity="warning")
                return
            self.notify(f"Approval mode: {self.bridge.mode.value}")
        elif name in ("resume", "undo", "new") and self.check_action(_SLASH_ACTIONS[name], ()):
            getattr(self, f"action_{_SLASH_ACTIONS[name]}")()
        elif name == "grade" and self.state == "finished" and self.session_id:
            self.show_grade()
            self.call_after_refresh(self._show_grade_tab)
        elif name in COMMANDS:
            self.notify(f"/{name} is not available now.", severity="warning")
        else:
            self.notify(f"Unknown command /{name}.\n{help_text()}", severity="warning", timeout=20)

    def _show_grade_tab(self) -> None:
        if self.query("#grade-tab"):
            self.query_one("#right", TabbedContent).active = "grade-tab"

    def _files(self) -> list[str]:
        if self._repo_files is None:
            try:
                self._repo_files = self._worktree().files()
            except UserError:
                self._repo_files = []
        return self._repo_files

    def _mention(self) -> tuple[TextArea, int, int, str] | None:
        """The ``@prefix`` being typed in the task box: (box, row, column where it starts, prefix)."""
        box = self.query_one("#task", TextArea)
        if self.focused is not box or box.disabled:
            return None
        row, column = box.cursor_location
        found = mention_at(box.document.get_line(row), column)
        return (box, row, found[0], found[1]) if found else None

    def action_complete_mention(self) -> None:
        mention = self._mention()
        if mention is None:
            return
        box, row, start, prefix = mention
        completed = complete(prefix, self._files())
        if completed != prefix:
            box.replace(completed, (row, start), (row, start + len(prefix)))

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if event.text_area.id != "task":
            return
        mention = self._mention()
        hint = self.query_one("#hint", Static)
        if mention is not None:
            found = completions(mention[3], self._files())
            hint.update(f"@ {', '.join(found)}{' …' if len(found) == 8 else ''} (Tab completes)" if found
                        else "@ no file of the repository starts so")
        elif event.text_area.text.startswith("/"):
            hint.update("Commands: " + " ".join(usage.split()[0] for usage, _ in COMMANDS.values()) + " (Ctrl+R)")
        else:
            self._show_hint()

    def action_pause(self) -> None:
        self.bridge.request_pause()
        self.refresh_status()
        self.notify("The agent pauses after the current command.")

    def action_cycle_mode(self) -> None:
        self.set_approval_mode(self.bridge.mode.next())
        self.notify(f"Approval mode: {self.bridge.mode.value}")

    # -- the end of a run
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self._worker or event.state not in (
            WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED
        ):
            return
        self._elapsed = self.elapsed
        self.state = "finished"
        self._repo_files = None  # the run may have added files: listed again for the next mention
        self.query_one("#task", TextArea).disabled = False
        if event.state == WorkerState.SUCCESS:
            self.result = event.worker.result
            if self.result is not None:
                self.cost = self.result.cost
                self.query_one(DiffView).show(self.result.patch)
                if not self._quitting:
                    self.show_grade()
        else:
            error = event.worker.error
            self.notify(f"The run stopped: {error}", severity="error", timeout=15)
        self.refresh_status()
        if self._quitting:
            self._restore_user_changes()
            self.exit(self.result)
            return
        self._show_hint()
        if self.result is not None:
            self.action_finish()

    def show_grade(self) -> None:
        """The finished run's grade (the analysers': free and quick) in a Grade tab."""
        try:
            grade = current_grade(self.store.open(self.session_id))
        except (UserError, SessionError) as exc:
            self.notify(f"No grade: {exc}", severity="warning")
            return
        lines = [headline(grade), ""] + metric_lines(grade) + [""]
        lines += (["Findings:"] + [f"- {finding_text(f)}" for f in grade.findings]) if grade.findings else ["No findings."]
        tabs = self.query_one("#right", TabbedContent)
        if not self.query("#grade-tab"):
            tabs.add_pane(TabPane("Grade", GradeView(id="grade"), id="grade-tab"))
            # the pane mounts later; by then the app may be quitting and the pane gone
            self.call_after_refresh(lambda: [view.show(lines) for view in self.query(GradeView)])
        else:
            self.query_one(GradeView).show(lines)

    def action_finish(self) -> None:
        if self.result is None or self.state != "finished":
            return
        result = self.result
        summary = (f"Session {result.session_id}: {result.status} after {result.steps} steps, "
                   f"${result.cost:.4f}." + (f" {result.message}" if result.message else ""))
        self.push_screen(FinishScreen(summary, result.patch, f"live-swe/{self.session_id}"), self._finish_choice)

    def _finish_choice(self, choice: str | None) -> None:
        if choice == "keep":
            self.keep()
        elif choice == "discard":
            self.discard()
        elif choice == "follow_up":
            task_box = self.query_one("#task", TextArea)
            task_box.text = ""
            task_box.focus()
        self._show_hint()

    @property
    def conversation_text(self) -> str:
        """What the person asked for in this conversation: the task, then each follow-up."""
        return "\n\n".join([self.task_text] + [f"Follow-up: {text}" for text in self.follow_ups])

    def _worktree(self) -> WorkTree:
        """The repository, with the person's identity for commits (read the first time, before a run)."""
        if self.repo not in self._identities:
            self._identities[self.repo] = user_identity(self.repo)
        return WorkTree(self.repo, identity=self._identities[self.repo])

    def _base_commit(self) -> str:
        return self.store.open(self.session_id).meta.base_commit or "HEAD"

    def keep(self) -> KeptCommit | None:
        try:
            tree = self._worktree()
            if self.env_kind != "local" and self.result is not None:
                tree.apply_patch(self.result.patch)  # the work happened in a container
            self.kept = tree.keep(self.session_id, self.conversation_text, self._base_commit())
        except UserError as exc:
            self.notify(str(exc), severity="error", timeout=15)
            return None
        self.notify(f"Kept as commit {self.kept.sha[:10]} on branch {self.kept.branch} (F6 undoes it).", timeout=10)
        self.result = None
        self._restore_user_changes()
        return self.kept

    def discard(self) -> None:
        try:
            paths = self._worktree().discard(self._base_commit()) if self.env_kind == "local" else []
        except UserError as exc:
            self.notify(str(exc), severity="error", timeout=15)
            return
        self.notify(f"Discarded the agent's changes ({len(paths)} files).")
        self.result = None
        self.query_one(DiffView).show("")
        self._restore_user_changes()

    def action_undo_commit(self) -> None:
        if self.kept is None:
            self.notify("There is no agent commit to undo.", severity="warning")
            return
        try:
            self._worktree().undo(self.kept)
        except UserError as exc:
            self.notify(str(exc), severity="error", timeout=15)
            return
        self.notify(f"Undid the agent's commit; its changes are uncommitted again and {self.kept.branch} is gone.")
        self.kept = None

    def _restore_user_changes(self) -> None:
        if not self.stash:
            return
        problem = self._worktree().restore_user_changes(self.stash)
        self.stash = None
        if problem:
            self.notify(problem, severity="warning", timeout=30)
        else:
            self.notify("Your own uncommitted changes are back.")

    # -- quitting
    def on_unmount(self) -> None:
        # However the app ends, the agent's thread must not be left waiting for an answer.
        self.bridge.request_stop()

    async def action_quit(self) -> None:
        if self._worker is not None and self._worker.state in (WorkerState.PENDING, WorkerState.RUNNING):
            self._quitting = True
            self.state = "stopping"
            self.refresh_status()
            self.bridge.request_stop()
            self.notify("Stopping the agent…")
            return
        self._restore_user_changes()
        self.exit(self.result)


def run_app(app: LiveSweApp, inline: bool = False):
    return app.run(inline=inline)

