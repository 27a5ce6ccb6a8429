import pytest

from csvtools import read_rows
from csvtools.stats import column_summary

ROWS = read_rows("name,temp\nA,21.5\nB,\nC,22.5\n")


def test_summary_skips_missing_values():
    assert column_summary(ROWS, "temp") == {
        "count": 2, "missing": 1, "min": 21.5, "max": 22.5, "mean": 22.0,
    }


def test_no_numbers():
    rows = read_rows("name,temp\nA, \n")
    assert column_summary(rows, "temp") == {
        "count": 0, "missing": 1, "min": None, "max": None, "mean": None,
    }


def test_non_numeric_value_names_row():
    rows = read_rows("name,temp\nA,21\nB,warm\n")
    with pytest.raises(ValueError, match="row 2"):
        column_summary(rows, "temp")


def test_unknown_column():
    with pytest.raises(KeyError):
        column_summary(ROWS, "pressure")
