"""Keep credentials out of everything we print, comment, commit or raise."""

from __future__ import annotations

import os
from collections.abc import Iterable

_SECRET_MARKERS = ("TOKEN", "API_KEY", "SECRET", "PASSWORD", "CREDENTIAL")
MASK = "***"
# Values this short are not worth masking (and masking them would mangle ordinary text).
_MIN_SECRET_LENGTH = 8


def environment_secrets() -> list[str]:
    """The values of variables whose names say they hold a credential."""
    return [
        value for name, value in os.environ.items()
        if any(marker in name.upper() for marker in _SECRET_MARKERS) and len(value) >= _MIN_SECRET_LENGTH
    ]


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every given secret, and every credential found in the environment, masked."""
    values = {s for s in secrets if s and len(s) >= _MIN_SECRET_LENGTH} | set(environment_secrets())
    for value in sorted(values, key=len, reverse=True):  # longest first: one may contain another
        text = text.replace(value, MASK)
    return text


def contains_secret(text: str, secrets: Iterable[str | None] = ()) -> bool:
    return redact(text, secrets) != text
