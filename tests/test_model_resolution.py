"""Which model a run uses: --model > LIVE_SWE_MODEL > config file > provider key > pulled local model,
and otherwise an error that lists the options."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from live_swe.config import load_settings
from live_swe.models.base import ModelError
from live_swe.models.resolve import LOCAL_DEFAULT, PROVIDER_DEFAULTS, default_model_name

# 5. Model resolution: --model > LIVE_SWE_MODEL > config file > provider key > pulled local model > error.


@pytest.fixture
def no_local_model(tmp_path, monkeypatch) -> Path:
    """An empty models folder, so a model pulled on this machine does not decide the result."""
    folder = tmp_path / "models"
    folder.mkdir()
    monkeypatch.setenv("LIVE_SWE_MODELS_DIR", str(folder))
    return folder


def pull_local_default(models: Path) -> None:
    """A complete-looking pulled file (sparse: the size is what marks it complete)."""
    from live_swe.models.catalog import model_path, spec_for

    spec = spec_for(LOCAL_DEFAULT)
    path = model_path(spec)
    assert path.parent == models
    with open(path, "wb") as handle:
        handle.truncate(spec.size)


def resolved(cli_model: str | None = None) -> str:
    """What ``live-swe run`` resolves: settings merged from every source, then the defaults."""
    return default_model_name(load_settings({"model": cli_model}).model)


def write_config(home: Path, model: str) -> None:
    (home / "config.yaml").write_text(yaml.safe_dump({"model": model}))


def test_model_resolution_order(live_swe_home, no_local_model, monkeypatch):
    pull_local_default(no_local_model)
    assert resolved() == LOCAL_DEFAULT
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert resolved() == "openai/gpt-5-mini"
    write_config(live_swe_home, "ollama/from-config")
    assert resolved() == "ollama/from-config"
    monkeypatch.setenv("LIVE_SWE_MODEL", "ollama/from-env")
    assert resolved() == "ollama/from-env"
    assert resolved("ollama/from-cli") == "ollama/from-cli"


def test_an_empty_live_swe_model_falls_through_to_the_config_file(live_swe_home, no_local_model, monkeypatch):
    write_config(live_swe_home, "ollama/from-config")
    monkeypatch.setenv("LIVE_SWE_MODEL", "")
    assert resolved() == "ollama/from-config"


@pytest.mark.parametrize("variable,model", PROVIDER_DEFAULTS)
def test_each_provider_key_gives_its_default(no_local_model, monkeypatch, variable, model):
    pull_local_default(no_local_model)  # a key beats the pulled local model
    monkeypatch.setenv(variable, "key")
    assert resolved() == model
    assert model.split("/")[0] in variable.lower()


def test_with_no_model_anywhere_the_error_lists_the_options(no_local_model):
    with pytest.raises(ModelError) as error:
        resolved()
    message = str(error.value)
    for option in ("--model", "LIVE_SWE_MODEL", "live-swe models pull qwen2.5-coder-0.5b",
                   *(variable for variable, _ in PROVIDER_DEFAULTS)):
        assert option in message


def test_an_incomplete_local_model_does_not_count_as_pulled(no_local_model):
    from live_swe.models.catalog import model_path, spec_for

    model_path(spec_for(LOCAL_DEFAULT)).write_bytes(b"partial download")
    with pytest.raises(ModelError, match="no model to use"):
        resolved()
