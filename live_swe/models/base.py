"""The model protocol and the reply it returns.

A model only answers; turning its reply into an action is the kernel's job
(:mod:`live_swe.agent.parse`), so scripted, replayed and real replies are parsed the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from live_swe.errors import InfrastructureError


class ModelError(InfrastructureError):
    """A model could not answer: bad configuration, exhausted script, provider failure.

    The message is meant for a person: what went wrong and what to do.
    """


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text, exactly as the provider returned it


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class Reply:
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    note: str = ""  # something the person should know (e.g. the model has no price): logged, not sent

    def to_message(self) -> dict[str, Any]:
        """The assistant message as it goes back into the conversation."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return message


# Called with each piece of text as a model streams it (the TUI shows replies as they arrive).
TokenSink = Callable[[str], None]


@runtime_checkable
class Model(Protocol):
    name: str

    def query(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        on_token: TokenSink | None = None,
    ) -> Reply: ...


@runtime_checkable
class ResumableModel(Model, Protocol):
    """A model whose answers are fixed in advance (scripted, replayed): a resumed session tells it how
    many it already gave, so it continues where the log stops."""

    def skip(self, count: int) -> None: ...


def resume_model(model: Model, answered: int) -> None:
    """Tell ``model`` that ``answered`` replies are already in the conversation; a live model just answers."""
    if isinstance(model, ResumableModel):
        model.skip(answered)


class ModelWrapper:
    """The base of models that wrap another (metering tokens, streaming, stopping a batch): it
    forwards the whole model protocol, so a wrapped model keeps every ability the loop relies on."""

    def __init__(self, inner: Model):
        self.inner = inner
        self.name = inner.name

    def query(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        on_token: TokenSink | None = None,
    ) -> Reply:
        return self.inner.query(messages, tools=tools, on_token=on_token)

    def skip(self, count: int) -> None:
        resume_model(self.inner, count)
