import pytest

from csvtools import read_rows
from csvtools.reader import split_line


def test_read_rows():
    assert read_rows("name,temp\nA,21.5\nB,22.0\n") == [
        {"name": "A", "temp": "21.5"},
        {"name": "B", "temp": "22.0"},
    ]


def test_quoted_field_with_delimiter():
    assert split_line('"Smith, J.",42') == ["Smith, J.", "42"]


def test_escaped_quote():
    assert split_line('"say ""hi""",x') == ['say "hi"', "x"]


def test_wrong_field_count():
    with pytest.raises(ValueError, match="line 3"):
        read_rows("a,b\n1,2\n3\n")
