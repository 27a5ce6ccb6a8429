"""JSON Lines, read in one place: one object a line, blank lines skipped, and a line that is not an
object (torn by a killed writer, or corrupt) reported by number instead of stopping the reader."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def parse_objects(lines: Iterable[str]) -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
    """(the objects, [(line number, "truncated" or "corrupt")] for the lines that are not objects)."""
    objects: list[dict[str, Any]] = []
    bad: list[tuple[int, str]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            value = None
        if isinstance(value, dict):
            objects.append(value)
        else:
            bad.append((number, "truncated" if not line.endswith("\n") else "corrupt"))
    return objects, bad


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The object lines of ``path`` ([] when there is no file); lines that are not objects are skipped."""
    path = Path(path)
    if not path.exists():
        return []
    with path.open(encoding="utf-8", errors="replace") as handle:
        return parse_objects(handle)[0]
