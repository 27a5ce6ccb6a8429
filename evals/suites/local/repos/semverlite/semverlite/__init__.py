"""Semantic versions: parsing and precedence."""

from semverlite.version import Version

__all__ = ["Version"]
