"""The seam between the Gödel engine and the benchmark runner.

An *evaluator* runs one scaffold on some instances and says which were resolved::

    evaluate(scaffold_ref, instance_ids, out_dir) -> {instance_id: Outcome | bool}

The default, :class:`BenchEvaluator`, is ``live-swe bench run`` + ``bench eval`` (Docker, the
official harness); tests plug in their own. Everything above this seam (validate, evolve) only sees
outcomes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from live_swe.bench.batch import SESSIONS_DIR, run_batch
from live_swe.bench.evaluate import REPORT_FILE, evaluate_batch
from live_swe.bench.preds import PREDS_FILE, read_preds
from live_swe.bench.suites import load_suite


@dataclass(frozen=True)
class Outcome:
    resolved: bool
    cost: float = 0.0
    session_dir: str | None = None  # the instance's session (diagnosis reads its event log)
    status: str = ""  # how the agent's run ended (submitted, limits_exceeded, error...)


Evaluate = Callable[[str, list[str], Path], dict[str, Any]]


def normalise(raw: dict[str, Any], instance_ids: list[str]) -> dict[str, Outcome]:
    """Outcomes for exactly ``instance_ids``: bools become outcomes, missing ones count as unresolved."""
    outcomes = {}
    for instance_id in instance_ids:
        value = raw.get(instance_id)
        if isinstance(value, Outcome):
            outcomes[instance_id] = value
        else:
            outcomes[instance_id] = Outcome(resolved=bool(value), status="" if value is not None else "missing")
    return outcomes


class BenchEvaluator:
    """Batch-run a scaffold on a suite in Docker, then evaluate the predictions with the harness."""

    def __init__(self, suite: str, model: str, *, workers: int = 1, limits: Any = None,
                 model_factory: Callable[[str], Any] | None = None, image_override: str | None = None,
                 show_progress: bool = False, run_id: str = "godel", executor: str = "thread",
                 ray_address: str | None = None):
        self.suite = suite
        self.executor = executor  # "ray": each instance's run and grading is a task on a Ray cluster
        self.ray_address = ray_address
        self.model = model
        self.workers = workers
        self.limits = limits
        self.model_factory = model_factory
        self.image_override = image_override
        self.show_progress = show_progress
        self.run_id = run_id

    def instance_ids(self) -> list[str]:
        return [i.instance_id for i in load_suite(self.suite).instances]

    def __call__(self, scaffold_ref: str, instance_ids: list[str], out_dir: Path) -> dict[str, Outcome]:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        summary = run_batch(
            self.suite, model=self.model, out=out_dir, workers=self.workers, instances=list(instance_ids),
            scaffold=scaffold_ref, limits=self.limits, image_override=self.image_override,
            model_factory=self.model_factory, show_progress=self.show_progress, executor=self.executor,
            ray_address=self.ray_address,
        )
        if summary.interrupted:
            raise KeyboardInterrupt
        runs = _batch_runs(out_dir)
        resolved = self._evaluate(out_dir) if runs else set()
        outcomes = {}
        for instance_id in instance_ids:
            run = runs.get(instance_id)
            if run is None:  # the agent never finished (an infrastructure failure): not resolved
                outcomes[instance_id] = Outcome(False, status="error")
            else:
                outcomes[instance_id] = Outcome(instance_id in resolved, run["cost"], run["session_dir"], run["status"])
        return outcomes

    def _evaluate(self, out_dir: Path) -> set[str]:
        """Grade the folder's predictions (the harness, in Docker); a report newer than them is reused."""
        import hashlib
        import json

        report, preds = out_dir / REPORT_FILE, out_dir / PREDS_FILE
        if report.exists() and preds.exists() and report.stat().st_mtime >= preds.stat().st_mtime:
            return set(json.loads(report.read_text()).get("resolved_ids", []))
        tag = hashlib.sha1(str(out_dir.resolve()).encode()).hexdigest()[:8]
        return set(evaluate_batch(out_dir, suite_spec=self.suite, run_id=f"{self.run_id}-{tag}", executor=self.executor,
                                  ray_address=self.ray_address).resolved_ids)


def _batch_runs(out_dir: Path) -> dict[str, dict[str, Any]]:
    """Finished instances of a batch folder: cost, status and session directory (from preds.jsonl)."""
    runs = {}
    for instance_id, pred in read_preds(out_dir / PREDS_FILE).items():
        session = pred.get("session")
        runs[instance_id] = {
            "cost": float(pred.get("cost") or 0.0), "status": pred.get("status", ""),
            "session_dir": str(out_dir / SESSIONS_DIR / session) if session else None,
        }
    return runs
