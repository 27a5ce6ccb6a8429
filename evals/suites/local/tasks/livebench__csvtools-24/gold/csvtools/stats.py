"""Summary statistics of a numeric column."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def column_summary(rows: Sequence[Mapping[str, str]], column: str) -> dict:
    """Count, missing cells, min, max and mean of ``column`` (empty cells are missing)."""
    if rows and column not in rows[0]:
        raise KeyError(column)
    numbers: list[float] = []
    missing = 0
    for index, row in enumerate(rows, start=1):
        raw = row[column]
        if raw is None or not str(raw).strip():
            missing += 1
            continue
        try:
            numbers.append(float(raw))
        except ValueError:
            raise ValueError(f"column {column!r}, row {index}: not a number: {raw!r}") from None
    return {
        "count": len(numbers),
        "missing": missing,
        "min": min(numbers) if numbers else None,
        "max": max(numbers) if numbers else None,
        "mean": sum(numbers) / len(numbers) if numbers else None,
    }
