"""The contract's notes to the model, and the check that a hook leaves them in place: a scaffold
whose hooks would strip them (and so keep the model from hearing a correction) is refused."""

from __future__ import annotations

from typing import Any

NOTE_PREFIX = "Contract:"
PROBE = f"{NOTE_PREFIX} run the tests after your last edit before you submit (soft rule test-after-last-edit)."


def stripped_from_observation(transformed: str) -> str | None:
    if PROBE in transformed:
        return None
    return ("transform_observation removes the contract's notes (lines starting 'Contract:') from observations; "
            "the kernel's corrections must reach the model")


def stripped_from_messages(messages: list[dict[str, Any]]) -> str | None:
    if any(isinstance(m, dict) and PROBE in str(m.get("content", "")) for m in messages):
        return None
    return ("transform_messages removes the contract's notes (lines starting 'Contract:') from the messages sent; "
            "the kernel's corrections must reach the model")


def probe_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with the probe note added to the last observation."""
    last = dict(messages[-1])
    last["content"] = f"{last.get('content', '')}\n\n{PROBE}"
    return [*messages[:-1], last]
