"""The grading analysers on trajectories made by the real loop (scripted replies, real git
repositories, real subprocesses): each finding names its metric, its steps and its evidence."""

from __future__ import annotations

import pytest
from conftest import SUBMIT, bash_reply

from live_swe.config import KernelLimits
from live_swe.grading.analysers import analyse
from live_swe.grading.commands import command_facts
from live_swe.grading.grade import grade
from live_swe.grading.log import load_trajectory
from live_swe.grading.metrics import METRICS
from live_swe.grading.plans import extract_plan
from live_swe.models.base import Reply
from live_swe.models.scripted import ScriptedModel
from live_swe.runner import RunHooks, RunRequest, start_run
from live_swe.session.store import SessionStore

PLAN = "PLAN:\n1. Read add() in calc.py\n2. Fix the operator in add()\n3. Run a check of add()\n\n"
READ = "cat calc.py"
FIX = "sed -i 's/a - b/a + b/' calc.py"
CHECK = "python3 -c 'from calc import add; assert add(2, 3) == 5; print(\"ok\")'"


def run(repo, replies, *, task="add() subtracts; make it add.", limits=None):
    model = ScriptedModel([r if isinstance(r, Reply) else Reply(r) for r in replies])
    result = start_run(RunRequest(task=task, model="scripted:test", repo=repo, limits=limits or KernelLimits()),
                       RunHooks(model_factory=lambda name: model))
    trajectory = load_trajectory(SessionStore.default().open(result.session_id))
    return trajectory, analyse(trajectory)


def kinds(findings) -> dict[str, tuple[int, ...]]:
    return {f.kind: f.steps for f in findings}


def test_a_clean_run_with_a_plan_has_no_findings_and_full_scores(git_repo):
    trajectory, findings = run(git_repo, [PLAN + bash_reply(READ), bash_reply(FIX), bash_reply(CHECK), SUBMIT])
    assert [s.id for s in trajectory.steps] == [1, 2, 3, 4]
    assert trajectory.plans[0].items == ("Read add() in calc.py", "Fix the operator in add()", "Run a check of add()")
    assert trajectory.steps[2].output.strip() == "ok" and trajectory.steps[3].submitted
    assert findings == []
    result = grade(trajectory)
    assert result.scores == dict.fromkeys(METRICS, 3) and result.mean == 1.0


def test_a_loop_and_a_failed_command_retried_unchanged(git_repo):
    _, findings = run(git_repo, [
        PLAN + bash_reply(READ), bash_reply(READ), bash_reply(READ),
        bash_reply("python3 missing.py"), bash_reply("python3 missing.py"),
        bash_reply(FIX), bash_reply(CHECK), SUBMIT,
    ])
    found = {f.kind: f for f in findings}
    assert found["repeated_command"].steps == (2, 3) and found["repeated_command"].metric == "execution_efficiency"
    assert found["repeated_command"].severity == 2 and "first at step 1" in found["repeated_command"].evidence
    assert found["retried_failure"].steps == (5,) and found["retried_failure"].metric == "logical_consistency"
    assert "failed at step 4" in found["retried_failure"].evidence


def test_an_edit_never_run_and_a_submission_without_a_test(git_repo):
    trajectory, findings = run(git_repo, [PLAN + bash_reply(READ), bash_reply(FIX), bash_reply("git diff"), SUBMIT])
    assert kinds(findings)["unverified_edit"] == (2,)
    assert kinds(findings)["untested_submission"] == (4,)
    assert kinds(findings)["plan_step_not_acted"] == (4,)  # the planned check was skipped at the submission
    assert grade(trajectory).metrics["goal_fulfillment"].score == 1


def test_submitting_while_the_last_test_fails(git_repo):
    _, findings = run(git_repo, [
        PLAN + bash_reply(READ), bash_reply("sed -i 's/a - b/a * b/' calc.py"), bash_reply(CHECK), SUBMIT,
    ])
    assert kinds(findings)["submitted_failing"] == (4, 3)


def test_files_read_again_and_the_same_search_again(git_repo):
    _, findings = run(git_repo, [
        PLAN + bash_reply("grep -rn 'def add' ."), bash_reply(READ), bash_reply("sed -n '1,2p' calc.py"),
        bash_reply("grep -n return calc.py"), bash_reply("grep -rn 'def add' --include='*.py' ."),
        bash_reply(FIX), bash_reply(CHECK), bash_reply(READ), SUBMIT,
    ])
    found = {f.kind: f for f in findings}
    # calc.py was shown whole at step 2: looking at it again before it changed is wasted; after the edit it is not
    assert found["redundant_read"].steps == (3, 4) and "calc.py" in found["redundant_read"].evidence
    assert found["repeated_search"].steps == (5,) and "def add" in found["repeated_search"].evidence


def test_a_tool_never_used_and_a_refused_scaffold_change(git_repo):
    from test_evolution_support import simple_tool, tool_reply

    _, findings = run(git_repo, [
        PLAN + bash_reply(READ), tool_reply("count-lines", simple_tool("count-lines")),
        bash_reply("echo 'bogus_key: 1' >> \"$LIVE_SWE_SCAFFOLD\"/scaffold.yaml", "A new setting."),
        bash_reply(FIX), bash_reply(CHECK), SUBMIT,
    ])
    found = {f.kind: f for f in findings}
    assert found["unused_tool"].steps == (2,) and "count-lines" in found["unused_tool"].evidence
    assert found["reverted_scaffold_change"].steps == (3,) and "scaffold.yaml" in found["reverted_scaffold_change"].evidence


def test_a_used_tool_is_no_finding(git_repo):
    from test_evolution_support import simple_tool, tool_reply

    _, findings = run(git_repo, [
        PLAN + bash_reply(READ), tool_reply("count-lines", simple_tool("count-lines", "wc -l \"$@\"")),
        bash_reply("count-lines calc.py"), bash_reply(FIX), bash_reply(CHECK), SUBMIT,
    ])
    assert "unused_tool" not in kinds(findings)


def test_format_errors_are_steps_that_ran_nothing(git_repo):
    trajectory, findings = run(git_repo, [
        PLAN + bash_reply(READ), "I will fix it now.", bash_reply(FIX) + "\n\n" + bash_reply(CHECK),
        bash_reply(FIX), bash_reply(CHECK), SUBMIT,
    ])
    assert [s.id for s in trajectory.steps if s.format_error] == [2, 3]
    assert kinds(findings)["format_error"] == (2, 3)


def test_a_plan_left_without_a_new_plan(git_repo):
    _, findings = run(git_repo, [
        PLAN + bash_reply(READ), bash_reply("cat README.md", "Maybe the docs matter."),
        bash_reply("ls -la", "Look around."), bash_reply("echo '# notes' >> README.md", "Add a note."), SUBMIT,
    ])
    found = {f.kind: f for f in findings}
    assert found["plan_abandoned"].steps == (1, 2) and found["plan_abandoned"].metric == "plan_adherence"
    assert "2. Fix the operator in add()" in found["plan_abandoned"].evidence


def test_a_new_plan_with_its_reason_is_followed_and_one_without_is_noted(git_repo):
    replan = "PLAN: the operator is the only problem, so no reading is needed\n1. Fix add()\n2. Run a check\n\n"
    _, findings = run(git_repo, [PLAN + bash_reply("ls"), replan + bash_reply(FIX), bash_reply(CHECK), SUBMIT])
    assert not [f for f in findings if f.metric == "plan_adherence"]
    _, findings = run(git_repo, [PLAN + bash_reply("ls"), "PLAN:\n1. Fix add()\n2. Run a check\n\n"
                                 + bash_reply(FIX), bash_reply(CHECK), SUBMIT])
    assert kinds(findings)["unexplained_replan"] == (2,)


def test_acting_on_a_file_an_observation_said_does_not_exist(git_repo):
    _, findings = run(git_repo, [
        PLAN + bash_reply("cat ops.py"), bash_reply(READ),
        bash_reply("grep -n add ops.py", "ops.py holds the helper that add() uses."),
        bash_reply(FIX), bash_reply(CHECK), SUBMIT,
    ])
    found = {f.kind: f for f in findings}
    assert found["contradicts_observation"].steps == (3,)
    assert "step 1 showed that ops.py does not exist" in found["contradicts_observation"].evidence


def test_a_file_created_after_it_was_missing_is_no_contradiction(git_repo):
    _, findings = run(git_repo, [
        PLAN + bash_reply("cat ops.py"), bash_reply("echo 'X = 1' > ops.py", "Create ops.py."),
        bash_reply("cat ops.py", "ops.py now exists."), bash_reply(FIX), bash_reply(CHECK), SUBMIT,
    ])
    assert "contradicts_observation" not in kinds(findings)


def test_tests_said_to_pass_after_a_failing_run(git_repo):
    _, findings = run(git_repo, [
        PLAN + bash_reply(READ), bash_reply(CHECK), bash_reply(FIX, "Fixed; the tests pass now."),
        bash_reply(CHECK), SUBMIT,
    ])
    assert kinds(findings)["claim_contradicts_output"] == (3,)


def test_a_run_that_ends_without_submitting(git_repo):
    trajectory, findings = run(git_repo, [PLAN + bash_reply(READ), bash_reply(READ + " ")],
                               limits=KernelLimits(step_limit=2))
    assert trajectory.status == "limits_exceeded"
    assert kinds(findings)["not_submitted"] == (2,)
    assert grade(trajectory).metrics["goal_fulfillment"].score == 0


def test_without_a_plan_plan_quality_is_zero_and_adherence_has_no_score(git_repo):
    trajectory, findings = run(git_repo, [bash_reply(READ), bash_reply(FIX), bash_reply(CHECK), SUBMIT])
    assert kinds(findings) == {"no_plan": (1,)}
    result = grade(trajectory)
    assert result.metrics["plan_quality"].score == 0
    assert result.metrics["plan_adherence"].score is None and result.metrics["plan_adherence"].source == "n/a"
    assert result.mean == pytest.approx(0.75)


def test_a_reply_with_a_plan_and_one_bash_block_is_one_action_and_no_plan_is_no_format_error(git_repo):
    model = ScriptedModel([Reply(PLAN + bash_reply(READ)), Reply(bash_reply(FIX)), Reply(SUBMIT)])
    result = start_run(RunRequest(task="Fix add().", model="scripted:test", repo=git_repo),
                       RunHooks(model_factory=lambda name: model))
    events = SessionStore.default().open(result.session_id).events()[0]
    assert result.status == "submitted" and result.steps == 3
    assert not [e for e in events if e.get("t") == "format_error"]
    assert [e["command"] for e in events if e.get("t") == "step"][:2] == [READ, FIX]
    # the seed scaffold asks for the plan in the system message, in a section of its own
    assert "## Your plan" in model.seen[0][0]["content"] and "`PLAN: <why>`" in model.seen[0][0]["content"]


# -- the pure parts: plans and commands -------------------------------------------------------------------

@pytest.mark.parametrize("text, items, reason", [
    ("PLAN:\n1. Read it\n2. Fix it\n\nTHOUGHT: go\n```bash\nls\n```", ("Read it", "Fix it"), ""),
    ("THOUGHT: first a plan.\n**PLAN**:\n- read\n- fix\n```bash\nls\n```", ("read", "fix"), ""),
    ("PLAN: the bug is in the parser\n1) read parser.py\n2) fix it\n```bash\nls\n```",
     ("read parser.py", "fix it"), "the bug is in the parser"),
    ("New plan (the tests live elsewhere):\n1. find them\n```bash\nls\n```", ("find them",), "the tests live elsewhere"),
])
def test_plans_are_read_from_the_reply(text, items, reason):
    plan = extract_plan(text, 4)
    assert plan is not None and plan.step == 4 and plan.items == items and plan.reason == reason


@pytest.mark.parametrize("text", [
    "THOUGHT: no plan here\n```bash\nls\n```",
    "```bash\ncat <<'EOF'\nPLAN:\n1. not a plan, a file\nEOF\n```",
    "My plan is simple: fix it.\n```bash\nls\n```",
])
def test_text_without_a_plan_line_before_the_command_has_no_plan(text):
    assert extract_plan(text, 1) is None


@pytest.mark.parametrize("command, field, value", [
    ("cat a.py b.py", "whole_reads", {"a.py", "b.py"}),
    ("sed -n '1,20p' ./pkg/m.py", "reads", {"pkg/m.py"}),
    ("sed -i 's/x/y/' pkg/m.py && python -m pytest -q tests/", "edits", {"pkg/m.py"}),
    ("sed -i 's/x/y/' pkg/m.py && python -m pytest -q tests/", "tests", True),
    ("grep -rn 'def add' src | head -5", "searches", ["def add"]),
    ("grep -n add calc.py", "greps", {"calc.py"}),
    ("cat > repro.py <<'EOF'\nopen('x.py', 'w')\nEOF\npython3 repro.py", "creates", {"repro.py"}),
    ("python3 - <<'EOF'\nopen('pkg/out.py', 'w').write('x')\nEOF", "creates", {"pkg/out.py"}),
    ("echo hi > /tmp/x.txt && cat /tmp/x.txt", "creates", set()),
    ("cat > \"$LIVE_SWE_SCAFFOLD\"/tools/t <<'E'\n#!/bin/sh\nE", "scaffold", True),
    ("timeout 60 pytest -x tests/test_a.py", "targets", {"tests/test_a.py"}),
    ("python3 -c \"import m; assert m.f() == 1\"", "tests", True),
    ("python3 -c \"import m; print(m.f())\"", "tests", False),
    ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "submits", True),
    ("ls -la src\nfind . -name '*.py'", "searches", ["ls src", "*.py"]),
    ("cat 'unbalanced", "whole_reads", {"unbalanced"}),
])
def test_what_a_command_does(command, field, value):
    assert getattr(command_facts(command), field) == value
