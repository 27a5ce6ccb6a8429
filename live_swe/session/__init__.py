"""Sessions: a directory with metadata, an append-only event log, the scaffold and the patch."""

from live_swe.session.store import Session, SessionError, SessionMeta, SessionStore

__all__ = ["Session", "SessionError", "SessionMeta", "SessionStore"]
