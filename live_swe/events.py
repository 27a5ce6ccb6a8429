"""The session log's events: one typed class per kind, the only place kinds and fields are declared.

On disk an event is one JSON object per line with its kind under ``"t"`` (``{"t": "step", ...}``);
that format is unchanged, so logs written before these classes read the same. Writers build an
event class and append its ``record()``; readers call ``parse`` and match on the class.

A log is data that may have been damaged or edited by hand (``sessions export --format session``
shares them): ``parse`` never raises. A field of the wrong type reads as its default, fields this
version does not know are kept in ``extra`` (and written back by ``record``), and a kind it does not
know reads as ``Unknown``.
"""

from __future__ import annotations

import dataclasses
import time
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

_KINDS: dict[str, type[Event]] = {}


@dataclass(kw_only=True)
class Event:
    T: ClassVar[str] = ""
    ts: float | None = None  # when it was written (seconds since the epoch)
    extra: dict[str, Any] = field(default_factory=dict)  # fields this version does not declare

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.T:
            _KINDS[cls.T] = cls

    def record(self) -> dict[str, Any]:
        """The JSON object written to the log (``"t"`` first, then the fields, then ``extra``)."""
        data: dict[str, Any] = {"t": self.T}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name != "extra" and not (value is None and f.default is None and f.name != "ts"):
                data[f.name] = value  # an optional field left unset is not written (as before the classes)
        for key, value in self.extra.items():
            data.setdefault(key, value)
        if data.get("ts") is None:
            data["ts"] = round(time.time(), 3)
            self.ts = data["ts"]
        return data

    # The record's fields by name, read-only: for code that takes the on-disk shape (the
    # stream-json output, tests). Product code reads the typed fields.
    def __getitem__(self, key: str) -> Any:
        return self.record()[key]

    def __contains__(self, key: object) -> bool:
        return key in self.record()

    def get(self, key: str, default: Any = None) -> Any:
        return self.record().get(key, default)

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> Event:
        checks = _checks(cls)
        values, extra = {}, {}
        for key, value in data.items():
            if key in ("t", "extra"):
                continue
            if key in checks:
                if checks[key](value):
                    values[key] = value
            else:
                extra[key] = value
        return cls(**values, extra=extra)


@dataclass(kw_only=True)
class Unknown(Event):
    """A kind this version does not know (a newer live-swe, or a damaged line)."""

    kind: str = ""

    def record(self) -> dict[str, Any]:
        return {"t": self.kind, **({"ts": self.ts} if self.ts is not None else {}), **self.extra}


# -- the run's start and its changes (written by the kernel: resume trusts them over meta.json) ------------
@dataclass(kw_only=True)
class SessionStarted(Event):
    T: ClassVar[str] = "session"
    repo: str | None = None
    env: str = "local"
    image: str | None = None
    repo_dir: str = "/testbed"
    model: str = ""
    limits: dict[str, Any] = field(default_factory=dict)
    sandbox: dict[str, Any] | None = None
    api_base: str | None = None


@dataclass(kw_only=True)
class Base(Event):
    T: ClassVar[str] = "base"
    commit: str = ""


@dataclass(kw_only=True)
class Confinement(Event):
    T: ClassVar[str] = "confinement"
    sandbox: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True)
class FollowUp(Event):
    T: ClassVar[str] = "follow_up"
    task: str = ""
    limits: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True)
class Resume(Event):
    T: ClassVar[str] = "resume"
    step: int = 0
    log_problems: list[str] = field(default_factory=list)
    submitted: bool = False


@dataclass(kw_only=True)
class LogProblem(Event):
    T: ClassVar[str] = "log_problem"
    detail: str = ""


@dataclass(kw_only=True)
class RestorePatch(Event):
    T: ClassVar[str] = "restore_patch"
    bytes: int = 0


@dataclass(kw_only=True)
class RepoInstructions(Event):
    T: ClassVar[str] = "repo_instructions"
    files: list[str] = field(default_factory=list)
    chars: int = 0
    truncated: bool = False


@dataclass(kw_only=True)
class RepoMap(Event):
    T: ClassVar[str] = "repo_map"
    source: str = ""
    files: int | None = None
    parsed: int | None = None
    shown: int | None = None
    tokens: int | None = None
    seconds: float | None = None
    error: str | None = None


# -- the conversation and its steps -------------------------------------------------------------------------
@dataclass(kw_only=True)
class Message(Event):
    T: ClassVar[str] = "message"
    step: int = 0
    message: dict[str, Any] = field(default_factory=dict)
    follow_up: bool = False


@dataclass(kw_only=True)
class Step(Event):
    T: ClassVar[str] = "step"
    step: int = 0
    command: str = ""
    returncode: int | None = None
    cost: float = 0.0
    elapsed: float | None = None
    timed_out: bool = False
    submitted: bool = False


@dataclass(kw_only=True)
class Note(Event):
    """A line for the person from the model's side (e.g. a retried request)."""

    T: ClassVar[str] = "note"
    step: int = 0
    text: str = ""


@dataclass(kw_only=True)
class FormatError(Event):
    T: ClassVar[str] = "format_error"
    step: int = 0
    reason: str = ""
    consecutive: int = 0


@dataclass(kw_only=True)
class Review(Event):
    """The person's decision on a command (approve, edit, reject)."""

    T: ClassVar[str] = "review"
    step: int = 0
    decision: str = ""  # approve, edit or reject
    command: str = ""  # the command as it runs (edited, when it was)
    comment: str = ""  # the person's reason for a rejection


@dataclass(kw_only=True)
class System(Event):
    """The system message was rewritten (the scaffold changed under it)."""

    T: ClassVar[str] = "system"
    step: int = 0
    message: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True)
class Checkpoint(Event):
    """The step's checkpoint of the repository could not be taken."""

    T: ClassVar[str] = "checkpoint"
    step: int = 0
    error: str = ""


@dataclass(kw_only=True)
class End(Event):
    T: ClassVar[str] = "end"
    status: str = ""
    message: str = ""
    steps: int | None = None
    cost: float | None = None


# -- self-evolution -------------------------------------------------------------------------------------------
@dataclass(kw_only=True)
class ScaffoldChange(Event):
    """A change the agent made to its scaffold: committed, refused by the gates (reject), or undone."""

    T: ClassVar[str] = "scaffold"
    kind: str = ""  # commit, reject or rollback
    step: int | None = None
    files: list[str] = field(default_factory=list)
    reason: str = ""  # the agent's own reason (its reply)
    why: str = ""  # the gates' reason, for a refusal or rollback
    rev: str = ""
    summary: str = ""  # one line for progress displays


@dataclass(kw_only=True)
class ToolChange(Event):
    T: ClassVar[str] = "tool"
    kind: str = ""  # registered or refused
    step: int | None = None  # 0: the starting scaffold's tools
    name: str = ""
    why: str = ""


@dataclass(kw_only=True)
class History(Event):
    """The scaffold history's head after a step (what resume checks the history against)."""

    T: ClassVar[str] = "history"
    rev: str = ""
    step: int = 0


@dataclass(kw_only=True)
class HooksOff(Event):
    T: ClassVar[str] = "hooks_off"
    step: int = 0
    why: str = ""


# -- contracts and grading --------------------------------------------------------------------------------
@dataclass(kw_only=True)
class ContractEvent(Event):
    """What the behavioural contract saw or did; ``kind`` says which (``live_swe.contracts.engine``),
    and the fields a kind carries beyond these are in ``extra``."""

    T: ClassVar[str] = "contract"
    kind: str = ""
    step: int | None = None
    rule: str | None = None
    severity: str | None = None

    @classmethod
    def of(cls, kind: str, *, step: int | None = None, rule: str | None = None, severity: str | None = None,
           **fields: Any) -> ContractEvent:
        """A contract event whose kind-specific fields are given by name (they go into ``extra``)."""
        return cls(kind=kind, step=step, rule=rule, severity=severity, extra=fields)


@dataclass(kw_only=True)
class GradeRecorded(Event):
    T: ClassVar[str] = "grade"
    grade: dict[str, Any] = field(default_factory=dict)


def parse(data: dict[str, Any]) -> Event:
    """The typed event of one log record (never raises; see the module's docstring)."""
    if isinstance(data, Event):
        return data
    kind = data.get("t") if isinstance(data, dict) else None
    cls = _KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        ts = data.get("ts") if isinstance(data, dict) else None
        rest = {k: v for k, v in data.items() if k not in ("t", "ts")} if isinstance(data, dict) else {}
        return Unknown(kind=str(kind or ""), ts=ts if _fits(ts, float | None) else None, extra=rest)
    return cls.from_record(data)


def parse_all(records: list[dict[str, Any]]) -> list[Event]:
    return [parse(record) for record in records]


# -- tolerant type checks (one predicate per declared field, made once per class) --------------------------
_CHECKS: dict[type, dict[str, Callable[[Any], bool]]] = {}


def _checks(cls: type) -> dict[str, Callable[[Any], bool]]:
    if cls not in _CHECKS:
        hints = typing.get_type_hints(cls)
        _CHECKS[cls] = {k: _checker(v) for k, v in hints.items() if k not in ("T", "extra")}
    return _CHECKS[cls]


def _fits(value: Any, hint: Any) -> bool:
    return _checker(hint)(value)


def _checker(hint: Any) -> Callable[[Any], bool]:
    """Whether a value read from JSON fits ``hint`` (a bool is no number; a list's items are checked)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        arms = [_checker(arm) for arm in typing.get_args(hint)]
        return lambda value: any(arm(value) for arm in arms)
    if hint is type(None):
        return lambda value: value is None
    if hint is Any:
        return lambda value: True
    origin = typing.get_origin(hint) or hint
    if origin in (int, float):
        kinds = (int, float) if origin is float else (int,)
        return lambda value: isinstance(value, kinds) and not isinstance(value, bool)
    if origin is list:
        (item,) = typing.get_args(hint) or (Any,)
        fits_item = _checker(item)
        return lambda value: isinstance(value, list) and all(fits_item(v) for v in value)
    return lambda value: isinstance(value, origin)
