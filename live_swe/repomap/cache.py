"""Per-file tag cache, keyed by each file's modification time and size.

One JSON file per repository under ``$LIVE_SWE_HOME/cache/repomap/`` (JSON, not pickle: the
agent can write files on the host, and the kernel never unpickles what it might have written).
A file whose mtime or size changed is parsed again; the rest is reused.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from live_swe.config import home
from live_swe.infra import files
from live_swe.repomap.tags import FileTags

CACHE_VERSION = 3


def default_cache_dir() -> Path:
    return home() / "cache" / "repomap"


class TagCache:
    def __init__(self, directory: Path, repo: Path):
        key = hashlib.sha1(str(repo.resolve()).encode()).hexdigest()[:16]
        self.path = Path(directory) / f"{key}.json"
        self._entries: dict[str, list] = {}  # rel path -> [mtime_ns, size, tags json]
        self._decoded: dict[str, FileTags] = {}  # entries turned into FileTags so far
        self._dirty = False
        self._load()

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return  # no cache yet, or an unreadable one: rebuild
        if isinstance(data, dict) and data.get("version") == CACHE_VERSION and isinstance(data.get("files"), dict):
            self._entries = data["files"]

    def has(self, rel: str, stamp: tuple[int, int]) -> bool:
        """Whether ``rel`` is cached with this stamp and a well-formed entry."""
        entry = self._entries.get(rel)
        return (isinstance(entry, list) and len(entry) == 3 and entry[0] == stamp[0] and entry[1] == stamp[1]
                and isinstance(entry[2], list) and len(entry[2]) == 2)

    def get(self, rel: str, stamp: tuple[int, int]) -> FileTags | None:
        return self.tags(rel) if self.has(rel, stamp) else None

    def tags(self, rel: str) -> FileTags:
        """The cached tags of ``rel`` (none if it is not cached or its entry is damaged)."""
        tags = self._decoded.get(rel)
        if tags is None:
            try:
                tags = FileTags.from_json(self._entries[rel][2])
            except (KeyError, IndexError, TypeError, ValueError):
                tags = FileTags()
            self._decoded[rel] = tags
        return tags

    def put(self, rel: str, stamp: tuple[int, int], tags: FileTags) -> None:
        self._entries[rel] = [stamp[0], stamp[1], tags.to_json()]
        self._decoded[rel] = tags
        self._dirty = True

    def prune(self, keep: set[str]) -> None:
        gone = set(self._entries) - keep
        for rel in gone:
            del self._entries[rel]
            self._decoded.pop(rel, None)
        self._dirty = self._dirty or bool(gone)

    def save(self) -> None:
        if not self._dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            files.write_atomic(self.path, json.dumps({"version": CACHE_VERSION, "files": self._entries},
                                                     separators=(",", ":")), mode=0o644)
        except OSError:
            return  # a read-only or full cache folder costs speed next time, never the map
        self._dirty = False


def remove_quietly(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
