"""Turn INI-style text into ``{section: {key: raw value}}``."""

from __future__ import annotations

from configlite.errors import ConfigError


def parse(text: str) -> dict[str, dict[str, str]]:
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            name = line[1:-1].strip()
            if not name:
                raise ConfigError(f"line {number}: empty section name")
            current = sections.setdefault(name, {})
            continue
        if "=" not in line:
            raise ConfigError(f"line {number}: expected 'key = value'")
        if current is None:
            raise ConfigError(f"line {number}: key outside of any section")
        key, value = line.split("=", 1)
        current[key.strip().lower()] = value.strip()
    return sections
