"""The step loop with scripted models on real git repositories and real subprocesses."""

from __future__ import annotations

import json

import pytest
from conftest import SUBMIT, bash_reply, run_git

from live_swe.config import KernelLimits
from live_swe.models.base import Reply, ToolCall
from live_swe.models.scripted import ScriptedModel
from live_swe.runner import RunHooks, RunRequest, start_run
from live_swe.session.store import SessionStore


def run_script(repo, replies, *, limits=None, approver=None, scaffold_ref="seed"):
    model = ScriptedModel([r if isinstance(r, Reply) else Reply(r) for r in replies])
    request = RunRequest(task="Make add() add.", model="scripted:test", repo=repo, limits=limits or KernelLimits(),
                         scaffold_ref=scaffold_ref)
    result = start_run(request, RunHooks(model_factory=lambda name: model, approver=approver))
    return result, model


def events_of(session_id):
    session = SessionStore.default().open(session_id)
    return session.events()[0]


def test_text_format_fix_and_submit_produces_patch_with_new_files(git_repo):
    result, model = run_script(git_repo, [
        bash_reply("sed -i 's/a - b/a + b/' calc.py"),
        bash_reply("mkdir -p pkg && echo 'x = 1' > pkg/new_module.py"),
        SUBMIT,
    ])
    assert result.status == "submitted"
    assert result.steps == 3
    assert "-    return a - b" in result.patch and "+    return a + b" in result.patch
    assert "pkg/new_module.py" in result.patch and "+x = 1" in result.patch
    # the user's index is untouched: nothing staged by the patch computation
    assert run_git(git_repo, "diff", "--cached", "--name-only") == ""
    # the model saw the observation of each command, with its return code
    assert "<returncode>0</returncode>" in model.seen[1][-1]["content"]


def test_patch_excludes_live_swe_folder(git_repo):
    result, _ = run_script(git_repo, [
        bash_reply("mkdir -p .live-swe/tools && echo t > .live-swe/tools/x && echo y >> README.md"),
        bash_reply("python3 -m py_compile calc.py && mkdir -p pkg/__pycache__ && echo z > pkg/__pycache__/m.txt"),
        SUBMIT,
    ])
    assert "README.md" in result.patch
    assert ".live-swe" not in result.patch
    assert (git_repo / "__pycache__").is_dir()  # the interpreter cache exists, but is not a change
    assert "__pycache__" not in result.patch and ".pyc" not in result.patch


def test_the_patch_is_the_working_tree_whatever_the_index_holds(git_repo, tmp_path):
    from live_swe.agent.patch import base_commit, repository_patch
    from live_swe.environments.local import LocalEnvironment

    env = LocalEnvironment(git_repo)
    base = base_commit(env)
    # staged, then undone in the working tree: not a change; and a new untracked file is one
    (git_repo / "README.md").write_text("staged only\n")
    run_git(git_repo, "add", "README.md")
    run_git(git_repo, "restore", "--worktree", "--source=HEAD", "README.md")
    (git_repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (git_repo / "added.py").write_text("y = 2\n")
    expected = repository_patch(env, base)
    assert "README.md" not in expected and "+    return a + b" in expected and "+y = 2" in expected
    assert run_git(git_repo, "diff", "--cached", "--name-only").split() == ["README.md"]  # the user's, untouched
    # a kept scratch index (a container's) gives the same patch, and a damaged one is rebuilt
    kept = git_repo / ".git" / "scratch.index"  # where the sandboxed command can write it, outside the tree
    assert repository_patch(env, base, index_file=str(kept)) == expected and kept.exists()
    (git_repo / "added.py").unlink()
    assert "added.py" not in repository_patch(env, base, index_file=str(kept))
    (git_repo / "added.py").write_text("y = 2\n")
    kept.write_bytes(b"DIRC garbage")
    assert repository_patch(env, base, index_file=str(kept)) == expected


def test_format_errors_are_fed_back_counted_and_reset(git_repo):
    result, model = run_script(git_repo, [
        "I think we should look around.",  # no block
        "```bash\nls\n```\n```bash\npwd\n```",  # two blocks
        bash_reply("ls"),
        SUBMIT,
    ])
    assert result.status == "submitted"
    feedback = model.seen[1][-1]["content"]
    assert "no ```bash block" in feedback
    assert "2 ```bash blocks" in model.seen[2][-1]["content"]
    errors = [e for e in events_of(result.session_id) if e["t"] == "format_error"]
    assert [e["consecutive"] for e in errors] == [1, 2]


def test_consecutive_format_errors_end_the_run(git_repo):
    result, _ = run_script(git_repo, ["no action"] * 5, limits=KernelLimits(max_format_errors=3))
    assert result.status == "format_error"
    assert result.steps == 3
    assert "3 consecutive" in result.message


def test_tool_call_format(git_repo, tmp_path):
    scaffold = tmp_path / "scaffold"
    from live_swe.scaffolding.refs import materialize

    materialize("seed", scaffold)
    policy = scaffold / "scaffold.yaml"
    policy.write_text(policy.read_text().replace("action_format: text", "action_format: tool_call"))

    def call(command, call_id):
        return Reply("Running it.", (ToolCall(call_id, "bash", json.dumps({"command": command})),))

    result, model = run_script(git_repo, [
        call("sed -i 's/a - b/a + b/' calc.py", "c1"),
        Reply("Two calls.", (ToolCall("c2", "bash", '{"command": "ls"}'), ToolCall("c3", "bash", '{"command": "ls"}'))),
        Reply("No calls at all."),
        call("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "c4"),
    ], scaffold_ref=f"path:{scaffold}")
    assert result.status == "submitted"
    assert "+    return a + b" in result.patch
    # each tool call is answered by a tool message with its id; the format errors were fed back
    second = model.seen[1]
    assert second[-1] == {"role": "tool", "tool_call_id": "c1", "content": second[-1]["content"]}
    assert [m["tool_call_id"] for m in model.seen[2][-2:]] == ["c2", "c3"]
    assert "2 function calls" in model.seen[2][-1]["content"]
    assert "no call of the `bash` function" in model.seen[3][-1]["content"]


def test_step_limit(git_repo):
    result, _ = run_script(git_repo, [bash_reply("ls")] * 10, limits=KernelLimits(step_limit=4))
    assert result.status == "limits_exceeded"
    assert result.steps == 4
    assert "step limit of 4" in result.message


def test_cost_limit(git_repo):
    costly = [Reply(bash_reply("ls"), cost=0.4) for _ in range(10)]
    result, _ = run_script(git_repo, costly, limits=KernelLimits(cost_limit=1.0))
    assert result.status == "limits_exceeded"
    assert result.steps == 3  # 0.4, 0.8, 1.2 -> stops before the 4th query
    assert result.cost == pytest.approx(1.2)
    # the reply that spent past the budget does not get its command run (the built-in contract)
    blocked = [e for e in events_of(result.session_id) if e.get("t") == "contract" and e.get("kind") == "blocked"]
    assert [(e["step"], e["rule"]) for e in blocked] == [(3, "within-budget")]


def test_wall_time_limit(git_repo):
    result, _ = run_script(git_repo, [bash_reply("sleep 0.6")] * 10, limits=KernelLimits(wall_time_limit=1.0))
    assert result.status == "limits_exceeded"
    assert "wall-time" in result.message
    assert result.steps in (2, 3)


def test_command_timeout_is_reported_and_the_run_goes_on(git_repo):
    result, model = run_script(git_repo, [bash_reply("sleep 30"), bash_reply("echo after"), SUBMIT],
                               limits=KernelLimits(command_timeout=1))
    assert result.status == "submitted"
    observation = model.seen[1][-1]["content"]
    assert "timed out after 1 seconds" in observation
    assert "after" in model.seen[2][-1]["content"]


def test_output_truncation_keeps_head_and_tail(git_repo):
    result, model = run_script(git_repo, [bash_reply("seq 1 20000"), SUBMIT])
    observation = model.seen[1][-1]["content"]
    assert "<output_head>\n1\n2\n" in observation
    assert "20000" in observation
    assert "characters elided" in observation
    assert len(observation) < 12000


def test_scripted_model_running_out_is_a_clear_error(git_repo):
    result, _ = run_script(git_repo, [bash_reply("ls")])
    assert result.status == "error"
    assert "ran out after 1 replies" in result.message


def test_rejected_command_is_not_run_and_the_comment_reaches_the_model(git_repo):
    from live_swe.agent.interfaces import Decision

    decisions = iter([Decision("reject", comment="do not touch calc.py"), Decision("edit", command="echo edited"),
                      Decision("approve")])
    result, model = run_script(git_repo, [bash_reply("rm calc.py"), bash_reply("echo original"), SUBMIT],
                               approver=lambda command: next(decisions))
    assert (git_repo / "calc.py").exists()
    assert "rejected" in model.seen[1][-1]["content"] and "do not touch calc.py" in model.seen[1][-1]["content"]
    assert "edited" in model.seen[2][-1]["content"]
    assert result.status == "submitted"


def test_session_log_is_append_only_and_complete(git_repo):
    result, model = run_script(git_repo, [bash_reply("ls"), SUBMIT])
    events = events_of(result.session_id)
    kinds = [e["t"] for e in events]
    assert kinds[-1] == "end" and "message" in kinds
    messages = [e["message"] for e in events if e["t"] == "message"]
    # the trajectory is exactly what the model saw, plus its last reply
    assert messages[:-1] == model.seen[-1]
    meta = SessionStore.default().open(result.session_id).meta
    assert (meta.status, meta.steps) == ("submitted", 2)
