"""The session's scaffold guard: every change is gated, then committed or undone, at each step.

:class:`GatedScaffold` implements the loop's ``ScaffoldGuard``. At each step boundary it compares
a stat fingerprint of the scaffold tree with the one taken after the last accepted state; when
they differ it reads the tree, sorts the changed paths into tools, scaffold files and strays,
runs the gates, restores whatever was refused exactly (bytes, modes, added and deleted files),
commits what was accepted as one commit, logs an event for each decision, and tells the model.

It also owns the fallback for hooks: the hook client reports a failed hooks.py here, and the
guard rolls it back to the last committed version that worked (a "rollback" commit).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from live_swe.config import KernelLimits
from live_swe.environments.base import Environment
from live_swe.evolution import tool_gates
from live_swe.evolution.gates import Refused, check_scaffold
from live_swe.evolution.history import ScaffoldHistory
from live_swe.evolution.hook_checks import smoke_test
from live_swe.evolution.hook_process import HooksUnavailable, source_digest
from live_swe.evolution.notes import CHANGE_WORDS, note
from live_swe.evolution.tool_gates import name_problem, tool_problem
from live_swe.evolution.tree import Entry, Snapshot, changed_paths, fingerprint, restore, snapshot
from live_swe.resources import resource_path
from live_swe.scaffolding.scaffold import (
    Scaffold,
    ScaffoldError,
    load_policy,
    load_scaffold,
    read_tool_header,
)
from live_swe.session.store import Session

REASON_CHARS = 300
LIVE_HOOKS_FILE = "hooks.live"  # in the session folder: the digest of hooks loading or running now
_ALLOWED = "scaffold.yaml, prompts/, the hooks file and tools/NAME"


def stated_reason(reply_text: str, limit: int = REASON_CHARS) -> str:
    """The reason the agent gave: its THOUGHT (the text before the command), trimmed."""
    text = (reply_text or "").split("```", 1)[0]
    text = re.sub(r"^\s*THOUGHT\s*:\s*", "", text, flags=re.IGNORECASE)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass
class Verdict:
    """What the gates decided about one step's changes, before anything is restored or committed."""

    accepted: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    rejects: list[tuple[list[str], str]] = field(default_factory=list)  # (files, why) logged as one reject each
    tool_events: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def refuse(self, files: list[str], why: str, note_kind: str) -> None:
        """Take ``files`` back from the accepted ones."""
        if not files:
            return
        self.accepted = [rel for rel in self.accepted if rel not in files]
        self.refused += files
        self.rejects.append((files, why))
        self.notes.append(note(note_kind, files=", ".join(files)))


class GatedScaffold:
    def __init__(self, session: Session, env: Environment, kernel_limits: KernelLimits, *,
                 help_timeout: float | None = None):
        self.session = session
        self.env = env
        self.kernel = kernel_limits
        self.help_timeout = help_timeout  # None: tool_gates.HELP_TIMEOUT
        self.root = Path(session.scaffold_dir)
        self.history = ScaffoldHistory(session.history_dir, self.root)
        self._emit_fn = None
        self._pending_events: list[dict[str, Any]] = []
        self._notes: list[str] = []
        self._failed_hooks: set[str] = set()
        self._rollback: tuple[str, str] | None = None  # (hook, why) waiting for the step boundary
        self._live_mark = Path(session.dir) / LIVE_HOOKS_FILE
        self._marked = False
        self._starting = False
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
        if self._rollback is not None:
            self._roll_back_hooks(step)
        return self._take_notes()

    # -- seams the loop and the hook client use ------------------------------------------------------
    def changed(self) -> bool:
        """The scaffold folder differs from the last checked version (a command wrote to it)."""
        return fingerprint(self.root) != self._fp

    def attach(self, emit) -> None:
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
            if self._rollback is not None:
                self._roll_back_hooks(step)
        except Exception:  # noqa: BLE001 - whatever failed, nothing unchecked may stay
            try:
                self._settle(self._accepted)
            except OSError:
                pass  # resume resets the tree to the last commit anyway
        finally:
            self._notes.clear()
            if self._pending_events:
                for event in self._pending_events:
                    event.setdefault("ts", round(time.time(), 3))
                    self.session.append(event)
                self._pending_events = []

    def hooks_source(self) -> tuple[str, str] | None:
        """(file name, source) of the accepted hooks, or None when the scaffold has none."""
        name = self._scaffold.policy.hooks
        entry = self._accepted.get(name) if name else None
        if entry is None or entry.kind != "file" or entry.data is None:
            return None
        return name, entry.data.decode("utf-8", "replace")

    def hooks_disabled(self, digest: str) -> bool:
        return digest in self._failed_hooks

    def hooks_failed(self, digest: str, hook: str, why: str, step: int | None = None) -> None:
        """The hook client saw these hooks crash, hang or answer garbage: never run them again."""
        self._failed_hooks.add(digest)
        if self._rollback is None:
            self._rollback = (hook, why)

    def hooks_off(self, digest: str, why: str) -> None:
        """The environment cannot run hooks at all (no python3 in the image): off for this run."""
        if digest in self._failed_hooks:
            return
        self._failed_hooks.add(digest)
        self._emit({"t": "hooks_off", "step": self._step, "why": why})
        self._notes.append(note("hooks_off", why=why))

    def hooks_live(self, digest: str | None) -> None:
        """Mark (or unmark) hooks as loading or running: a run that dies while the mark is there
        resumes with the last good hooks. A small file in the session folder, out of the agent's reach."""
        try:
            if digest is None:
                if self._marked:
                    self._marked = False
                    os.unlink(self._live_mark)
                return
            fd = os.open(self._live_mark, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, digest.encode())
            finally:
                os.close(fd)
            self._marked = True
        except OSError:
            pass  # a full disk must not stop the run; the mark only helps a later resume

    def _smoke(self, source: str, filename: str) -> str | None:
        """The hooks' smoke run in a fresh worker in the environment. Where the environment cannot
        run hooks, the starting scaffold keeps them (off for the run); a change to them is refused."""
        try:
            return smoke_test(source, filename, host=self.env)
        except HooksUnavailable as exc:
            if self._starting:
                self.hooks_off(source_digest(source), str(exc))
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
        tools_dir = self.root / scaffold.policy.tools_dir
        tools_dir.mkdir(exist_ok=True)
        start = snapshot(self.root)
        registered, refused = [], []
        for path in sorted(tools_dir.iterdir()):
            if path.name.startswith("."):
                continue
            why = self._tool_problem(path, scaffold.policy.tools_dir)
            (refused.append((path.name, why)) if why else registered.append(path.name))
        keep = {rel: entry for rel, entry in start.items()
                if not _is_junk(rel) and not any(rel == f"{scaffold.policy.tools_dir}/{n}" for n, _ in refused)}
        self._settle(keep)
        self.history.create()
        self.history.commit(f"starting scaffold ({ref})", record=self._record_head)
        self._scaffold = self._load()
        for name in registered:
            self._emit({"t": "tool", "kind": "registered", "step": 0, "name": name, "why": ""})
        for name, why in refused:
            self._emit({"t": "tool", "kind": "refused", "step": 0, "name": name, "why": why})
            self._notes.append(note("seed_tool_refused", name=name, why=why))

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
        self._fall_back_from_hooks_that_were_live()
        if discarded:
            why = "changes from a step that never finished were not checked, so they were discarded"
            self._emit({"t": "scaffold", "kind": "rollback", "step": self._step, "files": discarded,
                        "reason": "resume", "why": why, "rev": self.history.head()})
            self._notes.append(note("resume_discarded", files=", ".join(discarded)))

    def _record_head(self, rev: str) -> None:
        """The kernel's own record of each commit, written before the history moves to it."""
        self.session.append({"t": "history", "rev": rev, "step": self._step, "ts": round(time.time(), 3)})

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
        self._emit({"t": "scaffold", "kind": "rollback", "step": self._step, "files": files, "reason": "resume",
                    "why": why, "rev": recorded})
        self._notes.append(note("resume_foreign_commits", files=", ".join(files) or "no files"))

    def _fall_back_from_hooks_that_were_live(self) -> None:
        """The last run died while hooks were loading or running (a hook that kills the process
        running it, the machine's OOM killer...): resume with the last good hooks, not those."""
        try:
            digest = self._live_mark.read_text().strip()
        except (FileNotFoundError, IsADirectoryError, UnicodeDecodeError):
            return
        accepted = self.hooks_source()
        if accepted is not None and source_digest(accepted[1]) == digest:
            self.hooks_failed(digest, "run", "the last run died while these hooks were running")
            self._roll_back_hooks(self._step)
        self._live_mark.unlink(missing_ok=True)

    def _log_unlogged_commits(self) -> None:
        """A kill between a commit and its event leaves a commit the log does not show: log it now."""
        logged = {e.get("rev") for e in self.session.events()[0] if e.get("t") == "scaffold"}
        for revision in reversed(self.history.revisions()[:-1]):  # oldest first, without the start
            if revision.rev in logged:
                continue
            match = re.match(r"step (\d+): (roll back )?", revision.subject)
            self._emit({"t": "scaffold", "kind": "rollback" if match and match.group(2) else "commit",
                        "step": int(match.group(1)) if match else self._step, "files": list(revision.files),
                        "reason": revision.body, "why": "", "rev": revision.rev, "recovered": True})

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
        junk, strays, tools, scaffold_paths = _classify(changed, current, tools_dir, self._hooks_names())
        verdict = Verdict(refused=list(junk))
        self._judge_strays(verdict, strays, current, tools_dir, step)
        self._judge_tools(verdict, tools, current, tools_dir, step)
        self._judge_scaffold(verdict, scaffold_paths)
        # Anything accepted that changed while the gates ran (a tool's --help writing files) is unchecked.
        after = snapshot(self.root)
        verdict.refuse([rel for rel in verdict.accepted if after.get(rel) != current.get(rel)],
                       "changed while its gates were running", "changed_while_checked")
        self._apply(verdict, current, set(tools.values()), step, reason)

    def _hooks_names(self) -> set[str]:
        """The hooks file the accepted policy names, and the one an edited policy names."""
        names = {self._scaffold.policy.hooks}
        try:
            names.add(load_policy(self.root).hooks)
        except ScaffoldError:
            pass
        return names - {None}

    def _judge_strays(self, verdict: Verdict, strays: list[tuple[str, str]], current: Snapshot, tools_dir: str,
                      step: int) -> None:
        """Files outside the places a scaffold may change are refused; a tool among them is named."""
        if not strays:
            return
        verdict.refused += [rel for rel, _ in strays]
        verdict.rejects.append(([rel for rel, _ in strays], "; ".join(f"{rel}: {why}" for rel, why in strays)))
        plain = []
        for rel, why in strays:
            entry = current.get(rel)
            header = read_tool_header(self.root / rel) if entry is not None and entry.kind == "file" else None
            if header is None:
                plain.append(f"{rel}: {why}")
                continue
            name = header["live-swe-tool"]  # a tool written outside tools/ (e.g. named ../x)
            why = name_problem(name) or f"a tool must be a file directly in {tools_dir}/ (this one is {rel})"
            verdict.tool_events.append({"t": "tool", "kind": "refused", "step": step, "name": name, "why": why})
            verdict.notes.append(note("stray_tool_refused", name=name, why=why))
        if plain:
            verdict.notes.append(note("strays_refused", items="; ".join(plain)))

    def _judge_tools(self, verdict: Verdict, tools: dict[str, str], current: Snapshot, tools_dir: str,
                     step: int) -> None:
        """Each new or changed tool passes the tool gates or is refused; a deleted one is unregistered."""
        for name, rel in sorted(tools.items()):
            if rel not in current:
                verdict.accepted.append(rel)  # a deleted tool is simply no longer registered
                continue
            why = self._tool_problem(self.root / rel, tools_dir)
            if why:
                verdict.refused.append(rel)
                verdict.rejects.append(([rel], why))
                verdict.tool_events.append({"t": "tool", "kind": "refused", "step": step, "name": name, "why": why})
                undo = "restored to its registered version" if rel in self._accepted else "removed"
                verdict.notes.append(note("tool_refused", name=name, why=why, undo=undo))
            else:
                verdict.accepted.append(rel)
                verdict.tool_events.append({"t": "tool", "kind": "registered", "step": step, "name": name, "why": ""})
                header = read_tool_header(self.root / rel) or {}
                verdict.notes.append(note("tool_registered", name=name, description=header.get("description", ""),
                                          usage=header.get("usage", name)))

    def _judge_scaffold(self, verdict: Verdict, paths: list[str]) -> None:
        """Policy, prompts and hooks pass the scaffold gates together, or are refused together."""
        if not paths:
            return
        try:
            hooks = self.hooks_source()
            check_scaffold(self.root, self._scaffold, self.kernel, smoke=self._smoke,
                           previous_hooks=hooks[1] if hooks else None)
            verdict.accepted += paths
        except Refused as exc:
            verdict.refused += paths
            verdict.rejects.append((paths, str(exc)))
            verdict.notes.append(note("change_refused", files=", ".join(paths), why=exc))

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
            self._emit({"t": "scaffold", "kind": "reject", "step": step, "files": sorted(files), "reason": reason,
                        "why": why, "rev": ""})
        if verdict.accepted:
            files = sorted(verdict.accepted)
            # git tracks files only: pass the files added, changed or deleted, not bare folders.
            tracked = [rel for rel in files if (current.get(rel) or self._accepted.get(rel) or Entry("dir", 0)).kind == "file"]
            rev = self.history.commit(f"step {step}: {', '.join(files)}\n\n{reason or '(no reason given)'}", tracked,
                                      record=self._record_head)
            self._emit({"t": "scaffold", "kind": "commit", "step": step, "files": files, "reason": reason,
                        "why": "", "rev": rev})
            if set(files) - tool_files:
                self._notes.append(note("change_accepted", files=", ".join(files), rev=rev[:8]))
        for event in verdict.tool_events:
            self._emit(event)
        self._settle(expected)
        if verdict.accepted:
            self._scaffold = self._load()

    def _tool_problem(self, path: Path, tools_dir: str) -> str | None:
        base = self.env.scaffold_dir
        in_env = f"{base.rstrip('/')}/{tools_dir}/{path.name}" if base else str(path)
        timeout = self.help_timeout if self.help_timeout is not None else tool_gates.HELP_TIMEOUT
        return tool_problem(path, self.env, in_env, help_timeout=timeout)

    # -- hooks fallback ----------------------------------------------------------------------------------
    def _roll_back_hooks(self, step: int) -> None:
        hook, why = self._rollback or ("", "")
        self._rollback = None
        accepted = self.hooks_source()
        if accepted is None:
            return
        filename, source = accepted
        if source_digest(source) not in self._failed_hooks:
            return  # an accepted change in this step already replaced the failing hooks
        fallback, origin = self._last_good_hooks(filename)
        if fallback is None:
            self._emit({"t": "scaffold", "kind": "rollback", "step": step, "files": [], "reason": f"hook {hook} failed",
                        "why": f"{why}; no earlier hooks to fall back to, so hooks are off", "rev": self.history.head()})
            self._notes.append(note("hooks_failed_no_fallback", filename=filename, hook=hook, why=why))
            return
        old = self._accepted[filename]
        expected = dict(self._accepted)
        expected[filename] = Entry("file", old.mode, fallback.encode(), len(fallback.encode()))
        restore(self.root, expected, [filename])
        rev = self.history.commit(f"step {step}: roll back {filename}\n\n{hook} failed: {why}", [filename],
                                  record=self._record_head)
        self._emit({"t": "scaffold", "kind": "rollback", "step": step, "files": [filename],
                    "reason": f"hook {hook} failed", "why": why, "rev": rev})
        self._notes.append(note("hooks_rolled_back", filename=filename, hook=hook, why=why, origin=origin,
                                rev=rev[:8]))
        self._settle(expected)

    def _last_good_hooks(self, filename: str) -> tuple[str | None, str]:
        for revision in self.history.revisions():
            blob = self.history.file_at(revision.rev, filename)
            if blob is None:
                continue
            text = blob.decode("utf-8", "replace")
            if source_digest(text) not in self._failed_hooks:
                return text, f"commit {revision.rev[:8]}"

        seed = resource_path("scaffold", "hooks.py").read_text()
        if source_digest(seed) not in self._failed_hooks:
            return seed, "the seed hooks"
        return None, ""

    # -- small helpers -----------------------------------------------------------------------------------
    def _settle(self, accepted: Snapshot) -> None:
        """Make the tree exactly ``accepted`` and remember it (and its fingerprint) as the last good state."""
        differing = changed_paths(accepted, snapshot(self.root))
        if differing:
            restore(self.root, accepted, differing)
        self._accepted = accepted
        self._fp = fingerprint(self.root)

    def _emit(self, event: dict[str, Any]) -> None:
        if event.get("t") == "scaffold":  # one line for progress displays (`live-swe run` prints it)
            verb = CHANGE_WORDS[event["kind"]]
            event["summary"] = f"{verb} {', '.join(event['files']) or '-'}" + (f": {event['why'][:160]}" if event["why"] else "")
        if self._emit_fn is not None:
            self._emit_fn(event)
        else:
            self._pending_events.append(event)

    def _take_notes(self) -> list[str]:
        notes, self._notes = self._notes, []
        return notes


def recorded_head(events: list[dict[str, Any]]) -> str | None:
    """The last scaffold commit the session log records (a ``history`` event, or for sessions from
    before those, a committed or rolled-back scaffold change)."""
    for event in reversed(events):
        kind = event.get("t")
        if kind == "history" or (kind == "scaffold" and event.get("kind") in ("commit", "rollback")):
            if isinstance(event.get("rev"), str) and event["rev"]:
                return event["rev"]
    return None


def _is_junk(rel: str) -> bool:
    return "__pycache__" in rel.split("/") or rel.endswith(".pyc")


def _classify(changed: list[str], current: Snapshot, tools_dir: str, hooks_names: set[str]):
    """Sort changed paths: junk (bytecode, removed silently), strays (refused, with why), tools
    (name -> path) and scaffold files (gated together)."""
    junk: list[str] = []
    strays: list[tuple[str, str]] = []
    tools: dict[str, str] = {}
    scaffold: list[str] = []
    for rel in changed:
        parts = rel.split("/")
        entry = current.get(rel)
        if _is_junk(rel):
            junk.append(rel)
        elif any(part.startswith(".git") for part in parts):
            strays.append((rel, "git metadata is not allowed in a scaffold"))
        elif entry is not None and entry.kind in ("link", "other"):
            strays.append((rel, "links and special files are not allowed in a scaffold"))
        elif entry is not None and entry.kind == "file" and entry.data is None:
            strays.append((rel, f"{entry.size} bytes is too large for a scaffold file"))
        elif parts[0] == tools_dir:
            if len(parts) == 1:
                strays.append((rel, f"the {tools_dir}/ folder itself must stay as it is"))
            elif len(parts) == 2 and not parts[1].startswith(".") and (entry is None or entry.kind == "file"):
                tools[parts[1]] = rel
            else:
                strays.append((rel, f"{tools_dir}/ holds tool files only (no folders or hidden files)"))
        elif parts[0] == "prompts" or rel == "scaffold.yaml" or rel in hooks_names:
            scaffold.append(rel)
        else:
            strays.append((rel, f"not part of a scaffold (only {_ALLOWED} may change)"))
    return junk, strays, tools, scaffold
