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


SPEC_ORDER = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
]


def test_prerelease_ranks_below_release():
    assert Version.parse("1.0.0-rc.1") < Version.parse("1.0.0")
    assert Version.parse("1.0.0") > Version.parse("1.0.0-rc.1")


def test_numeric_identifiers_compare_as_numbers():
    assert Version.parse("1.0.0-alpha.2") < Version.parse("1.0.0-alpha.10")


def test_spec_precedence_example():
    shuffled = [SPEC_ORDER[i] for i in (7, 3, 0, 5, 1, 6, 2, 4)]
    assert [str(v) for v in sorted(Version.parse(s) for s in shuffled)] == SPEC_ORDER
