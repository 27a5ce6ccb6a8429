"""The evolved scaffold outlives the process: kill -9 after a commit then resume keeps it (and drops
what the killed step left unchecked); `--scaffold session:ID` starts from it; sessions log/diff
show it; a promoted tool is registered in the next session."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from conftest import SUBMIT, bash_reply, write_script
from test_evolution_support import (
    FIND_DEF,
    ON_EACH_ENVIRONMENT,
    environment,
    events_of,
    observation,
    run_script,
    session_dir,
    simple_tool,
    system_prompt,
    tool_reply,
)

from live_swe.evolution.history import ScaffoldHistory

CLI = [sys.executable, "-m", "live_swe.cli.main"]


def cli(*args, timeout=180):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def _wait_for(predicate, what: str, timeout: float = 90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def _events(log):
    events = []
    for line in log.read_text().splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    return events


def _start_run(git_repo, script, env: str, image: str | None) -> subprocess.Popen:
    """`live-swe run` of ``script`` in its own process, to be killed mid-run."""
    args = [*CLI, "run", "-t", "fix add", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo"]
    if env == "docker":
        args += ["--env", "docker", "--image", image]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _killed_session(log) -> str:
    """The id of the session whose run was killed; it must not have ended before the kill."""
    assert not any(e.get("t") == "end" for e in _events(log)), "the run ended before the kill"
    return log.parent.name


def _session_log(live_swe_home):
    return _wait_for(lambda: next(iter((live_swe_home / "sessions").glob("*/events.jsonl")), None), "a session")


@ON_EACH_ENVIRONMENT
def test_kill_9_right_after_a_commit_then_resume_keeps_it(git_repo, tmp_path, live_swe_home, env_name, request):
    env, image = environment(request, env_name)
    script = write_script(tmp_path / "run.yaml", [
        tool_reply("find-def", FIND_DEF, "Find definitions quickly."),
        # the next step leaves an unchecked change, then is killed while it runs
        bash_reply('echo junk > "$LIVE_SWE_SCAFFOLD/junk.txt" && echo "{{ oops" >> "$LIVE_SWE_SCAFFOLD/prompts/system.j2" '
                   "&& sleep 30"),
        SUBMIT,
    ])
    process = _start_run(git_repo, script, env, image)
    try:
        log = _session_log(live_swe_home)
        commit = _wait_for(lambda: next((e for e in _events(log) if e.get("t") == "scaffold"), None), "the commit")
        scaffold = log.parent / "scaffold"
        _wait_for(lambda: (scaffold / "junk.txt").exists(), "the second step to run")
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    assert commit["kind"] == "commit" and commit["files"] == ["tools/find-def"]
    session_id = log.parent.name
    assert (scaffold / "junk.txt").exists() and "{{ oops" in (scaffold / "prompts" / "system.j2").read_text()

    # resume: a scripted model continues after the replies the log already answers (here: the first)
    write_script(script, [tool_reply("find-def", FIND_DEF), bash_reply("find-def add"),
                          bash_reply("sed -i 's/a - b/a + b/' calc.py"), SUBMIT])
    resume = ["resume", session_id, "--yolo", "--json"]
    out = cli(*resume)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "submitted" and "+    return a + b" in result["patch"]
    assert "find-def" not in result["patch"]

    # the commit survived; the unchecked change of the killed step is gone, and that was logged
    assert (scaffold / "tools" / "find-def").read_text() == FIND_DEF
    assert not (scaffold / "junk.txt").exists() and "{{ oops" not in (scaffold / "prompts" / "system.j2").read_text()
    events = events_of(session_id)
    [discarded] = [e for e in events if e.get("t") == "scaffold" and e["kind"] == "rollback"]
    assert discarded["files"] == ["junk.txt", "prompts/system.j2"] and discarded["reason"] == "resume"
    # the resumed run's system prompt lists the tool, and the tool ran
    resumed = events[next(i for i, e in enumerate(events) if e.get("t") == "resume"):]
    assert any(e.get("t") == "system" and "`find-def`" in e["message"]["content"] for e in resumed)
    assert any(e.get("t") == "message" and "calc.py:1: def add(a, b):" in e["message"]["content"] for e in resumed)
    shown = json.loads(cli("sessions", "show", session_id, "--json").stdout)
    assert shown["tools"] == ["find-def"]
    assert [(c["step"], c["kind"], c["accepted"]) for c in shown["scaffold_changes"]] == [
        (1, "commit", True), (1, "rollback", False)]


@ON_EACH_ENVIRONMENT
def test_kill_9_the_moment_the_commit_is_logged_then_resume_keeps_it(git_repo, tmp_path, live_swe_home, env_name,
                                                                     request):
    env, image = environment(request, env_name)
    replies = [tool_reply("find-def", FIND_DEF, "Find definitions quickly."), bash_reply("find-def add"),
               bash_reply("sed -i 's/a - b/a + b/' calc.py"), SUBMIT]
    script = write_script(tmp_path / "run.yaml", replies)
    process = _start_run(git_repo, script, env, image)
    try:
        log = _session_log(live_swe_home)
        _wait_for(lambda: '"t": "scaffold"' in log.read_text(), "the commit", timeout=120)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    session_id = _killed_session(log)

    out = cli("resume", session_id, "--yolo", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "submitted" and "+    return a + b" in result["patch"]
    scaffold = log.parent / "scaffold"
    assert (scaffold / "tools" / "find-def").read_text() == FIND_DEF
    history = ScaffoldHistory(log.parent / "scaffold.git", scaffold)
    assert [r.subject for r in history.revisions()] == ["step 1: tools/find-def", "starting scaffold (seed)"]
    events = events_of(session_id)
    resumed = events[next(i for i, e in enumerate(events) if e.get("t") == "resume"):]
    assert any(e.get("t") == "message" and "calc.py:1: def add(a, b):" in e["message"]["content"] for e in resumed)
    assert json.loads(cli("sessions", "show", session_id, "--json").stdout)["tools"] == ["find-def"]


def test_sessions_log_and_diff(git_repo):
    result, _ = run_script(git_repo, [
        tool_reply("find-def", FIND_DEF, "Find definitions quickly."),
        bash_reply("printf '{{ nope }}' > \"$LIVE_SWE_SCAFFOLD/prompts/observation.j2\"", "Shorter observations."),
        SUBMIT,
    ])
    out = cli("sessions", "log", result.session_id)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 2
    rev = events_of(result.session_id, "scaffold")[0]["rev"]
    assert lines[0].split()[:5] == ["step", "1", "accepted", rev[:8], "tools/find-def"]
    assert lines[0].endswith("— Find definitions quickly.")
    assert lines[1].split()[:4] == ["step", "2", "refused", "prompts/observation.j2"]
    assert "Shorter observations." in lines[1] and "'nope' is undefined" in lines[1]
    as_json = json.loads(cli("sessions", "log", result.session_id, "--json").stdout)
    assert [c["accepted"] for c in as_json] == [True, False]

    everything = cli("sessions", "diff", result.session_id)
    assert everything.returncode == 0
    assert "+++ b/tools/find-def" in everything.stdout and "+# live-swe-tool: find-def" in everything.stdout
    assert "nope" not in everything.stdout  # refused changes never reach the history
    one = cli("sessions", "diff", result.session_id, rev[:10])
    assert one.stdout == everything.stdout
    bad = cli("sessions", "diff", result.session_id, "not-a-rev")
    assert bad.returncode == 2 and "no scaffold revision 'not-a-rev'" in bad.stderr


def test_a_new_session_starts_from_another_sessions_accepted_scaffold(git_repo, tmp_path):
    first, _ = run_script(git_repo, [
        tool_reply("find-def", FIND_DEF),
        bash_reply("sed -i '1i [evolved]' \"$LIVE_SWE_SCAFFOLD/prompts/observation.j2\""),
        SUBMIT,
    ])
    # leftovers in the first session's work tree (as a kill would leave them) are not carried over
    (session_dir(first.session_id) / "scaffold" / "junk.txt").write_text("junk")
    result, model = run_script(git_repo, [bash_reply("find-def add"), SUBMIT], scaffold_ref=f"session:{first.session_id}")
    assert result.status == "submitted"
    assert "`find-def`" in system_prompt(model, 0)
    assert observation(model, 1).startswith("[evolved]") and "calc.py:1: def add(a, b):" in observation(model, 1)
    assert not (session_dir(result.session_id) / "scaffold" / "junk.txt").exists()
    [registered] = events_of(result.session_id, "tool")
    assert registered["kind"] == "registered" and registered["step"] == 0 and registered["name"] == "find-def"
    history = ScaffoldHistory(session_dir(result.session_id) / "scaffold.git", session_dir(result.session_id) / "scaffold")
    assert [r.subject for r in history.revisions()] == [f"starting scaffold (session:{first.session_id})"]


@ON_EACH_ENVIRONMENT
def test_a_promoted_tool_is_registered_in_the_next_session(git_repo, live_swe_home, env_name, request):
    env, image = environment(request, env_name)
    first, _ = run_script(git_repo, [
        tool_reply("find-def", FIND_DEF),
        tool_reply("broken", simple_tool("broken", "if then")),
        SUBMIT,
    ], env=env, image=image)
    assert cli("tools", "list").stdout.startswith("no tools in the library")
    out = cli("tools", "promote", first.session_id, "find-def")
    assert out.returncode == 0, out.stderr
    promoted = live_swe_home / "tools" / "find-def"
    assert promoted.read_text() == FIND_DEF and promoted.stat().st_mode & 0o111
    listed = json.loads(cli("tools", "list", "--json").stdout)
    assert [(t["name"], t["usage"]) for t in listed] == [("find-def", "find-def NAME")]

    # refused: a tool the session never registered, a bad name, an unknown session
    refused = cli("tools", "promote", first.session_id, "broken")
    assert refused.returncode == 2 and "'broken' is not a registered tool" in refused.stderr
    assert "path separator" in cli("tools", "promote", first.session_id, "../x").stderr
    assert "no session 'nope'" in cli("tools", "promote", "nope", "find-def").stderr

    result, model = run_script(git_repo, [bash_reply("find-def add"), SUBMIT], env=env, image=image)
    assert result.status == "submitted", result.message
    assert "`find-def`: Print where a Python function or class is defined" in system_prompt(model, 0)
    assert "calc.py:1: def add(a, b):" in observation(model, 1)
    [registered] = events_of(result.session_id, "tool")
    assert (registered["kind"], registered["step"], registered["name"]) == ("registered", 0, "find-def")
    assert json.loads(cli("sessions", "show", result.session_id, "--json").stdout)["tools"] == ["find-def"]


def test_a_library_tool_that_fails_its_gates_is_not_registered(git_repo, live_swe_home):
    library = live_swe_home / "tools"
    library.mkdir()
    (library / "nohelp").write_text(simple_tool("nohelp", "exit 1"))
    (library / "nohelp").chmod(0o755)
    result, model = run_script(git_repo, [SUBMIT])
    assert result.status == "submitted"
    [refused] = events_of(result.session_id, "tool")
    assert refused["kind"] == "refused" and refused["step"] == 0 and "exited with status 1" in refused["why"]
    assert "nohelp" not in system_prompt(model, 0)
    assert not (session_dir(result.session_id) / "scaffold" / "tools" / "nohelp").exists()


def test_resume_rebuilds_a_lost_work_tree_from_the_history(git_repo):
    import shutil

    from live_swe.models.base import Reply
    from live_swe.models.scripted import ScriptedModel
    from live_swe.runner import RunHooks, resume_run

    first, _ = run_script(git_repo, [tool_reply("find-def", FIND_DEF), bash_reply("echo more")])  # script runs out
    assert first.status == "error"
    scaffold = session_dir(first.session_id) / "scaffold"
    shutil.rmtree(scaffold)
    replies = [tool_reply("find-def", FIND_DEF), bash_reply("echo more"), bash_reply("find-def add"), SUBMIT]
    model = ScriptedModel([Reply(r) for r in replies])
    result = resume_run(first.session_id, RunHooks(model_factory=lambda name: model))
    assert result.status == "submitted", result.message
    assert (scaffold / "tools" / "find-def").read_text() == FIND_DEF
    assert (scaffold / "tools" / "find-def").stat().st_mode & 0o777 == 0o755
    assert "`find-def`" in model.seen[0][0]["content"]
    assert "calc.py:1: def add(a, b):" in model.seen[1][-1]["content"]


def test_a_commit_whose_event_was_lost_is_logged_on_resume(git_repo):
    from live_swe.models.base import Reply
    from live_swe.models.scripted import ScriptedModel
    from live_swe.runner import RunHooks, resume_run

    first, _ = run_script(git_repo, [tool_reply("find-def", FIND_DEF, "Find definitions quickly.")])  # runs out
    log = session_dir(first.session_id) / "events.jsonl"
    # as if killed between the git commit and the append of its event
    lines = [line for line in log.read_text().splitlines() if '"t": "scaffold"' not in line]
    log.write_text("\n".join(lines) + "\n")
    model = ScriptedModel([Reply(r) for r in [tool_reply("find-def", FIND_DEF), SUBMIT]])
    assert resume_run(first.session_id, RunHooks(model_factory=lambda name: model)).status == "submitted"
    [recovered] = events_of(first.session_id, "scaffold")
    assert recovered["kind"] == "commit" and recovered["recovered"] is True and recovered["step"] == 1
    assert recovered["files"] == ["tools/find-def"] and recovered["reason"] == "Find definitions quickly."


@ON_EACH_ENVIRONMENT
def test_kill_9_mid_command_then_resume_keeps_the_repository_changes_of_the_finished_steps(
        git_repo, tmp_path, live_swe_home, env_name, request):
    """A container dies with its process: what the finished steps changed must still reach the resumed run."""
    env, image = environment(request, env_name)
    done = [bash_reply("sed -i 's/a - b/a + b/' calc.py"), bash_reply("echo kept > notes.txt")]
    script = write_script(tmp_path / "run.yaml", [*done, bash_reply("sleep 60"), SUBMIT])
    process = _start_run(git_repo, script, env, image)
    try:
        log = _session_log(live_swe_home)
        _wait_for(lambda: any(e.get("t") == "step" and e.get("step") == 2 for e in _events(log)), "two steps",
                  timeout=120)
        _wait_for(lambda: any(e.get("t") == "message" and "sleep 60" in str(e["message"].get("content"))
                              for e in _events(log)), "the third command")
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    session_id = _killed_session(log)

    write_script(script, [*done, bash_reply("cat calc.py notes.txt"), SUBMIT])
    out = cli("resume", session_id, "--yolo", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "submitted"
    assert "+    return a + b" in result["patch"] and "+kept" in result["patch"]
    shown = [e for e in events_of(session_id) if e.get("t") == "message" and "return a + b" in
             str(e["message"].get("content")) and "kept" in str(e["message"].get("content"))]
    assert shown, "the resumed run did not see the changes of the steps before the kill"
