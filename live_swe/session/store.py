"""Session directories under ``$LIVE_SWE_HOME/sessions/<id>/``::

    meta.json       small metadata, replaced atomically (task, model, status, steps, cost...)
    events.jsonl    append-only log, one JSON object per line (messages, steps, scaffold changes)
    patch.diff      the final patch
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
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from live_swe.config import home
from live_swe.errors import UserError
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


# Ended without a submission but with a patch worth evaluating as it stands.
FINISHED = (RunStatus.SUBMITTED, RunStatus.LIMITS_EXCEEDED, RunStatus.FORMAT_ERROR)


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
        self._log = None
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
        files.write_atomic(self.meta_path, self.redact(self.meta.model_dump_json(indent=2)))

    def append(self, event: dict[str, Any]) -> None:
        """Append one event line, redacted, and flush it to the OS (survives ``kill -9`` of this process)."""
        if self._log is None:
            try:
                self._log = files.open_append(self.events_path)
            except files.DamagedFile as exc:
                raise SessionError(str(exc)) from None
        self._log.write(self.redact(json.dumps(event, ensure_ascii=False, default=str)) + "\n")
        self._log.flush()

    def write_patch(self, patch: str) -> None:
        """Replace the patch atomically: a kill mid-write leaves the previous one whole."""
        files.write_atomic(self.patch_path, self.redact(patch))

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

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

    def iter_events(self, kind: str) -> Iterator[dict[str, Any]]:
        for event in self.events()[0]:
            if event.get("t") == kind:
                yield event

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
        directory.mkdir(parents=True, exist_ok=False)
        meta = SessionMeta(id=session_id, created_at=_now(), **fields)
        session = Session(directory, meta)
        session.save_meta()
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
                               "the event log next to it is untouched") from exc
        return Session(directory, meta)

    def list(self) -> list[SessionMeta]:
        if not self.root.is_dir():
            return []
        metas = []
        for directory in sorted(self.root.iterdir()):
            try:
                metas.append(self.open(directory.name).meta)
            except SessionError:
                continue
        return metas
