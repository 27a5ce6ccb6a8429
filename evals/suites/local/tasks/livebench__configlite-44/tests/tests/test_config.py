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


ENV_TEXT = """
[db]
url = postgres://${DB_USER}:${DB_PASSWORD}@localhost/app
[server]
port = ${PORT:-8080}
debug = ${DEBUG:-off}
price = $$5
"""


def test_env_variables_are_substituted():
    cfg = Config.from_text(ENV_TEXT, env={"DB_USER": "app", "DB_PASSWORD": "s3cret"})
    assert cfg.get("db", "url") == "postgres://app:s3cret@localhost/app"


def test_default_used_when_variable_unset_or_empty():
    assert Config.from_text(ENV_TEXT, env={}).get_int("server", "port") == 8080
    assert Config.from_text(ENV_TEXT, env={"PORT": ""}).get_int("server", "port") == 8080
    assert Config.from_text(ENV_TEXT, env={"PORT": "9000"}).get_int("server", "port") == 9000


def test_interpolation_applies_to_bool():
    assert Config.from_text(ENV_TEXT, env={"DEBUG": "yes"}).get_bool("server", "debug") is True


def test_missing_variable_is_named():
    cfg = Config.from_text(ENV_TEXT, env={"DB_USER": "app"})
    with pytest.raises(ConfigError, match="DB_PASSWORD"):
        cfg.get("db", "url")


def test_double_dollar_is_literal():
    assert Config.from_text(ENV_TEXT, env={}).get("server", "price") == "$5"


def test_os_environ_is_the_default(monkeypatch):
    monkeypatch.setenv("PORT", "7000")
    assert Config.from_text(ENV_TEXT).get_int("server", "port") == 7000
