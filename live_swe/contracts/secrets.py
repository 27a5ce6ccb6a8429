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
# Literal parts every key format has: text without any of them skips the (slower) full expression.
_KEY_ANCHORS = ("AKIA", "ASIA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "sk-", "xox", "AIza",
                "k_live_", "PRIVATE KEY")
# A long random-looking value given to a name that says it is a credential.
_ASSIGNED = re.compile(r"(?i)(?:key|token|secret|passw(?:or)?d|pwd|credential)[\w-]*['\"]?\s*[:=]\s*['\"]?"
                       r"([A-Za-z0-9+/_=.-]{24,})")
_NAME_ANCHORS = ("key", "token", "secret", "passw", "pwd", "credential")
_VALUE_AFTER_NAME = re.compile(r"[\w-]*['\"]?\s*[:=]\s*['\"]?([A-Za-z0-9+/_=.-]{24,})")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{24,}={0,2}")
_BLOB_EDGES = "'\"`()[]{}<>,;:"
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
        if any(anchor in text for anchor in _KEY_ANCHORS):
            for match in _KEYS.finditer(text):
                found.append(_KEY_NAMES[int(match.lastgroup[1:])])
        if any(_high_entropy(value) for value in _assigned_values(text)):
            found.append("a high-entropy credential value")
        if depth == 0 and not found:
            for blob in _blobs(text):
                decoded = _decode(blob)
                if decoded and self.kinds(decoded, depth + 1):
                    found.append("a base64-encoded secret")
                    break
        return sorted(set(found))


def _assigned_values(text: str):
    """Values given to a name that says "key", "token"...: found from each such name (str.find is
    much faster than one expression over the whole text)."""
    lowered = text.lower()
    for anchor in _NAME_ANCHORS:
        start = lowered.find(anchor)
        while start != -1:
            match = _VALUE_AFTER_NAME.match(text, start + len(anchor))
            if match:
                yield match.group(1)
            start = lowered.find(anchor, start + 1)


def _high_entropy(value: str) -> bool:
    return entropy(value) > ENTROPY_BITS and re.search(r"\d", value) is not None and \
        re.search(r"[A-Za-z]", value) is not None


def _blobs(text: str):
    """Words that may be base64 (long runs of its alphabet)."""
    for word in text.split():
        if len(word) >= 24:
            yield from _BASE64.findall(word.strip(_BLOB_EDGES))


def _decode(blob: str) -> str | None:
    try:
        data = base64.b64decode(blob + "=" * (-len(blob) % 4), validate=False)
    except (binascii.Error, ValueError):
        return None
    text = data.decode("utf-8", "ignore")
    return text if text and sum(c.isprintable() for c in text) > 0.9 * len(text) else None


def mask_formats(text: str) -> str:
    """``text`` with key-format credentials and high-entropy assigned values replaced by ***."""
    text = _KEYS.sub("***", text)
    return _ASSIGNED.sub(lambda m: m.group(0).replace(m.group(1), "***") if _high_entropy(m.group(1)) else m.group(0),
                         text)
