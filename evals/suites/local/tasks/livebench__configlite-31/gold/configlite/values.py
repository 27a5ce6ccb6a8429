"""Conversions of raw string values."""

from __future__ import annotations

from configlite.errors import ConfigError

TRUE_VALUES = {"1", "yes", "true", "on"}
FALSE_VALUES = {"0", "no", "false", "off"}


def to_bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered not in TRUE_VALUES | FALSE_VALUES:
        raise ConfigError(f"not a boolean: {value!r}")
    return lowered in TRUE_VALUES


def to_int(value: str) -> int:
    try:
        return int(value.strip(), 0)
    except ValueError:
        raise ConfigError(f"not an integer: {value!r}") from None


def to_list(value: str, separator: str = ",") -> list[str]:
    return [part.strip() for part in value.split(separator) if part.strip()]
