"""Checks that a litellm model can be asked at all, before a session, a batch or a run exists.

A provider litellm does not know, or a provider's key missing from the environment, would
otherwise show only at the first query: after the session is made (and for a missing key, after
retries). litellm's own tables answer both (``get_llm_provider``, ``validate_environment``);
litellm is imported here, never at module import, so ``live-swe --help`` stays fast.

Importing litellm takes seconds, so the providers live-swe suggests itself are checked without it,
from the variables litellm reads their keys from (``KEY_VARIABLES``; a test holds the table to
litellm's ``validate_environment``), and a prefix that none of litellm's own data files names (its
provider enum, its JSON providers, its model table) is refused without importing it either.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import os
from pathlib import Path

from live_swe.models.base import ModelError
from live_swe.models.litellm_model import _litellm

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
    if provider and provider not in KEY_VARIABLES and provider not in (_litellm_prefixes() or {provider}):
        raise _unknown_provider(name)
    if provider in KEY_VARIABLES:
        if not (api_base or api_key or any(os.environ.get(v) for v in KEY_VARIABLES[provider])):
            raise _missing_key(name, provider, KEY_VARIABLES[provider])
        return
    litellm = _litellm()
    try:
        _, provider, _, _ = litellm.get_llm_provider(model=name, api_base=api_base)
    except Exception:  # noqa: BLE001 - litellm says "provider not provided" with several exception types
        raise _unknown_provider(name) from None
    if api_base or api_key:
        return  # a server of the user's own (openai/NAME --api-base URL), or a key given directly
    try:
        missing = list(litellm.validate_environment(model=name).get("missing_keys") or [])
    except Exception:  # noqa: BLE001 - litellm cannot tell: the provider will say at the first query
        return
    if missing and all(variable.endswith("_API_KEY") for variable in missing):
        raise _missing_key(name, provider, missing)


@functools.cache
def _litellm_prefixes() -> frozenset[str]:
    """Every first path segment litellm's own files know, read without importing litellm: its
    provider enum (``types/utils.py``), its JSON-configured providers, and its model table. Empty
    when they cannot be read (another litellm layout): litellm itself is asked then."""
    try:
        spec = importlib.util.find_spec("litellm")  # finds the package without running it
        root = Path(spec.origin).parent
        tree = ast.parse((root / "types" / "utils.py").read_text())
        enum = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "LlmProviders")
        known = {item.value.value for item in enum.body
                 if isinstance(item, ast.Assign) and isinstance(item.value, ast.Constant)}
        providers = root / "llms" / "openai_like" / "providers.json"
        if providers.exists():
            known |= set(json.loads(providers.read_text()))
        models = json.loads((root / "model_prices_and_context_window_backup.json").read_text())
        known |= {model.split("/", 1)[0] for model in models if "/" in model}
    except Exception:  # noqa: BLE001 - any surprise: leave the answer to litellm
        return frozenset()
    return frozenset(known) if "openai" in known else frozenset()


def _unknown_provider(name: str) -> ModelError:
    prefix = name.split("/", 1)[0] if "/" in name else name
    return ModelError(
        f"unknown model provider {prefix!r} in the model name {name!r}: use a litellm provider/model "
        f"(anthropic/…, openai/…, gemini/…, openrouter/…, ollama/…; list: {PROVIDERS_PAGE}), "
        "local/NAME, or scripted:PATH"
    )


def _missing_key(name: str, provider: str, variables) -> ModelError:
    return ModelError(
        f"model {name} needs {' or '.join(variables)} in the environment, and it is not set: export it, "
        f"or choose another model (a {provider}-compatible server of your own: --api-base URL)"
    )
