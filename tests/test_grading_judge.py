"""Judges through the model layer: the prompt each one gets, and scripted judge replies (well formed,
fenced, line format, malformed, out of range, a failing model) parsed or recorded, never fatal."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import SUBMIT, bash_reply, write_script

from live_swe.config import KernelLimits
from live_swe.grading.analysers import analyse
from live_swe.grading.judge import BadVerdict, judge_messages, judge_metric, parse_verdict
from live_swe.grading.log import load_trajectory
from live_swe.models.base import Reply
from live_swe.models.scripted import ScriptedModel
from live_swe.runner import RunHooks, RunRequest, start_run
from live_swe.session.store import SessionStore

CLI = [sys.executable, "-m", "live_swe.cli.main"]
TASK = "add() in calc.py subtracts; make it add."
PLAN = "PLAN:\n1. Read add() in calc.py\n2. Fix the operator in add()\n3. Run a check of add()\n\n"
REPLIES = [PLAN + bash_reply("cat calc.py"), bash_reply("cat calc.py", "Again."),
           bash_reply("sed -i 's/a - b/a + b/' calc.py", "Fix the sign."), SUBMIT]


def cli(*args):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


@pytest.fixture
def session_id(git_repo):
    model = ScriptedModel([Reply(r) for r in REPLIES])
    result = start_run(RunRequest(task=TASK, model="scripted:solver", repo=git_repo, limits=KernelLimits()),
                       RunHooks(model_factory=lambda name: model))
    return result.session_id


def test_the_prompt_holds_the_goal_the_stated_plan_the_steps_and_the_hints(session_id):
    trajectory = load_trajectory(SessionStore.default().open(session_id))
    findings = analyse(trajectory)
    [system, user] = judge_messages("execution_efficiency", trajectory, findings)
    assert system["role"] == "system" and "JSON" in system["content"]
    text = user["content"]
    assert f"<task>\n{TASK}\n</task>" in text
    assert "[step 1] PLAN:\n1. Read add() in calc.py\n2. Fix the operator in add()" in text
    assert "[step 2]\nTHOUGHT: Again.\n$ cat calc.py\n(exit code 0) output:\ndef add(a, b):" in text
    assert "[step 4]" in text and "(submitted)" in text
    assert "- steps 2: repeated_command:" in text  # the analysers' hint for this metric
    assert "unverified_edit" not in text  # hints of other metrics stay out
    assert "0: mostly wasted steps" in text and '{"score": <0-3>' in text
    goal = judge_messages("goal_fulfillment", trajectory, findings)[1]["content"]
    assert "+    return a + b" in goal and "unverified_edit" in goal  # the patch, for goal fulfillment only
    assert "+    return a + b" not in text


def test_a_long_trajectory_is_cut_to_the_budget_keeping_the_hinted_steps(git_repo):
    replies = [PLAN + bash_reply("seq 1 3000")] + [bash_reply(f"seq {n} 3000") for n in range(2, 30)]
    replies += [bash_reply("seq 1 3000", "Once more.")] + [bash_reply(f"seq {n} 3000") for n in range(31, 60)]
    replies += [SUBMIT]
    model = ScriptedModel([Reply(r) for r in replies])
    result = start_run(RunRequest(task=TASK, model="scripted:solver", repo=git_repo, limits=KernelLimits()),
                       RunHooks(model_factory=lambda name: model))
    trajectory = load_trajectory(SessionStore.default().open(result.session_id))
    findings = analyse(trajectory)
    assert any(f.kind == "repeated_command" and f.steps == (30,) for f in findings)
    [system, user] = judge_messages("execution_efficiency", trajectory, findings, max_chars=8000)
    text = user["content"]
    assert len(system["content"] + text) <= 8000 and "left out for length" in text
    for step in (1, 2, 3, 30, 58, 59, 60):  # the first and last three, and the hinted one
        assert f"[step {step}]" in text


@pytest.mark.parametrize("reply, expected", [
    ('{"score": 2, "steps": [3], "reasons": "Not verified."}', (2, [3], "Not verified.")),
    ('Here:\n```json\n{"score": "1", "steps": ["step 2", 9], "reason": "looped"}\n```', (1, [2], "looped")),
    ('{"score": 3.0, "steps": "2, 3", "explanation": ["fine", "really"]}', (3, [2, 3], "fine really")),
    ("SCORE: 0/3\nSTEPS: 1, 2\nREASONS: the goal is not met", (0, [1, 2], "the goal is not met")),
])
def test_verdicts_are_read_from_the_reply(reply, expected):
    assert parse_verdict(reply, {1, 2, 3}) == expected


@pytest.mark.parametrize("reply", ["", "It looks fine to me.", '{"score": 4}', '{"score": 1.5}', '{"score": "two"}',
                                   '{"steps": [1]}', '{"score": true}'])
def test_replies_without_a_readable_verdict(reply):
    with pytest.raises(BadVerdict):
        parse_verdict(reply, {1})


def test_a_malformed_reply_is_asked_for_once_more_then_recorded(session_id):
    trajectory = load_trajectory(SessionStore.default().open(session_id))
    judge = ScriptedModel([Reply("It is fine."), Reply('{"score": 2, "steps": [2], "reasons": "One repeat."}')])
    verdict = judge_metric(judge, "execution_efficiency", trajectory, analyse(trajectory))
    assert (verdict.status, verdict.score, verdict.steps, verdict.calls) == ("ok", 2, [2], 2)
    retry = judge.seen[1]
    assert retry[-2] == {"role": "assistant", "content": "It is fine."}
    assert "could not be read" in retry[-1]["content"] and '"score"' in retry[-1]["content"]

    judge = ScriptedModel([Reply("no idea"), Reply('{"score": 9}'), Reply('{"score": 3}')])
    verdict = judge_metric(judge, "execution_efficiency", trajectory, analyse(trajectory))
    assert (verdict.status, verdict.score, verdict.calls) == ("unparsable", None, 2)
    assert "not a whole number from 0 to 3" in verdict.detail and judge.calls == 2  # never a third call


def test_cli_grade_with_scripted_judge_replies_saves_the_grade(session_id, tmp_path):
    judge = write_script(tmp_path / "judge.yaml", [
        '```json\n{"score": 2, "steps": [3], "reasons": "The fix is not checked."}\n```',  # goal fulfillment
        "The agent was consistent.",  # logical consistency: unreadable ...
        "Score: 3\nSteps:\nReasons: consistent",  # ... then read on the retry
        '{"score": 1, "steps": [2, 99], "reasons": "calc.py printed twice."}',  # execution efficiency
        "I cannot tell.", "Still cannot.",  # plan quality: unparsable
        '{"score": 5}',  # plan adherence: out of range, then the script runs out (a failing model)
    ])
    out = cli("grade", session_id, "--judge", f"scripted:{judge}", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    metrics = data["metrics"]
    assert data["session_id"] == session_id and data["judge"] == f"scripted:{judge}"
    assert metrics["goal_fulfillment"]["judge"]["steps"] == [3] and metrics["goal_fulfillment"]["score"] == 2
    assert metrics["logical_consistency"]["judge"]["calls"] == 2 and metrics["logical_consistency"]["score"] == 3
    assert metrics["execution_efficiency"]["judge"]["steps"] == [2]  # 99 is no step of this run
    assert metrics["execution_efficiency"]["normalised"] == pytest.approx(0.333)
    assert metrics["plan_quality"]["judge"]["status"] == "unparsable"
    assert metrics["plan_quality"]["source"] == "analysers" and metrics["plan_quality"]["score"] == 3
    assert metrics["plan_adherence"]["judge"]["status"] == "error" and "ran out" in metrics["plan_adherence"]["judge"]["detail"]
    assert {f["kind"] for f in data["findings"]} >= {"repeated_command", "unverified_edit"}
    # the judged grade is saved with the session, and is what `sessions show` reports
    shown = json.loads(cli("sessions", "show", session_id, "--json").stdout)
    assert shown["grade"]["judge"] == f"scripted:{judge}" and shown["grade"]["metrics"] == metrics
    assert "grade: GPA 0.67  GF 2/3  LC 3/3  EE 1/3  PQ 3/3  PA 1/3  (judge scripted:" in \
        cli("sessions", "show", session_id).stdout
    text = cli("grade", session_id, "--judge", f"scripted:{judge}")
    assert text.returncode == 0 and "judge: The fix is not checked. [step 3]" in text.stdout
    assert "judge error:" in text.stdout and "the analysers' score counts" in text.stdout


def test_a_judged_grade_no_longer_counts_once_the_session_goes_on(git_repo, tmp_path):
    script = write_script(tmp_path / "solver.yaml", REPLIES)
    run = subprocess.run([*CLI, "run", "--task", TASK, "--repo", str(git_repo), "--model", f"scripted:{script}",
                          "--yolo", "--json", "--step-limit", "2"], capture_output=True, text=True, timeout=120)
    session_id = json.loads(run.stdout)["session_id"]
    judge = write_script(tmp_path / "judge.yaml", ['{"score": 1, "steps": [2], "reasons": "r"}'] * 5)
    assert cli("grade", session_id, "--judge", f"scripted:{judge}", "--json").returncode == 0
    assert json.loads(cli("sessions", "show", session_id, "--json").stdout)["grade"]["judge"]
    resumed = subprocess.run([*CLI, "resume", session_id, "--yolo", "--step-limit", "10", "--json"],
                             capture_output=True, text=True, timeout=120)
    assert json.loads(resumed.stdout)["status"] == "submitted", resumed.stderr
    grade = json.loads(cli("sessions", "show", session_id, "--json").stdout)["grade"]
    assert grade["judge"] is None and grade["steps"] == 4  # the analysers' grade of the whole run


def test_bad_judge_or_session_is_one_clear_line(session_id):
    out = cli("grade", session_id, "--judge", "nosuch:model")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "unknown model prefix" in out.stderr
    out = cli("grade", "no-such-session")
    assert out.returncode == 2 and "no session 'no-such-session'" in out.stderr and "Traceback" not in out.stderr
