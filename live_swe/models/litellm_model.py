"""Any provider through litellm, with retries where retrying can help and never where it cannot."""

from __future__ import annotations

import os
import random
import time
from typing import Any

from live_swe.models.base import ModelError, Reply, TokenSink, ToolCall, Usage

# Never let litellm fetch its price list from the network unless the user asked for it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

MAX_ATTEMPTS = 6


def _litellm():
    import litellm

    litellm.suppress_debug_info = True
    litellm.drop_params = True
    return litellm


def _cache_control(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic prompt caching: mark the system message and the last message as cache points."""
    marked = [dict(m) for m in messages]
    for index in {0, len(marked) - 1}:
        if 0 <= index < len(marked) and isinstance(marked[index].get("content"), str):
            text = marked[index]["content"]
            marked[index]["content"] = [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]
    return marked


class LitellmModel:
    def __init__(self, name: str, *, temperature: float | None = None, timeout: float = 600, **extra: Any):
        self.name = name
        self.kwargs = {"timeout": timeout, **extra}
        if temperature is not None:
            self.kwargs["temperature"] = temperature
        self._price_warning_given = False
        self.sleep = time.sleep  # swapped in tests

    def _is_anthropic(self) -> bool:
        return "anthropic" in self.name or "claude" in self.name

    def prepare(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The messages as sent to the provider (for Anthropic: with the prompt-cache breakpoints)."""
        return _cache_control(messages) if self._is_anthropic() else messages

    def query(self, messages, *, tools=None, on_token: TokenSink | None = None) -> Reply:
        litellm = _litellm()
        payload = self.prepare(messages)
        retryable = (
            litellm.RateLimitError,
            litellm.InternalServerError,
            litellm.ServiceUnavailableError,
            litellm.APIConnectionError,
            litellm.Timeout,
        )
        fatal = (
            litellm.AuthenticationError,
            litellm.NotFoundError,
            litellm.ContextWindowExceededError,
            litellm.BadRequestError,
            litellm.PermissionDeniedError,
        )
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                response = litellm.completion(model=self.name, messages=payload, tools=tools, **self.kwargs)
                break
            except fatal as exc:
                raise ModelError(f"{self.name}: {type(exc).__name__}: {_short(exc)}") from None
            except retryable as exc:
                if attempt == MAX_ATTEMPTS:
                    raise ModelError(f"{self.name}: gave up after {attempt} attempts: {_short(exc)}") from None
                self.sleep(min(60.0, 2 ** attempt) * (0.5 + random.random() / 2))
            except Exception as exc:  # noqa: BLE001 - litellm raises many provider-specific types
                raise ModelError(f"{self.name}: {type(exc).__name__}: {_short(exc)}") from None
        message = response.choices[0].message
        calls = tuple(
            ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments or "{}")
            for c in (getattr(message, "tool_calls", None) or [])
        )
        usage = getattr(response, "usage", None)
        reply_usage = Usage(getattr(usage, "prompt_tokens", 0) or 0, getattr(usage, "completion_tokens", 0) or 0)
        content = message.content or ""
        if on_token and content:
            on_token(content)
        return Reply(content=content, tool_calls=calls, usage=reply_usage, cost=self._cost(litellm, response))

    def _cost(self, litellm, response) -> float:
        try:
            return float(litellm.completion_cost(completion_response=response, model=self.name) or 0.0)
        except Exception:  # noqa: BLE001 - a model without a price counts 0, flagged once
            if not self._price_warning_given:
                self._price_warning_given = True
                import sys

                print(f"live-swe: no price known for {self.name}; its cost counts as 0", file=sys.stderr)
            return 0.0


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]
