"""Reading delimited text with a header row (double quotes allowed around fields)."""

from __future__ import annotations


def split_line(line: str, delimiter: str = ",") -> list[str]:
    fields, field, quoted, i = [], [], False, 0
    while i < len(line):
        char = line[i]
        if quoted:
            if char == '"' and line[i + 1 : i + 2] == '"':
                field.append('"')
                i += 1
            elif char == '"':
                quoted = False
            else:
                field.append(char)
        elif char == '"':
            quoted = True
        elif char == delimiter:
            fields.append("".join(field))
            field = []
        else:
            field.append(char)
        i += 1
    fields.append("".join(field))
    return fields


def read_rows(text: str, delimiter: str = ",") -> list[dict[str, str]]:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = split_line(lines[0], delimiter)
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        values = split_line(line, delimiter)
        if len(values) != len(header):
            raise ValueError(f"line {number}: expected {len(header)} fields, got {len(values)}")
        rows.append(dict(zip(header, values)))
    return rows
