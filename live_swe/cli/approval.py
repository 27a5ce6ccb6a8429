"""Confirm each command in the terminal: approve, edit, reject with a comment, or approve all."""

from __future__ import annotations

from collections.abc import Callable

from live_swe.agent.interfaces import Decision
from live_swe.cli.common import terminal_safe


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
