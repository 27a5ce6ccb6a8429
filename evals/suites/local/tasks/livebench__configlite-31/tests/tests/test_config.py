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


@pytest.mark.parametrize("spelling", ["off", "no", "false", "0", "OFF", "No"])
def test_false_bool(spelling):
    cfg = Config.from_text(f"[server]\ndebug = {spelling}")
    assert cfg.get_bool("server", "debug") is False


def test_false_default_for_missing_bool(cfg):
    assert cfg.get_bool("server", "verbose", default=False) is False


def test_invalid_bool_is_rejected():
    cfg = Config.from_text("[server]\ndebug = maybe")
    with pytest.raises(ConfigError):
        cfg.get_bool("server", "debug")
