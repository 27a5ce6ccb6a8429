"""Overhead of live self-evolution on the local environment (medians of N runs).

    python benchmarks/evolution_overhead.py [--n 2000] [--gate-n 20] [--json]

Measures, on a fresh session with the seed scaffold:
  - change detection at a step boundary when nothing changed (GatedScaffold.after_step), target <= 2 ms;
    anchor: `git status --porcelain` on the same scaffold history (what a naive check would run);
  - the gates for a typical tool (header, tree-sitter syntax, `--help` in the environment), target
    <= 300 ms; anchor: one bare command in the environment (`true`), the floor of the --help run;
  - the gates for a template edit (schema, budgets, every template rendered), target <= 300 ms;
  - each of the two as a whole step boundary (gates + commit + events), for reference;
  - one hook call: with the seed's no-op hooks (skipped) and through the isolated worker (a
    round trip, paid up to three times a step once the agent writes real hooks).
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

TOOL = '''#!/usr/bin/env python3
# live-swe-tool: find-def
# description: Print where a Python function or class is defined in the repository
# usage: find-def NAME
import pathlib
import re
import sys

if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
    print("usage: find-def NAME")
    sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 2)
pattern = re.compile(r"^\\s*(def|class)\\s+" + re.escape(sys.argv[1]) + r"\\b")
for path in sorted(pathlib.Path(".").rglob("*.py")):
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if pattern.match(line):
            print(f"{path}:{number}: {line.strip()}")
# revision {i}
'''


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 3)


def _time(func, n: int) -> list[float]:
    samples = []
    for i in range(n):
        started = time.perf_counter()
        func(i)
        samples.append(time.perf_counter() - started)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="samples of change detection")
    parser.add_argument("--gate-n", type=int, default=20, help="samples of each gate")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="live-swe-bench-"))
    os.environ["LIVE_SWE_HOME"] = str(scratch / "home")
    from live_swe.config import KernelLimits
    from live_swe.environments.local import LocalEnvironment
    from live_swe.evolution.gates import check_scaffold
    from live_swe.evolution.guard import GatedScaffold
    from live_swe.evolution.hook_checks import smoke_test
    from live_swe.evolution.tool_gates import tool_problem
    from live_swe.scaffolding.refs import materialize
    from live_swe.session.store import SessionStore

    repo = scratch / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    for command in (["git", "init", "-q"], ["git", "add", "-A"],
                    ["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "init"]):
        subprocess.run(command, cwd=repo, check=True)
    session = SessionStore.default().create(task="bench", model="scripted:bench")
    materialize("seed", session.scaffold_dir)
    env = LocalEnvironment(repo, scaffold_dir=session.scaffold_dir)
    guard = GatedScaffold(session, env, KernelLimits())
    guard.attach(lambda event: None)
    root = session.scaffold_dir

    results: dict[str, float] = {}
    # 1. change detection, nothing changed
    detection = _time(lambda i: guard.after_step(i, ""), args.n)
    results["detect_unchanged_ms"] = _median_ms(detection)
    git_env = {**os.environ, "GIT_DIR": str(session.history_dir), "GIT_WORK_TREE": str(root)}
    results["anchor_git_status_ms"] = _median_ms(_time(
        lambda i: subprocess.run(["git", "status", "--porcelain"], env=git_env, capture_output=True, check=True),
        args.gate_n))

    # 2. a typical tool: the gates alone, then the whole step boundary (gates + commit)
    tool = root / "tools" / "find-def"
    in_env = f"{env.scaffold_dir}/tools/find-def"

    def write_tool(i: int) -> None:
        tool.write_text(TOOL.replace("{i}", str(i)))
        tool.chmod(0o755)

    def tool_gate(i: int) -> None:
        assert tool_problem(tool, env, in_env) is None

    write_tool(0)
    tool_gate(0)  # warm the grammar
    results["tool_gate_ms"] = _median_ms(_time(tool_gate, args.gate_n))
    results["anchor_env_true_ms"] = _median_ms(_time(lambda i: env.execute("true", timeout=10), args.gate_n))
    results["anchor_tool_help_ms"] = _median_ms(_time(lambda i: env.execute(f"{in_env} --help", timeout=10), args.gate_n))

    def tool_step(i: int) -> None:
        write_tool(1000 + i)
        started = time.perf_counter()
        guard.after_step(1000 + i, "THOUGHT: a better tool")
        tool_samples.append(time.perf_counter() - started)

    tool_samples: list[float] = []
    for i in range(args.gate_n):
        tool_step(i)
    results["tool_step_boundary_ms"] = _median_ms(tool_samples)

    # 3. a template edit: the gates alone, then the whole step boundary
    template = root / "prompts" / "observation.j2"
    original = template.read_text()

    def template_gate(i: int) -> None:
        template.write_text(f"{{# edit {i} #}}\n" + original)
        check_scaffold(root, guard.current, KernelLimits(), smoke=lambda src, name: smoke_test(src, name, host=env),
                       previous_hooks=(guard.hooks_source() or ("", None))[1])

    results["template_gate_ms"] = _median_ms(_time(template_gate, args.gate_n))
    template.write_text(original)
    template_samples: list[float] = []
    for i in range(args.gate_n):
        template.write_text(f"{{# step {i} #}}\n" + original)
        started = time.perf_counter()
        notes = guard.after_step(2000 + i, "THOUGHT: mark observations")
        template_samples.append(time.perf_counter() - started)
        assert any("accepted" in n for n in notes), notes
    results["template_step_boundary_ms"] = _median_ms(template_samples)

    # 4. a hook call at a step (seed hooks, worker already running): the per-step cost of isolation
    from live_swe.evolution.hook_client import HookClient

    hooks = HookClient(guard)
    calls = args.gate_n * 10
    observe = lambda i: hooks.transform_observation("<output>ok</output>", i)  # noqa: E731
    results["hook_call_seed_ms"] = _median_ms(_time(observe, calls))  # no-op hooks: skipped, no round trip
    (root / "hooks.py").write_text("def transform_observation(observation, step):\n    return str(observation)\n")
    assert any("accepted" in n for n in guard.after_step(3000, "THOUGHT: hooks")), "hooks not accepted"
    observe(0)  # starts the worker
    results["hook_call_ms"] = _median_ms(_time(observe, calls))
    hooks.close()

    results["n_detect"] = args.n
    results["n_gate"] = args.gate_n
    if args.json:
        print(json.dumps(results))
    else:
        rows = [
            ("change detection, nothing changed", "detect_unchanged_ms", "2 ms"),
            ("  anchor: git status --porcelain", "anchor_git_status_ms", ""),
            ("tool gates (typical python tool)", "tool_gate_ms", "300 ms"),
            ("  anchor: env.execute('true')", "anchor_env_true_ms", ""),
            ("  anchor: the tool's own --help run", "anchor_tool_help_ms", ""),
            ("tool: whole step boundary (gates+commit)", "tool_step_boundary_ms", ""),
            ("template edit gates", "template_gate_ms", "300 ms"),
            ("template: whole step boundary (gates+commit)", "template_step_boundary_ms", ""),
            ("one hook call, seed (no-op) hooks: skipped", "hook_call_seed_ms", ""),
            ("one hook call through the worker (round trip)", "hook_call_ms", ""),
        ]
        for label, key, target in rows:
            print(f"{label:<46} {results[key]:>9.3f} ms  {('target <= ' + target) if target else ''}")
    import shutil

    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
