"""What a batch does about faults around its instances: the Docker engine going away, instances
that failed (by kind), and sessions a killed batch left ``running``.

- ``EngineWatch``: an instance starts only once the engine answers; while it does not, the workers
  wait for it with backoff, up to a bound. Past the bound the batch stops starting instances.
- ``error_kind``: one word per failed instance (``ERROR_KINDS``), counted in the summary and the
  ``--json`` output, so a failed run is never read as a clean one.
- ``mark_stale_sessions``: a batch killed (``kill -9``, a crash, a lost machine) leaves its
  sessions ``running`` with no ``end`` event. The next run in that folder holds the folder's lock,
  so nothing else can be running them: they are closed as ``interrupted`` (stale), and their
  instances, absent from ``preds.jsonl``, run again.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from live_swe import events as ev
from live_swe.environments._docker_engine import _engine_address
from live_swe.environments.base import EnvironmentError_
from live_swe.models.base import ModelError
from live_swe.session.store import RunStatus, SessionError, SessionStore

# engine: the Docker engine stopped answering; missing_image: the instance's image is not here;
# environment: its container or repository failed; model: the model failed (provider, replies);
# internal: anything else (a bug: the record's reason says what).
ERROR_KINDS = ("engine", "missing_image", "environment", "model", "internal")
ENGINE_WAIT_S = 120.0  # how long queued instances wait for a Docker engine that went away
ENGINE_RETRIES = 1  # times one instance is run again after the engine went away under it
STALE = ("stale: the batch process running this session ended without closing it (kill -9, a crash); "
         "a later run of the batch closed it and ran the instance again")


def engine_address() -> str:
    return _engine_address()


class EngineWatch:
    """Whether the engine answers, and waiting for it (shared by the workers; one waits, others
    take its answer). Once the bound has passed without an answer, the engine counts as gone."""

    def __init__(self, ping: Callable[[], None], *, wait_s: float = ENGINE_WAIT_S):
        self._ping = ping
        self.wait_s = wait_s
        self._lock = threading.Lock()
        self.gone = False

    def answers(self) -> bool:
        try:
            self._ping()
            return True
        except Exception:  # noqa: BLE001 - any failure to ping means no usable engine now
            return False

    def wait(self, stop: threading.Event) -> bool:
        """True once the engine answers; False when it stayed away ``wait_s`` seconds, or on stop."""
        with self._lock:
            if self.gone:
                return False
            deadline = time.monotonic() + self.wait_s
            delay = 0.5
            while not stop.is_set():
                if self.answers():
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    self.gone = True
                    return False
                stop.wait(min(delay, left))
                delay = min(delay * 2, 10.0)
            return False

    def gone_message(self, *, lost: bool = True) -> str:
        """Why the batch stops: the engine stayed away (``lost``: say which engine, too)."""
        engine = f"the Docker engine at {engine_address()} stopped answering and " if lost else ""
        return (f"{engine}did not come back within {self.wait_s:g} s; start it (`sudo systemctl start docker`) "
                "and rerun the batch to go on")


def error_kind(exc: BaseException | None, *, model_failed: bool, missing_image: bool) -> str:
    """The kind of a failed instance (the engine's loss is found by the caller, which can ping it)."""
    if missing_image:
        return "missing_image"
    if model_failed or isinstance(exc, ModelError):
        return "model"
    if exc is None or isinstance(exc, EnvironmentError_):
        return "environment"
    return "internal"


def mark_stale_sessions(sessions_dir: Path) -> list[dict[str, Any]]:
    """Close the sessions left ``running``; one results record each (its cost counts as spent).

    Only for a caller that holds the batch folder's lock: no live process runs these sessions."""
    if not sessions_dir.is_dir():
        return []
    store = SessionStore(sessions_dir)
    records = []
    for directory in sorted(sessions_dir.iterdir()):
        try:
            meta = json.loads((directory / "meta.json").read_text())
            if meta.get("status") != RunStatus.RUNNING:
                continue
            session = store.open(directory.name)
        except (OSError, ValueError, SessionError):
            continue  # not a session, or one `sessions list` already reports as damaged
        try:
            session.append(ev.End(status=RunStatus.INTERRUPTED, message=STALE, steps=session.meta.steps,
                                  cost=session.meta.cost, extra={"stale": True}))
            session.meta.status, session.meta.exit_message = RunStatus.INTERRUPTED, STALE
            session.save_meta()
        finally:
            session.close()
        bench = (session.meta.extra or {}).get("bench") or {}
        records.append({
            "instance_id": bench.get("instance_id") or directory.name, "status": RunStatus.INTERRUPTED, "finished": False,
            "reason": STALE, "session": directory.name, "steps": session.meta.steps, "cost": session.meta.cost,
            "image": session.meta.image, "model": session.meta.model, "stale": True,
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        })
    return records
