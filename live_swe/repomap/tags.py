"""Definitions and references of one source file, extracted with tree-sitter.

What is kept is small and plain (so the per-file cache is cheap to load): each definition's
name, kind, line number and the text of its first line; each referenced name with its count.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from live_swe.repomap.languages import parser_and_query

MAX_FILE_BYTES = 1_000_000  # larger files are almost always generated or vendored
MAX_LINE_CHARS = 120


@dataclass
class FileTags:
    # (name, kind, 1-based line, first line of the definition)
    defs: list[tuple[str, str, int, str]] = field(default_factory=list)
    refs: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> list:
        return [self.defs, self.refs]

    @classmethod
    def from_json(cls, data: list) -> FileTags:
        return cls([tuple(d) for d in data[0]], data[1])


def extract_tags(source: bytes, language: str) -> FileTags:
    import tree_sitter

    parser, query = parser_and_query(language)
    tree = parser.parse(source)
    captures = tree_sitter.QueryCursor(query).captures(tree.root_node)
    lines = source.split(b"\n")
    defs = []
    def_positions = set()
    for capture, nodes in captures.items():
        if not capture.startswith("def."):
            continue
        kind = capture[4:]
        for node in nodes:
            name = source[node.start_byte:node.end_byte].decode("utf-8", "replace")
            if name.startswith("__") and name.endswith("__"):
                continue  # dunders (__init__, __all__) are everywhere and say nothing about the file
            row = node.start_point[0]
            text = lines[row].decode("utf-8", "replace").rstrip()[:MAX_LINE_CHARS]
            defs.append((name, kind, row + 1, text))
            def_positions.add(node.start_byte)
    refs: Counter[str] = Counter()
    for node in captures.get("ref", ()):
        if node.start_byte not in def_positions:
            refs[source[node.start_byte:node.end_byte].decode("utf-8", "replace")] += 1
    defs.sort(key=lambda d: d[2])
    return FileTags(defs, dict(refs))


def looks_minified(source: bytes) -> bool:
    """Bundled / minified code (a few enormous lines) has no definitions worth showing."""
    return len(source) > 500 and len(source) / (source.count(b"\n") + 1) > 300


def tags_for_file(path: Path, language: str) -> FileTags:
    """Tags of a file on disk; an unreadable or oversized file has none."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return FileTags()
        source = path.read_bytes()
    except OSError:
        return FileTags()
    if looks_minified(source):
        return FileTags()
    return extract_tags(source, language)


def tags_for_batch(root: str, batch: list[tuple[str, str]]) -> list[list]:
    """Worker-process entry point: tags of ``(relative path, language)`` pairs, as JSON-ready lists."""
    base = Path(root)
    return [tags_for_file(base / rel, language).to_json() for rel, language in batch]
