"""What the bubblewrap sandbox costs per command, next to the unsandboxed environments, in one run.

Per-command latency (median, p90) of live-swe's local environment sandboxed (the default), the same
without the sandbox (``--sandbox none``) and mini-swe-agent 2.4.6's ``LocalEnvironment``: the same
commands in the same repository, interleaved round by round so that a busy machine slows all three
alike. mini-swe-agent runs in its own virtual environment; its commands are timed inside its process
(a small loop reading commands on stdin), so each figure is the environment's own cost. Then whole
steps: a sandboxed live-swe step against an unsandboxed mini-swe-agent step (``loop_overhead.py``'s
scripted runs, trajectory/event log saved on both sides).

Targets: the sandbox adds <= 1.5 ms per command; a sandboxed live-swe step stays >= 4x cheaper than
an unsandboxed mini-swe-agent step.

    python benchmarks/sandbox_overhead.py [--rounds 200] [--steps 50] [--mini-venv /tmp/venv-mini-bench]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loop_overhead import MINI_VERSION, ensure_mini, live_swe_per_step, make_repo, mini_per_step  # noqa: E402

COMMANDS = ["true", "echo hello", "ls -la", "cat file1.py file2.py | wc -l", "git status --short"]

MINI_SERVER = r"""
import json, sys, time
from minisweagent.environments.local import LocalEnvironment
env = LocalEnvironment(cwd=sys.argv[1], timeout=30)
print("ready", flush=True)
for line in sys.stdin:
    command = json.loads(line)
    start = time.perf_counter()
    env.execute({"command": command})
    print(json.dumps(time.perf_counter() - start), flush=True)
"""


class MiniEnvironment:
    """mini-swe-agent's LocalEnvironment in its own venv, timing each command itself."""

    def __init__(self, python: Path, repo: Path):
        env = {**os.environ, "MSWEA_CONFIGURED": "true", "MSWEA_SILENT_STARTUP": "1"}
        self.process = subprocess.Popen([str(python), "-c", MINI_SERVER, str(repo)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env)
        while self.process.stdout.readline().strip() != "ready":
            pass

    def timed(self, command: str) -> float:
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def timed(env, command: str) -> float:
    start = time.perf_counter()
    out = env.execute(command, timeout=30)
    elapsed = time.perf_counter() - start
    assert out.returncode == 0, (command, out)
    return elapsed


def p90(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=10)[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200, help="rounds of every command in every environment")
    parser.add_argument("--steps", type=int, default=50, help="steps of the scripted runs compared")
    parser.add_argument("--repeats", type=int, default=3, help="scripted runs per agent (median reported)")
    parser.add_argument("--mini-venv", type=Path, default=Path("/tmp/venv-mini-bench"))
    args = parser.parse_args()
    mini_python = ensure_mini(args.mini_venv)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LIVE_SWE_HOME"] = str(Path(tmp) / "home")
        from live_swe.environments.local import LocalEnvironment

        repo = make_repo(Path(tmp))
        scaffold = Path(tmp) / "scaffold"
        (scaffold / "tools").mkdir(parents=True)
        environments = {
            "live-swe, sandboxed (bubblewrap)": LocalEnvironment(repo, scaffold_dir=scaffold),
            "live-swe, --sandbox none": LocalEnvironment(repo, scaffold_dir=scaffold, sandbox="none"),
        }
        mini = MiniEnvironment(mini_python, repo)
        samples: dict[str, dict[str, list[float]]] = {name: {c: [] for c in COMMANDS} for name in environments}
        mini_name = f"mini-swe-agent {MINI_VERSION} LocalEnvironment"
        samples[mini_name] = {c: [] for c in COMMANDS}
        for index in range(args.rounds + 10):
            for command in COMMANDS:
                order = list(environments.items()) + [(mini_name, mini)]
                for name, env in order[index % 3:] + order[:index % 3]:  # rotate who goes first
                    seconds = env.timed(command) if env is mini else timed(env, command)
                    if index >= 10:  # the first rounds warm caches
                        samples[name][command].append(seconds)
        mini.close()
        for env in environments.values():
            env.close()

        print(f"per command, {args.rounds} rounds of {len(COMMANDS)} commands, interleaved (ms)")
        print(f"{'environment':<44} {'median':>8} {'p90':>8}")
        overall = {name: [s for per in by_command.values() for s in per] for name, by_command in samples.items()}
        for name, values in overall.items():
            print(f"{name:<44} {statistics.median(values) * 1000:>8.2f} {p90(values) * 1000:>8.2f}")
        print(f"\n{'command':<34}" + "".join(f"{name.split(',')[-1].split(' Local')[0].strip():>24}" for name in samples))
        for command in COMMANDS:
            print(f"{command:<34}" + "".join(f"{statistics.median(samples[n][command]) * 1000:>24.2f}" for n in samples))
        paired = [a - b for c in COMMANDS for a, b in zip(samples["live-swe, sandboxed (bubblewrap)"][c],
                                                           samples["live-swe, --sandbox none"][c], strict=True)]
        print(f"\nadded by the sandbox, per command: {statistics.median(paired) * 1000:.2f} ms (median of the "
              f"{len(paired)} paired differences, same command, same round); target <= 1.50 ms")

        # Whole steps. What a step costs beyond its command: the step's time minus the bare command run
        # unsandboxed (a fresh subprocess, as mini-swe-agent runs it), so the sandbox counts on our side.
        bare_env = LocalEnvironment(repo, sandbox="none")
        bare = statistics.median(timed(bare_env, "echo; ls") for _ in range(200))
        live_swe_per_step(repo, 2)  # warm-up, as in loop_overhead.py
        live = statistics.median(live_swe_per_step(repo, args.steps) for _ in range(args.repeats))
        other = statistics.median(mini_per_step(mini_python, repo, args.steps, True) for _ in range(args.repeats))
        print(f"\nper step, {args.steps} steps of `echo; ls`, log/trajectory saved (median of {args.repeats} runs); "
              f"the bare command unsandboxed: {bare * 1000:.2f} ms")
        print(f"{'agent':<44} {'ms/step':>8} {'beyond the bare command':>24}")
        print(f"{'live-swe, sandboxed':<44} {live * 1000:>8.2f} {(live - bare) * 1000:>24.2f}")
        print(f"{f'mini-swe-agent {MINI_VERSION}, unsandboxed':<44} {other * 1000:>8.2f} {(other - bare) * 1000:>24.2f}")
        print(f"ratio: {(other - bare) / (live - bare):.1f}x (target >= 4x)")


if __name__ == "__main__":
    main()
