"""INI-style configuration files."""

from configlite.config import Config
from configlite.errors import ConfigError

__all__ = ["Config", "ConfigError"]
