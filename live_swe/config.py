"""User configuration: CLI > environment (LIVE_SWE_*) > project file > config file > defaults.

The config file is ``$LIVE_SWE_HOME/config.yaml``; a repository may add ``.live-swe/config.yaml``
(model, env, image, scaffold, limits, contract, max_tokens: where the key goes, ``api_base``, and
what the sandbox allows, ``sandbox``, stay the person's). Unknown keys are rejected with the file
named and the nearest known key suggested.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from live_swe.errors import UserError

ENV_PREFIX = "LIVE_SWE_"


class ConfigError(UserError):
    """A malformed config file or environment value; the message says where and what to fix."""


class KernelLimits(BaseModel):
    """Budgets owned by the kernel. A scaffold can lower them, never raise them."""

    model_config = ConfigDict(extra="forbid")

    step_limit: int = Field(default=250, ge=1)
    cost_limit: float = Field(default=3.0, ge=0)
    wall_time_limit: float = Field(default=3600.0, gt=0)
    command_timeout: float = Field(default=120.0, gt=0)
    max_format_errors: int = Field(default=5, ge=1)


UNLIMITED_WHEN_ZERO = {"cost_limit"}  # `--cost-limit 0`: no cost budget (a local model costs nothing)


def budget_amount(key: str, value: float) -> float:
    """A budget as a number to compare: a zero that means "no limit" is infinite."""
    return float("inf") if key in UNLIMITED_WHEN_ZERO and value == 0 else value


class SandboxSettings(BaseModel):
    """The local environment's bubblewrap sandbox (``--sandbox none`` turns it off, per run only)."""

    model_config = ConfigDict(extra="forbid")

    network: bool = False


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    # The server of a litellm model: an OpenAI-compatible one (llama.cpp's server, vLLM, LM Studio:
    # e.g. http://127.0.0.1:8080/v1 with model openai/NAME) or Ollama's (model ollama/NAME).
    api_base: str | None = None
    # The longest reply of a litellm model, in tokens (a local server may otherwise write until its
    # context is full); null leaves it to the provider.
    max_tokens: int | None = Field(default=None, ge=1)
    env: str = "local"
    image: str | None = None
    scaffold: str = "seed"
    limits: KernelLimits = KernelLimits()
    sandbox: SandboxSettings = SandboxSettings()
    contract: str | None = None  # a behavioural contract file (a path)

    @field_validator("api_base")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        return check_api_base(value) if value else None


def check_api_base(value: str) -> str:
    """An http(s) URL with a host, else a ValueError saying what is expected."""
    from urllib.parse import urlsplit

    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{value!r} is not an http(s) URL; give the server's base URL, e.g. http://127.0.0.1:8080/v1")
    return value.strip()


def model_settings() -> dict[str, Any]:
    """A litellm model's server and reply length from the environment or the config file
    (LIVE_SWE_API_BASE, LIVE_SWE_MAX_TOKENS, ``api_base``, ``max_tokens``), for every front end."""
    settings = load_settings()
    return {"api_base": settings.api_base, "max_tokens": settings.max_tokens}


def home() -> Path:
    """Where live-swe keeps sessions, models, tools and the archive."""
    override = os.environ.get(ENV_PREFIX + "HOME")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("live-swe", appauthor=False))


def config_path() -> Path:
    return home() / "config.yaml"


PROJECT_FILE = Path(".live-swe") / "config.yaml"
# What a repository may not choose for the person running live-swe in it: where their provider key is
# sent (a model server) and what the agent's sandbox allows.
NOT_FROM_A_PROJECT = {
    "api_base": "a repository must not choose the server your key is sent to; use --api-base or your own config",
    "sandbox": "a repository must not open the agent's sandbox; use --network or your own config",
}


def project_config_path(start: Path | None) -> Path | None:
    """The settings file of the repository holding ``start`` (a folder in it), if it has one."""
    if start is None:
        return None
    for folder in (Path(start).resolve(), *Path(start).resolve().parents):
        if (folder / ".git").exists():
            path = folder / PROJECT_FILE
            return path if path.is_file() and not path.is_symlink() else None
    return None


def _check_keys(data: dict[str, Any], model: type[BaseModel], where: str, prefix: str = "") -> None:
    """Unknown keys, at any depth, as one error naming the file and the nearest known key."""
    import difflib

    for key, value in data.items():
        field = model.model_fields.get(key) if isinstance(key, str) else None
        if field is None:
            known = sorted(model.model_fields)
            close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            hint = f"did you mean '{prefix}{close[0]}'?" if close else f"known settings: {', '.join(known)}"
            raise ConfigError(f"{where}: unknown setting '{prefix}{key}'; {hint}")
        inner = field.annotation
        if isinstance(value, dict) and isinstance(inner, type) and issubclass(inner, BaseModel):
            _check_keys(value, inner, where, f"{prefix}{key}.")


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in top.items():
        merged[key] = _merge(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
    return merged


def _from_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must be a mapping of settings")
    return data


_ENV_KEYS = {
    "MODEL": ("model",),
    "API_BASE": ("api_base",),
    "MAX_TOKENS": ("max_tokens",),
    "ENV": ("env",),
    "IMAGE": ("image",),
    "SCAFFOLD": ("scaffold",),
    "STEP_LIMIT": ("limits", "step_limit"),
    "COST_LIMIT": ("limits", "cost_limit"),
    "WALL_TIME_LIMIT": ("limits", "wall_time_limit"),
    "COMMAND_TIMEOUT": ("limits", "command_timeout"),
}


def _set(data: dict[str, Any], keys: tuple[str, ...], value: Any) -> None:
    for key in keys[:-1]:
        data = data.setdefault(key, {})
    data[keys[-1]] = value


def load_settings(overrides: dict[str, Any] | None = None, project: Path | None = None) -> Settings:
    """Merge defaults, the config file, the project's file (of the repository ``project``), the
    environment and CLI overrides (None values ignored)."""
    path = config_path()
    data = _from_file(path)
    _check_keys(data, Settings, str(path))
    if isinstance(data.get("contract"), str):  # relative to the config file's folder
        data["contract"] = str(path.parent / Path(data["contract"]).expanduser())
    project_file = project_config_path(project)
    if project_file is not None:
        shared = _from_file(project_file)
        _check_keys(shared, Settings, str(project_file))
        for key, why in NOT_FROM_A_PROJECT.items():
            if key in shared:
                raise ConfigError(f"{project_file}: {key!r} cannot be set by a project ({why})")
        if isinstance(shared.get("contract"), str):  # a project's paths are the project's, and stay in it
            root = project_file.parent.parent.resolve()
            path = (root / shared["contract"]).resolve()
            if not path.is_relative_to(root):
                raise ConfigError(f"{project_file}: 'contract' must be a file inside the repository "
                                  f"(got {shared['contract']!r})")
            shared["contract"] = str(path)
        data = _merge(data, shared)
    for suffix, keys in _ENV_KEYS.items():
        value = os.environ.get(ENV_PREFIX + suffix)
        if value not in (None, ""):
            _set(data, keys, value)
    for dotted, value in (overrides or {}).items():
        if value is not None:
            _set(data, tuple(dotted.split(".")), value)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        files = " or ".join(str(f) for f in (config_path(), project_file) if f is not None)
        raise ConfigError(f"configuration ({files} or {ENV_PREFIX}* variables): {problems}") from exc
