from datetime import date

from datespan import DateSpan, split_by_month


def test_within_one_month():
    s = DateSpan(date(2024, 3, 2), date(2024, 3, 9))
    assert split_by_month(s) == [s]


def test_across_two_months():
    s = DateSpan(date(2024, 3, 30), date(2024, 4, 2))
    assert split_by_month(s) == [
        DateSpan(date(2024, 3, 30), date(2024, 4, 1)),
        DateSpan(date(2024, 4, 1), date(2024, 4, 2)),
    ]


def test_empty_span():
    assert split_by_month(DateSpan(date(2024, 3, 2), date(2024, 3, 2))) == []
