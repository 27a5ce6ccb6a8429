"""Splitting spans at month boundaries (billing periods)."""

from __future__ import annotations

from datetime import date

from datespan.spans import DateSpan


def _first_of_next_month(day: date) -> date:
    if day.month == 12:
        return date(day.year + 1, 1, 1)
    return date(day.year, day.month + 1, 1)


def split_by_month(span: DateSpan) -> list[DateSpan]:
    """Cut ``span`` into pieces that each lie within one calendar month."""
    pieces = []
    cursor = span.start
    while cursor < span.end:
        boundary = min(_first_of_next_month(cursor), span.end)
        pieces.append(DateSpan(cursor, boundary))
        cursor = boundary
    return pieces
