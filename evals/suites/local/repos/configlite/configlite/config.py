"""The configuration object."""

from __future__ import annotations

from pathlib import Path

from configlite import values
from configlite.errors import ConfigError
from configlite.parser import parse


class Config:
    def __init__(self, sections: dict[str, dict[str, str]]):
        self._sections = sections

    @classmethod
    def from_text(cls, text: str) -> "Config":
        return cls(parse(text))

    @classmethod
    def from_file(cls, path: str | Path) -> "Config":
        return cls.from_text(Path(path).read_text(encoding="utf-8"))

    def sections(self) -> list[str]:
        return list(self._sections)

    def get(self, section: str, key: str, default: str | None = None) -> str:
        try:
            return self._sections[section][key.lower()]
        except KeyError:
            if default is not None:
                return default
            raise ConfigError(f"missing [{section}] {key}") from None

    def get_bool(self, section: str, key: str, default: bool | None = None) -> bool:
        raw = self.get(section, key, None if default is None else str(default))
        return values.to_bool(raw)

    def get_int(self, section: str, key: str, default: int | None = None) -> int:
        raw = self.get(section, key, None if default is None else str(default))
        return values.to_int(raw)

    def get_list(self, section: str, key: str) -> list[str]:
        return values.to_list(self.get(section, key))
