"""Per-step overhead of the behavioural contracts: the built-in contract and a 50-rule contract,
against the same run with contracts off (the anchor), in one run.

Two figures:

1. The checks themselves (in the kernel, no environment round trip): ``before`` + ``after`` per step
   over a mix of ten realistic commands with 4 KB outputs — reading the command (classes, paths,
   secrets), scanning the output, evaluating every rule. Target: <= 1 ms per step with 50 rules
   (the Agent Behavioral Contracts paper reports < 10 ms per action).
2. The whole loop per step with a scripted model on a real repository (local environment,
   bubblewrap), for read-only steps (``echo; ls``: no diff needed) and writing steps (``echo x >> f``:
   the repository diff is re-read in the environment after the command), off / built-in / 50 rules.

    python benchmarks/contract_overhead.py [--steps 40] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

COMMANDS = [
    "grep -rn 'def add' .",
    "sed -i 's/a - b/a + b/' calc.py",
    "python3 -m pytest -q tests/test_calc.py",
    "cat calc.py | head -50",
    "git status && git diff",
    "echo 'print(add(2, 3))' > /tmp/repro.py && python3 /tmp/repro.py",
    "find . -name '*.py' | xargs wc -l",
    "pip install -e . 2>&1 | tail -3",
    "bash -c 'cd src && ls -la'",
    "git -c color.ui=never log --oneline -5",
]
OUTPUT = ("collected 12 items\n" + "tests/test_calc.py::test_add PASSED\n" * 60 + "commit 3f786850e387550fdab836ed7e6dc881de23001b\n"
          + "data = aGVsbG8gd29ybGQgdGhpcyBpcyBub3QgYSBzZWNyZXQ=\n")[:4096]


def fifty_rules() -> str:
    lines = ["name: fifty", "governance:"]
    for i in range(20):
        lines.append(f"  - {{id: g{i}, check: {{field: command, op: not_matches, value: 'forbidden-tool-{i}\\b'}}}}")
    for i in range(5):
        lines.append(f"  - {{id: c{i}, check: {{field: command_classes, op: not_contains, value: class-{i}}}}}")
    lines.append("hard:")
    for i in range(15):
        lines.append(f"  - {{id: h{i}, check: {{field: files_changed, op: not_matches, value: '^frozen{i}/'}}}}")
    lines.append("soft:")
    for i in range(10):
        lines.append(f"  - {{id: s{i}, check: {{field: diff_lines, op: lt, value: {10000 + i}}}}}")
    return "\n".join(lines) + "\n"


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "tests" / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    for i in range(20):
        (repo / f"file{i}.py").write_text(f"x = {i}\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    return repo


def contracts(tmp: Path):
    from live_swe.contracts.load import BUILTIN, merge, parse, read

    builtin = read(BUILTIN)
    return {"built-in (10 rules)": builtin, "built-in + 50 rules": merge([builtin, parse(fifty_rules(), "fifty")])}


def check_time(repo: Path, contract, rounds: int = 300) -> float:
    """Median seconds of before + after for one step, over the command mix."""
    from live_swe.contracts.engine import ContractEngine
    from live_swe.environments.local import LocalEnvironment

    env = LocalEnvironment(repo)
    engine = ContractEngine(contract, env=env, base_commit="HEAD", patch_fn=None, emit=lambda e: None)
    samples = []
    for r in range(rounds):
        for i, command in enumerate(COMMANDS):
            start = time.perf_counter()
            engine.before(command, step=r * len(COMMANDS) + i, cost=0.0)
            engine.after(command, OUTPUT, 0, step=r * len(COMMANDS) + i)
            samples.append(time.perf_counter() - start)
    env.close()
    return statistics.median(samples)


def loop_per_step(repo: Path, steps: int, command: str, contract_file: Path | None, off: bool) -> float:
    import live_swe.runner as runner
    from live_swe.config import KernelLimits
    from live_swe.models.base import Reply
    from live_swe.models.scripted import ScriptedModel
    from live_swe.session.store import SessionStore

    replies = [Reply(f"THOUGHT: go.\n\n```bash\n{command}\n```") for _ in range(steps)]
    replies.append(Reply("```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"))
    model = ScriptedModel(replies)
    started = []
    original = runner.run_contract
    if off:
        runner.run_contract = lambda request: None
    try:
        with tempfile.TemporaryDirectory() as home:
            request = runner.RunRequest(task="benchmark", model="scripted:bench", repo=repo,
                                        limits=KernelLimits(step_limit=steps + 5, wall_time_limit=3600),
                                        contract_files=[contract_file] if contract_file else [])
            hooks = runner.RunHooks(model_factory=lambda name: model, on_agent=lambda a: started.append(time.perf_counter()))
            result = runner.start_run(request, hooks, store=SessionStore(Path(home)))
            elapsed = time.perf_counter() - started[0]
    finally:
        runner.run_contract = original
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "--", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "clean", "-qfd"], check=True)
    assert result.status == "submitted", result
    return elapsed / (steps + 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ["LIVE_SWE_HOME"] = tempfile.mkdtemp(prefix="live-swe-contract-overhead-")
    with tempfile.TemporaryDirectory() as tmp:
        repo = make_repo(Path(tmp))
        print("1. the checks, per step (before + after, 4 KB output, median over "
              f"{300 * len(COMMANDS)} steps)")
        for name, contract in contracts(Path(tmp)).items():
            print(f"   {name:<22} {check_time(repo, contract) * 1e6:8.0f} µs/step   "
                  f"(rules: {len(contract.rules())}; target <= 1000 µs with 50 rules; paper: < 10000 µs)")
        fifty = Path(tmp) / "fifty.yaml"
        fifty.write_text(fifty_rules())
        print(f"\n2. the loop, per step (scripted model, {args.steps} steps, median of {args.repeats} runs)")
        print(f"   {'steps':<28} {'off (anchor)':>13} {'built-in':>10} {'+50 rules':>10} {'overhead':>18}")
        loop_per_step(repo, 2, "echo; ls", None, off=False)  # warm-up
        for label, command in (("read-only (`echo; ls`)", "echo; ls"), ("writing (`echo x >> notes.txt`)", "echo x >> notes.txt")):
            figures = []
            for contract_file, off in ((None, True), (None, False), (fifty, False)):
                runs = [loop_per_step(repo, args.steps, command, contract_file, off) for _ in range(args.repeats)]
                figures.append(statistics.median(runs) * 1000)
            print(f"   {label:<28} {figures[0]:10.2f} ms {figures[1]:7.2f} ms {figures[2]:7.2f} ms "
                  f"{figures[1] - figures[0]:+6.2f} / {figures[2] - figures[0]:+6.2f} ms")


if __name__ == "__main__":
    main()
