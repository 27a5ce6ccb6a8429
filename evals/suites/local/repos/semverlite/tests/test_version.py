import pytest

from semverlite import Version


def test_parse_and_str():
    v = Version.parse("1.4.0-rc.1+build.7")
    assert (v.major, v.minor, v.patch) == (1, 4, 0)
    assert v.prerelease == ("rc", "1")
    assert str(v) == "1.4.0-rc.1+build.7"


def test_invalid_version():
    with pytest.raises(ValueError):
        Version.parse("1.4")


def test_numeric_core_ordering():
    assert Version.parse("1.9.0") < Version.parse("1.10.0")


def test_build_metadata_is_ignored():
    assert Version.parse("1.0.0+a") == Version.parse("1.0.0+b")
