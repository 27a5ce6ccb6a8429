from datetime import date

import pytest

from datespan import DateSpan


def span(a, b):
    return DateSpan(date.fromisoformat(a), date.fromisoformat(b))


def test_days():
    assert span("2024-03-01", "2024-03-04").days() == 3


def test_end_before_start_rejected():
    with pytest.raises(ValueError):
        span("2024-03-04", "2024-03-01")


def test_contains_excludes_end():
    s = span("2024-03-01", "2024-03-04")
    assert s.contains(date(2024, 3, 1))
    assert not s.contains(date(2024, 3, 4))


def test_overlapping_spans():
    assert span("2024-03-01", "2024-03-10").overlaps(span("2024-03-05", "2024-03-20"))


def test_disjoint_spans():
    assert not span("2024-03-01", "2024-03-03").overlaps(span("2024-03-05", "2024-03-20"))


def test_intersection():
    got = span("2024-03-01", "2024-03-10").intersection(span("2024-03-05", "2024-03-20"))
    assert got == span("2024-03-05", "2024-03-10")
