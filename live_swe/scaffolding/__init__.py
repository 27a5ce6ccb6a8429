"""The scaffold: a directory (policy, prompts, hooks, tools) loaded into an immutable object."""

from live_swe.scaffolding.policy import ScaffoldPolicy
from live_swe.scaffolding.scaffold import Scaffold, ScaffoldError, ToolInfo

__all__ = ["Scaffold", "ScaffoldError", "ScaffoldPolicy", "ToolInfo"]
