"""Loop overhead per step, live-swe vs mini-swe-agent, side by side in one run.

Both agents get a scripted model answering `echo; ls` N times and then submitting, on the same git
repository, with the local environment, persistence on (live-swe's event log; mini-swe-agent's
trajectory file saved each step) and, for mini-swe-agent, also off. Reported per step: the total,
and the overhead (total minus the median time of the bare command in the same environment).
Also `--help` start-up time of both CLIs.

    python benchmarks/loop_overhead.py [--steps 50 400] [--mini-venv /tmp/venv-mini-bench]

mini-swe-agent 2.4.6 is installed into a throwaway venv on first use.
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

COMMAND = "echo; ls"
MINI_VERSION = "2.4.6"


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    for i in range(20):
        (repo / f"file{i}.py").write_text(f"x = {i}\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    return repo


def command_time(repo: Path, n: int = 200) -> float:
    from live_swe.environments.local import LocalEnvironment

    env = LocalEnvironment(repo)
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        env.execute(COMMAND, timeout=30)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def live_swe_per_step(repo: Path, steps: int) -> float:
    from live_swe.config import KernelLimits
    from live_swe.models.base import Reply
    from live_swe.models.scripted import ScriptedModel
    from live_swe.runner import RunHooks, RunRequest, start_run
    from live_swe.session.store import SessionStore

    replies = [Reply(f"THOUGHT: look.\n\n```bash\n{COMMAND}\n```") for _ in range(steps)]
    replies.append(Reply("```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"))
    model = ScriptedModel(replies)
    started = []
    with tempfile.TemporaryDirectory() as home:
        request = RunRequest(task="benchmark", model="scripted:bench", repo=repo,
                             limits=KernelLimits(step_limit=steps + 5, wall_time_limit=3600))
        # Timed like mini-swe-agent's agent.run(): from the agent being ready to the result (patch included).
        hooks = RunHooks(model_factory=lambda name: model, on_agent=lambda agent: started.append(time.perf_counter()))
        result = start_run(request, hooks, store=SessionStore(Path(home)))
        elapsed = time.perf_counter() - started[0]
    assert result.status == "submitted", result
    return elapsed / (steps + 1)


MINI_SNIPPET = r"""
import json, sys, time, yaml
from pathlib import Path
from minisweagent.agents.default import DefaultAgent
from minisweagent.environments.local import LocalEnvironment
from minisweagent.models.test_models import DeterministicModel, make_output
import minisweagent
repo, steps, out, command = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
config = yaml.safe_load((Path(minisweagent.__file__).parent / "config" / "mini_textbased.yaml").read_text())
agent_config = dict(config["agent"])
agent_config.update(step_limit=0, cost_limit=0, output_path=Path(out) if out != "-" else None)
outputs = [make_output("THOUGHT: look.\n\n```mswea_bash_command\n" + command + "\n```", [{"command": command}], cost=0.0)
           for _ in range(steps)]
outputs.append(make_output("done", [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}], cost=0.0))
agent = DefaultAgent(DeterministicModel(outputs=outputs, cost_per_call=0.0), LocalEnvironment(cwd=repo), **agent_config)
start = time.perf_counter()
info = agent.run("benchmark")
elapsed = time.perf_counter() - start
assert info.get("exit_status") == "Submitted", info
print(json.dumps({"per_step": elapsed / (steps + 1)}))
"""


def ensure_mini(venv: Path) -> Path:
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", f"mini-swe-agent=={MINI_VERSION}"], check=True)
    return python


def mini_per_step(python: Path, repo: Path, steps: int, save: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "traj.json") if save else "-"
        env = {**os.environ, "MSWEA_CONFIGURED": "true", "MSWEA_SILENT_STARTUP": "1"}
        done = subprocess.run([str(python), "-c", MINI_SNIPPET, str(repo), str(steps), out, COMMAND],
                              capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])["per_step"]


def help_time(argv: list[str], runs: int = 7) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=False, env={**os.environ, "MSWEA_CONFIGURED": "true"})
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[50, 400])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mini-venv", type=Path, default=Path("/tmp/venv-mini-bench"))
    args = parser.parse_args()
    mini = ensure_mini(args.mini_venv)
    with tempfile.TemporaryDirectory() as tmp:
        repo = make_repo(Path(tmp))
        live_swe_per_step(repo, 2)  # warm-up: imports and first-use caches, as mini's are warm too
        bare = command_time(repo)
        print(f"bare `{COMMAND}` in a fresh subprocess: {bare * 1000:.2f} ms (median of 200)")
        print(f"{'steps':>6} {'agent':<28} {'ms/step':>9} {'overhead ms/step':>17}")
        for steps in args.steps:
            rows = {
                "live-swe (event log on)": [live_swe_per_step(repo, steps) for _ in range(args.repeats)],
                f"mini-swe-agent {MINI_VERSION} (saved)": [mini_per_step(mini, repo, steps, True) for _ in range(args.repeats)],
                f"mini-swe-agent {MINI_VERSION} (unsaved)": [mini_per_step(mini, repo, steps, False) for _ in range(args.repeats)],
            }
            for name, samples in rows.items():
                median = statistics.median(samples)
                print(f"{steps:>6} {name:<28} {median * 1000:>9.2f} {(median - bare) * 1000:>17.2f}")
    live_help = help_time([sys.executable, "-m", "live_swe.cli.main", "--help"])
    mini_help = help_time([str(mini.parent / "mini"), "--help"])
    print(f"--help: live-swe {live_help:.3f} s, mini {mini_help:.3f} s (median of 7)")


if __name__ == "__main__":
    main()
