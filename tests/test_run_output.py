"""What `live-swe run` prints: the --json object's fields (those of Claude Code's `-p --output-format
json` included), `--output-format stream-json` one event per line as the run goes, and on a
terminal the agent's reasoning before each command the person is asked to approve. The real CLI in
subprocesses (a real pseudo-terminal for the approval) on real repositories."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import time

from conftest import SUBMIT, bash_reply, write_script
from test_kernel_cli import CLI, cli


def run_json(git_repo, script, *extra):
    out = cli("run", "-t", "say hi", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo", *extra)
    return out, json.loads(out.stdout)


def test_the_json_object_has_the_run_s_measure(git_repo, tmp_path, live_swe_home):
    script = write_script(tmp_path / "s.yaml", [bash_reply("echo hi > hi.txt"), SUBMIT])
    out, result = run_json(git_repo, script, "--json")
    assert out.returncode == 0, out.stderr
    assert result["status"] == "submitted" and result["is_error"] is False
    assert result["model"] == f"scripted:{script}"
    assert result["num_steps"] == result["steps"] == 2
    assert isinstance(result["duration_ms"], int) and result["duration_ms"] > 0
    assert result["input_tokens"] > 0 and result["output_tokens"] > 0  # the scripted model reports usage
    assert "+hi" in result["patch"]

    (git_repo / "hi.txt").unlink()
    short = write_script(tmp_path / "short.yaml", [bash_reply("echo a"), bash_reply("echo b")])
    out, result = run_json(git_repo, short, "--json", "--step-limit", "1")
    assert out.returncode != 0 and result["status"] == "limits_exceeded" and result["is_error"] is True


def test_a_run_that_cannot_start_says_so_in_the_same_shape(git_repo, tmp_path, live_swe_home):
    script = write_script(tmp_path / "s.yaml", [SUBMIT])
    out = cli("run", "-t", "x", "--repo", str(tmp_path), "-m", f"scripted:{script}", "--yolo", "--json")
    result = json.loads(out.stdout)
    assert out.returncode == 2 and result["status"] == "error" and result["is_error"] is True
    assert result["num_steps"] == 0 and result["session_id"] is None and "not a git repository" in result["message"]


def test_stream_json_prints_each_event_as_it_happens_then_the_result(git_repo, tmp_path, live_swe_home):
    script = write_script(tmp_path / "s.yaml", [bash_reply("sleep 3"), SUBMIT])
    proc = subprocess.Popen([*CLI, "run", "-t", "wait", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo",
                             "--output-format", "stream-json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)
    try:
        first = json.loads(proc.stdout.readline())
        assert proc.poll() is None  # the first event arrived while the run still goes on
        rest, errors = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, errors
    assert not errors.strip(), errors  # no progress lines: the stream is the output
    events = [first] + [json.loads(line) for line in rest.splitlines()]
    kinds = [e.get("t") for e in events]
    assert "message" in kinds and "step" in kinds and kinds.index("step") < kinds.index("end") < len(kinds) - 1
    result = events[-1]
    assert result["t"] == "result" and result["status"] == "submitted" and result["num_steps"] == 2
    assert [e["command"] for e in events if e.get("t") == "step"][0] == "sleep 3"


def test_json_and_another_output_format_together_are_refused(git_repo, tmp_path, live_swe_home):
    script = write_script(tmp_path / "s.yaml", [SUBMIT])
    out = cli("run", "-t", "x", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo", "--json",
              "--output-format", "stream-json")
    assert out.returncode == 2 and "leave out one of --json and --output-format stream-json" in out.stderr
    out = cli("run", "-t", "x", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo", "--output-format", "xml")
    assert out.returncode == 2 and "unknown output format 'xml'" in out.stderr


def read_until(fd, marker: str, seen: list[str], timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while marker not in "".join(seen):
        assert time.monotonic() < deadline, "".join(seen)
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                seen.append(os.read(fd, 4096).decode(errors="replace"))
            except OSError:  # the other side closed
                break
    return "".join(seen)


def test_on_a_terminal_the_reasoning_comes_before_the_approval(git_repo, tmp_path, live_swe_home):
    script = write_script(tmp_path / "s.yaml", [
        bash_reply("cat calc.py", "The add function is in calc.py;\nI read it before changing anything."), SUBMIT])
    main, side = pty.openpty()
    proc = subprocess.Popen([*CLI, "run", "-t", "look", "--repo", str(git_repo), "-m", f"scripted:{script}"],
                            stdin=side, stdout=side, stderr=side, close_fds=True)
    os.close(side)
    seen: list[str] = []
    try:
        screen = read_until(main, "> ", seen)
        thinks = screen.index("The agent thinks:")
        assert screen.index("The add function is in calc.py;") > thinks
        assert "  I read it before changing anything." in screen  # later lines stay indented under it
        assert thinks < screen.index("The agent wants to run:") < screen.index("cat calc.py", thinks)
        os.write(main, b"a\n")  # approve this and every later command
        read_until(main, "submitted", seen)
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        os.close(main)


def test_on_the_terminal_each_step_and_format_error_is_one_progress_line(git_repo, tmp_path, live_swe_home):
    script = write_script(tmp_path / "s.yaml", ["no command here", bash_reply("echo hi > hi.txt\necho more"), SUBMIT])
    out = cli("run", "-t", "say hi", "--repo", str(git_repo), "-m", f"scripted:{script}", "--yolo")
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert any(line.startswith("[step 1] format error: ") for line in lines), out.stderr
    assert "[step 2] rc=0 $ echo hi > hi.txt" in lines  # the command's first line
    assert "[step 3] rc=0 $ echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in lines


def test_the_demo_shows_each_step_under_the_model_s_words(git_repo, capsys, live_swe_home):
    from live_swe.cli.demo_cmd import _Printer
    from live_swe.models.base import Reply
    from live_swe.models.scripted import ScriptedModel
    from live_swe.runner import RunHooks, RunRequest, start_run

    printer = _Printer()
    model = ScriptedModel([Reply("no command here"), Reply(bash_reply("echo hi")), Reply(SUBMIT)])
    hooks = RunHooks(observers=[printer.event], model_factory=lambda name: model, on_token=printer.token)
    assert start_run(RunRequest(task="say hi", model="scripted:test", repo=git_repo), hooks).status == "submitted"
    lines = capsys.readouterr().err.splitlines()
    assert any(line.startswith("  -> [step 1] format error: ") for line in lines), lines
    assert "  -> [step 2] exit code 0" in lines and "  -> [step 3] exit code 0" in lines
