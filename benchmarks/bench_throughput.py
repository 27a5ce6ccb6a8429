"""Batch throughput in Docker and where each instance's time goes.

Runs ``run_batch`` on a local suite with a scripted model (look around, touch one file, submit: three
steps per instance) at 1 and 2 workers and reports instances per minute. Each instance's time is
split from its ``results.jsonl`` record (setup: session + scaffold + container start + repository
check; agent steps; patch extraction; teardown), and the pieces are also measured directly:

- container start / removal: ``DockerEnvironment(image)`` and ``close()``
- repository copy: ``DockerEnvironment(base, copy_repo_from=REPO)`` minus a plain start
- patch extraction: ``repository_patch`` after a one-line edit
- anchor: the engine's floor for one container per instance, ``docker run --rm IMAGE true``

    python benchmarks/bench_throughput.py [--suite local:local] [--instances 6] [--repeats 2]

Without ``--suite`` it uses ``local:local`` when that suite and its images are present, else it builds
a small suite of its own FROM the registry-free base image (``live-swe-base``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
BASE_IMAGE = os.environ.get("LIVE_SWE_TEST_BASE_IMAGE", "live-swe-base")
OWN_IMAGE = "live-swe-bench-throughput:latest"


def bash(command: str) -> str:
    return f"THOUGHT: next.\n\n```bash\n{command}\n```"


# Works in any repository: look, touch the first tracked file, submit.
SCRIPT = [
    bash("git status --short && ls | head -20"),
    bash("f=\"$(git ls-files | grep -v '^\\.' | head -1)\" && echo '# touched by the benchmark' >> \"$f\" && git diff --stat"),
    bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
]


def model_factory(name, instance):
    from live_swe.models.base import Reply
    from live_swe.models.scripted import ScriptedModel

    return ScriptedModel([Reply(text) for text in SCRIPT], name=name)


# -- the suite --------------------------------------------------------------------------------------


def _docker():
    import docker

    return docker.from_env()


def _have_image(client, image: str) -> bool:
    from docker.errors import ImageNotFound

    try:
        client.images.get(image)
        return True
    except ImageNotFound:
        return False


def shipped_suite_ready(client) -> bool:
    from live_swe.bench.suites import SuiteError, load_suite

    try:
        suite = load_suite("local:local")
    except SuiteError:
        return False
    return len(suite) > 0 and all(_have_image(client, i.image) for i in suite.instances if i.suite_kind == "local")


def build_own_suite(client, root: Path, count: int) -> str:
    """``count`` instances over one small multi-file repository at /testbed, FROM the base image."""
    context = root / "image"
    repo = context / "repo"
    for package in ("shop", "shop/tests"):
        (repo / package).mkdir(parents=True, exist_ok=True)
    (repo / "shop/__init__.py").write_text("")
    (repo / "shop/cart.py").write_text("def total(items):\n    return sum(p * q for p, q in items)\n")
    (repo / "shop/tests/test_cart.py").write_text("from shop.cart import total\n\n\ndef test_total():\n    assert total([(2, 3)]) == 6\n")
    for n in range(40):  # some bulk, like a real small project
        (repo / f"shop/module_{n}.py").write_text("".join(f"def f{k}(x):\n    return x + {k}\n\n\n" for k in range(30)))
    (context / "Dockerfile").write_text(textwrap.dedent("""\
        ARG BASE
        FROM ${BASE}
        COPY repo /testbed
        RUN cd /testbed && git init -q -b main && git add -A \\
            && git -c user.email=b@b -c user.name=b commit -q -m initial
        """))
    client.images.build(path=str(context), tag=OWN_IMAGE, buildargs={"BASE": BASE_IMAGE}, rm=True)
    suite_dir = root / "suite"
    suite_dir.mkdir()
    rows = [{
        "instance_id": f"bench__shop-{n}", "repo": "bench/shop", "base_commit": "HEAD", "patch": "", "test_patch": "",
        "problem_statement": "total() is wrong for discounts.", "hints_text": "", "version": "0",
        "FAIL_TO_PASS": "[]", "PASS_TO_PASS": "[]", "environment_setup_commit": "HEAD", "eval_script": "",
        "log_parser": "pytest", "eval_type": "pass_and_fail", "image": OWN_IMAGE,
    } for n in range(count)]
    (suite_dir / "instances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f"local:{suite_dir}"


# -- measurements -----------------------------------------------------------------------------------


def batch_run(suite: str, instance_ids: list[str], workers: int, out: Path) -> dict:
    from live_swe.bench.batch import run_batch

    started = time.perf_counter()
    summary = run_batch(suite, model="scripted-bench", out=out, workers=workers, instances=instance_ids,
                        model_factory=model_factory, show_progress=False)
    wall = time.perf_counter() - started
    if summary.failed:
        reasons = {r["instance_id"]: r["reason"] for r in summary.records if not r.get("finished")}
        raise SystemExit(f"benchmark batch had failures: {reasons}")
    return {"wall_s": wall, "per_min": 60 * summary.done / wall, "records": summary.records}


def phase_medians(records: list[dict]) -> dict[str, float]:
    phases = ("setup", "agent", "patch", "teardown")
    return {p: statistics.median(r["timings"][p] for r in records if p in r["timings"]) for p in phases} | {
        "total": statistics.median(r["elapsed"] for r in records)}


def direct_pieces(image: str, repeats: int) -> dict[str, float]:
    from live_swe.agent.patch import base_commit, repository_patch
    from live_swe.environments.docker import DockerEnvironment

    client = _docker()
    start, close, copy_start, patch, anchor = [], [], [], [], []
    with tempfile.TemporaryDirectory(prefix="live-swe-bench-repo-") as tmp:
        host_repo = Path(tmp) / "repo"
        probe = DockerEnvironment(image)
        repo_dir = probe.repo_dir
        probe.copy_out(repo_dir, host_repo)
        probe.close()
        files = sum(1 for p in host_repo.rglob("*") if p.is_file())
        size = sum(p.stat().st_size for p in host_repo.rglob("*") if p.is_file())
        for _ in range(repeats):
            t0 = time.perf_counter()
            env = DockerEnvironment(image)
            t1 = time.perf_counter()
            base = base_commit(env)
            env.execute("f=\"$(git ls-files | head -1)\" && echo '# x' >> \"$f\"", timeout=30)
            t2 = time.perf_counter()
            repository_patch(env, base)
            t3 = time.perf_counter()
            env.close()
            t4 = time.perf_counter()
            start.append(t1 - t0)
            patch.append(t3 - t2)
            close.append(t4 - t3)

            t0 = time.perf_counter()
            env = DockerEnvironment(BASE_IMAGE, repo_dir="/work/repo", copy_repo_from=host_repo)
            copy_start.append(time.perf_counter() - t0)
            env.close()

            t0 = time.perf_counter()
            client.containers.run(image, "true", remove=True)
            anchor.append(time.perf_counter() - t0)
    med = statistics.median
    return {
        "container_start_s": med(start),
        "container_remove_s": med(close),
        "repo_copy_s": max(0.0, med(copy_start) - med(start)),
        "repo_files": files,
        "repo_bytes": size,
        "patch_extraction_s": med(patch),
        "anchor_docker_run_true_s": med(anchor),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", help="suite spec (default: local:local when ready, else a suite built here)")
    parser.add_argument("--instances", type=int, default=6, help="instances per batch (default 6)")
    parser.add_argument("--repeats", type=int, default=2, help="batches per worker count (default 2)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    client = _docker()
    with tempfile.TemporaryDirectory(prefix="live-swe-bench-throughput-") as tmp:
        root = Path(tmp)
        os.environ.setdefault("LIVE_SWE_HOME", str(root / "home"))
        spec = args.suite or ("local:local" if shipped_suite_ready(client) else "")
        try:
            result = measure(spec or build_own_suite(client, root, args.instances), args, root)
        finally:
            if not spec:
                client.images.remove(OWN_IMAGE, force=True)
    report(result, args.json)


def measure(spec: str, args, root: Path) -> dict:
    from live_swe.bench.suites import load_suite

    suite = load_suite(spec)
    chosen = [i for i in suite.instances if i.suite_kind != "pro"][: args.instances]
    ids = [i.instance_id for i in chosen]
    runs: dict[int, list[dict]] = {1: [], 2: []}
    for repeat in range(args.repeats):
        for workers in (1, 2):
            runs[workers].append(batch_run(spec, ids, workers, root / f"out-{workers}-{repeat}"))
    pieces = direct_pieces(chosen[0].image, repeats=5)
    result = {
        "suite": spec if not spec.startswith("local:/") else "local:(built here)",
        "instances": len(ids),
        "steps_per_instance": len(SCRIPT),
        "cpus": os.cpu_count(),
        "throughput_per_min": {w: statistics.median(r["per_min"] for r in rs) for w, rs in runs.items()},
        "throughput_runs": {w: [round(r["per_min"], 2) for r in rs] for w, rs in runs.items()},
        "phases_s_workers1": phase_medians([rec for r in runs[1] for rec in r["records"]]),
        "phases_s_workers2": phase_medians([rec for r in runs[2] for rec in r["records"]]),
        "direct": pieces,
    }
    return result


def report(result: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(result, indent=2))
        return
    print(f"suite {result['suite']}: {result['instances']} instances x {result['steps_per_instance']} steps, "
          f"{result['cpus']} CPUs")
    for workers, rate in result["throughput_per_min"].items():
        print(f"  workers={workers}: {rate:6.2f} instances/min (median of {result['throughput_runs'][workers]})")
    for workers in (1, 2):
        phases = result[f"phases_s_workers{workers}"]
        print(f"  per instance, workers={workers} (median s): " + ", ".join(f"{k} {v:.3f}" for k, v in phases.items()))
    d = result["direct"]
    print(f"  direct (median s): container start {d['container_start_s']:.3f}, remove {d['container_remove_s']:.3f}, "
          f"repo copy {d['repo_copy_s']:.3f} ({d['repo_files']} files, {d['repo_bytes'] // 1024} KiB), "
          f"patch extraction {d['patch_extraction_s']:.3f}")
    print(f"  anchor: `docker run --rm IMAGE true` {d['anchor_docker_run_true_s']:.3f} s")


if __name__ == "__main__":
    sys.exit(main())
