"""The scaffold work tree as data: a cheap stat fingerprint, exact snapshots, diffs and restores.

The fingerprint (one ``lstat`` per entry, no reads) answers "did anything change?" at every step
boundary for well under a millisecond; only when it differs are files read and compared with the
last accepted snapshot, which is kept in memory with exact contents and permission bits so a
refused change can be undone byte for byte, mode for mode.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from live_swe.infra import files
from live_swe.scaffolding.files import NotARegularFile, read_regular

# A scaffold is a handful of small text files; anything bigger is refused, never read whole.
MAX_FILE_BYTES = 256 * 1024


@dataclass(frozen=True)
class Entry:
    kind: str  # "file", "dir", "link" or "other" (fifo, socket, device)
    mode: int  # permission bits
    data: bytes | None = None  # file contents; None for other kinds and for oversized files
    size: int = 0


Snapshot = dict[str, Entry]  # posix path relative to the root -> entry
Fingerprint = tuple


def _walk(root: str, prefix: str = ""):
    try:
        entries = sorted(os.scandir(os.path.join(root, prefix) if prefix else root), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        rel = f"{prefix}/{entry.name}" if prefix else entry.name
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue  # removed while we looked; the next look sees the result
        yield rel, info
        if stat.S_ISDIR(info.st_mode):
            yield from _walk(root, rel)


def fingerprint(root: Path) -> Fingerprint:
    """Stat data of every entry: any write, add, delete, rename or chmod changes it."""
    return tuple(
        (rel, s.st_mode, s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino) for rel, s in _walk(str(root))
    )


def snapshot(root: Path) -> Snapshot:
    """Every entry under ``root`` with its kind, permission bits and (for files) contents."""
    result: Snapshot = {}
    for rel, info in _walk(str(root)):
        mode = stat.S_IMODE(info.st_mode)
        if stat.S_ISDIR(info.st_mode):
            result[rel] = Entry("dir", mode)
        elif stat.S_ISLNK(info.st_mode):
            result[rel] = Entry("link", mode, os.readlink(os.path.join(root, rel)).encode(), info.st_size)
        elif stat.S_ISREG(info.st_mode):
            data = None
            if info.st_size <= MAX_FILE_BYTES:
                try:
                    data = read_regular(os.path.join(root, rel), MAX_FILE_BYTES)
                except FileNotFoundError:
                    continue
                except NotARegularFile:  # replaced (by a FIFO, a link...) since we looked
                    result[rel] = Entry("other", mode, None, info.st_size)
                    continue
                if len(data) > MAX_FILE_BYTES:
                    data = None  # grew while we read it
            result[rel] = Entry("file", mode, data, info.st_size)
        else:
            result[rel] = Entry("other", mode, None, info.st_size)
    return result


def changed_paths(before: Snapshot, after: Snapshot) -> list[str]:
    """Paths added, removed, or different in kind, mode or contents."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def restore(root: Path, accepted: Snapshot, paths: list[str]) -> None:
    """Make each of ``paths`` under ``root`` exactly what ``accepted`` says (absent if not in it)."""
    root = Path(root)
    # Remove first, deepest paths first, so a directory is empty before it goes.
    for rel in sorted(paths, key=lambda p: p.count("/"), reverse=True):
        target = root / rel
        want = accepted.get(rel)
        if want is not None and want.kind == "dir" and _kind(target) == "dir":
            continue  # only its mode differs; fixed below
        _remove(target)
    # Then create, shallowest first, so parents exist before their children.
    root.mkdir(parents=True, exist_ok=True)  # even the root may have been deleted
    for rel in sorted(paths, key=lambda p: p.count("/")):
        want = accepted.get(rel)
        if want is None:
            continue
        target = root / rel
        _make_parents(root, rel, accepted)
        if want.kind == "dir":
            target.mkdir(exist_ok=True)
        elif want.kind == "file":
            files.write_atomic(target, want.data or b"")
        elif want.kind == "link":
            os.symlink(want.data.decode(), target)
        if want.kind != "link":
            os.chmod(target, want.mode)


def _make_parents(root: Path, rel: str, accepted: Snapshot) -> None:
    parts = rel.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        parent_rel = "/".join(parts[:depth])
        parent = root / parent_rel
        if parent.is_symlink() or (parent.exists() and not parent.is_dir()):
            _remove(parent)
        if not parent.exists():
            parent.mkdir()
            entry = accepted.get(parent_rel)
            if entry is not None:
                os.chmod(parent, entry.mode)


def _kind(path: Path) -> str | None:
    try:
        info = path.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISDIR(info.st_mode):
        return "dir"
    if stat.S_ISLNK(info.st_mode):
        return "link"
    if stat.S_ISREG(info.st_mode):
        return "file"
    return "other"


def _remove(path: Path) -> None:
    kind = _kind(path)
    if kind is None:
        return
    if kind == "dir":
        # A directory the agent made unwritable still has to go.
        for dirpath, _dirs, _files in os.walk(path):
            os.chmod(dirpath, 0o700)
        shutil.rmtree(path)
    else:
        path.unlink()
