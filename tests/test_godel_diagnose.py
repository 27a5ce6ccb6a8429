"""Diagnosis reads only the failed sessions of the selection split, and only what the agent saw."""

from __future__ import annotations

import json

from godel.diagnose import diagnose, read_trajectory


def _session(directory, *, task, status, message, events, patch=""):
    directory.mkdir(parents=True)
    (directory / "meta.json").write_text(json.dumps(
        {"id": directory.name, "task": task, "model": "m", "status": status, "exit_message": message, "steps": 7}))
    (directory / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events) + '{"t": "step", "comm')
    (directory / "patch.diff").write_text(patch)
    return directory


EVENTS = [
    {"t": "message", "step": 0, "message": {"role": "user", "content": "Please fix the parser."}},
    {"t": "step", "step": 1, "command": "grep -rn parse .", "returncode": 0},
    {"t": "format_error", "step": 2, "reason": "your reply has 2 ```bash blocks; exactly one is allowed"},
    {"t": "step", "step": 3, "command": "python -m pytest -q", "returncode": 1, "timed_out": False},
    {"t": "step", "step": 4, "command": "sleep 999", "returncode": -1, "timed_out": True},
    {"t": "scaffold", "kind": "reject", "step": 5, "files": ["scaffold.yaml"], "reason": "more steps",
     "why": "scaffold.yaml: budgets may only be tightened"},
    {"t": "tool", "kind": "refused", "step": 6, "name": "../x", "why": "the name contains a path separator"},
    {"t": "message", "step": 6, "message": {"role": "user", "content": "<returncode>1</returncode> ImportError: x"}},
]


def test_a_trajectory_summary_has_commands_errors_and_limits(tmp_path):
    session = _session(tmp_path / "s1", task="The parser drops the last token.", status="limits_exceeded",
                       message="step limit of 7 reached", events=EVENTS)
    trajectory = read_trajectory("repo__parser-1", session)
    assert trajectory.status == "limits_exceeded" and trajectory.steps == 7
    assert trajectory.failed_commands == 2 and trajectory.timeouts == 1
    assert len(trajectory.format_errors) == 1 and len(trajectory.refused_changes) == 2
    assert trajectory.commands[-1] == ("sleep 999", -1)
    assert "ImportError" in trajectory.last_observation


def test_the_task_names_selection_failures_only(tmp_path):
    sessions = {
        "sel-fail": str(_session(tmp_path / "a", task="Parser drops tokens.", status="submitted", message="",
                                 events=EVENTS)),
        "sel-ok": str(_session(tmp_path / "b", task="Fine.", status="submitted", message="", events=EVENTS)),
        "report-fail": str(_session(tmp_path / "c", task="SECRET report task.", status="submitted", message="",
                                    events=EVENTS)),
    }
    results = {"sel-fail": False, "sel-ok": True, "report-fail": False}
    task = diagnose("n4", results, sessions, selection={"sel-fail", "sel-ok"})
    assert "### sel-fail: ended `submitted`" in task
    assert "sel-ok" not in task and "report-fail" not in task and "SECRET" not in task
    assert "resolved 1 of 2 selection tasks" in task
    assert "budgets may only be tightened" in task and "[-1] sleep 999" in task
    assert "Format errors: your reply has 2" in task
    assert "scaffold.yaml" in task and "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in task


def test_a_parent_without_failures_gets_a_general_task():
    task = diagnose("n0", {"a": True}, {}, selection={"a"})
    assert "failed none of them" in task
