"""Milliseconds per command in Docker: live-swe's channel vs mini-swe-agent's `docker exec` per command.

Both run `echo hi` N times in a container of the same image, in the same run. mini-swe-agent 2.4.6
is installed into a throwaway virtual environment (it must not share live-swe's dependencies) and
measured there through a subprocess that prints its timings as JSON.

    python benchmarks/docker_exec.py [--image live-swe-base] [-n 200] [--mini-venv /tmp/venv-mini]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

MINI_VERSION = "2.4.6"
COMMAND = "echo hi"

_MINI_PROBE = r"""
import json, sys, time
from minisweagent.environments.docker import DockerEnvironment
image, n, command = sys.argv[1], int(sys.argv[2]), sys.argv[3]
env = DockerEnvironment(image=image)
try:
    for _ in range(5):
        env.execute({"command": command})
    times = []
    for _ in range(n):
        start = time.perf_counter()
        out = env.execute({"command": command})
        times.append(time.perf_counter() - start)
        assert out["returncode"] == 0 and out["output"].strip() == "hi", out
finally:
    env.cleanup()
print(json.dumps(times))
"""


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "median_ms": statistics.median(ordered) * 1000,
        "p90_ms": ordered[int(0.9 * (len(ordered) - 1))] * 1000,
        "n": len(ordered),
    }


def measure_live_swe(image: str, n: int) -> list[float]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from live_swe.environments.docker import DockerEnvironment

    with DockerEnvironment(image, repo_dir="/tmp", labels={"live-swe.bench": "docker_exec"}) as env:
        for _ in range(5):
            env.execute(COMMAND, timeout=30)
        times = []
        for _ in range(n):
            start = time.perf_counter()
            out = env.execute(COMMAND, timeout=30)
            times.append(time.perf_counter() - start)
            assert out.returncode == 0 and out.text == "hi\n", out
    return times


def ensure_mini(venv: Path) -> Path:
    python = venv / "bin" / "python"
    probe = [str(python), "-c", f"import importlib.metadata as m; assert m.version('mini-swe-agent') == '{MINI_VERSION}'"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    print(f"installing mini-swe-agent=={MINI_VERSION} into {venv} ...", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", f"mini-swe-agent=={MINI_VERSION}"], check=True)
    return python


def measure_mini(python: Path, image: str, n: int) -> list[float]:
    done = subprocess.run([str(python), "-c", _MINI_PROBE, image, str(n), COMMAND],
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"mini-swe-agent's run failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--image", default="live-swe-base")
    parser.add_argument("-n", type=int, default=200, help="commands per environment")
    parser.add_argument("--mini-venv", type=Path, default=Path("/tmp/venv-mini"))
    parser.add_argument("--skip-mini", action="store_true", help="measure live-swe only")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args()

    results = {"live-swe": summary(measure_live_swe(args.image, args.n))}
    if not args.skip_mini:
        results[f"mini-swe-agent {MINI_VERSION}"] = summary(measure_mini(ensure_mini(args.mini_venv), args.image, args.n))
    if args.json:
        print(json.dumps({"image": args.image, "command": COMMAND, "results": results}))
        return
    print(f"{COMMAND!r} x {args.n} in {args.image}")
    print(f"{'environment':<24}{'median ms':>12}{'p90 ms':>12}")
    for name, row in results.items():
        print(f"{name:<24}{row['median_ms']:>12.2f}{row['p90_ms']:>12.2f}")
    if len(results) == 2:
        live, mini = results.values()
        print(f"speed-up (median): {mini['median_ms'] / live['median_ms']:.1f}x")


if __name__ == "__main__":
    main()
