"""Hook failure, handled on the hook side: which hooks failed, the "live" mark, hooks off, the fallback.

:class:`HookFallback` is told by the hook client when hooks crash, hang or answer garbage
(:meth:`~HookFallback.failed`), or cannot run at all (:meth:`~HookFallback.off`). A failed version
(by its source digest) never runs again in this run. At the next step boundary the hooks file is
rolled back to the newest version in the scaffold history that has not failed (or to the seed
hooks); the guard is asked only to restore that one file (:meth:`Host.restore_file`), which it
commits as a "rollback" and logs.

While hooks load or run, the digest of their source is in ``hooks.live`` in the session folder
(out of the agent's reach). A run that dies meanwhile (a hook that kills the process running it,
the OOM killer) leaves the mark behind, and its resume falls back from those hooks first.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from live_swe.events import Event, HooksOff, ScaffoldChange
from live_swe.evolution.history import ScaffoldHistory
from live_swe.evolution.hook_process import source_digest
from live_swe.evolution.notes import note
from live_swe.resources import resource_path

LIVE_HOOKS_FILE = "hooks.live"  # in the session folder: the digest of hooks loading or running now


class Host(Protocol):
    """What the fallback needs from the scaffold guard."""

    history: ScaffoldHistory

    def hooks_source(self) -> tuple[str, str] | None:
        """(file name, source) of the accepted hooks, or None."""

    def restore_file(self, filename: str, content: bytes, *, message: str, reason: str, why: str, step: int) -> str:
        """Make ``filename`` hold ``content`` in the accepted scaffold, commit it, log it; the new revision."""

    def emit(self, event: Event) -> None: ...

    def tell(self, text: str) -> None:
        """A note for the model's next observation."""


class HookFallback:
    def __init__(self, host: Host, session_dir: Path, step: int):
        self.host = host
        self.step = step  # the last step boundary (what a hooks_off event is logged under)
        self._failed: set[str] = set()
        self._pending: tuple[str, str] | None = None  # (hook, why) waiting for the step boundary
        self._mark = Path(session_dir) / LIVE_HOOKS_FILE
        self._marked = False

    # -- what the hook client reports ----------------------------------------------------------------
    def disabled(self, digest: str) -> bool:
        return digest in self._failed

    def failed(self, digest: str, hook: str, why: str) -> None:
        """These hooks crashed, hung or answered garbage: never run them again; roll back at the boundary."""
        self._failed.add(digest)
        if self._pending is None:
            self._pending = (hook, why)

    def off(self, digest: str, why: str) -> None:
        """The environment cannot run hooks at all (no python3 in the image): off for this run."""
        if digest in self._failed:
            return
        self._failed.add(digest)
        self.host.emit(HooksOff(step=self.step, why=why))
        self.host.tell(note("hooks_off", why=why))

    def live(self, digest: str | None) -> None:
        """Mark (or unmark) hooks as loading or running; a run that dies while the mark is there
        resumes with the last good hooks."""
        try:
            if digest is None:
                if self._marked:
                    self._marked = False
                    os.unlink(self._mark)
                return
            fd = os.open(self._mark, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, digest.encode())
            finally:
                os.close(fd)
            self._marked = True
        except OSError:
            pass  # a full disk must not stop the run; the mark only helps a later resume

    # -- what the guard calls at its boundaries ------------------------------------------------------------
    def settle(self, step: int) -> None:
        """A step boundary, after the guard's check: roll back hooks that failed during the step."""
        self.step = step
        if self._pending is not None:
            hook, why = self._pending
            self._pending = None
            self._roll_back(hook, why)

    def resume(self) -> None:
        """The last run died while hooks were loading or running: fall back from those hooks."""
        try:
            digest = self._mark.read_text().strip()
        except (FileNotFoundError, IsADirectoryError, UnicodeDecodeError):
            return
        accepted = self.host.hooks_source()
        if accepted is not None and source_digest(accepted[1]) == digest:
            self._failed.add(digest)
            self._roll_back("run", "the last run died while these hooks were running")
        self._mark.unlink(missing_ok=True)

    # -- the fallback -------------------------------------------------------------------------------------------
    def _roll_back(self, hook: str, why: str) -> None:
        accepted = self.host.hooks_source()
        if accepted is None:
            return
        filename, source = accepted
        if source_digest(source) not in self._failed:
            return  # an accepted change in this step already replaced the failing hooks
        fallback, origin = self.last_good(filename)
        if fallback is None:
            self.host.emit(ScaffoldChange(kind="rollback", step=self.step, files=[], reason=f"hook {hook} failed",
                                          why=f"{why}; no earlier hooks to fall back to, so hooks are off",
                                          rev=self.host.history.head()))
            self.host.tell(note("hooks_failed_no_fallback", filename=filename, hook=hook, why=why))
            return
        rev = self.host.restore_file(filename, fallback.encode(), message=f"step {self.step}: roll back {filename}\n\n"
                                     f"{hook} failed: {why}", reason=f"hook {hook} failed", why=why, step=self.step)
        self.host.tell(note("hooks_rolled_back", filename=filename, hook=hook, why=why, origin=origin, rev=rev[:8]))

    def last_good(self, filename: str) -> tuple[str | None, str]:
        """The newest version of ``filename`` in the history that has not failed, else the seed hooks
        (source, where it came from); (None, "") when every one of them failed."""
        for revision in self.host.history.revisions():
            blob = self.host.history.file_at(revision.rev, filename)
            if blob is None:
                continue
            text = blob.decode("utf-8", "replace")
            if source_digest(text) not in self._failed:
                return text, f"commit {revision.rev[:8]}"
        seed = resource_path("scaffold", "hooks.py").read_text()
        if source_digest(seed) not in self._failed:
            return seed, "the seed hooks"
        return None, ""
