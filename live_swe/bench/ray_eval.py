"""``bench eval --executor ray``: each instance is graded by one Ray task on a node with Docker.

The task runs the same evaluation as the thread pool (``evaluate.evaluate``) on that one instance,
in a folder of its own on its node, so the image is looked up there (an instance whose image that
node lacks is ``missing_image``, with how to get it). It sends back the outcome, the harness's run
report and the logs; the driver puts the logs under ``DIR/eval/`` as the thread pool lays them out,
merges the run reports into one (``DIR/<model>.<run id>.json``) and alone writes ``report.json``.
A task lost with its node is run again elsewhere (bounded); Ctrl-C cancels the tasks.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from live_swe.bench.evaluate import EVAL_DIR, EvalReport, Outcome, evaluate, finish_report
from live_swe.bench.ray_cluster import connect, node_identity, pack, task_options, unpack
from live_swe.bench.suites import Instance, Suite

CANCEL_GRACE_S = 10.0


def evaluate_on_ray(suite: Suite, instances: list[Instance], predictions: dict[str, dict], *, out: Path,
                    run_id: str, pro_repo: Path | None, timeout: int, no_prediction: list[str],
                    image_template: str | None, ray_address: str | None) -> EvalReport:
    """Grade ``instances`` as Ray tasks; the report as ``evaluate`` writes it (see the module doc)."""
    ray = connect(ray_address)
    grade = ray.remote(_grade_on_node).options(**task_options())
    report = EvalReport(suite=suite.name, run_id=run_id)
    refs = {grade.remote(Suite(suite.name, suite.kind, [instance], suite.source),
                         predictions.get(instance.instance_id) or {}, run_id, pro_repo, timeout, image_template):
            instance.instance_id for instance in instances}
    outcomes: dict[str, Outcome] = {}
    harness: dict[str, dict] = {}
    pending = list(refs)
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                instance_id = refs[ref]
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    reason = (str(exc).strip().splitlines() or [exc.__class__.__name__])[-1][:500]
                    outcomes[instance_id] = Outcome(instance_id, False, "error", suite.get(instance_id).suite_kind,
                                                    f"the Ray task grading it failed: {reason}")
                    continue
                _take(result, out, outcomes, harness, report)
    except KeyboardInterrupt:
        for ref in pending:
            ray.cancel(ref)
        ray.wait(pending, num_returns=len(pending), timeout=CANCEL_GRACE_S)
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    for name, data in harness.items():
        path = out / name
        path.write_text(json.dumps(data, indent=4) + "\n")
        report.harness_report = str(path)
    return finish_report(report, outcomes, instances, no_prediction, out)


def _take(result: dict[str, Any], out: Path, outcomes: dict[str, Outcome], harness: dict[str, dict],
          report: EvalReport) -> None:
    """One task's result into the driver's folder: logs under eval/, paths made the driver's."""
    unpack(result["eval"], out / EVAL_DIR)
    here = lambda text: text.replace(result["root"], str(out))  # noqa: E731 - paths on the node, made ours
    for raw in result["outcomes"]:
        outcome = Outcome(**{**raw, "detail": here(raw["detail"]), "log_dir": here(raw["log_dir"])})
        outcomes[outcome.instance_id] = outcome
    report.missing_images += [f"{line} (on the Ray node {result['host']})" for line in result["missing_images"]]
    if result["harness_name"]:
        _merge_run_report(harness.setdefault(result["harness_name"], {}), json.loads(result["harness_text"]))


def _merge_run_report(into: dict, part: dict) -> None:
    """The harness's run reports of single instances as one: counts added, id lists joined."""
    for key, value in part.items():
        if isinstance(value, bool) or key not in into:
            into[key] = value
        elif isinstance(value, int) and key.endswith("_instances"):
            into[key] += value
        elif isinstance(value, list):
            into[key] = sorted(set(into[key]) | set(value))
        elif isinstance(value, dict):
            into[key] = {**into[key], **value}


def _grade_on_node(suite: Suite, prediction: dict, run_id: str, pro_repo: Path | None, timeout: int,
                   image_template: str | None) -> dict[str, Any]:
    """The Ray task: grade one instance on this node; its outcome, run report and logs."""
    where = node_identity()
    (instance,) = suite.instances
    with tempfile.TemporaryDirectory(prefix="live-swe-ray-eval-") as tmp:
        root = Path(tmp)
        predictions = {instance.instance_id: prediction} if prediction else {}
        graded = evaluate(suite, [instance], predictions, out=root, run_id=run_id, pro_repo=pro_repo, workers=1,
                          timeout=timeout, image_template=image_template)
        harness = Path(graded.harness_report) if graded.harness_report else None
        return {"outcomes": [asdict(o) for o in graded.outcomes], "missing_images": graded.missing_images,
                "harness_name": harness.name if harness and harness.is_file() else "",
                "harness_text": harness.read_text() if harness and harness.is_file() else "",
                "eval": pack(root / EVAL_DIR), "root": str(root), **where}
