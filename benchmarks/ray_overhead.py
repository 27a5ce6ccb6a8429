"""Per-instance overhead of ``--executor ray`` against the thread pool, same run, side by side.

Runs the same batch of the local suite (a scripted model: look around, touch one file, submit) with
the thread pool (``--workers 2``) and on a Ray cluster with two ``docker`` units, ``--repeats`` times
each, and reports per instance (medians, seconds):

- driver: the time ``run_one`` takes on the driver for an instance (thread pool: the run itself;
  Ray: scheduling, the task's run on its node, sending back and unpacking its session);
- in task: the run itself as the instance's record books it (``elapsed``);
- overhead: Ray's driver time less its in-task time, paired per instance (the anchor: the thread
  pool's, which is ~0), and the difference of the two executors' driver medians;
- tasks per node, to show the work is spread.

    python benchmarks/ray_overhead.py [--instances 6] [--repeats 2] [--ray-address HOST:PORT]

Without ``--ray-address`` it starts a cluster on loopback (a head on 127.0.0.1 and a worker node on
127.0.0.2, one ``docker`` unit each) and stops it (its own processes, by PID) at the end.
Needs the local suite's images (``live-swe bench images local:local --build --base live-swe-base``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))  # the loopback cluster the tests use too
from ray_nodes import RayNode, start_cluster  # noqa: E402

SUITE = "local:local"
SCRIPT = [
    "THOUGHT: look.\n\n```bash\ngit status --short && ls | head -20\n```",
    "THOUGHT: touch.\n\n```bash\nf=\"$(git ls-files | grep -v '^\\.' | head -1)\" && echo '# bench' >> \"$f\"\n```",
    "THOUGHT: done.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```",
]


def model_factory(name, instance):  # sent to the nodes by value (it lives in __main__)
    from live_swe.models.base import Reply
    from live_swe.models.scripted import ScriptedModel

    return ScriptedModel([Reply(text) for text in SCRIPT], name=name)


# -- measuring --------------------------------------------------------------------------------------


def _timed(cls, durations: list[tuple[str, float]]):
    original = cls.run_one

    def run_one(self, job):
        started = time.perf_counter()
        try:
            return original(self, job)
        finally:
            durations.append((job.instance.instance_id, time.perf_counter() - started))

    cls.run_one = run_one
    return original


def batch(ids: list[str], out: Path, executor: str, address: str | None) -> dict:
    from live_swe.bench.batch import _Batch, run_batch
    from live_swe.bench.ray_batch import RayBatch

    durations: list[tuple[str, float]] = []
    cls = RayBatch if executor == "ray" else _Batch
    original = _timed(cls, durations)
    started = time.perf_counter()
    try:
        summary = run_batch(SUITE, model="scripted-bench", out=out, workers=2, instances=ids,
                            model_factory=model_factory, show_progress=False, executor=executor,
                            ray_address=address)
    finally:
        cls.run_one = original
    wall = time.perf_counter() - started
    if summary.failed or summary.done != len(ids):
        raise SystemExit(f"the {executor} batch had failures: {[r.get('reason') for r in summary.records]}")
    elapsed = {r["instance_id"]: r["elapsed"] for r in summary.records}
    return {"wall_s": wall, "driver_s": [d for _, d in durations],
            "in_task_s": list(elapsed.values()), "overhead_s": [d - elapsed[i] for i, d in durations],
            "nodes": Counter(f"{r['host']}/{r['node'][:8]}" for r in summary.records if r.get("node"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=6, help="instances per batch (default 6)")
    parser.add_argument("--repeats", type=int, default=2, help="batches per executor (default 2)")
    parser.add_argument("--ray-address", help="an existing cluster (default: one started here on loopback)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

    from live_swe.bench.suites import load_suite

    ids = [i.instance_id for i in load_suite(SUITE).instances if i.suite_kind != "pro"][: args.instances]
    nodes: list[RayNode] = []
    with tempfile.TemporaryDirectory(prefix="live-swe-ray-overhead-") as tmp:
        root = Path(tmp)
        os.environ.setdefault("LIVE_SWE_HOME", str(root / "home"))
        address = args.ray_address
        try:
            if not address:
                address, nodes = start_cluster(root, head_docker=1, workers=1)
            runs: dict[str, list[dict]] = {"thread": [], "ray": []}
            batch(ids[:1], root / "warm", "ray", address)  # the nodes' first worker processes
            for repeat in range(args.repeats):
                for executor in ("thread", "ray"):
                    runs[executor].append(batch(ids, root / f"{executor}-{repeat}", executor, address))
        finally:
            import ray

            if ray.is_initialized():
                ray.shutdown()
            for node in reversed(nodes):
                node.stop()
    report(ids, runs, args.json)


def report(ids: list[str], runs: dict[str, list[dict]], as_json: bool) -> None:
    def median(executor: str, key: str) -> float:
        return statistics.median(v for run in runs[executor] for v in run[key])

    result = {"suite": SUITE, "instances": len(ids), "repeats": len(runs["ray"]), "cpus": os.cpu_count(),
              **{f"{e}_{k}": round(median(e, k), 3) for e in runs for k in ("driver_s", "in_task_s", "overhead_s")},
              "wall_s": {e: [round(r["wall_s"], 2) for r in rs] for e, rs in runs.items()},
              "ray_tasks_per_node": dict(sum((r["nodes"] for r in runs["ray"]), Counter()))}
    result["driver_difference_s"] = round(result["ray_driver_s"] - result["thread_driver_s"], 3)
    if as_json:
        print(json.dumps(result, indent=2))
        return
    print(f"{SUITE}: {len(ids)} instances x {len(SCRIPT)} steps, {result['repeats']} batches per executor, "
          f"2 at a time, {result['cpus']} CPUs (medians, seconds per instance)")
    print(f"  {'':<10} {'driver':>8} {'in task':>8} {'overhead':>9}  batch wall (s)")
    for executor in ("thread", "ray"):
        print(f"  {executor:<10} {result[executor + '_driver_s']:8.3f} {result[executor + '_in_task_s']:8.3f} "
              f"{result[executor + '_overhead_s']:9.3f}  {result['wall_s'][executor]}")
    print(f"  ray - thread (driver medians): {result['driver_difference_s']:+.3f} s per instance")
    print("  ray tasks per node: " + ", ".join(f"{n} {c}" for n, c in sorted(result["ray_tasks_per_node"].items())))


if __name__ == "__main__":
    sys.exit(main())
