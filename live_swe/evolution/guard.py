"""The session's scaffold guard: every change is gated, then committed or undone, at each step.

:class:`GatedScaffold` implements the loop's ``ScaffoldGuard``. At each step boundary it compares
a stat fingerprint of the scaffold tree with the one taken after the last accepted state; when
they differ it reads the tree, sorts the changed paths into tools, scaffold files and strays,
runs the gates, restores whatever was refused exactly (bytes, modes, added and deleted files),
commits what was accepted as one commit, logs an event for each decision, and tells the model.

What the gates decided is worked out by the pure functions of :mod:`live_swe.evolution.verdict`;
this module gathers what they need, runs the gates and applies the verdict. Hook failure is handled
on the hook side (:mod:`live_swe.evolution.hook_fallback`), which asks the guard only to restore the
hooks file (:meth:`GatedScaffold.restore_file`) and is told of each step boundary.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from live_swe.config import KernelLimits
from live_swe.environments.base import Environment
from live_swe.events import Event, History, ScaffoldChange, parse
from live_swe.evolution import tool_gates
from live_swe.evolution.gates import Refused, check_scaffold
from live_swe.evolution.history import ScaffoldHistory
from live_swe.evolution.hook_checks import smoke_test
from live_swe.evolution.hook_fallback import HookFallback
from live_swe.evolution.hook_process import HooksUnavailable, source_digest
from live_swe.evolution.notes import note
from live_swe.evolution.tool_gates import tool_problem
from live_swe.evolution.tree import Entry, Snapshot, changed_paths, fingerprint, restore, snapshot
from live_swe.evolution.verdict import (
    ToolCheck,
    Verdict,
    classify,
    is_junk,
    judge_scaffold,
    judge_seed_tools,
    judge_strays,
    judge_tools,
    refuse_changed,
)
from live_swe.scaffolding.scaffold import (
    Scaffold,
    ScaffoldError,
    load_policy,
    load_scaffold,
    read_tool_header,
)
from live_swe.session.store import Session
from live_swe.wording import change_summary

REASON_CHARS = 300


def stated_reason(reply_text: str, limit: int = REASON_CHARS) -> str:
    """The reason the agent gave: its THOUGHT (the text before the command), trimmed."""
    text = (reply_text or "").split("```", 1)[0]
    text = re.sub(r"^\s*THOUGHT\s*:\s*", "", text, flags=re.IGNORECASE)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class GatedScaffold:
    """The loop's ``ScaffoldGuard`` for a session's scaffold; also the ``Host`` of the session's
    :class:`~live_swe.evolution.hook_fallback.HookFallback` (``hook_fallback``, which the hook client
    tells of hook failures)."""

    def __init__(self, session: Session, env: Environment, kernel_limits: KernelLimits, *,
                 help_timeout: float | None = None):
        self.session = session
        self.env = env
        self.kernel = kernel_limits
        self.help_timeout = help_timeout  # None: tool_gates.HELP_TIMEOUT
        self.root = Path(session.scaffold_dir)
        self.history = ScaffoldHistory(session.history_dir, self.root)
        self._emit_fn: Callable[[Event], None] | None = None
        self._pending_events: list[Event] = []
        self._notes: list[str] = []
        self._starting = False
        self.hook_fallback = HookFallback(self, Path(session.dir), session.meta.steps)
        self._step = session.meta.steps
        self._accepted: Snapshot = {}
        self._fp: tuple = ()
        if self.history.exists():
            self._resume()
        else:
            self._begin()

    # -- the ScaffoldGuard protocol ---------------------------------------------------------------
    @property
    def current(self) -> Scaffold:
        return self._scaffold

    def after_step(self, step: int, reason: str) -> list[str]:
        self._step = step
        if self.changed():
            self._check(step, stated_reason(reason))
        self.hook_fallback.settle(step)
        notes, self._notes = self._notes, []
        return notes

    # -- seams the loop and the hook client use ------------------------------------------------------
    def changed(self) -> bool:
        """The scaffold folder differs from the last checked version (a command wrote to it)."""
        return fingerprint(self.root) != self._fp

    def attach(self, emit: Callable[[Event], None]) -> None:
        """Log through the agent from now on (its observers see scaffold events as they happen)."""
        self._emit_fn = emit
        pending, self._pending_events = self._pending_events, []
        for event in pending:
            emit(event)

    def close(self, step: int | None = None) -> None:
        """End of the run: check what the last step left (the submission step has no boundary)."""
        step = self._step if step is None else step
        try:
            if fingerprint(self.root) != self._fp:
                self._check(step, "changes made in the final step")
            self.hook_fallback.settle(step)
        except Exception:  # noqa: BLE001 - whatever failed, nothing unchecked may stay
            try:
                self._settle(self._accepted)
            except OSError:
                pass  # resume resets the tree to the last commit anyway
        finally:
            self._notes.clear()
            for event in self._pending_events:
                self.session.append(event)
            self._pending_events = []

    def hooks_source(self) -> tuple[str, str] | None:
        """(file name, source) of the accepted hooks, or None when the scaffold has none."""
        name = self._scaffold.policy.hooks
        entry = self._accepted.get(name) if name else None
        if entry is None or entry.kind != "file" or entry.data is None:
            return None
        return name, entry.data.decode("utf-8", "replace")

    # -- what the hook fallback asks of the guard (hook_fallback.Host) -------------------------------------
    def restore_file(self, filename: str, content: bytes, *, message: str, reason: str, why: str, step: int) -> str:
        """Make one accepted file hold ``content`` (the hook fallback rolling hooks back): restored,
        committed as ``message``, logged as a rollback, settled. Returns the new revision."""
        expected = dict(self._accepted)
        expected[filename] = Entry("file", self._accepted[filename].mode, content, len(content))
        restore(self.root, expected, [filename])
        rev = self.history.commit(message, [filename], record=self._record_head)
        self.emit(ScaffoldChange(kind="rollback", step=step, files=[filename], reason=reason, why=why, rev=rev))
        self._settle(expected)
        return rev

    def tell(self, text: str) -> None:
        """A note for the model's next observation."""
        self._notes.append(text)

    def emit(self, event: Event) -> None:
        """Log ``event`` through the agent, or keep it until the agent attaches."""
        if isinstance(event, ScaffoldChange):  # one line for progress displays (`live-swe run` prints it)
            event.summary = change_summary(event)
        if self._emit_fn is not None:
            self._emit_fn(event)
        else:
            self._pending_events.append(event)

    def _smoke(self, source: str, filename: str) -> str | None:
        """The hooks' smoke run in a fresh worker in the environment. Where the environment cannot
        run hooks, the starting scaffold keeps them (off for the run); a change to them is refused."""
        try:
            return smoke_test(source, filename, host=self.env)
        except HooksUnavailable as exc:
            if self._starting:
                self.hook_fallback.off(source_digest(source), str(exc))
                return None
            return str(exc)

    # -- start and resume ---------------------------------------------------------------------------
    def _begin(self) -> None:
        """A new session: gate the starting scaffold, drop tools that fail, make the first commit."""
        ref = self.session.meta.scaffold_ref
        self._starting = True
        try:
            scaffold = check_scaffold(self.root, None, self.kernel, smoke=self._smoke)
        except Refused as exc:
            raise ScaffoldError(f"the starting scaffold ({ref}) is not usable: {exc}") from None
        finally:
            self._starting = False
        tools_dir = scaffold.policy.tools_dir
        (self.root / tools_dir).mkdir(exist_ok=True)
        start = snapshot(self.root)
        problems = {path.name: self._tool_problem(path, tools_dir)
                    for path in sorted((self.root / tools_dir).iterdir()) if not path.name.startswith(".")}
        verdict = judge_seed_tools(problems, tools_dir)
        self._settle({rel: entry for rel, entry in start.items() if not is_junk(rel) and rel not in verdict.refused})
        self.history.create()
        self.history.commit(f"starting scaffold ({ref})", record=self._record_head)
        self._scaffold = self._load()
        for event in verdict.tool_events:
            self.emit(event)
        self._notes += verdict.notes

    def _resume(self) -> None:
        """An existing session: the history is put back on the last commit the kernel recorded, and
        the tree reset to it exactly."""
        self.root.mkdir(parents=True, exist_ok=True)
        self._adopt_recorded_head()
        discarded = self.history.restore_head()
        self._settle(snapshot(self.root))
        self._scaffold = self._load()
        (self.root / self._scaffold.policy.tools_dir).mkdir(exist_ok=True)
        self._settle(snapshot(self.root))
        self._log_unlogged_commits()
        self.hook_fallback.resume()
        if discarded:
            why = "changes from a step that never finished were not checked, so they were discarded"
            self.emit(ScaffoldChange(kind="rollback", step=self._step, files=discarded, reason="resume", why=why,
                                     rev=self.history.head()))
            self._notes.append(note("resume_discarded", files=", ".join(discarded)))

    def _record_head(self, rev: str) -> None:
        """The kernel's own record of each commit, written before the history moves to it."""
        self.session.append(History(rev=rev, step=self._step))

    def _adopt_recorded_head(self) -> None:
        """Commits written into the history by anything but the kernel are discarded (and logged):
        the history goes back to the last commit the session log records."""
        recorded = recorded_head(self.session.events()[0])
        head = self.history.head()
        if recorded is None:
            recorded = self.history.root_commit()  # a session from before heads were recorded
        if recorded == head:
            return
        if not self.history.is_commit(recorded):
            raise ScaffoldError(f"session {self.session.id}: its scaffold history {self.history.git_dir} lacks commit "
                                f"{recorded[:10]}, the last one its log records; the session cannot be resumed "
                                "(start a new one, e.g. with --scaffold session:ID of an intact session)")
        self.history.move_to(recorded)
        if self.history.is_ancestor(head, recorded):
            return  # killed between recording a commit and moving to it: the kernel's own commit
        files = self.history.changed_files(recorded, head)
        why = (f"the history held commit {head[:10]}, which the kernel never recorded; it was discarded and the "
               f"scaffold is back at {recorded[:10]}")
        self.emit(ScaffoldChange(kind="rollback", step=self._step, files=files, reason="resume", why=why,
                                 rev=recorded))
        self._notes.append(note("resume_foreign_commits", files=", ".join(files) or "no files"))

    def _log_unlogged_commits(self) -> None:
        """A kill between a commit and its event leaves a commit the log does not show: log it now."""
        logged = {event.rev for event in map(parse, self.session.events()[0]) if isinstance(event, ScaffoldChange)}
        for revision in reversed(self.history.revisions()[:-1]):  # oldest first, without the start
            if revision.rev in logged:
                continue
            match = re.match(r"step (\d+): (roll back )?", revision.subject)
            self.emit(ScaffoldChange(kind="rollback" if match and match.group(2) else "commit",
                                     step=int(match.group(1)) if match else self._step, files=list(revision.files),
                                     reason=revision.body, why="", rev=revision.rev, extra={"recovered": True}))

    def _load(self) -> Scaffold:
        try:
            return load_scaffold(self.root)
        except ScaffoldError as exc:
            raise ScaffoldError(f"session {self.session.id}: its accepted scaffold does not load: {exc}") from None

    # -- the check at a step boundary -------------------------------------------------------------------
    def _check(self, step: int, reason: str) -> None:
        """Judge what changed in the scaffold since the last accepted version, then apply the verdict."""
        current = snapshot(self.root)
        changed = changed_paths(self._accepted, current)
        if not changed:
            self._fp = fingerprint(self.root)
            return
        tools_dir = self._scaffold.policy.tools_dir
        paths = classify(changed, current, tools_dir, self._hooks_names())
        verdict = (Verdict(refused=list(paths.junk))
                   + judge_strays(paths.strays, self._stray_tool_names(paths.strays, current), tools_dir, step)
                   + judge_tools(self._check_tools(paths.tools, current, tools_dir), step)
                   + judge_scaffold(paths.scaffold, self._scaffold_refusal(paths.scaffold)))
        verdict = refuse_changed(verdict, current, snapshot(self.root))
        self._apply(verdict, current, set(paths.tools.values()), step, reason)

    def _hooks_names(self) -> set[str]:
        """The hooks file the accepted policy names, and the one an edited policy names."""
        names = {self._scaffold.policy.hooks}
        try:
            names.add(load_policy(self.root).hooks)
        except ScaffoldError:
            pass
        return names - {None}

    # -- the facts the verdict is drawn from (these run the gates) ---------------------------------------
    def _stray_tool_names(self, strays: list[tuple[str, str]], current: Snapshot) -> dict[str, str]:
        """The strays that are tools written outside the tools folder: path -> the name they declare."""
        names = {}
        for rel, _ in strays:
            entry = current.get(rel)
            header = read_tool_header(self.root / rel) if entry is not None and entry.kind == "file" else None
            if header is not None:
                names[rel] = header["live-swe-tool"]
        return names

    def _check_tools(self, tools: dict[str, str], current: Snapshot, tools_dir: str) -> list[ToolCheck]:
        checks = []
        for name, rel in sorted(tools.items()):
            if rel not in current:
                checks.append(ToolCheck(name, rel, deleted=True))
                continue
            why = self._tool_problem(self.root / rel, tools_dir)
            header = None if why else (read_tool_header(self.root / rel) or {})
            checks.append(ToolCheck(name, rel, problem=why, header=header, was_registered=rel in self._accepted))
        return checks

    def _scaffold_refusal(self, paths: list[str]) -> str | None:
        """Why the scaffold gates refuse the changed policy, prompts and hooks (None: they pass)."""
        if not paths:
            return None
        try:
            hooks = self.hooks_source()
            check_scaffold(self.root, self._scaffold, self.kernel, smoke=self._smoke,
                           previous_hooks=hooks[1] if hooks else None)
        except Refused as exc:
            return str(exc)
        return None

    def _tool_problem(self, path: Path, tools_dir: str) -> str | None:
        base = self.env.scaffold_dir
        in_env = f"{base.rstrip('/')}/{tools_dir}/{path.name}" if base else str(path)
        timeout = self.help_timeout if self.help_timeout is not None else tool_gates.HELP_TIMEOUT
        return tool_problem(path, self.env, in_env, help_timeout=timeout)

    # -- applying a verdict ----------------------------------------------------------------------------------
    def _apply(self, verdict: Verdict, current: Snapshot, tool_files: set[str], step: int, reason: str) -> None:
        """Put refused files back, commit the accepted ones, log and tell the model what happened."""
        restore(self.root, self._accepted, verdict.refused)
        expected = dict(self._accepted)
        for rel in verdict.accepted:
            if rel in current:
                expected[rel] = current[rel]
            else:
                expected.pop(rel, None)
        self._notes += verdict.notes
        for files, why in verdict.rejects:
            self.emit(ScaffoldChange(kind="reject", step=step, files=sorted(files), reason=reason, why=why, rev=""))
        if verdict.accepted:
            self._commit(sorted(verdict.accepted), current, tool_files, step, reason)
        for event in verdict.tool_events:
            self.emit(event)
        self._settle(expected)
        if verdict.accepted:
            self._scaffold = self._load()

    def _commit(self, files: list[str], current: Snapshot, tool_files: set[str], step: int, reason: str) -> None:
        # git tracks files only: pass the files added, changed or deleted, not bare folders.
        tracked = [rel for rel in files if (current.get(rel) or self._accepted.get(rel) or Entry("dir", 0)).kind == "file"]
        rev = self.history.commit(f"step {step}: {', '.join(files)}\n\n{reason or '(no reason given)'}", tracked,
                                  record=self._record_head)
        self.emit(ScaffoldChange(kind="commit", step=step, files=files, reason=reason, why="", rev=rev))
        if set(files) - tool_files:
            self._notes.append(note("change_accepted", files=", ".join(files), rev=rev[:8]))

    def _settle(self, accepted: Snapshot) -> None:
        """Make the tree exactly ``accepted`` and remember it (and its fingerprint) as the last good state."""
        differing = changed_paths(accepted, snapshot(self.root))
        if differing:
            restore(self.root, accepted, differing)
        self._accepted = accepted
        self._fp = fingerprint(self.root)


def recorded_head(events: Iterable[Event | dict[str, Any]]) -> str | None:
    """The last scaffold commit the session log records (a ``history`` event, or for sessions from
    before those, a committed or rolled-back scaffold change)."""
    for event in map(parse, reversed(list(events))):
        if isinstance(event, History) or (isinstance(event, ScaffoldChange) and event.kind in ("commit", "rollback")):
            if event.rev:
                return event.rev
    return None
