"""``live-swe bench grade DIR``: grade every finished instance of a batch folder.

Writes, next to ``preds.jsonl``::

    grades.jsonl          one line per graded instance: instance_id, session, and its grade
    grade_summary.json    the mean score of each metric, overall and (when ``report.json`` exists)
                          for resolved and unresolved instances apart

Both are derived files, rewritten whole on each grade. With a judge, each session's judged grade is
also saved in its own log, so ``sessions show`` finds it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from live_swe.bench.preds import PREDS_FILE, read_jsonl, read_preds
from live_swe.errors import UserError
from live_swe.grading.aggregate import summarise
from live_swe.grading.grade import Grade
from live_swe.grading.session import grade_session, open_session_dir
from live_swe.infra import files
from live_swe.models.base import Model
from live_swe.session.store import SessionError

GRADES_FILE = "grades.jsonl"
GRADE_SUMMARY_FILE = "grade_summary.json"
SESSIONS_DIR = "sessions"
REPORT_FILE = "report.json"


def _resolved(directory: Path) -> set[str] | None:
    """The resolved instances of an evaluated batch (``bench eval`` wrote report.json), else None."""
    try:
        return set(json.loads((directory / REPORT_FILE).read_text()).get("resolved_ids") or [])
    except (OSError, ValueError, AttributeError):
        return None


def grade_batch(directory: Path, judge: Model | None = None,
                say: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """Grade the batch in ``directory``; returns the summary (also written to grade_summary.json)."""
    directory = Path(directory)
    preds = read_preds(directory / PREDS_FILE)
    if not preds:
        raise UserError(f"{directory / PREDS_FILE}: no finished instances to grade; run `live-swe bench run` "
                        "with --out pointing here first")
    grades: dict[str, Grade] = {}
    lines = []
    for instance_id, pred in sorted(preds.items()):
        session_id = pred.get("session")
        if not session_id:
            say(f"{instance_id}: no session recorded, not graded")
            continue
        try:
            session = open_session_dir(directory / SESSIONS_DIR / str(session_id))
            grade = grade_session(session, judge, save=judge is not None)
        except SessionError as exc:
            say(f"{instance_id}: {exc}")
            continue
        grades[instance_id] = grade
        lines.append(json.dumps({"instance_id": instance_id, "session": session_id, **grade.to_json()}))
        say(f"{instance_id}: GPA {grade.mean if grade.mean is not None else '-'}")
    files.write_atomic(directory / GRADES_FILE, "".join(line + "\n" for line in lines))
    summary = summarise(grades, total=len(preds), resolved=_resolved(directory),
                        judge=getattr(judge, "name", None) if judge else None)
    files.write_atomic(directory / GRADE_SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
    return summary


def read_grades(directory: Path) -> dict[str, Grade]:
    """instance_id -> grade, from a graded batch folder."""
    return {r["instance_id"]: Grade.from_json(r) for r in read_jsonl(Path(directory) / GRADES_FILE)
            if isinstance(r.get("instance_id"), str)}
