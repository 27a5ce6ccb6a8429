"""``replay:PATH``: replay the assistant turns of a saved trajectory.

Reads our session logs (``events.jsonl`` or a session directory), mini-swe-agent trajectory
JSON in its v1 text format (bash blocks in content) and its v2 format (tool calls), and plain
JSON message lists.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from live_swe import events as ev
from live_swe.infra.jsonl import read_jsonl
from live_swe.models.base import ModelError, Reply, ToolCall
from live_swe.models.scripted import ScriptedModel


def _assistant_replies(messages: list[Any]) -> list[Reply]:
    replies = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content") or ""
        if isinstance(content, list):  # content blocks: keep the text parts
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        calls = []
        for i, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function", call)
            arguments = function.get("arguments", "{}")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments)
            calls.append(ToolCall(id=str(call.get("id") or f"call_{i}"), name=function.get("name", ""), arguments=arguments))
        replies.append(Reply(content=str(content), tool_calls=tuple(calls)))
    return replies


def load_trajectory(path: Path) -> list[Reply]:
    if path.is_dir():
        path = path / "events.jsonl"
    if not path.exists():
        raise ModelError(f"replay model: {path} does not exist")
    if path.suffix == ".jsonl":
        messages = [e.message for e in ev.parse_all(read_jsonl(path)) if isinstance(e, ev.Message)]
    else:
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ModelError(f"replay model: {path} is not valid JSON: {exc}") from None
        messages = data.get("messages") if isinstance(data, dict) else data
        if not isinstance(messages, list):
            raise ModelError(f"replay model: {path} has no `messages` list (a mini-swe-agent trajectory or a message list)")
    replies = _assistant_replies(messages)
    if not replies:
        raise ModelError(f"replay model: {path} holds no assistant messages to replay")
    return replies


class ReplayModel(ScriptedModel):
    @classmethod
    def from_path(cls, path: str | Path) -> ReplayModel:
        path = Path(path)
        return cls(load_trajectory(path), name=f"replay:{path}")
