"""Writing rows as delimited text with a header row."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def format_field(value: object, delimiter: str = ",") -> str:
    text = "" if value is None else str(value)
    if any(char in text for char in (delimiter, '"', "\n", "\r")):
        return '"' + text.replace('"', '""') + '"'
    return text


def write_rows(rows: Iterable[Mapping[str, object]], fieldnames: list[str], delimiter: str = ",") -> str:
    lines = [delimiter.join(format_field(name, delimiter) for name in fieldnames)]
    for row in rows:
        lines.append(delimiter.join(format_field(row.get(name), delimiter) for name in fieldnames))
    return "\n".join(lines) + "\n"
