"""Faults on this machine: the person's own changes, kills and signals, two processes, damaged
session files, a full disk. Real git, real subprocesses, real signals; only the model is scripted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from attack_support import CLI
from conftest import SUBMIT, bash_reply, make_git_repo, run_git, write_script

from live_swe.session.store import SessionStore

FIX = bash_reply("sed -i 's/a - b/a + b/' calc.py", "The sign is wrong.")


def live_swe(*args: str, cwd=None, timeout: float = 180, **popen) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          stdin=subprocess.DEVNULL, **popen)


def _dirty(repo):
    """The person's own work in progress: staged, unstaged (in the file the agent fixes) and untracked."""
    (repo / "README.md").write_text("# calc\nstaged notes\n")
    run_git(repo, "add", "README.md")
    (repo / "calc.py").write_text("# my own comment\ndef add(a, b):\n    return a - b\n")
    (repo / "scratch.txt").write_text("my own file\n")


def test_a_dirty_tree_is_refused_and_allow_dirty_starts_from_it_with_only_the_agents_patch(tmp_path):
    repo = make_git_repo(tmp_path / "repo", {"calc.py": "def add(a, b):\n    return a - b\n", "README.md": "# calc\n"})
    _dirty(repo)
    status_before = run_git(repo, "status", "--porcelain")
    script = write_script(tmp_path / "s.yaml", [FIX, SUBMIT])
    refused = live_swe("run", "-t", "fix add", "--repo", str(repo), "-m", f"scripted:{script}", "--yolo", "--json")
    assert refused.returncode == 2
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "uncommitted change" in lines[0] and "--allow-dirty" in lines[0], refused.stderr
    assert SessionStore.default().list() == []
    assert run_git(repo, "status", "--porcelain") == status_before

    done = live_swe("run", "-t", "fix add", "--repo", str(repo), "-m", f"scripted:{script}", "--yolo", "--json",
                    "--allow-dirty")
    result = json.loads(done.stdout)
    assert result["status"] == "submitted", done.stderr
    patch = result["patch"]
    assert "+    return a + b" in patch and "-    return a - b" in patch
    for users in ("+# my own comment", "staged notes", "scratch.txt", "README.md"):
        assert users not in patch  # exactly the agent's change
    # the person's changes are where they were: still staged, still unstaged, still untracked
    assert (repo / "calc.py").read_text() == "# my own comment\ndef add(a, b):\n    return a + b\n"
    assert run_git(repo, "diff", "--cached", "--name-only").split() == ["README.md"]
    assert (repo / "scratch.txt").read_text() == "my own file\n"
    assert run_git(repo, "log", "--oneline").count("\n") == 1 and run_git(repo, "stash", "list") == ""
    assert run_git(repo, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/main"]


def test_without_the_sandbox_kill_9_still_stops_the_running_command(git_repo, tmp_path):
    """``--sandbox none``: the command's shell dies with live-swe (the sandboxed case is
    tests/test_attack_sandbox.py::test_the_running_command_stops_when_live_swe_is_killed_or_interrupted)."""
    import secrets
    import time

    from attack_support import start_cli
    from conftest import live_processes, wait_until_no_process

    ticks = f"ticks-{secrets.token_hex(4)}.txt"
    loop = bash_reply(f"while true; do date +%s%N >> {ticks}; sleep 0.1; done", "Work for a long time.")
    process = start_cli(git_repo, [loop, SUBMIT], tmp_path, "--command-timeout", "300", "--sandbox", "none",
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    count = lambda: len((git_repo / ticks).read_text().splitlines()) if (git_repo / ticks).exists() else 0  # noqa: E731
    try:
        deadline = time.monotonic() + 60
        while count() < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert count() >= 3, "the command never started"
        process.kill()
        process.wait(timeout=30)
        time.sleep(0.5)
        before = count()
        time.sleep(1.0)
        assert count() == before, "the command kept writing to the repository"
        assert wait_until_no_process(ticks, within=2) == []
    finally:
        if process.poll() is None:
            process.kill()
        for pid in live_processes(ticks):
            os.kill(pid, signal.SIGKILL)


def _wait_for(condition, what: str, within: float = 60.0) -> None:
    import time

    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _logged(session_dir, kind: str) -> list[dict]:
    path = session_dir / "events.jsonl"
    if not path.exists():
        return []
    found = []
    for line in path.read_text().splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("t") == kind:
            found.append(event)
    return found


def test_one_process_per_session_a_second_resume_is_told_who_holds_it_and_kill_9_frees_it(git_repo, tmp_path):
    import socket

    from attack_support import start_cli

    marker = git_repo / "started"
    # slow the first time only: resume runs the step in flight again
    slow = bash_reply("[ -e started ] || { touch started; sleep 300; }", "Wait a long time.")
    process = start_cli(git_repo, [slow, FIX, SUBMIT], tmp_path, "--command-timeout", "600",
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(marker.exists, "the first command")
        session = SessionStore.default().list()[0]
        directory = SessionStore.default().open(session.id).dir
        log_before = (directory / "events.jsonl").read_bytes()
        second = live_swe("resume", session.id, "--yolo")
        assert second.returncode == 2, second.stderr
        lines = [line for line in second.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "in use by another live-swe process" in lines[0], second.stderr
        assert f"pid {process.pid} on {socket.gethostname()}" in lines[0]
        assert (directory / "events.jsonl").read_bytes() == log_before  # it wrote nothing
        process.kill()
        process.wait(timeout=30)
        third = live_swe("resume", session.id, "--yolo", "--json")  # the OS released the lock with the process
        result = json.loads(third.stdout)
        assert result["status"] == "submitted", third.stderr
        assert "+    return a + b" in result["patch"]
        assert len(_logged(directory, "resume")) == 1
    finally:
        if process.poll() is None:
            process.kill()


KILL_AFTER = """
import json, os, signal, sys
from pathlib import Path
from live_swe.models.scripted import ScriptedModel
from live_swe.runner import RunHooks, RunRequest, start_run

script, repo, session_id, kind, needle = sys.argv[1:6]

def observe(event):  # the moment to die: this event was just logged
    if event.get("t") == kind and needle in json.dumps(event.record()):
        os.kill(os.getpid(), signal.SIGKILL)

hooks = RunHooks(model_factory=lambda name: ScriptedModel.from_path(script), observers=[observe])
start_run(RunRequest(task="fix add", model="scripted:" + script, repo=Path(repo), session_id=session_id), hooks)
"""


def kill_9_after(event_kind: str, needle: str, script, repo, session_id: str) -> None:
    """Run a session in a child process that gets SIGKILL right after logging an ``event_kind``
    event whose JSON holds ``needle``."""
    done = subprocess.run([sys.executable, "-c", KILL_AFTER, str(script), str(repo), session_id, event_kind, needle],
                          capture_output=True, text=True, timeout=120, env=os.environ.copy())
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]


def test_kill_9_after_the_submission_step_resume_finishes_without_asking_the_model_again(git_repo, tmp_path):
    asked_again = bash_reply("echo asked again > asked-again.txt", "The model was asked again.")
    script = write_script(tmp_path / "s.yaml", [FIX, SUBMIT, asked_again, SUBMIT])
    kill_9_after("step", "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", script, git_repo, "submitted-then-killed")
    session = SessionStore.default().open("submitted-then-killed")
    assert session.meta.status == "running" and not _logged(session.dir, "end")
    resumed = live_swe("resume", "submitted-then-killed", "--yolo", "--json")
    result = json.loads(resumed.stdout)
    assert result["status"] == "submitted", resumed.stderr
    assert "+    return a + b" in result["patch"] and "asked" not in result["patch"]
    assert not (git_repo / "asked-again.txt").exists()
    submissions = [e for e in _logged(session.dir, "step") if "COMPLETE_TASK" in e["command"]]
    replies = [e for e in _logged(session.dir, "message") if e["message"]["role"] == "assistant"]
    assert len(submissions) == 1 and len(replies) == 2  # the model was not asked again
    assert [e["status"] for e in _logged(session.dir, "end")] == ["submitted"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_stop_a_run_like_ctrl_c_and_it_resumes(git_repo, tmp_path, sig):
    from attack_support import start_cli
    from conftest import wait_until_no_process

    ticks = git_repo / "ticks.txt"
    # long the first time only: resume runs the step in flight again
    loop = bash_reply("[ -e ticks.txt ] && echo again || while true; do date +%s%N >> ticks.txt; sleep 0.1; done",
                      "Work for a long time.")
    process = start_cli(git_repo, [FIX, loop, SUBMIT], tmp_path, "--command-timeout", "300",
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    count = lambda: len(ticks.read_text().splitlines()) if ticks.exists() else 0  # noqa: E731
    try:
        _wait_for(lambda: count() >= 3, "the command to run")
        process.send_signal(sig)  # what `timeout`, a closed terminal or a cancelled CI job send
        assert process.wait(timeout=60) == 1, process.stderr.read().decode()[-2000:]
        stderr = process.stderr.read().decode()
        assert "Traceback" not in stderr and f"stopped by {sig.name}" in stderr, stderr
        time.sleep(0.5)
        before = count()
        time.sleep(1.0)
        assert count() == before, "the command kept running"
        assert wait_until_no_process("ticks.txt", within=2) == []
        meta = SessionStore.default().list()[0]
        assert meta.status == "interrupted"
        session = SessionStore.default().open(meta.id)
        assert [e["status"] for e in _logged(session.dir, "end")] == ["interrupted"]
        resumed = live_swe("resume", meta.id, "--yolo", "--json")
        result = json.loads(resumed.stdout)
        assert result["status"] == "submitted" and "+    return a + b" in result["patch"], resumed.stderr
    finally:
        if process.poll() is None:
            process.kill()


def test_a_torn_last_line_is_repaired_so_the_next_event_is_not_lost(git_repo, tmp_path):
    script = write_script(tmp_path / "s.yaml", [FIX, SUBMIT])
    kill_9_after("step", '"step": 1', script, git_repo, "torn")
    session = SessionStore.default().open("torn")
    with open(session.events_path, "a") as log:  # what a kill in the middle of a write leaves
        log.write('{"t": "step", "step": 2, "comm')
    resumed = live_swe("resume", "torn", "--yolo", "--json")
    assert json.loads(resumed.stdout)["status"] == "submitted", resumed.stderr
    events, problems = SessionStore.default().open("torn").events()
    assert len(problems) == 1 and "line skipped" in problems[0]  # the torn line alone
    kinds = [e["t"] for e in events]
    # the first event after the torn line (resume reports it) is not glued onto it
    assert kinds.count("log_problem") == 1 and "resume" in kinds and kinds[-1] == "end"
    assert session.events_path.read_text().endswith("\n")


def test_a_corrupt_meta_json_is_listed_as_damaged_with_what_to_do(git_repo, tmp_path):
    script = write_script(tmp_path / "s.yaml", [FIX, SUBMIT])
    good = live_swe("run", "-t", "fix add", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo", "--json")
    good_id = json.loads(good.stdout)["session_id"]
    run_git(git_repo, "checkout", "--", "calc.py")
    broken = live_swe("run", "-t", "fix add", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo", "--json")
    broken_id = json.loads(broken.stdout)["session_id"]
    meta = SessionStore.default().open(broken_id).meta_path
    meta.write_text(meta.read_text()[:40])  # cut short, as a failing disk or an editor might leave it
    listed = live_swe("sessions", "list")
    assert listed.returncode == 0 and "no sessions yet" not in listed.stdout
    lines = {line.split()[0]: line for line in listed.stdout.splitlines()}
    assert "submitted" in lines[good_id]
    assert "damaged" in lines[broken_id] and "meta.json" in lines[broken_id] and "Restore" in lines[broken_id]
    as_json = {entry["id"]: entry for entry in json.loads(live_swe("sessions", "list", "--json").stdout)}
    assert as_json[broken_id]["status"] == "damaged" and as_json[good_id]["status"] == "submitted"


@pytest.fixture
def small_disk(tmp_path):
    """A 16 MiB filesystem of its own (tmpfs), unmounted afterwards."""
    import os

    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root (CI runs as root)")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(disk)], check=True)
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def _fill(disk) -> None:
    with open(disk / "filler", "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("live-swe: error")]


def test_a_full_disk_at_start_is_one_clear_line_and_leaves_no_session(git_repo, tmp_path, small_disk):
    import os

    home = small_disk / "home"
    home.mkdir()
    script = write_script(tmp_path / "s.yaml", [FIX, SUBMIT])
    _fill(small_disk)
    env = {**os.environ, "LIVE_SWE_HOME": str(home)}
    out = live_swe("run", "-t", "fix add", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo", env=env)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert len(_error_lines(out.stderr)) == 1 and "No space left on device" in out.stderr, out.stderr
    assert not (home / "sessions").exists() or list((home / "sessions").iterdir()) == []
    (small_disk / "filler").unlink()
    again = live_swe("run", "-t", "fix add", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo", "--json",
                     env=env)
    assert json.loads(again.stdout)["status"] == "submitted", again.stderr


def test_a_full_disk_mid_run_is_one_clear_line_a_whole_log_and_resume_finishes(git_repo, tmp_path, small_disk):
    import os

    home = small_disk / "home"
    home.mkdir()
    # the agent's own command fills the disk (unconfined, so it can), the first time only
    fill = bash_reply(f"[ -e {small_disk}/once ] || {{ touch {small_disk}/once; head -c 64M /dev/zero > "
                      f"{small_disk}/filler; }}; echo filled", "Fill the disk.")
    script = write_script(tmp_path / "s.yaml", [FIX, fill, bash_reply("echo after"), SUBMIT])
    env = {**os.environ, "LIVE_SWE_HOME": str(home)}
    out = live_swe("run", "-t", "fix add", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo",
                   "--sandbox", "none", env=env)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    errors = _error_lines(out.stderr)
    assert len(errors) == 1 and "No space left on device" in errors[0] and "live-swe resume" in errors[0], out.stderr
    [session_dir] = list((home / "sessions").iterdir())
    log = (session_dir / "events.jsonl").read_text()
    assert log.endswith("\n") and all(json.loads(line) for line in log.splitlines())  # no torn line
    assert not [p for p in session_dir.iterdir() if p.name.endswith(".tmp")]
    (small_disk / "filler").unlink()
    resumed = live_swe("resume", session_dir.name, "--yolo", "--json", "--sandbox", "none", env=env)
    result = json.loads(resumed.stdout)
    assert result["status"] == "submitted" and "+    return a + b" in result["patch"], resumed.stderr
