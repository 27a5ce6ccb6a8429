"""Turn a model reply into the one bash command it asks for, or a format error."""

from __future__ import annotations

import json
import re

from live_swe.errors import ToldToModel
from live_swe.models.base import Reply

# A fenced block opened with ```bash or ```sh (mini-swe-agent v1; v2's text mode says
# ```mswea_bash_command) and closed by ```.
BASH_BLOCK = re.compile(r"```(?:bash|sh|mswea_bash_command)[ \t]*\n(.*?)\n?```", re.DOTALL)

BASH_TOOL = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run one bash command in the repository and return its output.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command to run."}},
            "required": ["command"],
        },
    },
}


class FormatError(ToldToModel):
    """The reply did not contain exactly one action; the message is told to the model."""


def parse_action(reply: Reply, action_format: str) -> str:
    if action_format == "tool_call":
        return _from_tool_calls(reply)
    return _from_text(reply.content)


def _from_text(content: str) -> str:
    blocks = BASH_BLOCK.findall(content or "")
    if not blocks:
        raise FormatError("your reply has no ```bash block")
    if len(blocks) > 1:
        raise FormatError(f"your reply has {len(blocks)} ```bash blocks; exactly one is allowed")
    command = blocks[0].strip()
    if not command:
        raise FormatError("the ```bash block is empty")
    return command


def _from_tool_calls(reply: Reply) -> str:
    calls = reply.tool_calls
    if not calls:
        raise FormatError("your reply has no call of the `bash` function")
    if len(calls) > 1:
        raise FormatError(f"your reply has {len(calls)} function calls; exactly one is allowed")
    call = calls[0]
    if call.name != "bash":
        raise FormatError(f"unknown function {call.name!r}; the only function is `bash`")
    try:
        arguments = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        raise FormatError("the `bash` call's arguments are not valid JSON") from None
    command = arguments.get("command") if isinstance(arguments, dict) else None
    if not isinstance(command, str) or not command.strip():
        raise FormatError("the `bash` call has no `command` argument")
    return command.strip()
