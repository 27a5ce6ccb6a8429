"""Half-open date ranges."""

from datespan.months import split_by_month
from datespan.spans import DateSpan

__all__ = ["DateSpan", "split_by_month"]
