"""Per-file tag cache, keyed by each file's modification time and size.

One JSON file per repository under ``$LIVE_SWE_HOME/cache/repomap/`` (JSON, not pickle: the
agent can write files on the host, and the kernel never unpickles what it might have written).
A file whose mtime or size changed is parsed again; the rest is reused.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from live_swe.repomap.tags import FileTags

CACHE_VERSION = 2


def default_cache_dir() -> Path:
    from live_swe.config import home

    return home() / "cache" / "repomap"


class TagCache:
    def __init__(self, directory: Path, repo: Path):
        key = hashlib.sha1(str(repo.resolve()).encode()).hexdigest()[:16]
        self.path = Path(directory) / f"{key}.json"
        self._entries: dict[str, list] = {}  # rel path -> [mtime_ns, size, tags json]
        self._dirty = False
        self._load()

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return  # no cache yet, or an unreadable one: rebuild
        if isinstance(data, dict) and data.get("version") == CACHE_VERSION and isinstance(data.get("files"), dict):
            self._entries = data["files"]

    def get(self, rel: str, stamp: tuple[int, int]) -> FileTags | None:
        entry = self._entries.get(rel)
        if entry and entry[0] == stamp[0] and entry[1] == stamp[1]:
            try:
                return FileTags.from_json(entry[2])
            except (IndexError, TypeError, ValueError):
                return None
        return None

    def put(self, rel: str, stamp: tuple[int, int], tags: FileTags) -> None:
        self._entries[rel] = [stamp[0], stamp[1], tags.to_json()]
        self._dirty = True

    def prune(self, keep: set[str]) -> None:
        gone = set(self._entries) - keep
        for rel in gone:
            del self._entries[rel]
        self._dirty = self._dirty or bool(gone)

    def save(self) -> None:
        if not self._dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"version": CACHE_VERSION, "files": self._entries}, separators=(",", ":")))
        os.replace(tmp, self.path)
        self._dirty = False
