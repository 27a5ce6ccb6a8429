"""``live-swe grade SESSION`` and ``live-swe bench grade DIR``: Goal–Plan–Action grades."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from live_swe.cli.common import friendly, print_json, shown

JUDGE_HELP = ("A model that judges each metric (any litellm model, local/NAME, scripted:FILE); without it "
              "the deterministic analysers score alone, for free.")


def _judge(name: str | None):
    if not name:
        return None
    from live_swe.models.resolve import make_model

    return make_model(name)


def _progress(metric: str, verdict) -> None:
    print(shown(f"judged {metric}: {verdict.status}" + (f", {verdict.score}/3" if verdict.score is not None else "")),
          file=sys.stderr)


@friendly
def grade(
    session_id: str = typer.Argument(..., help="The session to grade (`live-swe sessions list`)."),
    judge: str = typer.Option(None, "--judge", help=JUDGE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Grade a session on Goal fulfillment, Logical consistency, Execution efficiency, Plan quality and
    Plan adherence (0-3 each), with the steps where it went wrong. A judged grade is saved in the session."""
    from live_swe.grading.report import text_report
    from live_swe.grading.session import grade_session
    from live_swe.session.store import SessionStore

    session = SessionStore.default().open(session_id)
    model = _judge(judge)
    result = grade_session(session, model, save=True, on_metric=None if as_json else _progress)
    if as_json:
        print_json({"session_id": session_id, **result.to_json()})
        return
    print(shown(text_report(result, f"session {session_id}: {result.status} after {result.steps} steps")))


@friendly
def bench_grade(
    directory: Path = typer.Argument(..., help="A batch output directory (holds preds.jsonl and sessions/)."),
    judge: str = typer.Option(None, "--judge", help=JUDGE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as one JSON object."),
) -> None:
    """Grade every finished instance of a batch: DIR/grades.jsonl and DIR/grade_summary.json."""
    from live_swe.bench.grade import GRADE_SUMMARY_FILE, GRADES_FILE, grade_batch
    from live_swe.grading.report import summary_text

    say = (lambda line: None) if as_json else (lambda line: print(shown(line), file=sys.stderr))
    summary = grade_batch(directory, _judge(judge), say=say)
    if as_json:
        print_json(summary)
        return
    print(shown(summary_text(summary)))
    print(f"per instance: {directory / GRADES_FILE}; summary: {directory / GRADE_SUMMARY_FILE}")
