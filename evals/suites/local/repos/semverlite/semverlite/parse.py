"""Parsing version strings."""

from __future__ import annotations

import re

_PATTERN = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


def parse_parts(text: str) -> tuple[int, int, int, tuple[str, ...], tuple[str, ...]]:
    match = _PATTERN.match(text.strip())
    if not match:
        raise ValueError(f"not a semantic version: {text!r}")
    major, minor, patch, pre, build = match.groups()
    return (
        int(major),
        int(minor),
        int(patch),
        tuple(pre.split(".")) if pre else (),
        tuple(build.split(".")) if build else (),
    )
