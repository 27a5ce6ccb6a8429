"""Build the observation text the model reads after a command."""

from __future__ import annotations

from live_swe.environments.base import Output
from live_swe.scaffolding.policy import Truncation


def output_context(output: Output, policy: Truncation) -> tuple[dict, bool]:
    """The ``output`` template variable, and whether it was truncated (head + tail kept)."""
    text = output.text
    truncated = len(text) > policy.max_chars
    head = text[: policy.head_chars] if truncated else text
    tail = text[len(text) - policy.tail_chars :] if truncated and policy.tail_chars else ""
    elided = len(text) - len(head) - len(tail) if truncated else 0
    return (
        {
            "text": text if not truncated else "",
            "returncode": output.returncode,
            "timed_out": output.timed_out,
            "head": head,
            "tail": tail,
            "elided_chars": elided,
        },
        truncated,
    )
