"""Language models behind one protocol: ``query(messages) -> Reply``."""

from live_swe.models.base import Model, ModelError, Reply, ToolCall, Usage

__all__ = ["Model", "ModelError", "Reply", "ToolCall", "Usage"]
