"""The headless CLI as a user runs it: real subprocesses, real repositories, real session files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from conftest import SUBMIT, bash_reply, make_git_repo, write_script

CLI = [sys.executable, "-m", "live_swe.cli.main"]


def cli(*args, cwd=None, timeout=120, input=None):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          stdin=subprocess.DEVNULL if input is None else None, input=input)


def test_run_json_and_sessions_commands(git_repo, tmp_path):
    script = write_script(tmp_path / "s.yaml", [bash_reply("sed -i 's/a - b/a + b/' calc.py"), SUBMIT])
    out = cli("run", "--task", "fix add", "--repo", str(git_repo), "--model", f"scripted:{script}", "--yolo", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "submitted" and result["steps"] == 2
    assert "+    return a + b" in result["patch"]

    listing = json.loads(cli("sessions", "list", "--json").stdout)
    assert [s["id"] for s in listing] == [result["session_id"]]
    shown = json.loads(cli("sessions", "show", result["session_id"], "--json").stdout)
    for key in ("id", "status", "task", "model", "steps", "cost", "patch"):
        assert key in shown
    assert shown["patch"] == result["patch"] and shown["task"] == "fix add"

    exported = json.loads(cli("sessions", "export", result["session_id"], "--format", "mini").stdout)
    assert exported["trajectory_format"] == "mini-swe-agent-1.1"
    assert exported["info"]["exit_status"] == "Submitted"
    assert exported["info"]["submission"] == result["patch"]
    assert [m["role"] for m in exported["messages"]][:3] == ["system", "user", "assistant"]


def test_exported_trajectory_replays_to_the_same_patch(git_repo, tmp_path):
    script = write_script(tmp_path / "s.yaml", [bash_reply("echo hello > hello.txt"), SUBMIT])
    first = json.loads(cli("run", "-t", "greet", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo",
                           "--json").stdout)
    traj = tmp_path / "traj.json"
    cli("sessions", "export", first["session_id"], "--out", str(traj))
    other = make_git_repo(tmp_path / "other", {"calc.py": "def add(a, b):\n    return a - b\n", "README.md": "# calc\n"})
    second = json.loads(cli("run", "-t", "greet", "--repo", str(other), "-m", f"replay:{traj}", "--yolo",
                            "--json").stdout)
    assert second["status"] == "submitted"
    assert second["patch"] == first["patch"]


def test_task_file_and_exit_code_when_not_submitted(git_repo, tmp_path):
    task = tmp_path / "task.md"
    task.write_text("List the files.")
    script = write_script(tmp_path / "s.yaml", [bash_reply("ls")] * 5)
    out = cli("run", "--task-file", str(task), "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo",
              "--step-limit", "2", "--json")
    assert out.returncode == 1
    assert json.loads(out.stdout)["status"] == "limits_exceeded"


def test_headless_without_yolo_refuses(git_repo, tmp_path):
    script = write_script(tmp_path / "s.yaml", [SUBMIT])
    out = cli("run", "-t", "x", "--repo", str(git_repo), "-m", f"scripted:{script}")
    assert out.returncode == 2
    assert "--yolo" in out.stderr and "Traceback" not in out.stderr


def test_bad_inputs_give_clear_errors(git_repo, tmp_path, live_swe_home, monkeypatch):
    monkeypatch.setenv("LIVE_SWE_MODELS_DIR", str(tmp_path / "no-models"))  # no local default to fall back on
    malformed = tmp_path / "bad.yaml"
    malformed.write_text("- [unclosed\n")
    not_a_list = tmp_path / "dict.yaml"
    not_a_list.write_text("reply: hi\n")
    plain_dir = tmp_path / "plain"
    plain_dir.mkdir()
    script = write_script(tmp_path / "ok.yaml", [SUBMIT])
    cases = [
        (["-m", "bogus:thing", "--repo", str(git_repo)], "unknown model prefix 'bogus'"),
        (["-m", f"scripted:{tmp_path / 'missing.yaml'}", "--repo", str(git_repo)], "does not exist"),
        (["-m", f"scripted:{malformed}", "--repo", str(git_repo)], "not valid YAML"),
        (["-m", f"scripted:{not_a_list}", "--repo", str(git_repo)], "must hold a list"),
        (["-m", f"scripted:{script}", "--repo", str(plain_dir)], "not a git repository"),
        (["-m", f"scripted:{script}", "--repo", str(git_repo), "--scaffold", "nope:x"], "unknown scaffold reference"),
        (["--repo", str(git_repo)], "no model to use"),
    ]
    for args, expected in cases:
        out = cli("run", "-t", "x", "--yolo", *args)
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        assert expected in out.stderr, (args, out.stderr)
        assert "Traceback" not in out.stderr


def test_with_json_a_run_that_cannot_start_still_prints_one_json_object(git_repo, tmp_path, live_swe_home):
    plain_dir = tmp_path / "plain"
    plain_dir.mkdir()
    script = write_script(tmp_path / "ok.yaml", [SUBMIT])
    for args, expected in [
        (["-m", f"scripted:{script}", "--repo", str(plain_dir)], "not a git repository"),  # before any session
        (["-m", f"scripted:{script}", "--repo", str(git_repo), "--env", "nowhere"], "unknown environment"),
        (["-m", "bogus:thing", "--repo", str(git_repo)], "unknown model prefix 'bogus'"),
    ]:
        out = cli("run", "-t", "x", "--yolo", "--json", *args)
        assert out.returncode == 2 and expected in out.stderr
        result = json.loads(out.stdout)
        assert result["status"] == "error" and expected in result["message"]
        assert result["session_id"] is None and result["patch"] == "" and result["steps"] == 0
    assert not (live_swe_home / "sessions").exists() or not any((live_swe_home / "sessions").iterdir())


def test_malformed_config_file_is_named(git_repo, tmp_path, live_swe_home):
    (live_swe_home / "config.yaml").write_text("modle: x\n")
    out = cli("run", "-t", "x", "--yolo", "--repo", str(git_repo))
    assert out.returncode == 2
    assert "config.yaml" in out.stderr and "modle" in out.stderr


def test_unknown_session_is_a_clear_error():
    out = cli("sessions", "show", "does-not-exist")
    assert out.returncode == 2 and "no session 'does-not-exist'" in out.stderr


def test_kill_9_mid_run_then_resume_finishes(git_repo, tmp_path, live_swe_home):
    replies = [bash_reply(f"echo step{i} >> progress.txt && sleep 0.3") for i in range(1, 9)] + [SUBMIT]
    script = write_script(tmp_path / "s.yaml", replies)
    process = subprocess.Popen([*CLI, "run", "-t", "count", "--repo", str(git_repo), "-m", f"scripted:{script}",
                                "--yolo"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sessions = live_swe_home / "sessions"
    deadline = time.monotonic() + 60
    log = None
    while time.monotonic() < deadline:
        logs = list(sessions.glob("*/events.jsonl"))
        if logs and sum('"t": "step"' in line for line in logs[0].read_text().splitlines()) >= 3:
            log = logs[0]
            break
        time.sleep(0.05)
    assert log is not None, "the run never reached 3 steps"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    session_id = log.parent.name
    shown = json.loads(cli("sessions", "show", session_id, "--json").stdout)
    assert shown["status"] == "running" and shown["steps"] >= 3
    # a half-written line, as a crash mid-write leaves it, is reported, not fatal
    with log.open("a") as handle:
        handle.write('{"t": "message", "trunc')
    out = cli("resume", session_id, "--yolo", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "submitted"
    lines = (git_repo / "progress.txt").read_text().split()
    # every step ran; the one in flight at the kill may have run twice, nothing else repeated
    assert lines[-1] == "step8" and set(lines) == {f"step{i}" for i in range(1, 9)}
    assert len(lines) <= 9
    problems = json.loads(cli("sessions", "show", session_id, "--json").stdout)["log_problems"]
    assert any("events.jsonl" in p for p in problems)


def test_approval_prompt_on_a_terminal(git_repo, tmp_path):
    """A real pseudo-terminal: the user edits one command, rejects one with a comment, approves the rest."""
    import pty

    script = write_script(tmp_path / "s.yaml", [bash_reply("echo first"), bash_reply("rm calc.py"), SUBMIT])
    pid, fd = pty.fork()
    if pid == 0:  # child: the CLI on the terminal
        os.execvp(CLI[0], [*CLI, "run", "-t", "x", "--repo", str(git_repo), "-m", f"scripted:{script}"])
    answers = [("> ", "e\n"), ("command > ", "echo edited\n"), ("> ", "r\n"), ("comment for the agent > ", "no\n"),
               ("> ", "y\n")]
    buffer = ""
    deadline = time.monotonic() + 60
    for prompt, answer in answers:
        while not buffer.endswith(prompt) and time.monotonic() < deadline:
            try:
                buffer += os.read(fd, 4096).decode(errors="replace")
            except OSError:
                break
        os.write(fd, answer.encode())
        buffer = ""
    while time.monotonic() < deadline:
        try:
            if not os.read(fd, 4096):
                break
        except OSError:
            break
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert (git_repo / "calc.py").exists()


def test_help_is_light():
    """`live-swe --help` imports none of the heavy libraries."""
    code = (
        "import sys; sys.argv=['live-swe','--help']\n"
        "from live_swe.cli.main import app\n"
        "try:\n    app()\nexcept SystemExit:\n    pass\n"
        "heavy=[m for m in ('litellm','textual','docker','swebench','llama_cpp','git') if m in sys.modules]\n"
        "print('HEAVY', heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "HEAVY []" in out.stdout, out.stdout + out.stderr


def test_resume_with_a_new_step_budget(git_repo, tmp_path):
    script = write_script(tmp_path / "s.yaml", [bash_reply("echo a >> log.txt"), bash_reply("echo b >> log.txt"), SUBMIT])
    first = json.loads(cli("run", "-t", "x", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo",
                           "--step-limit", "1", "--json").stdout)
    assert first["status"] == "limits_exceeded"
    again = cli("resume", first["session_id"], "--yolo", "--json")
    assert json.loads(again.stdout)["status"] == "limits_exceeded"  # the saved budget still holds
    done = json.loads(cli("resume", first["session_id"], "--yolo", "--step-limit", "5", "--json").stdout)
    assert done["status"] == "submitted" and done["steps"] == 3
    assert (git_repo / "log.txt").read_text().split() == ["a", "b"]
    # a submitted session is finished: resuming it would query the model and run commands again
    refused = cli("resume", first["session_id"], "--yolo", "--json")
    assert refused.returncode == 2 and "already submitted its patch" in refused.stderr
    assert (git_repo / "log.txt").read_text().split() == ["a", "b"]
