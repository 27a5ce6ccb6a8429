"""How long a model that cannot answer takes to be refused: live-swe vs mini-swe-agent, one run.

Two models that cannot answer: an unknown provider (``nonsense/model``) and a provider whose key is
not set (``openai/gpt-5-mini`` without ``OPENAI_API_KEY``). For each, the wall time from starting
the command to its exit, with its exit code, on the same git repository, provider keys removed from
the environment. live-swe refuses before a session exists; the anchor is mini-swe-agent 2.4.6's
``mini`` on the same task (capped at ``--cap`` seconds).

    python benchmarks/model_check.py [--runs 5] [--mini-venv /tmp/venv-mini-bench] [--cap 180]

mini-swe-agent 2.4.6 is installed into a throwaway venv on first use.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODELS = ("nonsense/model", "openai/gpt-5-mini")
MINI_VERSION = "2.4.6"


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    return repo


def ensure_mini(venv: Path) -> Path:
    mini = venv / "bin" / "mini"
    if not mini.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"mini-swe-agent=={MINI_VERSION}"], check=True)
    return mini


def timed(command: list[str], cwd: Path, env: dict[str, str], cap: float) -> tuple[float, str]:
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=cap)
        code = str(done.returncode)
    except subprocess.TimeoutExpired:
        code = f"still running at {cap:g} s"
    return time.monotonic() - started, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mini-venv", type=Path, default=Path("/tmp/venv-mini-bench"))
    parser.add_argument("--mini-runs", type=int, default=1, help="the anchor may retry for a minute per run")
    parser.add_argument("--cap", type=float, default=180.0)
    args = parser.parse_args()
    mini = ensure_mini(args.mini_venv)
    with tempfile.TemporaryDirectory(prefix="live-swe-model-check-") as tmp:
        root = Path(tmp)
        repo = make_repo(root)
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(LIVE_SWE_HOME=str(root / "home"), LITELLM_LOCAL_MODEL_COST_MAP="True", MSWEA_CONFIGURED="true")
        ours_cli = [sys.executable, "-m", "live_swe.cli.main", "run", "-t", "Fix add().", "--yolo", "--repo", str(repo)]
        print(f"{'model':<20} {'live-swe median s':>18} {'exit':>5} {'sessions':>9}   "
              f"{'mini-swe-agent ' + MINI_VERSION + ' s':>24} {'exit':>5}")
        for model in MODELS:
            ours = [timed([*ours_cli, "--model", model], repo, env, args.cap) for _ in range(args.runs)]
            sessions = root / "home" / "sessions"
            made = len(list(sessions.iterdir())) if sessions.is_dir() else 0
            theirs = [timed([str(mini), "-m", model, "-t", "Fix add().", "--yolo", "--exit-immediately"], repo, env,
                            args.cap) for _ in range(args.mini_runs)]
            print(f"{model:<20} {statistics.median(t for t, _ in ours):>18.2f} {ours[-1][1]:>5} {made:>9}   "
                  f"{statistics.median(t for t, _ in theirs):>24.2f} {theirs[-1][1]:>5}")


if __name__ == "__main__":
    main()
