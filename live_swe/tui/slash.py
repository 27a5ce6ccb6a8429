"""What the task box understands besides a task: slash commands (``/mode auto``) and ``@path``
mentions of the repository's files, completed with Tab and attached to the task."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

COMMANDS = {  # name: (how it is written, what it does)
    "help": ("/help", "these commands"),
    "model": ("/model NAME", "the model of the next new session (no NAME: the current one)"),
    "mode": ("/mode confirm|auto|read-only", "how commands are approved (F2)"),
    "resume": ("/resume", "go on with an earlier, unfinished session (F3)"),
    "undo": ("/undo", "undo the last kept commit (F6)"),
    "grade": ("/grade", "the finished run's grade, in the Grade tab"),
    "new": ("/new", "end the conversation: the next task starts a new session (Ctrl+N)"),
}

# a command is the whole box: "/word" then at most one argument line ("/usr/lib is broken" is a task)
_COMMAND = re.compile(r"\A/([a-z]+)(?:[ \t]+(\S.*?))?\s*\Z", re.DOTALL)
_MENTION = re.compile(r"(?<![\w@])@([\w./-]+)")


@dataclass(frozen=True)
class SlashCommand:
    name: str
    argument: str = ""


def parse_command(text: str) -> SlashCommand | None:
    """The command the box holds, or None when it holds a task. Unknown names are commands too
    (so a typo is reported, not sent to the agent as a task)."""
    found = _COMMAND.match(text.strip())
    if not found or "\n" in (found.group(2) or ""):
        return None
    return SlashCommand(found.group(1), (found.group(2) or "").strip())


def help_text() -> str:
    return "\n".join(f"{usage}: {what}" for usage, what in COMMANDS.values()) + \
        "\n@path in a task points the agent at a file (Tab completes)."


def mentioned_files(task: str, files: set[str]) -> list[str]:
    """The repository files the task names as ``@path`` (in order, once each)."""
    seen: list[str] = []
    for match in _MENTION.finditer(task):
        path = os.path.normpath(match.group(1).rstrip(".,;:"))
        if path in files and path not in seen:
            seen.append(path)
    return seen


def attach_mentions(task: str, files: set[str]) -> str:
    """The task as the agent gets it: ``@path`` written as the path, and the files listed at the end
    (the repository map then ranks them first, since the task names them)."""
    named = mentioned_files(task, files)
    if not named:
        return task
    text = _MENTION.sub(lambda m: m.group(1) if os.path.normpath(m.group(1).rstrip(".,;:")) in named
                        else m.group(0), task)
    return text + "\n\nFiles the person pointed at: " + ", ".join(named)


def mention_at(text: str, cursor: int) -> tuple[int, str] | None:
    """The ``@prefix`` being typed just before ``cursor``: (where the prefix starts, the prefix)."""
    before = text[:cursor]
    found = re.search(r"(?<![\w@])@([\w./-]*)\Z", before)
    return (found.start(1), found.group(1)) if found else None


def completions(prefix: str, files: list[str], limit: int = 8) -> list[str]:
    """Files starting with ``prefix``, then those whose name does (``@cart`` finds shop/cart.py)."""
    starts = [f for f in files if f.startswith(prefix)]
    named = [f for f in files if f not in starts and os.path.basename(f).startswith(prefix)]
    return (starts + named)[:limit]


def complete(prefix: str, files: list[str]) -> str:
    """What Tab turns ``prefix`` into: the only match, or the longest prefix the matches share."""
    matches = completions(prefix, files, limit=len(files))
    if not matches:
        return prefix
    if len(matches) == 1:
        return matches[0]
    common = os.path.commonprefix(matches)
    return common if len(common) > len(prefix) else prefix
