"""A half-open range of days: ``start`` is included, ``end`` is not."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True)
class DateSpan:
    start: date
    end: date

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"span ends ({self.end}) before it starts ({self.start})")

    def __repr__(self) -> str:
        return f"DateSpan({self.start.isoformat()}, {self.end.isoformat()})"

    def days(self) -> int:
        return (self.end - self.start).days

    def contains(self, day: date) -> bool:
        return self.start <= day < self.end

    def overlaps(self, other: DateSpan) -> bool:
        """Whether the two spans share at least one day."""
        return self.start <= other.end and other.start <= self.end

    def intersection(self, other: DateSpan) -> DateSpan | None:
        if not self.overlaps(other):
            return None
        return DateSpan(max(self.start, other.start), min(self.end, other.end))
