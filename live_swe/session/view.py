"""One reading of a session: its metadata and its event log, reconciled once.

``meta.json`` is rewritten only when a run starts and ends; between those the event log is the
truth (a live or killed session's steps and cost are its last ``step`` event's). Every reader —
resume, ``sessions show/log/export``, the pull request's body, the Gödel diagnosis, replay and the
TUI — asks this view instead of reconciling the two itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from live_swe import events as ev
from live_swe.session.store import RunStatus, Session, SessionMeta

E = TypeVar("E", bound=ev.Event)


@dataclass
class SessionView:
    meta: SessionMeta
    events: list[ev.Event]
    problems: list[str] = field(default_factory=list)  # log lines that could not be read

    @classmethod
    def read(cls, session: Session) -> SessionView:
        records, problems = session.events()
        return cls.of(session.meta, records, problems)

    @classmethod
    def of(cls, meta: SessionMeta, records: list[dict[str, Any]], problems: list[str] | None = None) -> SessionView:
        return cls(meta, ev.parse_all(records), list(problems or []))

    def of_kind(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]

    def first(self, kind: type[E]) -> E | None:
        return next((e for e in self.events if isinstance(e, kind)), None)

    # -- where the run stands
    @property
    def steps(self) -> int:
        return max(self.meta.steps, max((e.step for e in self.of_kind(ev.Step)), default=0))

    @property
    def logged_steps(self) -> int:
        """The last step the log records (resume goes on from there, whatever meta.json says)."""
        return max((e.step for e in self.of_kind(ev.Step)), default=0)

    @property
    def cost(self) -> float:
        steps = self.of_kind(ev.Step)
        return max(self.meta.cost, steps[-1].cost if steps else 0.0)

    @property
    def elapsed(self) -> float:
        return max(self.meta.elapsed, max((e.elapsed or 0.0 for e in self.of_kind(ev.Step)), default=0.0))

    @property
    def status(self) -> str:
        return self.meta.status

    @property
    def submitted(self) -> bool:
        """The last step submitted: a session killed after it (before its end) has submitted."""
        steps = self.of_kind(ev.Step)
        return bool(steps and steps[-1].submitted)

    # -- the conversation
    @property
    def messages(self) -> list[dict[str, Any]]:
        return [e.message for e in self.of_kind(ev.Message) if e.message]  # {}: a damaged record

    @property
    def replies(self) -> int:
        return sum(1 for m in self.messages if m.get("role") == "assistant")

    # -- self-evolution
    @property
    def scaffold_changes(self) -> list[ev.ScaffoldChange]:
        return [e for e in self.of_kind(ev.ScaffoldChange) if e.kind in ("commit", "reject", "rollback")]

    @property
    def tools_registered(self) -> list[str]:
        return sorted({e.name for e in self.of_kind(ev.ToolChange) if e.kind == "registered" and e.name})

    @property
    def tools_made(self) -> list[str]:
        """The tools the agent registered during the run, in order (step 0: the starting scaffold's)."""
        names: list[str] = []
        for e in self.of_kind(ev.ToolChange):
            if e.kind == "registered" and e.name and (e.step or 0) > 0 and e.name not in names:
                names.append(e.name)
        return names

    @property
    def contract_events(self) -> list[ev.ContractEvent]:
        return self.of_kind(ev.ContractEvent)


def change_json(change: ev.ScaffoldChange) -> dict[str, Any]:
    """A scaffold change as ``sessions log --json`` and ``sessions show --json`` give it."""
    return {"step": change.step, "files": list(change.files), "accepted": change.kind == "commit",
            "reason": change.reason, "kind": change.kind, "why": change.why, "rev": change.rev}


__all__ = ["RunStatus", "SessionView", "change_json"]
