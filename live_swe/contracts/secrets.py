"""Secrets in text: the values the kernel holds (``live_swe.infra.redact``: plain, JSON and base64
forms), credentials by their published key formats, and high-entropy values assigned to a name that
says "key" or "token". Base64 blobs are decoded once and looked into, so an encoded key is found too.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter

from live_swe.infra.redact import Redactor, redactor

KEY_FORMATS = {
    "AWS access key id": r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    "GitHub token": r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{60,})\b",
    "GitLab token": r"\bglpat-[A-Za-z0-9_-]{20,}\b",
    "Anthropic key": r"\bsk-ant-[A-Za-z0-9_-]{30,}",
    "OpenAI key": r"\bsk-(?:proj-)?[A-Za-z0-9_-]{32,}",
    "Slack token": r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
    "Google API key": r"\bAIza[0-9A-Za-z_-]{35}\b",
    "Stripe key": r"\b[sr]k_live_[0-9A-Za-z]{20,}\b",
    "private key": r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----",
}
_KEYS = re.compile("|".join(f"(?P<k{i}>{p})" for i, p in enumerate(KEY_FORMATS.values())))
_KEY_NAMES = list(KEY_FORMATS)
# A long random-looking value given to a name that says it is a credential.
_ASSIGNED = re.compile(r"(?i)(?:key|token|secret|passw(?:or)?d|pwd|credential)[\w-]*['\"]?\s*[:=]\s*['\"]?"
                       r"([A-Za-z0-9+/_=.-]{24,})")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{24,}={0,2}")
ENTROPY_BITS = 4.0  # bits per character; hex digests (<= 4.0) stay below it


def entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


class SecretFinder:
    def __init__(self, known: Redactor | None = None):
        self.known = known if known is not None else redactor()

    def kinds(self, text: str, depth: int = 0) -> list[str]:
        """The kinds of secrets in ``text`` (empty: none)."""
        if not text:
            return []
        found = []
        if self.known.found_in(text):
            found.append("a secret the kernel holds")
        for match in _KEYS.finditer(text):
            found.append(_KEY_NAMES[int(match.lastgroup[1:])])
        for match in _ASSIGNED.finditer(text):
            value = match.group(1)
            if entropy(value) > ENTROPY_BITS and re.search(r"\d", value) and re.search(r"[A-Za-z]", value):
                found.append("a high-entropy credential value")
        if depth == 0 and not found:
            for blob in _BASE64.findall(text):
                decoded = _decode(blob)
                if decoded and self.kinds(decoded, depth + 1):
                    found.append("a base64-encoded secret")
                    break
        return sorted(set(found))


def _decode(blob: str) -> str | None:
    try:
        data = base64.b64decode(blob + "=" * (-len(blob) % 4), validate=False)
    except (binascii.Error, ValueError):
        return None
    text = data.decode("utf-8", "ignore")
    return text if text and sum(c.isprintable() for c in text) > 0.9 * len(text) else None
