"""Keep the kernel's secrets out of everything it writes or shows.

The kernel knows the secret values it holds: every variable of its environment whose name says it
is a credential (``*_API_KEY``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*CREDENTIAL*``, so
``GITHUB_TOKEN`` too), and whatever a component registers (the GitHub client's token). Each value is
masked in its plain form, as JSON writes it, and base64-encoded (standard and URL-safe alphabets, at
each of the three byte alignments, so it is found inside a longer encoded blob such as git's
``x-access-token:`` basic-auth header). One precompiled regular expression does it, so redacting a
serialized event line costs microseconds (``benchmarks/redaction.py``).
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Iterable
from functools import lru_cache

SECRET_MARKERS = ("TOKEN", "API_KEY", "SECRET", "PASSWORD", "CREDENTIAL")
MASK = "***"
# Values this short are not worth masking (and masking them would mangle ordinary text).
MIN_SECRET_LENGTH = 8
# An encoded fragment shorter than this is too likely to occur by chance.
_MIN_FORM_LENGTH = 8

_registered: set[str] = set()


def is_secret_name(name: str) -> bool:
    return any(marker in name.upper() for marker in SECRET_MARKERS)


def environment_secrets() -> list[str]:
    """The values of this process's variables whose names say they hold a credential."""
    return [value for name, value in os.environ.items()
            if is_secret_name(name) and len(value) >= MIN_SECRET_LENGTH]


def register(*values: str | None) -> None:
    """Secrets held outside the environment (a token passed in code): masked from now on."""
    _registered.update(v for v in values if v and len(v) >= MIN_SECRET_LENGTH)


def forms(value: str) -> set[str]:
    """The ways ``value`` shows up in text: plain, JSON-escaped, and base64 at every alignment."""
    found = {value, json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(value)[1:-1]}
    raw = value.encode()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for offset in range(3):
            encoded = encode(b"\0" * offset + raw).decode()
            # the characters that depend on ``value``'s bytes alone
            start, end = (8 * offset + 5) // 6, (8 * (offset + len(raw))) // 6
            found.add(encoded[start:end])
    return {f for f in found if len(f) >= _MIN_FORM_LENGTH}


class Redactor:
    """Masks a fixed set of secret values."""

    def __init__(self, secrets: Iterable[str]):
        self.secrets = frozenset(s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH)
        patterns = sorted({f for s in self.secrets for f in forms(s)}, key=len, reverse=True)  # longest first
        self._pattern = re.compile("|".join(map(re.escape, patterns))) if patterns else None

    def __call__(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(MASK, text)

    def found_in(self, text: str) -> bool:
        return self._pattern is not None and self._pattern.search(text) is not None


@lru_cache(maxsize=16)
def _compiled(secrets: frozenset[str]) -> Redactor:
    return Redactor(secrets)


def redactor(extra: Iterable[str | None] = ()) -> Redactor:
    """A redactor for the secrets known now (environment, registered, ``extra``). Hot paths keep
    the one they got; building it reads the environment."""
    values = {v for v in extra if v and len(v) >= MIN_SECRET_LENGTH}
    return _compiled(frozenset(values | _registered | set(environment_secrets())))


def redact(text: str, extra: Iterable[str | None] = ()) -> str:
    """``text`` with every known secret (and each of ``extra``) masked."""
    return redactor(extra)(text)


def contains_secret(text: str, extra: Iterable[str | None] = ()) -> bool:
    return redactor(extra).found_in(text)
