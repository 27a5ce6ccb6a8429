"""The contract file's schema: C = (preconditions, invariants, governance, recovery). Unknown keys
are refused everywhere, and every check is data (a field, an operator, a value): no user code runs."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from live_swe.contracts.fields import AFTER_FIELDS, BEFORE_FIELDS, FIELD_TYPES, PRECONDITION_FIELDS

Operator = Literal["equals", "not_equals", "in", "not_in", "contains", "not_contains", "matches", "not_matches",
                   "lt", "le", "gt", "ge", "exists", "empty", "not_empty"]
# What a soft violation does, mildest first; a merge keeps the most severe.
# hold: as inject, and a submission while the rule is broken is held back (the model told why).
Strategy = Literal["inject", "hold", "reduce_autonomy", "escalate", "stop"]
Fallback = Literal["continue", "reduce_autonomy", "escalate", "stop"]
SEVERITY = {"continue": 0, "inject": 1, "hold": 1, "reduce_autonomy": 2, "escalate": 3, "stop": 4}
_NEEDS_NO_VALUE = {"exists", "empty", "not_empty"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Condition(_Strict):
    field: str
    op: Operator
    value: Any = None

    @model_validator(mode="after")
    def _known_field_and_value(self) -> Condition:
        if self.field not in FIELD_TYPES:
            raise ValueError(f"unknown field {self.field!r}; the fields are: {', '.join(sorted(FIELD_TYPES))}")
        if self.op not in _NEEDS_NO_VALUE and self.value is None:
            raise ValueError(f"operator {self.op!r} needs a value")
        if self.op in ("matches", "not_matches"):
            try:
                re.compile(str(self.value))
            except re.error as exc:
                raise ValueError(f"{self.value!r} is not a regular expression: {exc}") from None
        if self.op in ("lt", "le", "gt", "ge") and not isinstance(self.value, (int, float)):
            raise ValueError(f"operator {self.op!r} compares numbers; {self.value!r} is not one")
        return self


class Rule(_Strict):
    """Holds when ``check`` is true, wherever ``when`` (if given) is true."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")
    check: Condition
    when: Condition | None = None
    message: str = ""
    recovery: Strategy = "inject"  # soft rules: what a violation triggers

    def fields(self) -> set[str]:
        return {self.check.field} | ({self.when.field} if self.when else set())

    @property
    def before(self) -> bool:
        """Every field it reads is known before the command runs."""
        return self.fields() <= BEFORE_FIELDS


class Precondition(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")
    check: Condition
    message: str = ""

    @model_validator(mode="after")
    def _run_field(self) -> Precondition:
        if self.check.field not in PRECONDITION_FIELDS:
            raise ValueError(f"precondition {self.id!r}: {self.check.field!r} is not known before a run; "
                             f"use one of {', '.join(sorted(PRECONDITION_FIELDS))}")
        return self


class Recovery(_Strict):
    k: int = Field(default=3, ge=1, le=1000)  # steps a soft violation may last before the fallback
    max_attempts: int = Field(default=2, ge=1, le=100)  # corrections injected before the fallback
    fallback: Fallback = "reduce_autonomy"


class Contract(_Strict):
    name: str = "contract"
    preconditions: tuple[Precondition, ...] = ()
    governance: tuple[Rule, ...] = ()  # over the command, checked before it runs
    hard: tuple[Rule, ...] = ()
    soft: tuple[Rule, ...] = ()
    recovery: Recovery = Recovery()

    @model_validator(mode="after")
    def _governance_before(self) -> Contract:
        for rule in self.governance:
            late = rule.fields() - BEFORE_FIELDS
            if late:
                raise ValueError(f"governance rule {rule.id!r} reads {', '.join(sorted(late))}, known only after the "
                                 "command runs; put it under hard:")
        return self

    def rules(self) -> list[tuple[str, Rule]]:
        return [("governance", r) for r in self.governance] + [("hard", r) for r in self.hard] + \
            [("soft", r) for r in self.soft]

    def rule_ids(self) -> set[str]:
        return {r.id for _, r in self.rules()} | {p.id for p in self.preconditions}


__all__ = ["AFTER_FIELDS", "BEFORE_FIELDS", "Condition", "Contract", "Precondition", "Recovery", "Rule", "SEVERITY"]
