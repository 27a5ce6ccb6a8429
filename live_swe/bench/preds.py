"""Append-only JSON-lines files of a batch: ``preds.jsonl`` (SWE-bench predictions) and ``results.jsonl``.

Every line goes through the kernel's redaction first (a patch can carry a key a command printed
into a file). Each record is one ``os.write`` of a whole line on an ``O_APPEND`` descriptor, then ``fsync``: a
``kill -9`` loses at most the line being written. A torn last line (no newline) is cut off when the
file is opened for appending again, so the file stays valid JSON lines for the official harness.
Readers skip unreadable lines; for an instance written twice (``--redo``) the last line wins, as in
the SWE-bench harness.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from live_swe.infra.jsonl import read_jsonl
from live_swe.infra.redact import redactor

PREDS_FILE = "preds.jsonl"
RESULTS_FILE = "results.jsonl"


class JsonlAppender:
    """One writer for one JSON-lines file, shared by the worker threads of a batch."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.torn_bytes = cut_torn_tail(self.path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def append(self, record: dict[str, Any]) -> None:
        line = redactor()(json.dumps(record, ensure_ascii=False, default=str))
        data = (line + "\n").encode("utf-8")
        with self._lock:
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            os.fsync(self._fd)

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def cut_torn_tail(path: Path) -> int:
    """Remove a last line left without its newline by a killed writer; returns the bytes removed."""
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with path.open("rb+") as handle:
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return 0
        # Walk back to the previous newline, in blocks (lines can be long patches).
        position, block = size, 1 << 16
        keep = 0
        while position > 0:
            start = max(0, position - block)
            handle.seek(start)
            chunk = handle.read(position - start)
            index = chunk.rfind(b"\n")
            if index >= 0:
                keep = start + index + 1
                break
            position = start
        handle.truncate(keep)
        handle.flush()
        os.fsync(handle.fileno())
    return size - keep


def read_preds(path: Path) -> dict[str, dict[str, Any]]:
    """instance_id -> its last prediction record in a ``preds.jsonl`` file."""
    return {r["instance_id"]: r for r in read_jsonl(path) if isinstance(r.get("instance_id"), str)}
