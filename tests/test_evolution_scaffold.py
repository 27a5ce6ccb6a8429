"""Scaffold rewrites mid-task: accepted edits take effect at the next step; refused ones are undone
exactly and explained; budgets can only be tightened."""

from __future__ import annotations

from conftest import SUBMIT, bash_reply
from test_evolution_support import (
    ON_EACH_ENVIRONMENT,
    environment,
    events_of,
    observation,
    run_script,
    session_dir,
    simple_tool,
    system_prompt,
    tool_reply,
    write_file_command,
)

from live_swe.config import KernelLimits
from live_swe.evolution.history import ScaffoldHistory
from live_swe.resources import resource_path

S = '"$LIVE_SWE_SCAFFOLD"'


def _history(session_id: str) -> ScaffoldHistory:
    directory = session_dir(session_id)
    return ScaffoldHistory(directory / "scaffold.git", directory / "scaffold")


def _assert_tree_is_head(session_id: str) -> None:
    """The work tree holds exactly the last commit: same files, bytes and exec bits, nothing else."""
    history = _history(session_id)
    root = history.work_tree
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.is_symlink())
    assert files == sorted(history.files_at("HEAD"))
    for rel in files:
        assert (root / rel).read_bytes() == history.file_at("HEAD", rel), rel
        assert (root / rel).stat().st_mode & 0o777 == history.mode_at("HEAD", rel), rel


@ON_EACH_ENVIRONMENT
def test_template_edit_changes_the_next_observation_and_a_broken_one_is_undone_exactly(git_repo, env_name, request):
    env, image = environment(request, env_name)
    broken = (f"printf '{{{{ outptu.text }}}}\\n' > {S}/prompts/observation.j2 && rm {S}/prompts/reflection.j2 "
              f"&& echo 'new {{{{ step }}}}' > {S}/prompts/extra.j2 && chmod 600 {S}/prompts/system.j2")
    result, model = run_script(git_repo, [
        bash_reply(f"sed -i '1i [obs step {{{{ step }}}}]' {S}/prompts/observation.j2", "Mark each observation with its step."),
        bash_reply(broken, "Simplify the observation."),
        bash_reply(f"cat {S}/prompts/observation.j2 | head -1"),
        SUBMIT,
    ], env=env, image=image)
    assert result.status == "submitted", result.message
    # step 1's own observation used the old template; from step 2 on, the new one
    assert "[obs step" not in observation(model, 1)
    assert observation(model, 1).rstrip().endswith("it takes effect from your next step.")
    assert observation(model, 2).startswith("[obs step 2]")
    assert observation(model, 3).startswith("[obs step 3]") and "[obs step {{ step }}]" in observation(model, 3)

    # the broken rewrite: refused, the model told what and why, in the next observation
    text = observation(model, 2)
    assert "change to prompts/extra.j2, prompts/observation.j2, prompts/reflection.j2, prompts/system.j2 refused" in text
    assert "'outptu' is undefined" in text and "restored to the last accepted version" in text
    commit, reject = events_of(result.session_id, "scaffold")
    assert commit["kind"] == "commit" and commit["files"] == ["prompts/observation.j2"] and commit["step"] == 1
    assert commit["reason"] == "Mark each observation with its step."
    assert reject["kind"] == "reject" and reject["step"] == 2 and reject["reason"] == "Simplify the observation."
    assert reject["files"] == ["prompts/extra.j2", "prompts/observation.j2", "prompts/reflection.j2", "prompts/system.j2"]
    # restored exactly: the deleted file is back, the added one gone, the mode restored
    _assert_tree_is_head(result.session_id)
    prompts = session_dir(result.session_id) / "scaffold" / "prompts"
    assert (prompts / "reflection.j2").read_bytes() == resource_path("prompts", "reflection.j2").read_bytes()
    assert not (prompts / "extra.j2").exists()
    assert (prompts / "system.j2").stat().st_mode & 0o777 == 0o644
    # one commit for the start, one for the accepted edit; the refusal left no trace in git
    assert [r.subject for r in _history(result.session_id).revisions()] == [
        "step 1: prompts/observation.j2", "starting scaffold (seed)"]


@ON_EACH_ENVIRONMENT
def test_budgets_can_be_tightened_never_raised(git_repo, env_name, request):
    env, image = environment(request, env_name)
    yaml = f"{S}/scaffold.yaml"
    result, model = run_script(git_repo, [
        bash_reply(f"sed -i 's/step_limit: null/step_limit: 1000/' {yaml}", "More steps would help."),
        bash_reply(f"sed -i 's/step_limit: null/step_limit: 4/' {yaml}", "Keep this short."),
        bash_reply(f"sed -i 's/step_limit: 4/step_limit: 40/' {yaml}", "Actually I need more."),
        bash_reply("echo still working"),
        bash_reply("echo never reached"),
        SUBMIT,
    ], env=env, image=image, limits=KernelLimits(step_limit=250))
    # the tightened limit took effect: the run stopped after step 4
    assert result.status == "limits_exceeded" and result.steps == 4, result.message
    assert "step limit of 4 reached" in result.message
    kinds = [(e["step"], e["kind"]) for e in events_of(result.session_id, "scaffold")]
    assert kinds == [(1, "reject"), (2, "commit"), (3, "reject")]
    assert "step_limit: 1000 is above the kernel's 250" in observation(model, 1)
    assert "budgets may only be tightened, and this raises step_limit: 4 -> 40" in observation(model, 3)
    assert "step_limit: 4\n" in (session_dir(result.session_id) / "scaffold" / "scaffold.yaml").read_text()


HOOKS_IMPORTING = '''import requests


def after_step(step, command, returncode):
    return ""
'''

HOOKS_BAD_RESULT = '''def transform_observation(observation, step):
    return len(observation)
'''


def test_schema_imports_compile_smoke_strays_and_tools_dir_are_gated(git_repo):
    yaml = f"{S}/scaffold.yaml"
    result, model = run_script(git_repo, [
        bash_reply(f"echo 'bogus_key: 1' >> {yaml}"),
        bash_reply(write_file_command("hooks.py", HOOKS_IMPORTING)),
        bash_reply(write_file_command("hooks.py", "def after_step(step, command, returncode:\n    return ''\n")),
        bash_reply(write_file_command("hooks.py", HOOKS_BAD_RESULT)),
        bash_reply(f"echo notes > {S}/notes.txt && mkdir -p {S}/tools/sub && echo x > {S}/tools/sub/y"),
        bash_reply(f"sed -i 's/^tools_dir: tools/tools_dir: mytools/' {yaml}"),
        bash_reply(f"sed -i 's/^  every: 1/  every: 0/' {yaml}"),
        SUBMIT,
    ])
    assert result.status == "submitted", result.message
    assert "bogus_key: Extra inputs are not permitted" in observation(model, 1)
    assert "imports 'requests', which is not in the standard library" in observation(model, 2)
    assert "hooks.py (line 1): does not compile" in observation(model, 3)
    assert "failed its smoke run in the hook worker: transform_observation returned int" in observation(model, 4)
    assert "notes.txt: not part of a scaffold" in observation(model, 5)
    assert "tools/sub/y: tools/ holds tool files only" in observation(model, 5)
    assert "tools_dir cannot change during a session" in observation(model, 6)
    assert "reflection.every: Input should be greater than or equal to 1" in observation(model, 7)
    assert [e["kind"] for e in events_of(result.session_id, "scaffold")] == ["reject"] * 7
    _assert_tree_is_head(result.session_id)
    scaffold = session_dir(result.session_id) / "scaffold"
    assert (scaffold / "hooks.py").read_bytes() == resource_path("scaffold", "hooks.py").read_bytes()
    assert (scaffold / "scaffold.yaml").read_bytes() == resource_path("scaffold", "scaffold.yaml").read_bytes()


def test_one_step_with_a_good_tool_and_a_broken_template_keeps_the_tool_only(git_repo):
    command = (write_file_command("tools/hello", simple_tool("hello"), executable=True)
               + f"\necho '{{{{ nope }}}}' >> {S}/prompts/system.j2")
    result, model = run_script(git_repo, [bash_reply(command, "Two improvements."), bash_reply("hello"), SUBMIT])
    assert result.status == "submitted"
    scaffold = [(e["kind"], e["files"]) for e in events_of(result.session_id, "scaffold")]
    assert scaffold == [("reject", ["prompts/system.j2"]), ("commit", ["tools/hello"])]
    assert "tool `hello` registered: A tool (usage: `hello ARGS`)" in observation(model, 1)
    assert "nope" not in system_prompt(model, 1)
    assert "usage: hello" in observation(model, 2)
    _assert_tree_is_head(result.session_id)


def test_an_edited_system_prompt_is_seen_from_the_next_query(git_repo):
    result, model = run_script(git_repo, [
        bash_reply(f"echo 'Prefer small, verified changes.' >> {S}/prompts/system.j2", "Remind myself."),
        SUBMIT,
    ])
    assert "Prefer small, verified changes." not in system_prompt(model, 0)
    assert system_prompt(model, 1).endswith("Prefer small, verified changes.")
    assert [e["step"] for e in events_of(result.session_id, "system")] == [2]



def test_changes_made_in_the_submission_step_are_still_checked(git_repo):
    command = (f"echo junk > {S}/junk.txt && echo 'Be brief.' >> {S}/prompts/system.j2 "
               "&& echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
    result, _ = run_script(git_repo, [bash_reply(command, "Done, and a last improvement.")])
    assert result.status == "submitted"
    changes = [(e["kind"], e["step"], e["files"]) for e in events_of(result.session_id, "scaffold")]
    assert changes == [("reject", 1, ["junk.txt"]), ("commit", 1, ["prompts/system.j2"])]
    assert not (session_dir(result.session_id) / "scaffold" / "junk.txt").exists()
    _assert_tree_is_head(result.session_id)
    # the scaffold events come before the end of the run
    kinds = [e["t"] for e in events_of(result.session_id)]
    assert kinds.index("scaffold") < kinds.index("end")


def test_deleting_the_whole_scaffold_only_drops_tools(git_repo):
    result, model = run_script(git_repo, [
        tool_reply("hello", simple_tool("hello")),
        bash_reply(f"rm -rf {S}/* && ls -A {S}", "Start over."),
        bash_reply("echo still here"),
        SUBMIT,
    ])
    assert result.status == "submitted", result.message
    # deleting a tool is allowed (it is no longer registered); the policy, prompts and hooks come back
    assert "tool `hello` registered" in observation(model, 1) and "`hello`" not in system_prompt(model, 2)
    assert "refused" in observation(model, 2) and "scaffold.yaml" in observation(model, 2)
    scaffold = session_dir(result.session_id) / "scaffold"
    assert (scaffold / "scaffold.yaml").read_bytes() == resource_path("scaffold", "scaffold.yaml").read_bytes()
    assert (scaffold / "tools").is_dir() and not (scaffold / "tools" / "hello").exists()
    _assert_tree_is_head(result.session_id)


def test_a_starting_scaffold_that_fails_the_gates_is_a_clear_error(git_repo, tmp_path):
    import shutil
    import subprocess
    import sys

    from conftest import write_script

    source = tmp_path / "my-scaffold"
    shutil.copytree(resource_path("scaffold"), source)
    shutil.copytree(resource_path("prompts"), source / "prompts")
    (source / "prompts" / "system.j2").write_text("Hello {{ no_such_variable }}")
    script = write_script(tmp_path / "s.yaml", [SUBMIT])
    out = subprocess.run([sys.executable, "-m", "live_swe.cli.main", "run", "-t", "x", "--repo", str(git_repo),
                          "-m", f"scripted:{script}", "--yolo", "--scaffold", f"path:{source}"],
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert out.returncode == 2, out.stderr
    assert f"the starting scaffold (path:{source}) is not usable: prompts/system.j2" in out.stderr
    assert "'no_such_variable' is undefined" in out.stderr and "Traceback" not in out.stderr
