"""Evaluate predictions: SWE-bench rows through the official ``swebench`` 5.x harness, Pro rows
through their run scripts and parsers (``pro_eval``). Writes ``DIR/report.json``, and the harness
writes its own run report next to it (``DIR/<model>.<run id>.json``).

The harness is called through its Python API with the suite's own rows as the dataset, each row's
``image`` set to the name its image was found under (``images.image_statuses``); instances whose
image is missing are reported as such and the others graded. Its logs go under
``DIR/eval/logs/run_evaluation/<run id>/``; a grade there is reused only for the same patch and row
(the harness itself would return an old grade for a changed patch).

Outcome statuses keep the harness's labels: resolved, unresolved (the tests ran), patch_failed,
infra_failure and ambiguous_failure (the harness's own classification, with its reason), error
(with the harness's own message), empty_patch, no_prediction, and missing_image (not graded).
Of those, error, infra_failure, ambiguous_failure and missing_image say nothing of the patch: they
are the evaluation's errors (``EvalReport.errors``; ``bench eval`` exits 3).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sys
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from live_swe.bench.images import docker_client, image_statuses, instance_images, missing_image_lines
from live_swe.bench.pro_eval import evaluate_pro_instance
from live_swe.bench.ray_cluster import check_executor
from live_swe.bench.stats import wilson_interval
from live_swe.bench.suites import Instance, Suite, load_suite
from live_swe.errors import UserError
from live_swe.infra import files
from live_swe.infra.jsonl import read_jsonl

PREDS_FILE = "preds.jsonl"
RESULTS_FILE = "results.jsonl"
BATCH_FILE = "batch.json"
REPORT_FILE = "report.json"
EVAL_DIR = "eval"
GOLD_MODEL = "gold"
GRADE_KEY = "live-swe-grade.key"  # beside a harness grade: what it graded (patch and row)
NOT_GRADED = ("missing_image",)
# Outcomes that say nothing of the patch: the grading itself failed (exit code 3, counted in `errors`).
ERROR_STATUSES = ("error", "infra_failure", "ambiguous_failure", "missing_image")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$")


@dataclass
class Outcome:
    instance_id: str
    resolved: bool
    # resolved | unresolved | patch_failed | infra_failure | ambiguous_failure | error | empty_patch
    # | no_prediction | missing_image (the last is not graded: it counts in no rate)
    status: str
    kind: str  # swebench | local | pro
    detail: str = ""
    log_dir: str = ""
    reason: str = ""  # the harness's failure reason for infra_failure / ambiguous_failure


@dataclass
class EvalReport:
    suite: str
    run_id: str
    outcomes: list[Outcome] = field(default_factory=list)
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    harness_report: str = ""  # the official harness's run report, when it ran
    missing_images: list[str] = field(default_factory=list)  # one line each: the image and how to get it

    @property
    def graded(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status not in NOT_GRADED]

    @property
    def resolved_ids(self) -> list[str]:
        return sorted(o.instance_id for o in self.outcomes if o.resolved)

    def summary(self) -> dict[str, Any]:
        """Exactly what ``--json`` prints (instances without their image are not counted)."""
        total, resolved = len(self.graded), len(self.resolved_ids)
        low, high = wilson_interval(resolved, total)
        return {"total": total, "resolved": resolved, "resolved_ids": self.resolved_ids,
                "rate": resolved / total if total else 0.0, "ci_low": low, "ci_high": high, "errors": self.errors()}

    def errors(self) -> dict[str, int]:
        """Instances whose grading failed, by status (``ERROR_STATUSES``)."""
        return {status: n for status, n in self.counts().items() if status in ERROR_STATUSES}

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for outcome in self.outcomes:
            found[outcome.status] = found.get(outcome.status, 0) + 1
        return found

    def to_json(self) -> dict[str, Any]:
        return {"suite": self.suite, "run_id": self.run_id, "created_at": self.created_at, **self.summary(),
                "statuses": self.counts(), "not_graded": sorted(o.instance_id for o in self.outcomes
                                                                 if o.status in NOT_GRADED),
                "harness_report": self.harness_report,
                "instances": {o.instance_id: asdict(o) for o in self.outcomes}}

    def write(self, directory: Path) -> Path:
        path = directory / REPORT_FILE
        files.write_atomic(path, json.dumps(self.to_json(), indent=2) + "\n", mode=0o644)
        return path

    def text(self) -> str:
        s = self.summary()
        line = (f"{self.suite}: resolved {s['resolved']} / {s['total']} ({s['rate']:.1%}), "
                f"95% CI [{s['ci_low']:.1%}, {s['ci_high']:.1%}] (Wilson)")
        others = {k: v for k, v in self.counts().items() if k not in ("resolved", *NOT_GRADED)}
        if others:
            line += "; " + ", ".join(f"{v} {k}" for k, v in sorted(others.items()))
        not_graded = len(self.outcomes) - len(self.graded)
        if not_graded:
            line += f"; {not_graded} not graded (image missing)"
        return line


# -- what to evaluate -------------------------------------------------------------------------------


def default_run_id() -> str:
    return "live-swe-" + datetime.now(UTC).strftime("%Y%m%d-%H%M%S")


def check_run_id(run_id: str) -> str:
    if not _RUN_ID.match(run_id):
        raise UserError(f"--run-id {run_id!r}: use letters, digits, '.', '_' and '-' (it names containers and folders)")
    return run_id


def _instance_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a batch file that name an instance (a torn line from a killed writer is skipped;
    the batch rewrites it on resume)."""
    return [row for row in read_jsonl(path) if row.get("instance_id")]


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
    for row in _instance_rows(preds_path):
        predictions[row["instance_id"]] = row
    # Instances the batch tried but that never produced a prediction count against the rate.
    failed = [r["instance_id"] for r in _instance_rows(directory / RESULTS_FILE) if r["instance_id"] not in predictions]
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


def grade_key(pred: dict, row: dict) -> str:
    """What a grade depends on: the patch and the row (its tests, eval script and image)."""
    data = json.dumps({"patch": pred.get("model_patch") or "", "row": row}, sort_keys=True, default=str)
    return hashlib.sha256(data.encode()).hexdigest()


def set_aside_stale_grade(log_dir: Path, key: str) -> bool:
    """The harness returns any grade it finds for a run id, whatever the patch: a grade made for
    another patch or row is moved to ``stale/`` beside it (kept, never read) so it is graded again."""
    key_file = log_dir / GRADE_KEY
    if not log_dir.exists() or (key_file.is_file() and key_file.read_text().strip() == key):
        return False
    stale = log_dir.parent / "stale" / f"{log_dir.name}.{datetime.now(UTC).strftime('%Y%m%d-%H%M%S-%f')}"
    stale.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(log_dir), str(stale))
    return True


def run_swebench_harness(instances: list[Instance], predictions: dict[str, dict], *, work: Path, run_id: str,
                         workers: int, timeout: int, report_dir: Path | None = None,
                         images: dict[str, str] | None = None) -> tuple[list[Outcome], str]:
    """The official harness on ``instances`` (all with a prediction): one outcome each, and the path of
    the harness's own run report (in ``report_dir``)."""
    from swebench.harness import run_evaluation
    from swebench.harness.constants import LOG_REPORT, RUN_EVALUATION_LOG_DIR

    work.mkdir(parents=True, exist_ok=True)
    dataset_path = work / f"{run_id}.dataset.jsonl"
    preds_path = work / f"{run_id}.predictions.jsonl"
    rows = {i.instance_id: {**i.row, "image": (images or {}).get(i.instance_id, i.image)} for i in instances}
    dataset_path.write_text("".join(json.dumps(row) + "\n" for row in rows.values()))
    harness_preds = {}
    for instance in instances:
        pred = predictions[instance.instance_id]
        harness_preds[instance.instance_id] = {
            "instance_id": instance.instance_id,
            "model_name_or_path": pred.get("model_name_or_path") or "live-swe",
            "model_patch": pred.get("model_patch") or "",
        }
    preds_path.write_text("".join(json.dumps(p) + "\n" for p in harness_preds.values()))

    def log_dir_of(instance_id: str) -> Path:
        model = _harness_model_dir(harness_preds[instance_id]["model_name_or_path"])
        return work / RUN_EVALUATION_LOG_DIR / run_id / model / instance_id

    keys = {i.instance_id: grade_key(harness_preds[i.instance_id], rows[i.instance_id]) for i in instances}
    for instance in instances:
        set_aside_stale_grade(log_dir_of(instance.instance_id), keys[instance.instance_id])
    report_path, crash = "", ""
    with _in_directory(work), contextlib.redirect_stdout(sys.stderr):
        # The harness prints progress on stdout; ours is reserved for the result (--json).
        try:
            written = run_evaluation.main(
                dataset_name=str(dataset_path), split="test", instance_ids=None,
                predictions_path=str(preds_path), max_workers=workers, open_file_limit=_open_file_limit(),
                run_id=run_id, timeout=timeout, rewrite_reports=False, modal=False,
                report_dir=str(report_dir or work),
            )
            report_path = str(written) if written else ""
        except Exception as exc:  # noqa: BLE001 - the harness's own failure, reported per instance
            crash = f"the swebench harness stopped: {exc.__class__.__name__}: {str(exc).strip()[:500]}"
    run_report = _read_json(Path(report_path)) if report_path else {}
    outcomes = []
    for instance in instances:
        pred = harness_preds[instance.instance_id]
        log_dir = log_dir_of(instance.instance_id)
        if not pred["model_patch"].strip():
            outcomes.append(Outcome(instance.instance_id, False, "empty_patch", instance.suite_kind,
                                    "the prediction has no patch"))
            continue
        report_file = log_dir / LOG_REPORT
        entry = _read_json(report_file).get(instance.instance_id) if report_file.exists() else None
        if entry is not None:
            (log_dir / GRADE_KEY).write_text(keys[instance.instance_id] + "\n")
        outcomes.append(_harness_outcome(instance, entry, log_dir, run_report, crash))
    return outcomes, report_path


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _harness_outcome(instance: Instance, entry: dict | None, log_dir: Path, run_report: dict, crash: str) -> Outcome:
    """One instance's outcome with the harness's own label: its grade, its failure classification
    (infra_failure / ambiguous_failure, with the reason), a patch that did not apply, or its error."""
    iid, kind = instance.instance_id, instance.suite_kind
    reason = (run_report.get("failure_reasons") or {}).get(iid, "")
    label = ("infra_failure" if iid in (run_report.get("infra_failure_ids") or []) else
             "ambiguous_failure" if iid in (run_report.get("ambiguous_failure_ids") or []) else "")
    log_text = _log_text(log_dir / "run_instance.log")
    if entry is not None and entry.get("resolved"):
        return Outcome(iid, True, "resolved", kind, _test_detail(entry), str(log_dir))
    if ">>>>> Patch Apply Failed" in log_text:
        return Outcome(iid, False, "patch_failed", kind, f"the harness could not apply the patch (see {log_dir / 'patch.diff'})",
                       str(log_dir), reason)
    detail = _test_detail(entry) if entry is not None else (crash or harness_error(log_dir))
    if label:
        return Outcome(iid, False, label, kind, f"{reason}: {detail}" if reason else detail, str(log_dir), reason)
    return Outcome(iid, False, "unresolved" if entry is not None else "error", kind, detail, str(log_dir))


def _log_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


_HARNESS_ERROR = re.compile(r"Error in evaluat(?:ion|ing model) for (?P<id>\S+): (?P<message>.*?)"
                            r"(?=\nCheck \(|\nTraceback |\Z)", re.DOTALL)


def harness_error(log_dir: Path) -> str:
    """The harness's own error for an instance it could not grade, from its log: the message it
    raised with (and, for an unexpected exception, the exception's last traceback line)."""
    log = log_dir / "run_instance.log"
    text = _log_text(log)
    if not text:
        return "the harness did not run this instance (no log)"
    matches = list(_HARNESS_ERROR.finditer(text))
    if not matches:
        errors = [line for line in text.splitlines() if " - ERROR - " in line]
        if errors:
            return f"the harness failed: {errors[-1].split(' - ERROR - ', 1)[1][:500]} (see {log})"
        return f"the harness gave no grade and logged no error (see {log})"
    message = matches[-1].group("message").strip()
    last_exception = _last_exception_line(text[matches[-1].end():])
    if last_exception and not last_exception.startswith("swebench.harness.utils.EvaluationError"):
        message = f"{last_exception} ({message.splitlines()[0][:200]})" if message else last_exception
    return f"the harness failed: {message[:800]} (see {log})"


def _last_exception_line(text: str) -> str:
    """The ``Type: message`` line closing the traceback that ``text`` starts with, if it does."""
    text = text.lstrip("\n")
    if not text.startswith("Traceback "):
        return ""
    for line in text.splitlines()[1:]:
        if line and not line.startswith((" ", "\t", "Traceback")):
            return line.strip()
    return ""


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
    image_template: str | None = None,
    executor: str = "thread",
    ray_address: str | None = None,
) -> EvalReport:
    """Grade ``predictions`` for ``instances``; ids in ``no_prediction`` count as unresolved, and
    instances whose image is missing are reported (``missing_image``) while the others are graded.
    ``executor="ray"`` grades each instance as a task on a Ray cluster (``ray_eval``)."""
    check_executor(executor)
    run_id = check_run_id(run_id or default_run_id())
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if executor == "ray":
        from live_swe.bench.ray_eval import evaluate_on_ray

        return evaluate_on_ray(suite, instances, predictions, out=out, run_id=run_id, pro_repo=pro_repo,
                               timeout=timeout, no_prediction=list(no_prediction), image_template=image_template,
                               ray_address=ray_address)
    report = EvalReport(suite=suite.name, run_id=run_id)
    with_patch = [i for i in instances if (predictions.get(i.instance_id, {}).get("model_patch") or "").strip()]
    outcomes: dict[str, Outcome] = {}
    client = docker_client() if with_patch else None
    images: dict[str, str] = {}
    if client is not None:
        statuses = image_statuses(suite, client, with_patch, template=image_template)
        images = instance_images(statuses)
        missing = [status for status in statuses if not status.present]
        report.missing_images = [line.strip() for line in missing_image_lines(suite, missing)]
        for status in missing:
            for instance_id in status.instance_ids:
                outcomes[instance_id] = Outcome(instance_id, False, "missing_image", suite.get(instance_id).suite_kind,
                                                f"not graded: the image {status.image} is not on this machine")
    patched_ids = {i.instance_id for i in with_patch} - set(outcomes)
    work = out / EVAL_DIR
    swebench = [i for i in instances if i.suite_kind != "pro" and i.instance_id not in outcomes]
    pro = [i for i in instances if i.suite_kind == "pro" and i.instance_id not in outcomes]
    for instance in swebench:
        if instance.instance_id not in patched_ids:  # the harness skips these too
            outcomes[instance.instance_id] = Outcome(instance.instance_id, False, "empty_patch", instance.suite_kind,
                                                     "the prediction has no patch")
    runnable = [i for i in swebench if i.instance_id in patched_ids]
    if runnable:
        graded, report.harness_report = run_swebench_harness(runnable, predictions, work=work, run_id=run_id,
                                                             workers=workers, timeout=timeout, report_dir=out,
                                                             images=images)
        for outcome in graded:
            outcomes[outcome.instance_id] = outcome
    if pro:
        root = _pro_scripts_root(suite, pro_repo)
        for instance in pro:
            chosen = replace(instance, image=images.get(instance.instance_id, instance.image))
            result = evaluate_pro_instance(
                client, chosen, predictions.get(instance.instance_id, {}).get("model_patch") or "", pro_repo=root,
                log_dir=work / "pro" / run_id / instance.instance_id, timeout=timeout, run_id=run_id,
            )
            outcomes[instance.instance_id] = Outcome(result.instance_id, result.resolved, result.status, "pro",
                                                     result.detail, result.log_dir)
    return finish_report(report, outcomes, instances, no_prediction, out)


def finish_report(report: EvalReport, outcomes: dict[str, Outcome], instances: list[Instance],
                  no_prediction: list[str], out: Path) -> EvalReport:
    """The report with every outcome (``no_prediction`` ones added), in suite order, written to ``out``."""
    for instance_id in no_prediction:
        outcomes.setdefault(instance_id, Outcome(instance_id, False, "no_prediction", "",
                                                 "the batch produced no prediction (see results.jsonl)"))
    order = {i.instance_id: n for n, i in enumerate(instances)}
    report.outcomes = sorted(outcomes.values(), key=lambda o: (order.get(o.instance_id, len(order)), o.instance_id))
    report.write(out)
    return report


def evaluate_batch(directory: Path, *, suite_spec: str | None = None, run_id: str | None = None,
                   pro_repo: Path | None = None, workers: int = 1, timeout: int = 1800,
                   instances: list[str] | str | None = None, filter: str | None = None,  # noqa: A002
                   slice: str | None = None, image_template: str | None = None,  # noqa: A002
                   executor: str = "thread", ray_address: str | None = None) -> EvalReport:
    """Grade a batch directory's ``preds.jsonl`` (or the selected part of it) against the suite it ran,
    its images found as the batch found them (its ``--image-template``, unless another is given)."""
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
    attempted = Suite(suite.name, suite.kind, [i for i in suite.instances if i.instance_id in predictions
                                               or i.instance_id in failed], suite.source)
    chosen = {i.instance_id for i in attempted.select_some(instances=instances, filter=filter, slice=slice)}
    batch = _read_json(directory / BATCH_FILE)
    return evaluate(suite, [i for i in suite.instances if i.instance_id in predictions and i.instance_id in chosen],
                    predictions, out=directory, run_id=run_id, pro_repo=pro_repo, workers=workers, timeout=timeout,
                    no_prediction=[f for f in failed if f in chosen],
                    image_template=image_template or batch.get("image_template"), executor=executor,
                    ray_address=ray_address)


def evaluate_gold(suite_spec: str, out: Path, *, run_id: str | None = None, pro_repo: Path | None = None,
                  workers: int = 1, timeout: int = 1800, instances: list[str] | str | None = None,
                  filter: str | None = None, slice: str | None = None,  # noqa: A002
                  image_template: str | None = None, executor: str = "thread",
                  ray_address: str | None = None) -> EvalReport:
    """Grade a suite's own gold patches (a check that the suite and its images are sound)."""
    suite = load_suite(suite_spec)
    chosen = suite.select_some(instances=instances, filter=filter, slice=slice)
    return evaluate(suite, chosen, gold_predictions(chosen), out=Path(out), run_id=run_id, pro_repo=pro_repo,
                    workers=workers, timeout=timeout, image_template=image_template, executor=executor,
                    ray_address=ray_address)
