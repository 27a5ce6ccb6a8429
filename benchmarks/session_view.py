"""Reading a session: the typed session view against the plain JSON it is read from.

A session log of N steps (each: the model's reply, the observation, the step event, as a real run
writes them) is written once through ``Session.append``; then, median of several rounds:

- write: ``Session.append`` of one typed event (what each step pays, redaction included), against
  ``json.dumps`` + one ``os.write`` of the same record (the floor: what any event log pays);
- read: ``SessionView.read`` (what resume, ``sessions show``, the PR body, the TUI do), against
  ``json.loads`` of each line (the floor), and mini-swe-agent's way of keeping a trajectory: one
  ``json.load`` of the whole trajectory file it rewrites each step.

    python benchmarks/session_view.py [--steps 50 400]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from live_swe import events as ev  # noqa: E402
from live_swe.session.store import SessionStore  # noqa: E402
from live_swe.session.view import SessionView  # noqa: E402

REPLY = "THOUGHT: look at the files first.\n\n```bash\necho; ls\n```"
OBSERVATION = "<returncode>0</returncode>\n<output>\n" + "\n".join(f"file{i}.py" for i in range(20)) + "\n</output>"


def step_events(step: int) -> list[ev.Event]:
    return [ev.Message(step=step, message={"role": "assistant", "content": REPLY}),
            ev.Message(step=step, message={"role": "user", "content": OBSERVATION}),
            ev.Step(step=step, command="echo; ls", returncode=0, cost=0.001 * step, elapsed=0.05 * step)]


def median_ms(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def measure(steps: int, root: Path) -> dict[str, float]:
    store = SessionStore(root / f"s{steps}")
    session = store.create(task="bench", model="scripted")
    events = [e for n in range(1, steps + 1) for e in step_events(n)]
    per_event = []
    for event in events:
        start = time.perf_counter()
        session.append(event)
        per_event.append((time.perf_counter() - start) * 1e6)
    session.close()
    floor_path = root / f"floor{steps}.jsonl"
    fd = os.open(floor_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    floor = []
    for event in events:
        start = time.perf_counter()
        os.write(fd, (json.dumps(event.record()) + "\n").encode())
        floor.append((time.perf_counter() - start) * 1e6)
    os.close(fd)
    trajectory = root / f"mini{steps}.json"  # mini-swe-agent: the whole trajectory in one JSON file
    trajectory.write_text(json.dumps({"messages": [e.message for e in events if isinstance(e, ev.Message)]}))
    lines = floor_path.read_text().splitlines()
    opened = store.open(session.id)
    rounds = 30 if steps <= 100 else 10
    return {
        "append_us": statistics.median(per_event),
        "floor_append_us": statistics.median(floor),
        "view_ms": median_ms(lambda: SessionView.read(opened), rounds),
        "json_lines_ms": median_ms(lambda: [json.loads(line) for line in lines], rounds),
        "mini_load_ms": median_ms(lambda: json.loads(trajectory.read_text()), rounds),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, nargs="+", default=[50, 400])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for steps in args.steps:
            r = measure(steps, Path(tmp))
            print(f"{steps:4} steps  append/event {r['append_us']:6.1f} µs (json+write floor {r['floor_append_us']:5.1f} µs)"
                  f"  |  read: SessionView {r['view_ms']:7.2f} ms, json lines {r['json_lines_ms']:6.2f} ms, "
                  f"mini-swe-agent trajectory json.load {r['mini_load_ms']:6.2f} ms")


if __name__ == "__main__":
    main()
