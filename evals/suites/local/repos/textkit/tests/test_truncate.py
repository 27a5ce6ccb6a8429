import pytest

from textkit import truncate


def test_short_text_is_unchanged():
    assert truncate("short", 10) == "short"


def test_exact_width_is_unchanged():
    assert truncate("12345", 5) == "12345"


def test_tiny_width_returns_part_of_ellipsis():
    assert truncate("abcdef", 2) == ".."


def test_negative_width_is_rejected():
    with pytest.raises(ValueError):
        truncate("abc", -1)
