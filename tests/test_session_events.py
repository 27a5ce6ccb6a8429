"""The typed event log: records round-trip, damaged or unknown records read without raising, and the
session view reconciles meta.json with the log in one place."""

from __future__ import annotations

import json

from live_swe import events as ev
from live_swe import wording
from live_swe.session.store import RunStatus, SessionStore
from live_swe.session.view import SessionView, change_json


def test_a_record_round_trips_through_its_class_and_keeps_fields_it_does_not_know():
    record = {"t": "step", "ts": 1.5, "step": 3, "command": "ls", "returncode": 0, "cost": 0.25, "newer": [1]}
    event = ev.parse(record)
    assert isinstance(event, ev.Step) and event.step == 3 and event.command == "ls"
    assert event.extra == {"newer": [1]}
    again = event.record()
    assert {k: again[k] for k in record} == record


def test_fields_of_the_wrong_type_read_as_their_defaults_and_nothing_raises():
    event = ev.parse({"t": "step", "step": "three", "command": None, "cost": True, "returncode": 1})
    assert isinstance(event, ev.Step)
    assert (event.step, event.command, event.cost, event.returncode) == (0, "", 0.0, 1)
    assert isinstance(ev.parse({"t": "scaffold", "files": ["a", 3]}), ev.ScaffoldChange)
    assert ev.parse({"t": "scaffold", "files": ["a", 3]}).files == []
    for junk in ({}, {"t": 5}, {"t": "from-the-future", "x": 1}):
        assert isinstance(ev.parse(junk), ev.Unknown)
    assert ev.parse({"t": "from-the-future", "x": 1}).record() == {"t": "from-the-future", "x": 1}


def test_every_kind_written_today_has_a_class():
    kinds = {"session", "base", "confinement", "follow_up", "resume", "log_problem", "restore_patch",
             "repo_instructions", "repo_map", "message", "step", "note", "format_error", "review", "system",
             "checkpoint", "end", "scaffold", "tool", "history", "hooks_off", "contract", "grade"}
    assert all(not isinstance(ev.parse({"t": kind}), ev.Unknown) for kind in kinds)


def test_the_view_reads_steps_and_cost_of_a_killed_session_from_its_log(tmp_path):
    session = SessionStore(tmp_path).create(task="t", model="scripted")
    session.append(ev.Message(step=0, message={"role": "system", "content": "s"}))
    session.append(ev.Message(step=1, message={"role": "assistant", "content": "a"}))
    session.append(ev.Step(step=1, command="ls", returncode=0, cost=0.5, elapsed=2.0))
    session.append(ev.Step(step=2, command="echo", returncode=0, cost=0.75, elapsed=3.5, submitted=True))
    with open(session.events_path, "a") as handle:
        handle.write('{"t": "step", "step": 3, "comm')  # killed mid-write
    session.close()
    view = SessionView.read(SessionStore(tmp_path).open(session.id))
    assert (view.steps, view.cost, view.elapsed, view.submitted) == (2, 0.75, 3.5, True)
    assert view.status == RunStatus.RUNNING
    assert view.replies == 1 and len(view.messages) == 2
    assert len(view.problems) == 1


def test_scaffold_changes_are_worded_in_one_place(tmp_path):
    change = ev.ScaffoldChange(kind="reject", step=4, files=["prompts/system.j2"], reason="shorter",
                               why="template does not render", rev="")
    assert wording.change_summary(change) == "refused prompts/system.j2: template does not render"
    assert wording.change_log_line(change) == ("step    4  refused" + " " * 15 + "prompts/system.j2  — shorter"
                                               "  [template does not render]")
    assert change_json(change)["accepted"] is False
    assert wording.progress_line(ev.Step(step=2, command="ls -l\necho", returncode=1)) == "[step 2] rc=1 $ ls -l"
    assert wording.progress_line(ev.Message()) is None


def test_old_logs_read_the_same(tmp_path):
    # a log written before the typed events: no ts on kernel records, the fields as they were
    lines = [{"t": "session", "repo": "/r", "env": "local", "image": None, "repo_dir": "/r", "model": "m",
              "limits": {"step_limit": 5}, "sandbox": None, "api_base": None},
             {"t": "tool", "kind": "registered", "step": 0, "name": "seed", "why": ""},
             {"t": "tool", "kind": "registered", "step": 2, "name": "grep2", "why": ""},
             {"t": "scaffold", "kind": "commit", "step": 2, "files": ["tools/grep2"], "reason": "r", "why": "",
              "rev": "abc", "summary": "accepted tools/grep2"}]
    session = SessionStore(tmp_path).create(task="t", model="m")
    session.events_path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    view = SessionView.read(session)
    assert view.first(ev.SessionStarted).limits == {"step_limit": 5}
    assert view.tools_made == ["grep2"] and view.tools_registered == ["grep2", "seed"]
    assert [c.rev for c in view.scaffold_changes] == ["abc"]
