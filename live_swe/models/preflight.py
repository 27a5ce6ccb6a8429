"""Checks that a litellm model can be asked at all, before a session, a batch or a run exists.

A provider litellm does not know, or a provider's key missing from the environment, would
otherwise show only at the first query: after the session is made (and for a missing key, after
retries). litellm's own tables answer both (``get_llm_provider``, ``validate_environment``);
litellm is imported here, never at module import, so ``live-swe --help`` stays fast.

Importing litellm takes seconds, so the providers live-swe suggests itself are checked without it,
from the variables litellm reads their keys from (``KEY_VARIABLES``; a test holds the table to
litellm's ``validate_environment``).
"""

from __future__ import annotations

import os

from live_swe.models.base import ModelError

PROVIDERS_PAGE = "https://docs.litellm.ai/docs/providers"
# provider -> the variables litellm takes its key from (any one of them will do)
KEY_VARIABLES = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "openrouter": ("OPENROUTER_API_KEY",),
}


def check_litellm_model(name: str, *, api_base: str | None = None, api_key: str | None = None) -> None:
    """Raise ``ModelError`` (one line: what is wrong and what to do) when ``name`` cannot be asked.

    Without ``api_base`` and ``api_key`` the provider's key must be in the environment. Only a
    missing ``*_API_KEY`` refuses: providers that sign in otherwise (cloud credentials, a local
    server's address) are left to the provider, as litellm's table cannot see those."""
    provider = name.split("/", 1)[0] if "/" in name else ""
    if provider in KEY_VARIABLES:
        if not (api_base or api_key or any(os.environ.get(v) for v in KEY_VARIABLES[provider])):
            raise _missing_key(name, provider, KEY_VARIABLES[provider])
        return
    from live_swe.models.litellm_model import _litellm

    litellm = _litellm()
    try:
        _, provider, _, _ = litellm.get_llm_provider(model=name, api_base=api_base)
    except Exception:  # noqa: BLE001 - litellm says "provider not provided" with several exception types
        prefix = name.split("/", 1)[0] if "/" in name else name
        raise ModelError(
            f"unknown model provider {prefix!r} in the model name {name!r}: use a litellm provider/model "
            f"(anthropic/…, openai/…, gemini/…, openrouter/…, ollama/…; list: {PROVIDERS_PAGE}), "
            "local/NAME, or scripted:PATH"
        ) from None
    if api_base or api_key:
        return  # a server of the user's own (openai/NAME --api-base URL), or a key given directly
    try:
        missing = list(litellm.validate_environment(model=name).get("missing_keys") or [])
    except Exception:  # noqa: BLE001 - litellm cannot tell: the provider will say at the first query
        return
    if missing and all(variable.endswith("_API_KEY") for variable in missing):
        raise _missing_key(name, provider, missing)


def _missing_key(name: str, provider: str, variables) -> ModelError:
    return ModelError(
        f"model {name} needs {' or '.join(variables)} in the environment, and it is not set: export it, "
        f"or choose another model (a {provider}-compatible server of your own: --api-base URL)"
    )
