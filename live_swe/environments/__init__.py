"""Where commands run: ``execute(command, timeout) -> Output``."""

from live_swe.environments.base import Environment, EnvironmentError_, Output

__all__ = ["Environment", "EnvironmentError_", "Output"]
