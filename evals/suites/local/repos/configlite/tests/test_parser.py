import pytest

from configlite import ConfigError
from configlite.parser import parse


def test_keys_are_lowercased():
    assert parse("[a]\nKey = V") == {"a": {"key": "V"}}


def test_value_may_contain_equals():
    assert parse("[a]\nexpr = x=1")["a"]["expr"] == "x=1"


def test_key_outside_section_is_an_error():
    with pytest.raises(ConfigError, match="line 1"):
        parse("key = value")


def test_bad_line_is_an_error():
    with pytest.raises(ConfigError, match="line 2"):
        parse("[a]\njust words")
