"""The plans an agent states in its replies: a ``PLAN:`` line followed by numbered steps.

The seed scaffold asks for one in the first reply, and for a new one, with the reason, when the
agent changes course (``PLAN: <why>`` then the new steps). Plans are read from what the agent
wrote, never inferred from what it did. A reply without a plan is fine (no format error); the
grade notes the missing plan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# "PLAN:", "**PLAN**:", "## Plan:", "New PLAN (the tests are elsewhere):" ... at the start of a line.
_HEADER = re.compile(r"^[ \t>*#_-]*(?:thought\s*:\s*)?(?:new\s+|revised\s+|updated\s+)?plan\b[*_]*\s*(\([^)\n]*\))?\s*[*_]*\s*:(.*)$",
                     re.IGNORECASE | re.MULTILINE)
_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+(.+?)\s*$")
_FENCE = "```"


@dataclass(frozen=True)
class Plan:
    step: int  # the step whose reply stated it
    items: tuple[str, ...]
    reason: str  # what the PLAN line says besides the word (the reason for a new plan)


def extract_plan(text: str, step: int) -> Plan | None:
    """The plan stated in a reply, or None. Only the text before the first fenced block counts."""
    prose = (text or "").split(_FENCE, 1)[0]
    match = _HEADER.search(prose)
    if match is None:
        return None
    reason = " ".join(filter(None, ((match.group(1) or "").strip("() "), match.group(2).strip())))
    items: list[str] = []
    for line in prose[match.end():].splitlines():
        if not line.strip():
            if items:
                break
            continue
        item = _ITEM.match(line)
        if item is None:
            break
        items.append(" ".join(item.group(1).split()))
    return Plan(step, tuple(items), reason)
