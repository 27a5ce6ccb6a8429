"""Model strings to models, and the default model when none is given.

``scripted:PATH``, ``replay:PATH``, ``local/NAME`` (the embedded llama.cpp models), and any
other string goes to litellm (``anthropic/...``, ``openai/...``, ``ollama/...``).
"""

from __future__ import annotations

import os

from live_swe.config import ConfigError, model_settings
from live_swe.models.base import Model, ModelError
from live_swe.models.catalog import is_installed
from live_swe.models.litellm_model import LitellmModel
from live_swe.models.local import LocalModel
from live_swe.models.preflight import check_litellm_model
from live_swe.models.replay import ReplayModel
from live_swe.models.scripted import ScriptedModel

# Provider defaults used when that provider's key is set and no model was named.
PROVIDER_DEFAULTS = (
    ("ANTHROPIC_API_KEY", "anthropic/claude-sonnet-4-5"),
    ("OPENAI_API_KEY", "openai/gpt-5-mini"),
    ("GEMINI_API_KEY", "gemini/gemini-2.5-pro"),
    ("OPENROUTER_API_KEY", "openrouter/anthropic/claude-sonnet-4.5"),
)
LOCAL_DEFAULT = "local/qwen2.5-coder-0.5b"


def make_model(name: str, **options) -> Model:
    """The model for ``name``. ``api_base`` (a litellm model's server) defaults to the configured one."""
    if not name or not name.strip():
        raise ModelError("empty model name; pass --model (see `live-swe run --help`)")
    api_base = options.pop("api_base", None)
    prefix, _, rest = name.partition(":")
    if api_base and (prefix in ("scripted", "replay") or name.startswith("local/")):
        raise ModelError(f"--api-base is for models served over HTTP (openai/NAME, ollama/NAME), not {name!r}")
    if prefix == "scripted":
        return ScriptedModel.from_path(_need_path(name, rest))
    if prefix == "replay":
        return ReplayModel.from_path(_need_path(name, rest))
    if name.startswith("local/"):
        return LocalModel.from_name(name, **options)
    if ":" in name.split("/")[0]:
        raise ModelError(
            f"unknown model prefix {prefix!r} in {name!r}; use scripted:PATH, replay:PATH, local/NAME, "
            "or a litellm model such as anthropic/claude-sonnet-4-5"
        )

    try:
        configured = model_settings()
    except ConfigError as exc:
        raise ModelError(str(exc)) from None
    if configured["max_tokens"] and "max_tokens" not in options:
        options["max_tokens"] = configured["max_tokens"]
    api_base = api_base or configured["api_base"]
    check_litellm_model(name, api_base=api_base, api_key=options.get("api_key"))  # before anything is made
    return LitellmModel(name, api_base=api_base, **options)


def check_model(name: str, api_base: str | None = None) -> None:
    """Fail now, with what to do, on a model that could not answer: an unknown provider, a missing
    key, a missing script. Builds nothing heavy: an embedded model (local/NAME) is not loaded."""
    if name.startswith("local/") and not api_base:
        return
    make_model(name, api_base=api_base)


def _need_path(name: str, rest: str) -> str:
    if not rest:
        raise ModelError(f"{name!r}: give a path after the colon, e.g. scripted:replies.yaml")
    return rest


def default_model_name(configured: str | None) -> str:
    """--model/LIVE_SWE_MODEL/config (already merged into ``configured``) > provider key > local."""
    if configured:
        return configured
    for variable, model in PROVIDER_DEFAULTS:
        if os.environ.get(variable):
            return model
    if _local_default_installed():
        return LOCAL_DEFAULT
    options = ", ".join(v for v, _ in PROVIDER_DEFAULTS)
    raise ModelError(
        "no model to use. Either pass --model (or set LIVE_SWE_MODEL), set one of "
        f"{options}, or pull the embedded local model with `live-swe models pull {LOCAL_DEFAULT.split('/')[1]}`"
    )


def _local_default_installed() -> bool:
    return is_installed(LOCAL_DEFAULT.split("/", 1)[1])
