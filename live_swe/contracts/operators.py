"""The operators a contract may use. A list field is tested element by element where that reads
naturally (``matches``: any element matches; ``in``: every element is in the value)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=512)
def _regex(pattern: str) -> re.Pattern:
    return re.compile(pattern)


def _matches(actual: Any, pattern: str) -> bool:
    regex = _regex(str(pattern))
    if isinstance(actual, list):
        return any(regex.search(str(a)) for a in actual)
    return regex.search(str(actual)) is not None


def _in(actual: Any, value: Any) -> bool:
    options = value if isinstance(value, list) else [value]
    if isinstance(actual, list):
        return all(a in options for a in actual)
    return actual in options


def _contains(actual: Any, value: Any) -> bool:
    if isinstance(actual, list):
        return value in actual
    return str(value) in str(actual)


OPERATORS = {
    "equals": lambda a, v: a == v,
    "not_equals": lambda a, v: a != v,
    "in": _in,
    "not_in": lambda a, v: not (set(a) & set(v if isinstance(v, list) else [v])) if isinstance(a, list)
    else a not in (v if isinstance(v, list) else [v]),
    "contains": _contains,
    "not_contains": lambda a, v: not _contains(a, v),
    "matches": _matches,
    "not_matches": lambda a, v: not _matches(a, v),
    "lt": lambda a, v: a < v,
    "le": lambda a, v: a <= v,
    "gt": lambda a, v: a > v,
    "ge": lambda a, v: a >= v,
    "exists": lambda a, v: a is not None and a != "",
    "empty": lambda a, v: not a,
    "not_empty": lambda a, v: bool(a),
}


def holds(condition, fields: dict[str, Any]) -> bool:
    """Whether ``condition`` holds over ``fields``; a field not known now counts as holding."""
    if condition.field not in fields:
        return True
    return bool(OPERATORS[condition.op](fields[condition.field], condition.value))


def compiled(condition):
    """``holds`` for one condition, as a function of the fields (built once per contract: the
    checks run before and after every command)."""
    name, value, op = condition.field, condition.value, OPERATORS[condition.op]
    if condition.op in ("matches", "not_matches"):
        regex = _regex(str(value))
        negate = condition.op == "not_matches"

        def test(fields):
            if name not in fields:
                return True
            actual = fields[name]
            found = any(regex.search(str(a)) for a in actual) if isinstance(actual, list) else \
                regex.search(str(actual)) is not None
            return found != negate
        return test

    def test(fields):
        return name not in fields or bool(op(fields[name], value))
    return test
