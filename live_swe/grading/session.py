"""Grading a stored session: read its trajectory, grade it, and save a judged grade in its log."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from live_swe.grading.grade import Grade, grade
from live_swe.grading.judge import DEFAULT_PROMPT_CHARS
from live_swe.grading.log import grade_event, load_trajectory, saved_grade
from live_swe.models.base import Model
from live_swe.session.store import Session, SessionError, SessionStore
from live_swe.session.view import SessionView


def grade_session(session: Session, judge: Model | None = None, *, save: bool = False,
                  max_chars: int = DEFAULT_PROMPT_CHARS, on_metric=None) -> Grade:
    """The session's grade; with ``save``, a judged grade is appended to its log as a ``grade`` event."""
    result = grade(load_trajectory(session), judge, max_chars=max_chars, on_metric=on_metric)
    if save and judge is not None:
        session.append(grade_event(result.to_json()))
        session.close()
    return result


def current_grade(session: Session) -> Grade:
    """What readers show: the judged grade saved for the run as it stands, else the analysers' grade."""
    saved = saved_grade(SessionView.read(session).events)
    if saved is not None:
        return Grade.from_json(saved)
    return grade_session(session)


def open_session_dir(directory: str | Path) -> Session:
    """A session folder anywhere (a batch's ``sessions/<id>``), not only under ``$LIVE_SWE_HOME``."""
    directory = Path(directory)
    return SessionStore(directory.parent).open(directory.name)


def grade_session_dir(directory: str | Path) -> Grade | None:
    """The analysers' grade of a session folder; None when it cannot be read (a partial record)."""

    try:
        return grade_session(open_session_dir(directory))
    except (SessionError, OSError):
        return None


def grade_session_dirs(directories: Iterable[str | Path]) -> list[Grade]:
    """The analysers' grades of the readable session folders among ``directories``."""
    grades = (grade_session_dir(d) for d in directories if d)
    return [g for g in grades if g is not None]
