import pytest

from configlite import Config, ConfigError

TEXT = """
# service settings
[server]
host = 0.0.0.0
port = 0x1F90
debug = on
allowed = alice, bob,

[db]
url = sqlite:///app.db
"""


@pytest.fixture
def cfg():
    return Config.from_text(TEXT)


def test_sections(cfg):
    assert cfg.sections() == ["server", "db"]


def test_get_string(cfg):
    assert cfg.get("db", "url") == "sqlite:///app.db"


def test_get_int_accepts_hex(cfg):
    assert cfg.get_int("server", "port") == 8080


def test_true_bool(cfg):
    assert cfg.get_bool("server", "debug") is True


def test_get_list_skips_empty_items(cfg):
    assert cfg.get_list("server", "allowed") == ["alice", "bob"]


def test_missing_key(cfg):
    with pytest.raises(ConfigError):
        cfg.get("server", "timeout")


def test_default_used_for_missing_key(cfg):
    assert cfg.get_int("server", "timeout", default=30) == 30
