"""What the kernel recorded when a session started, and what ``resume`` takes from it.

``meta.json`` is a summary for readers; a process that could write the session directory could
also raise its budgets or point its ``repo`` anywhere. So at start the kernel appends a ``session``
event (repository, environment, model, budgets, confinement) and, once known, a ``base`` event (the
starting commit); a person who changes the confinement on resume adds a ``confinement`` event, and a
follow-up (``run --continue``) a ``follow_up`` event with the budgets of its turn. ``resume`` runs where those say: a ``meta.json`` that disagrees is refused, its budgets
count only where they are lower, and the repository must still hold the starting commit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from live_swe import events as ev
from live_swe.config import KernelLimits, budget_amount
from live_swe.errors import UserError
from live_swe.infra.git import Git, GitFailed
from live_swe.session.store import Session

E = TypeVar("E", bound=ev.Event)


@dataclass(frozen=True)
class StartRecord:
    repo: str | None
    env: str
    image: str | None
    repo_dir: str
    model: str
    limits: KernelLimits
    base_commit: str | None
    recorded: bool  # False: a session from before starts were recorded (meta.json is all there is)
    sandbox: dict[str, Any] | None = None  # {"mode", "network"}: the latest the kernel recorded
    api_base: str | None = None  # the model's server (litellm models), without credentials

    def kernel_limits(self, overrides: dict[str, Any] | None = None) -> KernelLimits:
        """The recorded budgets, with the ones the person gives now (``resume --step-limit``)."""
        given = {k: v for k, v in (overrides or {}).items() if v is not None}
        return KernelLimits(**{**self.limits.model_dump(), **given})


def record_start(session: Session, *, repo: Path | None, env: str, image: str | None, repo_dir: str, model: str,
                 limits: KernelLimits, sandbox: dict[str, Any] | None = None, api_base: str | None = None) -> None:
    session.append(ev.SessionStarted(repo=str(repo) if repo else None, env=env, image=image, repo_dir=repo_dir,
                                     model=model, limits=limits.model_dump(), sandbox=sandbox, api_base=api_base))


def record_confinement(session: Session, sandbox: dict[str, Any]) -> None:
    """The person changed the confinement on resume (``--sandbox``, ``--network``)."""
    session.append(ev.Confinement(sandbox=sandbox))


def record_follow_up(session: Session, task: str, limits: KernelLimits) -> None:
    """The person asked for more in the same conversation; ``limits`` hold from now on (a follow-up
    gets budgets of its own on top of what the conversation has spent)."""
    session.append(ev.FollowUp(task=task, limits=limits.model_dump()))


def started_limits(events: Iterable[ev.Event], start: StartRecord) -> KernelLimits:
    """The budgets the session started with: what each follow-up turn gets again."""
    record = _first(events, ev.SessionStarted)
    return (_limits(record.limits) if record else None) or start.limits


def turn_limits(per_turn: KernelLimits, steps: int, cost: float, elapsed: float) -> KernelLimits:
    """The budgets of a new turn: ``per_turn`` more steps, cost and wall time than already spent."""
    return per_turn.model_copy(update={
        "step_limit": steps + per_turn.step_limit,
        "cost_limit": cost + per_turn.cost_limit if per_turn.cost_limit else 0.0,
        "wall_time_limit": elapsed + per_turn.wall_time_limit,
    })


def record_base(session: Session, commit: str) -> None:
    session.append(ev.Base(commit=commit))


def trusted_start(session: Session, events: Iterable[ev.Event]) -> StartRecord:
    """The session's start as the kernel recorded it. Raises UserError when meta.json disagrees."""
    meta = session.meta
    events = list(events)
    record = _first(events, ev.SessionStarted)
    base = next((e.commit or None for e in events if isinstance(e, ev.Base)), None)
    meta_limits = _limits(meta.extra.get("limits", {}))
    if record is None:
        return StartRecord(meta.repo, meta.env, meta.image, meta.extra.get("repo_dir", "/testbed"), meta.model,
                           meta_limits or KernelLimits(), meta.base_commit, recorded=False,
                           sandbox=meta.extra.get("sandbox"), api_base=meta.extra.get("api_base"))
    sandbox = record.sandbox
    limits = _limits(record.limits) or KernelLimits()
    for event in events:
        match event:
            case ev.Confinement():
                sandbox = {**(sandbox or {}), **event.sandbox}
            case ev.FollowUp():
                limits = _limits(event.limits) or limits
    start = StartRecord(record.repo, record.env, record.image, record.repo_dir, record.model or meta.model,
                        _lower(limits, meta_limits), base, recorded=True,
                        sandbox=sandbox if sandbox is not None else meta.extra.get("sandbox"),
                        api_base=record.api_base)
    said = {"repo": meta.repo, "env": meta.env, "image": meta.image, "model": meta.model,
            "repo_dir": meta.extra.get("repo_dir", start.repo_dir), "base_commit": meta.base_commit or base}
    for key, value in said.items():
        if value != getattr(start, key):
            raise UserError(
                f"session {meta.id}: meta.json says {key} {value!r}, but the session started with {getattr(start, key)!r} "
                f"(recorded in {session.events_path}); resume runs only where the session started. "
                "Restore meta.json, or start a new session")
    return start


def check_same_repository(repo: Path, base_commit: str, session_id: str) -> None:
    """``repo`` must be the repository the session started in: its starting commit is there."""
    try:
        found = Git(repo).succeeds("cat-file", "-e", f"{base_commit}^{{commit}}")
    except GitFailed:
        found = False
    if not found:
        raise UserError(f"{repo} is not the repository session {session_id} started in (its starting commit "
                        f"{base_commit[:12]} is not there); resume it in that repository, or start a new session")


def _first(events: Iterable[ev.Event], kind: type[E]) -> E | None:
    return next((e for e in events if isinstance(e, kind)), None)


def _limits(data: Any) -> KernelLimits | None:
    try:
        return KernelLimits(**data) if isinstance(data, dict) else None
    except (ValidationError, TypeError):
        return None


def _lower(recorded: KernelLimits, other: KernelLimits | None) -> KernelLimits:
    """Each budget at the lower of the two (a zero cost limit means none, so it is the higher)."""
    if other is None:
        return recorded
    merged = recorded.model_dump()
    for key, value in other.model_dump().items():
        if budget_amount(key, value) < budget_amount(key, merged[key]):
            merged[key] = value
    return KernelLimits(**merged)
