"""``scripted:PATH``: a YAML or JSON list of raw assistant replies, returned in order.

Each entry is a reply string, or ``{content, tool_calls, cost}`` where each tool call is
``{name, arguments}`` (arguments as an object or JSON text) with an optional ``id``, and ``cost``
is what the reply is billed in USD (as a priced provider would report it; default 0).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from live_swe.models.base import ModelError, Reply, TokenSink, ToolCall, Usage


def _tool_call(raw: Any, index: int, where: str) -> ToolCall:
    if not isinstance(raw, dict) or "name" not in raw:
        raise ModelError(f"{where}: each tool call needs at least a `name`")
    arguments = raw.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return ToolCall(id=str(raw.get("id") or f"call_{index}"), name=str(raw["name"]), arguments=arguments)


def reply_from_entry(entry: Any, where: str) -> Reply:
    if isinstance(entry, str):
        return Reply(content=entry)
    if isinstance(entry, dict) and set(entry) <= {"content", "tool_calls", "cost"}:
        calls = tuple(_tool_call(c, i, where) for i, c in enumerate(entry.get("tool_calls") or []))
        cost = entry.get("cost", 0)
        if not isinstance(cost, (int, float)) or isinstance(cost, bool) or cost < 0:
            raise ModelError(f"{where}: `cost` must be a number of USD, 0 or more")
        return Reply(content=str(entry.get("content") or ""), tool_calls=calls, cost=float(cost))
    raise ModelError(f"{where}: an entry must be a reply string or an object with `content` / `tool_calls` / `cost`")


def load_script(path: Path) -> list[Reply]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ModelError(f"scripted model: {path} does not exist") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ModelError(f"scripted model: {path} is not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}") from None
    if not isinstance(data, list):
        raise ModelError(f"scripted model: {path} must hold a list of replies")
    return [reply_from_entry(entry, f"{path} entry {i + 1}") for i, entry in enumerate(data)]


class ScriptedModel:
    def __init__(self, replies: list[Reply], name: str = "scripted"):
        self.name = name
        self._replies = list(replies)
        self.calls = 0
        self.seen: list[list[dict[str, Any]]] = []  # what each query received, for tests

    @classmethod
    def from_path(cls, path: str | Path) -> ScriptedModel:
        path = Path(path)
        return cls(load_script(path), name=f"scripted:{path}")

    def skip(self, count: int) -> None:
        """Continue a resumed session: the first ``count`` replies were already given."""
        self.calls = min(count, len(self._replies))

    def query(self, messages, *, tools=None, on_token: TokenSink | None = None) -> Reply:
        if self.calls >= len(self._replies):
            raise ModelError(
                f"{self.name}: the script ran out after {len(self._replies)} replies; add more replies or "
                "end the script with a submission"
            )
        reply = self._replies[self.calls]
        self.calls += 1
        self.seen.append(list(messages))
        if on_token and reply.content:
            on_token(reply.content)
        chars = sum(len(str(m.get("content") or "")) for m in messages)
        return Reply(reply.content, reply.tool_calls, Usage(chars // 4, len(reply.content) // 4), reply.cost)
