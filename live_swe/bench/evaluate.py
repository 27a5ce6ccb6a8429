"""Evaluate predictions: SWE-bench rows through the official ``swebench`` 5.x harness, Pro rows
through their run scripts and parsers (``pro_eval``). Writes ``DIR/report.json``.

The harness is called through its Python API with the suite's own rows as the dataset, so the
images are exactly the rows' ``image`` fields (present locally; nothing is pulled for a local
suite). Its logs go under ``DIR/eval/logs/run_evaluation/<run id>/``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from live_swe.bench.stats import wilson_interval
from live_swe.bench.suites import Instance, Suite, load_suite
from live_swe.errors import UserError

PREDS_FILE = "preds.jsonl"
RESULTS_FILE = "results.jsonl"
BATCH_FILE = "batch.json"
REPORT_FILE = "report.json"
EVAL_DIR = "eval"
GOLD_MODEL = "gold"
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$")


@dataclass
class Outcome:
    instance_id: str
    resolved: bool
    status: str  # resolved | unresolved | empty_patch | no_prediction | error
    kind: str  # swebench | local | pro
    detail: str = ""
    log_dir: str = ""


@dataclass
class EvalReport:
    suite: str
    run_id: str
    outcomes: list[Outcome] = field(default_factory=list)
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    @property
    def resolved_ids(self) -> list[str]:
        return sorted(o.instance_id for o in self.outcomes if o.resolved)

    def summary(self) -> dict[str, Any]:
        """Exactly what ``--json`` prints."""
        total, resolved = len(self.outcomes), len(self.resolved_ids)
        low, high = wilson_interval(resolved, total)
        return {"total": total, "resolved": resolved, "resolved_ids": self.resolved_ids,
                "rate": resolved / total if total else 0.0, "ci_low": low, "ci_high": high}

    def to_json(self) -> dict[str, Any]:
        return {"suite": self.suite, "run_id": self.run_id, "created_at": self.created_at, **self.summary(),
                "instances": {o.instance_id: asdict(o) for o in self.outcomes}}

    def write(self, directory: Path) -> Path:
        path = directory / REPORT_FILE
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=2) + "\n")
        tmp.replace(path)
        return path

    def text(self) -> str:
        s = self.summary()
        return (f"{self.suite}: resolved {s['resolved']} / {s['total']} ({s['rate']:.1%}), "
                f"95% CI [{s['ci_low']:.1%}, {s['ci_high']:.1%}] (Wilson)")


# -- what to evaluate -------------------------------------------------------------------------------


def default_run_id() -> str:
    return "live-swe-" + datetime.now(UTC).strftime("%Y%m%d-%H%M%S")


def check_run_id(run_id: str) -> str:
    if not _RUN_ID.match(run_id):
        raise UserError(f"--run-id {run_id!r}: use letters, digits, '.', '_' and '-' (it names containers and folders)")
    return run_id


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    if not path.exists():
        return rows
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn line from a killed writer; the batch rewrites it on resume
        if isinstance(row, dict) and row.get("instance_id"):
            rows.append(row)
    return rows


def batch_suite(directory: Path, suite_spec: str | None) -> str:
    """The suite a batch directory ran (``batch.json``), or the one given with ``--suite``."""
    if suite_spec:
        return suite_spec
    path = directory / BATCH_FILE
    if path.exists():
        try:
            spec = json.loads(path.read_text()).get("suite")
        except (ValueError, AttributeError):
            spec = None
        if spec:
            return spec
    raise UserError(f"{directory}: no {BATCH_FILE} says which suite ran there; pass --suite SUITE")


def batch_predictions(directory: Path) -> tuple[dict[str, dict], list[str]]:
    """Predictions of a batch (the last line of an instance wins) and the ids it attempted without one."""
    preds_path = directory / PREDS_FILE
    if not preds_path.exists():
        raise UserError(f"{directory}: no {PREDS_FILE}; run `live-swe bench run SUITE --out {directory}` first")
    predictions: dict[str, dict] = {}
    for row in read_jsonl(preds_path):
        predictions[row["instance_id"]] = row
    # Instances the batch tried but that never produced a prediction count against the rate.
    failed = [r["instance_id"] for r in read_jsonl(directory / RESULTS_FILE) if r["instance_id"] not in predictions]
    return predictions, sorted(set(failed))


def gold_predictions(instances: list[Instance]) -> dict[str, dict]:
    return {i.instance_id: {"instance_id": i.instance_id, "model_name_or_path": GOLD_MODEL, "model_patch": i.patch}
            for i in instances}


# -- the two harnesses ------------------------------------------------------------------------------


@contextlib.contextmanager
def _in_directory(path: Path):
    """The swebench harness writes ``logs/`` relative to the working directory."""
    previous = Path.cwd()
    path.mkdir(parents=True, exist_ok=True)
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)


def _open_file_limit() -> int:
    """The harness sets soft and hard NOFILE to one value; keep the current hard limit."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return hard if hard != resource.RLIM_INFINITY else max(soft, 65536)


def _harness_model_dir(model: str) -> str:
    return (model or "None").replace("/", "__")


def run_swebench_harness(instances: list[Instance], predictions: dict[str, dict], *, work: Path, run_id: str,
                         workers: int, timeout: int) -> list[Outcome]:
    """The official harness on ``instances`` (all with a prediction); one outcome each."""
    from swebench.harness import run_evaluation
    from swebench.harness.constants import LOG_REPORT, RUN_EVALUATION_LOG_DIR

    work.mkdir(parents=True, exist_ok=True)
    dataset_path = work / f"{run_id}.dataset.jsonl"
    preds_path = work / f"{run_id}.predictions.jsonl"
    dataset_path.write_text("".join(json.dumps(i.row) + "\n" for i in instances))
    harness_preds = {}
    for instance in instances:
        pred = predictions[instance.instance_id]
        harness_preds[instance.instance_id] = {
            "instance_id": instance.instance_id,
            "model_name_or_path": pred.get("model_name_or_path") or "live-swe",
            "model_patch": pred.get("model_patch") or "",
        }
    preds_path.write_text("".join(json.dumps(p) + "\n" for p in harness_preds.values()))
    with _in_directory(work), contextlib.redirect_stdout(sys.stderr):
        # The harness prints progress on stdout; ours is reserved for the result (--json).
        run_evaluation.main(
            dataset_name=str(dataset_path), split="test", instance_ids=None,
            predictions_path=str(preds_path), max_workers=workers, open_file_limit=_open_file_limit(),
            run_id=run_id, timeout=timeout, rewrite_reports=False, modal=False, report_dir=str(work),
        )
    outcomes = []
    for instance in instances:
        pred = harness_preds[instance.instance_id]
        log_dir = work / RUN_EVALUATION_LOG_DIR / run_id / _harness_model_dir(pred["model_name_or_path"]) / instance.instance_id
        if not pred["model_patch"].strip():
            outcomes.append(Outcome(instance.instance_id, False, "empty_patch", instance.suite_kind,
                                    "the prediction has no patch"))
            continue
        report_path = log_dir / LOG_REPORT
        if not report_path.exists():
            outcomes.append(Outcome(instance.instance_id, False, "error", instance.suite_kind,
                                    _harness_error(log_dir), str(log_dir)))
            continue
        entry = json.loads(report_path.read_text()).get(instance.instance_id, {})
        resolved = bool(entry.get("resolved"))
        outcomes.append(Outcome(instance.instance_id, resolved, "resolved" if resolved else "unresolved",
                                instance.suite_kind, _test_detail(entry), str(log_dir)))
    return outcomes


def _harness_error(log_dir: Path) -> str:
    log = log_dir / "run_instance.log"
    if not log.exists():
        return "the harness did not run this instance"
    text = log.read_text(errors="replace")
    if ">>>>> Patch Apply Failed" in text:
        return "the patch does not apply"
    last = [line for line in text.splitlines() if line.strip()][-1:] or [""]
    return f"the harness failed: {last[0][-300:]} (see {log})"


def _test_detail(entry: dict) -> str:
    status = entry.get("tests_status") or {}
    if not entry.get("patch_successfully_applied", True):
        return "no test results (patch or tests did not run)"
    f2p = status.get("FAIL_TO_PASS", {})
    p2p = status.get("PASS_TO_PASS", {})
    failed = list(f2p.get("failure", [])) + list(p2p.get("failure", []))
    if not failed:
        return "all FAIL_TO_PASS and PASS_TO_PASS tests pass"
    return f"{len(failed)} required test(s) fail: " + ", ".join(failed[:5]) + (" ..." if len(failed) > 5 else "")


def _pro_scripts_root(suite: Suite, pro_repo: Path | None) -> Path:
    if pro_repo is not None:
        if not pro_repo.is_dir():
            raise UserError(f"--pro-repo {pro_repo}: no such directory")
        return pro_repo
    if suite.kind == "local":
        return Path(suite.source) / "pro"  # a local suite ships run_scripts/ for its Pro tasks
    raise UserError("SWE-bench Pro instances are graded by their own run scripts: clone "
                    "https://github.com/scaleapi/SWE-bench_Pro-os and pass --pro-repo PATH")


# -- the whole evaluation ---------------------------------------------------------------------------


def evaluate(
    suite: Suite,
    instances: list[Instance],
    predictions: dict[str, dict],
    *,
    out: Path,
    run_id: str | None = None,
    pro_repo: Path | None = None,
    workers: int = 1,
    timeout: int = 1800,
    no_prediction: list[str] = (),
) -> EvalReport:
    """Grade ``predictions`` for ``instances``; ids in ``no_prediction`` count as unresolved."""
    from live_swe.bench.images import docker_client, image_statuses, missing_images_error

    run_id = check_run_id(run_id or default_run_id())
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    report = EvalReport(suite=suite.name, run_id=run_id)
    with_patch = [i for i in instances if (predictions.get(i.instance_id, {}).get("model_patch") or "").strip()]
    patched_ids = {i.instance_id for i in with_patch}
    client = docker_client() if with_patch else None
    if client is not None:
        missing = [s for s in image_statuses(suite, client, with_patch) if not s.present]
        if missing:
            raise missing_images_error(suite, missing)
    work = out / EVAL_DIR
    swebench = [i for i in instances if i.suite_kind != "pro"]
    pro = [i for i in instances if i.suite_kind == "pro"]
    outcomes: dict[str, Outcome] = {}
    for instance in swebench:
        if instance.instance_id not in patched_ids:  # the harness skips these too
            outcomes[instance.instance_id] = Outcome(instance.instance_id, False, "empty_patch", instance.suite_kind,
                                                     "the prediction has no patch")
    runnable = [i for i in swebench if i.instance_id in patched_ids]
    if runnable:
        for outcome in run_swebench_harness(runnable, predictions, work=work, run_id=run_id,
                                            workers=workers, timeout=timeout):
            outcomes[outcome.instance_id] = outcome
    if pro:
        from live_swe.bench.pro_eval import evaluate_pro_instance

        root = _pro_scripts_root(suite, pro_repo)
        for instance in pro:
            result = evaluate_pro_instance(
                client, instance, predictions.get(instance.instance_id, {}).get("model_patch") or "", pro_repo=root,
                log_dir=work / "pro" / run_id / instance.instance_id, timeout=timeout, run_id=run_id,
            )
            outcomes[instance.instance_id] = Outcome(result.instance_id, result.resolved, result.status, "pro",
                                                     result.detail, result.log_dir)
    for instance_id in no_prediction:
        outcomes.setdefault(instance_id, Outcome(instance_id, False, "no_prediction", "",
                                                 "the batch produced no prediction (see results.jsonl)"))
    order = {i.instance_id: n for n, i in enumerate(instances)}
    report.outcomes = sorted(outcomes.values(), key=lambda o: (order.get(o.instance_id, len(order)), o.instance_id))
    report.write(out)
    return report


def evaluate_batch(directory: Path, *, suite_spec: str | None = None, run_id: str | None = None,
                   pro_repo: Path | None = None, workers: int = 1, timeout: int = 1800) -> EvalReport:
    """Grade a batch directory's ``preds.jsonl`` against the suite it ran."""
    directory = Path(directory).expanduser().resolve()
    if not directory.is_dir():
        raise UserError(f"{directory}: no such directory")
    predictions, failed = batch_predictions(directory)
    suite = load_suite(batch_suite(directory, suite_spec))
    known = {i.instance_id for i in suite.instances}
    unknown = sorted(set(predictions) - known)
    if unknown:
        raise UserError(f"{directory / PREDS_FILE}: instance(s) not in {suite.name}: {', '.join(unknown[:5])}; "
                        "pass the suite the batch ran with --suite")
    instances = [i for i in suite.instances if i.instance_id in predictions]
    return evaluate(suite, instances, predictions, out=directory, run_id=run_id, pro_repo=pro_repo,
                    workers=workers, timeout=timeout, no_prediction=[f for f in failed if f in known])


def evaluate_gold(suite_spec: str, out: Path, *, run_id: str | None = None, pro_repo: Path | None = None,
                  workers: int = 1, timeout: int = 1800, instances: list[str] | None = None) -> EvalReport:
    """Grade a suite's own gold patches (a check that the suite and its images are sound)."""
    suite = load_suite(suite_spec)
    chosen = suite.select(instances=instances) if instances else list(suite.instances)
    return evaluate(suite, chosen, gold_predictions(chosen), out=Path(out), run_id=run_id, pro_repo=pro_repo,
                    workers=workers, timeout=timeout)
