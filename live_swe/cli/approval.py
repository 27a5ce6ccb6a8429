"""Confirm each command in the terminal: approve, edit, reject with a comment, or approve all."""

from __future__ import annotations

from collections.abc import Callable

from live_swe.agent.interfaces import Decision
from live_swe.cli.common import shown, terminal_safe
from live_swe.events import Event, Message


class TerminalApprover:
    def __init__(self, ask: Callable[[str], str] = input, say: Callable[[str], None] = print):
        self.ask = ask
        self.say = say
        self.approve_all = False

    def __call__(self, command: str) -> Decision:
        if self.approve_all:
            return Decision("approve")
        self.say(f"\nThe agent wants to run:\n  {terminal_safe(command)}")
        while True:
            answer = self.ask("[y] run  [e] edit  [r] reject  [a] run all from now on > ").strip().lower()
            if answer in ("", "y", "yes"):
                return Decision("approve")
            if answer == "a":
                self.approve_all = True
                return Decision("approve")
            if answer == "e":
                edited = self.ask("command > ").strip()
                if edited:
                    return Decision("edit", command=edited)
                continue
            if answer == "r":
                return Decision("reject", comment=self.ask("comment for the agent > ").strip())
            self.say("please answer y, e, r or a")


THOUGHT_SHOWN = 1500  # characters of reasoning shown before a command (the rest is in the session log)


def thought_of(content: str) -> str:
    """The reasoning of a reply: its text before the command block (a tool call's text is all of it)."""
    text = (content or "").split("```", 1)[0].strip()
    if text.upper().startswith("THOUGHT:"):
        text = text[len("THOUGHT:"):].strip()
    return text if len(text) <= THOUGHT_SHOWN else text[:THOUGHT_SHOWN] + " …"


def show_thought(event: Event, say: Callable[[str], None] = print) -> None:
    """An event observer: each reply's reasoning, so the person reads why before approving."""
    if not isinstance(event, Message) or event.message.get("role") != "assistant":
        return
    thought = thought_of(str(event.message.get("content") or ""))
    if thought:
        indented = shown(thought).replace("\n", "\n  ")
        say(f"\nThe agent thinks:\n  {indented}")
