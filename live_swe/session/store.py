"""Session directories under ``$LIVE_SWE_HOME/sessions/<id>/``::

    meta.json       small metadata, replaced atomically (task, model, status, steps, cost...)
    events.jsonl    append-only log, one JSON object per line (messages, steps, scaffold changes)
    patch.diff      the final patch
    lock            held (flock) by the one process running the session: who, and since when
    scaffold/       the session's scaffold work tree (what the agent can write)
    scaffold.git/   its history (outside the tree the agent can write)

Persistence is O(1) per step: one appended line and one small file replace. Everything written is
redacted of the secrets the kernel holds (``live_swe.infra.redact``), and session files are opened
without following symbolic links (``live_swe.infra.files``): a link is a damaged session file.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from live_swe.config import home
from live_swe.errors import UserError
from live_swe.events import Event
from live_swe.infra import files
from live_swe.infra.jsonl import parse_objects
from live_swe.infra.redact import Redactor, redactor


class RunStatus(StrEnum):
    """How a session's run stands or ended (``meta.json``'s and the ``end`` event's ``status``)."""

    RUNNING = "running"
    SUBMITTED = "submitted"  # the agent submitted its patch
    LIMITS_EXCEEDED = "limits_exceeded"  # a step, cost or wall-time budget ran out
    FORMAT_ERROR = "format_error"  # too many replies in a row without exactly one action
    INTERRUPTED = "interrupted"  # the person (or a stopping batch) stopped it
    ERROR = "error"  # live-swe or its infrastructure failed
    CONTRACT_STOPPED = "contract_stopped"  # a contract rule stopped the run


# Ended without a submission but with a patch worth evaluating as it stands.
FINISHED = (RunStatus.SUBMITTED, RunStatus.LIMITS_EXCEEDED, RunStatus.FORMAT_ERROR, RunStatus.CONTRACT_STOPPED)


class SessionError(UserError):
    """An unknown or unreadable session; the message says which and what to do."""


class SessionMeta(BaseModel):
    model_config = ConfigDict(extra="ignore")  # older sessions may carry fields we dropped

    id: str
    task: str
    model: str
    env: str = "local"
    image: str | None = None
    repo: str | None = None  # host path of the repository (local env, or copied into docker)
    repo_dir: str | None = None  # the repository as commands see it
    base_commit: str | None = None
    scaffold_ref: str = "seed"
    status: str = "running"
    exit_message: str = ""
    steps: int = 0
    cost: float = 0.0
    elapsed: float = 0.0
    created_at: str = ""
    updated_at: str = ""
    parent: str | None = None  # e.g. the bench run or github issue that started it
    extra: dict[str, Any] = {}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


class Session:
    def __init__(self, directory: Path, meta: SessionMeta):
        self.dir = directory
        self.meta = meta
        self._log: int | None = None  # the event log's file descriptor, opened for appending
        self._lock: int | None = None  # the held lock's file descriptor (``claim``)
        self._redactor: Redactor | None = None

    def redact(self, text: str) -> str:
        """``text`` without the secrets this process holds (known when the session was first written)."""
        if self._redactor is None:
            self._redactor = redactor()
        return self._redactor(text)

    # -- paths
    @property
    def id(self) -> str:
        return self.meta.id

    @property
    def events_path(self) -> Path:
        return self.dir / "events.jsonl"

    @property
    def meta_path(self) -> Path:
        return self.dir / "meta.json"

    @property
    def patch_path(self) -> Path:
        return self.dir / "patch.diff"

    @property
    def scaffold_dir(self) -> Path:
        return self.dir / "scaffold"

    @property
    def history_dir(self) -> Path:
        return self.dir / "scaffold.git"

    # -- writing
    def save_meta(self) -> None:
        self.meta.updated_at = _now()
        with self._writing(self.meta_path):
            files.write_atomic(self.meta_path, self.redact(self.meta.model_dump_json(indent=2)))

    def append(self, event: Event) -> None:
        """Append one event line, redacted, with one ``write`` to the OS (survives ``kill -9`` of this
        process). A write that fails (a full disk) is taken back whole: the log never keeps half a line."""
        line = (self.redact(json.dumps(event.record(), ensure_ascii=False, default=str)) + "\n").encode("utf-8")
        with self._writing(self.events_path):
            if self._log is None:
                fd = files.open_no_follow(self.events_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
                self._log = fd
                if files.ends_torn(self.events_path):  # a kill mid-write: the torn line stays, reported
                    line = b"\n" + line  # by events(), and the next event starts on its own line
            size = os.fstat(self._log).st_size
            try:
                written = 0
                while written < len(line):
                    written += os.write(self._log, line[written:])
            except OSError:
                os.ftruncate(self._log, size)
                os.close(self._log)
                self._log = None  # the next append looks at the end of the log again
                raise

    def write_patch(self, patch: str) -> None:
        """Replace the patch atomically: a kill mid-write leaves the previous one whole."""
        with self._writing(self.patch_path):
            files.write_atomic(self.patch_path, self.redact(patch))

    @contextmanager
    def _writing(self, path: Path) -> Iterator[None]:
        """A session file that cannot be written (a full disk, a damaged file) is one clear error;
        what was written before stays whole, so the session resumes once the cause is gone."""
        try:
            yield
        except files.DamagedFile as exc:
            raise SessionError(str(exc)) from None
        except OSError as exc:
            raise SessionError(f"could not write {path}: {exc.strerror or exc}. The session is saved up to "
                               f"its last whole event; make room (or fix the cause), then `live-swe resume "
                               f"{self.id}` goes on from there") from None

    def claim(self) -> None:
        """Take the session for this process: one process per session. The lock is the kernel's own
        (``flock`` on ``lock`` in the session folder): it goes with the process however it ends, so a
        ``kill -9`` never leaves it stuck. A second process is told who holds it."""
        import fcntl
        import socket

        if self._lock is not None:
            return
        try:
            fd = files.open_no_follow(self.dir / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        except files.DamagedFile as exc:
            raise SessionError(str(exc)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 300, 0).decode("utf-8", "replace").strip() or "another process"
            os.close(fd)
            raise SessionError(
                f"session {self.id} is in use by another live-swe process ({holder}); one process runs a "
                f"session at a time: wait for it to end, or stop that process, then resume") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}, since {_now()}".encode(), 0)
        self._lock = fd

    def close(self) -> None:
        if self._log is not None:
            os.close(self._log)
            self._log = None
        if self._lock is not None:
            os.close(self._lock)  # releases the lock
            self._lock = None

    # -- reading
    def events(self) -> tuple[list[dict[str, Any]], list[str]]:
        """All readable events, and a description of each line that could not be read."""
        events, problems = [], []
        try:
            fd = files.open_no_follow(self.events_path)
        except FileNotFoundError:
            return events, problems
        except files.DamagedFile as exc:
            raise SessionError(str(exc)) from None
        with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as handle:
            events, bad = parse_objects(handle)
        problems = [f"{self.events_path}:{number}: {kind} line skipped" for number, kind in bad]
        return events, problems

    def patch(self) -> str:
        try:
            return files.read_text(self.patch_path, missing="")
        except files.DamagedFile as exc:
            raise SessionError(str(exc)) from None


class SessionStore:
    def __init__(self, root: Path):
        self.root = Path(root)

    @classmethod
    def default(cls) -> SessionStore:
        return cls(home() / "sessions")

    def create(self, **fields: Any) -> Session:
        session_id = fields.pop("id", None) or new_session_id()
        directory = self.root / session_id
        meta = SessionMeta(id=session_id, created_at=_now(), **fields)
        meta.updated_at = meta.created_at
        session = Session(directory, meta)
        try:
            directory.mkdir(parents=True, exist_ok=False)
        except FileExistsError:
            raise
        except OSError as exc:  # e.g. a full disk
            raise SessionError(f"could not create the session folder {directory}: {exc.strerror or exc}; "
                               "make room (or fix the cause) and run again") from None
        try:
            files.write_atomic(session.meta_path, session.redact(meta.model_dump_json(indent=2)))
        except OSError as exc:  # a session that could not be written down is no session: none is left
            import shutil

            shutil.rmtree(directory, ignore_errors=True)
            if isinstance(exc, files.DamagedFile):
                raise SessionError(str(exc)) from None
            raise SessionError(f"could not write {session.meta_path}: {exc.strerror or exc}; no session was "
                               "created: make room (or fix the cause) and run again") from None
        return session

    def exists(self, session_id: str) -> bool:
        return os.path.lexists(self.root / session_id / "meta.json")

    def open(self, session_id: str) -> Session:
        directory = self.root / session_id
        path = directory / "meta.json"
        if "/" in session_id or session_id in ("", ".", "..") or not os.path.lexists(path):
            raise SessionError(
                f"no session {session_id!r} under {self.root}; `live-swe sessions list` shows the ones there are"
            )
        try:
            meta = SessionMeta.model_validate_json(files.read_text(path))
        except files.DamagedFile as exc:
            raise SessionError(str(exc)) from None
        except (ValidationError, ValueError) as exc:
            raise SessionError(f"{path}: session metadata is unreadable ({exc.__class__.__name__}); "
                               "the event log next to it is untouched. Restore meta.json from a copy, or move "
                               "the folder out of the sessions folder to set the session aside") from exc
        return Session(directory, meta)

    def list(self) -> list[SessionMeta]:
        return self.scan()[0]

    def scan(self) -> tuple[list[SessionMeta], list[tuple[str, str]]]:
        """The readable sessions, and the damaged ones: (folder name, what is wrong and what to do)."""
        if not self.root.is_dir():
            return [], []
        metas, damaged = [], []
        for directory in sorted(self.root.iterdir()):
            if not directory.is_dir() or not os.path.lexists(directory / "meta.json"):
                continue  # not a session (nor one that got as far as its metadata)
            try:
                metas.append(self.open(directory.name).meta)
            except SessionError as exc:
                damaged.append((directory.name, str(exc)))
        return metas, damaged
