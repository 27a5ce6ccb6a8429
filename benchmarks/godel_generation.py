"""Wall time and container count of one ``evolve`` generation on the local suite (Docker, scripted models).

One generation = the root scaffold evaluated on the selection split's last stage, then K children:
diagnosis, the improver's agent run (local environment, on a repository holding the parent's
scaffold), the gates, and the staged evaluation (each stage a ``run_batch`` + harness ``evaluate``).
Child 0 improves (its solver then fixes every task), child 1 regresses (stopped at stage 1), so both
paths of the staging are in the figure. Containers are counted from the engine's own ``create``
events, split into agent containers (labelled by the batch runner) and harness containers.

The anchor, measured in the same run: a plain ``run_batch`` + ``evaluate_batch`` of the seed scaffold
on the same selection instances with the same solver, per instance run.

    python benchmarks/godel_generation.py [--instances 4] [--children 2] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SUITE = "local:local"
BASE_IMAGE = os.environ.get("LIVE_SWE_TEST_BASE_IMAGE", "live-swe-base")
MARKER = "MARKER-FIX"
BASELINE = "one shell command at a time"


def bash(command: str, thought: str = "Next.") -> str:
    return f"THOUGHT: {thought}\n\n```bash\n{command}\n```"


SUBMIT = bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "Done.")
IMPROVER_SCRIPTS = {
    "improve": [bash(f"printf '\\n{MARKER}: fix the constant you are told about.\\n' >> prompts/system.j2"), SUBMIT],
    "regress": [bash(f"sed -i 's/{BASELINE}/commands/' prompts/system.j2"), SUBMIT],
}


class FixIfMarked:
    """The solver: applies the instance's fix only when its system prompt carries the marker."""

    def __init__(self, name: str, patch: str):
        self.name, self.patch, self.calls = name, patch, 0

    def query(self, messages, *, tools=None, on_token=None):
        from live_swe.models.base import Reply

        self.calls += 1
        if self.calls > 1:
            return Reply(SUBMIT)
        if MARKER in messages[0]["content"]:
            return Reply(bash(f"cat > /tmp/fix.diff <<'LIVE_SWE_EOF'\n{self.patch.rstrip()}\nLIVE_SWE_EOF\n"
                              "git apply /tmp/fix.diff"))
        return Reply(bash("git status --short"))


def solver_factory(name, instance):
    return FixIfMarked(name, instance.patch)


class Improver:
    def __call__(self, parent_dir: Path, task: str, workdir: Path):
        from godel.improve import AgentImprover
        from live_swe.models.base import Reply
        from live_swe.models.scripted import ScriptedModel

        script = IMPROVER_SCRIPTS["improve" if workdir.name.endswith("c0") else "regress"]
        return AgentImprover("improver", model_factory=lambda name: ScriptedModel(
            [Reply(t) for t in script], name=name))(parent_dir, task, workdir)


def ensure_images(client) -> list[str]:
    from live_swe.bench.images import build_images, image_statuses
    from live_swe.bench.suites import load_suite

    suite = load_suite(SUITE)
    missing = [s.image for s in image_statuses(suite, client) if not s.present]
    if missing:
        print(f"building {len(missing)} local-suite image(s) FROM {BASE_IMAGE}...", file=sys.stderr)
        build_images(suite, client, missing, base=BASE_IMAGE)
    return [i.instance_id for i in suite.instances if i.suite_kind != "pro"]


class ContainerCounter:
    """Streams the engine's container ``create`` events while a measurement runs (the engine keeps
    only a short backlog of past events, and it is shared, so events are read live and filtered)."""

    def __init__(self, client):
        import threading

        self.events: list[dict] = []
        self._stream = client.events(filters={"type": "container", "event": "create"}, decode=True)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for event in self._stream:
                self.events.append(event)
        except Exception:  # noqa: BLE001 - the stream is closed when counting is done
            pass

    def count(self, run_prefix: str) -> dict[str, int]:
        """Ours only: containers of our batches (by label) and of our harness run ids (by name)."""
        time.sleep(1.0)
        self._stream.close()
        home = Path(os.environ["LIVE_SWE_HOME"])
        batches = {json.loads(p.read_text()).get("batch_id") for p in home.rglob("batch.json")}
        counts = {"agent": 0, "harness": 0}
        for event in self.events:
            attributes = event.get("Actor", {}).get("Attributes", {})
            name = attributes.get("name", "")
            if attributes.get("live-swe.batch") in batches:
                counts["agent"] += 1
            elif name.startswith("sweb.eval.") and f".{run_prefix}" in name:
                counts["harness"] += 1
        counts["total"] = sum(counts.values())
        return counts


def one_generation(client, ids: list[str], children: int) -> dict:
    from godel.evaluation import BenchEvaluator
    from godel.evolve import EvolveConfig, Evolver
    from godel.staging import Stage

    os.environ["LIVE_SWE_HOME"] = tempfile.mkdtemp(prefix="godel-bench-home-")
    evaluator = BenchEvaluator(SUITE, "solver", model_factory=solver_factory, run_id="godel-bench")
    size = len(ids) - max(1, round(0.25 * len(ids)))
    config = EvolveConfig(suite=SUITE, model="solver", improver_model="improver", generations=1, children=children,
                          seed=1, report_fraction=0.25, instances=ids,
                          stages=[Stage(size=max(1, size // 2), threshold=0.5), Stage(size=size, threshold=0.0)])
    counter = ContainerCounter(client)
    started = time.monotonic()
    evolver = Evolver(config, evaluate=evaluator, improve=Improver(), instance_ids=evaluator.instance_ids)
    state = evolver.run()
    wall = time.monotonic() - started
    ran = [json.loads(line) for line in (evolver.run_dir / "ran.jsonl").read_text().splitlines()]
    return {
        "wall_s": round(wall, 2),
        "containers": counter.count("godel-bench"),
        "agent_runs": sum(len(e["instances"]) for e in ran),
        "children": {c.id: c.status for c in state.children.values()},
        "selection": len(state.selection_split),
    }


def anchor(client, ids: list[str]) -> dict:
    """Plain bench: run_batch + evaluate_batch of a marked scaffold (so every patch goes through the
    harness) on the same instances with the same solver."""
    from live_swe.bench.batch import run_batch
    from live_swe.bench.evaluate import evaluate_batch
    from live_swe.scaffolding.refs import materialize

    os.environ["LIVE_SWE_HOME"] = tempfile.mkdtemp(prefix="godel-bench-anchor-")
    marked = Path(os.environ["LIVE_SWE_HOME"]) / "marked"
    materialize("seed", marked, library=None)
    with (marked / "prompts" / "system.j2").open("a") as handle:
        handle.write(f"\n{MARKER}: fix the constant you are told about.\n")
    out = Path(os.environ["LIVE_SWE_HOME"]) / "batch"
    counter = ContainerCounter(client)
    started = time.monotonic()
    run_batch(SUITE, model="solver", out=out, instances=ids, model_factory=solver_factory, show_progress=False,
              scaffold=f"path:{marked}")
    evaluate_batch(out, suite_spec=SUITE, run_id="godel-anchor")
    wall = time.monotonic() - started
    return {"wall_s": round(wall, 2), "per_instance_s": round(wall / len(ids), 2),
            "containers": counter.count("godel-anchor")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=4)
    parser.add_argument("--children", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO_ROOT))
    import docker

    client = docker.from_env()
    ids = ensure_images(client)[: args.instances]
    generations, anchors = [], []
    for repeat in range(args.repeats):
        generations.append(one_generation(client, ids, args.children))
        selection_ids = ids[: generations[-1]["selection"]]
        anchors.append(anchor(client, selection_ids))
        print(f"repeat {repeat + 1}: generation {generations[-1]['wall_s']} s, "
              f"{generations[-1]['containers']['total']} containers; anchor {anchors[-1]['wall_s']} s",
              file=sys.stderr)
    median_wall = statistics.median(g["wall_s"] for g in generations)
    anchor_per_run = statistics.median(a["per_instance_s"] for a in anchors)
    runs = generations[0]["agent_runs"]
    print(json.dumps({
        "suite": SUITE, "instances": len(ids), "children": args.children, "repeats": args.repeats,
        "generation_wall_s": [g["wall_s"] for g in generations],
        "generation_wall_median_s": median_wall,
        "containers_per_generation": generations[0]["containers"],
        "agent_instance_runs_per_generation": runs,
        "children_outcome": generations[0]["children"],
        "anchor_plain_bench_per_instance_s": [a["per_instance_s"] for a in anchors],
        "anchor_plain_bench_per_instance_median_s": anchor_per_run,
        "anchor_containers": anchors[0]["containers"],
        # Per agent run in the generation (improver runs, gates and diagnosis included) against the
        # anchor's per run; the anchor grades every run in the harness, the generation only patched ones.
        "generation_per_agent_run_s": round(median_wall / runs, 2),
    }, indent=2))


if __name__ == "__main__":
    main()
