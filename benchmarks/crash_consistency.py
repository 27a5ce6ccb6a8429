"""Crash consistency: ``live-swe run`` killed (SIGKILL) at random moments, then ``resume``.

Each trial runs a scripted session (five edits — a fix, a new file, a new folder, a read, a second
edit — then the submission) in a fresh repository and home, kills the ``live-swe run`` process with
SIGKILL after a random delay drawn uniformly over an uninterrupted run's duration, and recovers:

- no session folder with a ``meta.json`` (killed before one existed): recovered when
  ``sessions list`` shows nothing damaged;
- otherwise ``live-swe resume ID`` must end ``submitted`` with exactly the patch of an uninterrupted
  run, and the log must validate: every line a JSON object ending in a newline, the ``session`` event
  first, no completed step run twice, one submission, and the ``end`` event (``submitted``) last.

The commands are idempotent: the step in flight at a kill runs again on resume (at least once).

    python benchmarks/crash_consistency.py [--local 30] [--docker 30] [--seed 1] [--json]

Prints each kill (env, delay, the moment's last logged event, outcome) and the totals.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
BASE_IMAGE = os.environ.get("LIVE_SWE_TEST_BASE_IMAGE", "live-swe-base")
CLI = [sys.executable, "-m", "live_swe.cli.main"]
MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def _bash(command: str) -> str:
    # each command takes a moment, so that kills land in commands as well as between them
    return f"THOUGHT: next.\n\n```bash\nsleep 0.2; {command}\n```"


REPLIES = [
    _bash("sed -i 's/a - b/a + b/' calc.py"),
    _bash("printf 'def sub(a, b):\\n    return a - b\\n' > ops.py"),
    _bash("mkdir -p docs && echo 'add(a, b) adds' > docs/usage.md"),
    _bash("cat calc.py ops.py docs/usage.md"),
    _bash("sed -i 's/^# calc$/# calc (fixed)/' README.md"),
    _bash(f"echo {MARKER}"),
]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _setup(work: Path) -> tuple[Path, Path, dict[str, str]]:
    repo = work / "repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "README.md").write_text("# calc\n")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "init")
    script = work / "script.json"
    script.write_text(json.dumps(REPLIES))
    env = {**os.environ, "LIVE_SWE_HOME": str(work / "home"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("LIVE_SWE_MODEL", None)
    return repo, script, env


def _run_args(kind: str, repo: Path, script: Path) -> list[str]:
    args = [*CLI, "run", "--task", "Fix add.", "--repo", str(repo), "-m", f"scripted:{script}", "--yolo", "--json",
            "--env", kind]
    return args + (["--image", BASE_IMAGE] if kind == "docker" else [])


def reference(kind: str) -> tuple[str, float, float]:
    """The patch of an uninterrupted run, when its session folder appeared and when the run ended."""
    with tempfile.TemporaryDirectory(prefix="lsw-crash-ref-") as tmp:
        repo, script, env = _setup(Path(tmp))
        started = time.monotonic()
        process = subprocess.Popen(_run_args(kind, repo, script), env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp)
        sessions, appeared = Path(tmp) / "home" / "sessions", None
        while process.poll() is None:
            if appeared is None and sessions.is_dir() and any(sessions.glob("*/meta.json")):
                appeared = time.monotonic() - started
            time.sleep(0.01)
        took = time.monotonic() - started
        out, err = process.communicate()
        result = json.loads(out)
        assert result["status"] == "submitted", err
        return result["patch"], appeared or 0.0, took


def log_problems(path: Path) -> list[str]:
    """Why the session's log does not validate (empty: it does)."""
    text = path.read_text(encoding="utf-8")
    if not text.endswith("\n"):
        return ["the log does not end with a newline"]
    events = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            event = json.loads(line)
        except ValueError:
            return [f"line {number} is not JSON: {line[:80]!r}"]
        if not isinstance(event, dict):
            return [f"line {number} is not an object"]
        events.append(event)
    problems = []
    if not events or events[0].get("t") != "session":
        problems.append("the first event is not the session's start")
    steps = [e.get("step") for e in events if e.get("t") == "step"]
    if len(steps) != len(set(steps)):
        problems.append(f"a completed step ran twice: {steps}")
    if steps != sorted(steps):
        problems.append(f"steps out of order: {steps}")
    submissions = [e for e in events if e.get("t") == "step" and MARKER in str(e.get("command"))]
    if len(submissions) != 1:
        problems.append(f"{len(submissions)} submission steps")
    if events and (events[-1].get("t") != "end" or events[-1].get("status") != "submitted"):
        problems.append(f"the last event is {events[-1].get('t')} {events[-1].get('status', '')}, not end submitted")
    last_resume = max((i for i, e in enumerate(events) if e.get("t") == "resume"), default=-1)
    if [e for e in events[last_resume + 1:] if e.get("t") == "end"] != events[-1:]:
        problems.append("more than one end after the last resume")
    return problems


def _last_event(session_dir: Path) -> str:
    try:
        lines = (session_dir / "events.jsonl").read_text().splitlines()
    except OSError:
        return "-"
    for line in reversed(lines):
        try:
            event = json.loads(line)
            return f"{event.get('t')}{'' if event.get('step') is None else ' ' + str(event.get('step'))}"
        except ValueError:
            return "torn line"
    return "-"


def trial(kind: str, delay: float, expected: str) -> tuple[bool, str, str]:
    """One kill and its recovery: (recovered cleanly, the moment, what happened)."""
    with tempfile.TemporaryDirectory(prefix="lsw-crash-") as tmp:
        repo, script, env = _setup(Path(tmp))
        process = subprocess.Popen(_run_args(kind, repo, script), env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp)
        time.sleep(delay)
        killed = process.poll() is None
        if killed:
            process.kill()  # SIGKILL, to the live-swe process only
        process.wait()
        sessions = Path(tmp) / "home" / "sessions"
        found = [d for d in sessions.iterdir() if (d / "meta.json").exists()] if sessions.is_dir() else []
        if not found:
            listed = subprocess.run([*CLI, "sessions", "list"], env=env, capture_output=True, text=True, cwd=tmp)
            ok = listed.returncode == 0 and "damaged" not in listed.stdout
            return ok, "before a session existed", "nothing to resume" if ok else f"list: {listed.stdout[-300:]}"
        session_dir = found[0]
        moment = _last_event(session_dir) if killed else "after the end"
        meta = json.loads((session_dir / "meta.json").read_text())
        if meta.get("status") != "submitted":
            resumed = subprocess.run([*CLI, "resume", session_dir.name, "--yolo", "--json"], env=env,
                                     capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, cwd=tmp)
            try:
                result = json.loads(resumed.stdout)
            except ValueError:
                return False, moment, f"resume printed no result: {resumed.stderr.strip()[-300:]}"
            if result.get("status") != "submitted":
                return False, moment, f"resume ended {result.get('status')}: {result.get('message', '')[:200]}"
            patch = result.get("patch", "")
        else:
            patch = (session_dir / "patch.diff").read_text()
        if patch != expected:
            return False, moment, "the patch differs from an uninterrupted run's"
        problems = log_problems(session_dir / "events.jsonl")
        if problems:
            return False, moment, "; ".join(problems)
        return True, moment, "resumed: full patch, valid log" if killed else "finished before the kill"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--local", type=int, default=30, help="kills of a local (bubblewrap) run")
    parser.add_argument("--docker", type=int, default=30, help="kills of a Docker run")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="one JSON object at the end")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO_ROOT))
    rng = random.Random(args.seed)
    totals = {}
    for kind, count in (("local", args.local), ("docker", args.docker)):
        if not count:
            continue
        expected, appeared, took = reference(kind)
        low = appeared * 0.8  # a little before the session exists, to the end of the run
        print(f"{kind}: an uninterrupted run takes {took:.2f} s, its session exists from {appeared:.2f} s; "
              f"kills drawn uniformly in [{low:.2f}, {took:.2f}] s", file=sys.stderr)
        kills, clean, failures, attempts = 0, 0, [], 0
        while kills < count and attempts < 3 * count:
            attempts += 1
            delay = rng.uniform(low, took)
            ok, moment, what = trial(kind, delay, expected)
            if moment == "after the end":
                continue  # the run ended before the kill: not a kill
            kills += 1
            clean += ok
            if not ok:
                failures.append({"delay": round(delay, 3), "moment": moment, "what": what})
            print(f"  {kind} kill {kills:>3} at {delay:6.2f} s ({moment}): {'ok' if ok else 'FAILED'} - {what}",
                  file=sys.stderr)
        totals[kind] = {"kills": kills, "clean_recoveries": clean, "run_seconds": round(took, 2),
                        "failures": failures}
    kills = sum(t["kills"] for t in totals.values())
    clean = sum(t["clean_recoveries"] for t in totals.values())
    summary = {"kills": kills, "clean_recoveries": clean, "by_env": totals}
    if args.json:
        print(json.dumps(summary))
    else:
        for kind, t in totals.items():
            print(f"{kind:<7} kills {t['kills']:>3}  clean recoveries {t['clean_recoveries']:>3}")
        print(f"total   kills {kills:>3}  clean recoveries {clean:>3}")
    return 0 if clean == kills else 1


if __name__ == "__main__":
    sys.exit(main())
