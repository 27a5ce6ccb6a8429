"""Any provider through litellm, with retries where retrying can help and never where it cannot.

Local model servers go through the same path: ``openai/NAME`` with an ``api_base`` for
OpenAI-compatible servers (llama.cpp's server, vLLM, LM Studio), ``ollama/NAME`` for Ollama. A
model litellm has no price for (most of those) counts $0, with one note per model.
"""

from __future__ import annotations

import os
import random
import time
from typing import Any

from live_swe.models.base import ModelError, Reply, TokenSink, ToolCall, Usage

# Never let litellm fetch its price list from the network unless the user asked for it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

MAX_ATTEMPTS = 6
# Sent as the key to an OpenAI-compatible server given by api_base when no key is set: the
# OpenAI client refuses to send a request without one, and local servers ignore it.
NO_KEY = "no-key"


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
    def __init__(self, name: str, *, temperature: float | None = None, timeout: float = 600,
                 api_base: str | None = None, **extra: Any):
        self.name = name
        self.kwargs = {"timeout": timeout, **extra}
        if temperature is not None:
            self.kwargs["temperature"] = temperature
        if api_base:
            self.kwargs["api_base"] = api_base
            if name.startswith("openai/") and not extra.get("api_key") and not os.environ.get("OPENAI_API_KEY"):
                self.kwargs["api_key"] = NO_KEY
        self._price_note_given = False
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
        streamed: list[str] = []
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                if on_token is None:
                    response = litellm.completion(model=self.name, messages=payload, tools=tools, **self.kwargs)
                else:
                    response = self._stream(litellm, payload, tools, on_token, streamed)
                break
            except fatal as exc:
                raise ModelError(f"{self.name}: {type(exc).__name__}: {_short(exc)}") from None
            except retryable as exc:
                if attempt == MAX_ATTEMPTS or streamed:  # text already shown cannot be taken back
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
        if on_token and content and not streamed:
            on_token(content)
        cost, note = self._cost(litellm, response)
        return Reply(content=content, tool_calls=calls, usage=reply_usage, cost=cost, note=note)

    def _stream(self, litellm, payload, tools, on_token: TokenSink, streamed: list[str]):
        """The reply as it is written (each piece to ``on_token``), then rebuilt as one response."""
        chunks = []
        stream = litellm.completion(model=self.name, messages=payload, tools=tools, stream=True,
                                    stream_options={"include_usage": True}, **self.kwargs)
        for chunk in stream:
            chunks.append(chunk)
            piece = chunk.choices[0].delta.content if chunk.choices else None
            if piece:
                streamed.append(piece)
                on_token(piece)
        if not chunks:
            raise litellm.APIConnectionError(message="the stream ended before any reply", llm_provider="",
                                             model=self.name)
        return litellm.stream_chunk_builder(chunks, messages=payload)

    def _cost(self, litellm, response) -> tuple[float, str]:
        """The reply's price; 0 for a free model or one without a price (a local server's), said once."""
        try:
            cost = float(litellm.completion_cost(completion_response=response, model=self.name) or 0.0)
            why = "litellm prices it at $0 (a free or local model)"
        except Exception:  # noqa: BLE001 - an unknown model counts 0, never an error
            cost, why = 0.0, "no price known for it (a local or unlisted model)"
        if cost or self._price_note_given:
            return cost, ""
        self._price_note_given = True
        return 0.0, f"{self.name}: {why}; its cost counts as $0, the step and time limits still apply"


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]
