"""The labelled set (``evals/grading/labelled.yaml``): trajectories on the local suite with errors
injected at known steps, run through the real loop, and the analysers' agreement with the labels.

Each trajectory's scripted replies run with the local environment on a fresh git copy of its
task's repository (``evals/suites/local/repos``), with the task text the benchmark gives. The
figures: for each labelled error, whether a finding of its kind was reported (detection) and
whether one names a labelled step (localisation); and findings of these kinds where no error of
that kind was injected (false alarms).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from live_swe.bench.suites import load_suite, task_text
from live_swe.config import KernelLimits
from live_swe.errors import UserError
from live_swe.grading.metrics import Finding
from live_swe.infra.git import Git, Identity, init
from live_swe.models.base import Reply
from live_swe.models.scripted import ScriptedModel
from live_swe.resources import resource_path
from live_swe.runner import RunHooks, RunRequest, start_run
from live_swe.session.store import SessionStore

# Which analyser findings detect each injected kind of error.
FAMILIES: dict[str, frozenset[str]] = {
    "looping": frozenset({"repeated_command", "retried_failure"}),
    "unverified_edit": frozenset({"unverified_edit", "untested_submission"}),
    "plan_abandoned": frozenset({"plan_abandoned", "plan_step_not_acted", "unexplained_replan"}),
    "fabricated_claim": frozenset({"contradicts_observation", "claim_contradicts_output"}),
    "inefficient_search": frozenset({"redundant_read", "repeated_search", "long_exploration"}),
}
SUBMIT_REPLY = "THOUGHT: The change is made and checked.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"


@dataclass(frozen=True)
class Label:
    kind: str
    steps: tuple[int, ...]
    checkable: bool = True
    note: str = ""


@dataclass
class Item:
    id: str
    task: str  # the local suite's instance id
    replies: list[str]
    labels: list[Label] = field(default_factory=list)
    split: str = "dev"  # dev: used while the analysers were written; heldout: written after, never tuned on


def default_path() -> Path:
    return resource_path("evals", "grading", "labelled.yaml")


def _reply(thought: str, command: str, plan: list[str] | None = None, reason: str | None = None) -> str:
    parts = []
    if plan is not None:
        header = "PLAN:" + (f" {reason}" if reason else "")
        parts.append("\n".join([header] + [f"{i}. {item}" for i, item in enumerate(plan, 1)]))
    parts.append(f"THOUGHT: {thought}")
    parts.append(f"```bash\n{command}\n```")
    return "\n\n".join(parts)


def _step_reply(spec: Any, blocks: dict[str, dict[str, str]], plan: list[str] | None, where: str) -> str:
    if spec == "submit":
        return SUBMIT_REPLY
    if isinstance(spec, str):
        spec = {"block": spec}
    if not isinstance(spec, dict):
        raise UserError(f"{where}: a step is a block name, `submit`, or a mapping")
    if "raw" in spec:
        return str(spec["raw"])
    block = dict(blocks.get(spec["block"], {})) if "block" in spec else {}
    if "block" in spec and not block:
        raise UserError(f"{where}: no block {spec['block']!r} for this task")
    thought = spec.get("thought", block.get("thought", ""))
    command = spec.get("command", block.get("command"))
    if not command:
        raise UserError(f"{where}: the step has no command")
    if "plan" in spec:
        plan, reason = list(spec["plan"]), spec.get("reason")
    else:
        reason = None
    return _reply(thought, command, plan, reason)


def load_set(path: Path | None = None) -> list[Item]:
    """The labelled trajectories, each as its list of raw replies and its labels."""
    path = Path(path or default_path())
    data = yaml.safe_load(path.read_text())
    items = []
    for number, raw in enumerate(data.get("trajectories") or [], 1):
        where = f"{path}: trajectory {raw.get('id', number)}"
        task = data["tasks"].get(raw.get("task"))
        if task is None:
            raise UserError(f"{where}: unknown task {raw.get('task')!r}")
        plan = None if raw.get("plan") == "none" else list(raw.get("plan") or task["plan"])
        replies = []
        for index, spec in enumerate(raw["steps"]):
            replies.append(_step_reply(spec, task["blocks"], plan if index == 0 else None, f"{where} step {index + 1}"))
        labels = []
        for label in raw.get("labels") or []:
            if label["kind"] not in FAMILIES:
                raise UserError(f"{where}: unknown label kind {label['kind']!r}; use one of {', '.join(FAMILIES)}")
            labels.append(Label(label["kind"], tuple(label["steps"]), bool(label.get("checkable", True)),
                                str(label.get("note", ""))))
        items.append(Item(str(raw["id"]), str(raw["task"]), replies, labels, str(raw.get("split", "dev"))))
    return items


# -- running the set through the real loop -------------------------------------------------------------

_IDENTITY = Identity("live-swe", "live-swe@localhost")


def prepare_repository(instance_id: str, target: Path) -> Path:
    """A fresh git repository holding the task's project at its starting state."""
    task = yaml.safe_load(resource_path("evals", "suites", "local", "tasks", instance_id, "task.yaml").read_text())
    shutil.copytree(resource_path("evals", "suites", "local", "repos", task["project"]), target)
    init(target)
    git = Git(target, config=_IDENTITY.config()).run
    git("add", "-A")
    git("commit", "-q", "-m", "start")
    return target


def run_item(item: Item, workdir: Path, store, task_texts: dict[str, str]) -> str:
    """Run one trajectory's replies through the loop; returns its session ID."""

    repo = prepare_repository(item.task, workdir / item.id.replace("/", "__"))
    model = ScriptedModel([Reply(r) for r in item.replies], name=f"scripted:{item.id}")
    request = RunRequest(task=task_texts[item.task], model=model.name, repo=repo, limits=KernelLimits(),
                         parent=f"labelled:{item.id}")
    return start_run(request, RunHooks(model_factory=lambda _name: model), store=store).session_id


def run_set(items: list[Item], workdir: Path, *, workers: int = 1,
            say: Callable[[str], None] = lambda line: None) -> dict[str, str]:
    """Run every trajectory; item ID -> session ID (sessions under ``workdir/sessions``)."""

    store = SessionStore(Path(workdir) / "sessions")
    suite = {i.instance_id: task_text(i) for i in load_suite("local:local").instances}
    (Path(workdir) / "repos").mkdir(parents=True, exist_ok=True)

    def one(item: Item) -> tuple[str, str]:
        session_id = run_item(item, Path(workdir) / "repos", store, suite)
        say(f"ran {item.id}: {session_id}")
        return item.id, session_id

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return dict(pool.map(one, items))


# -- agreement ------------------------------------------------------------------------------------------

@dataclass
class Agreement:
    labels: int = 0
    detected: int = 0
    localised: int = 0
    checkable_labels: int = 0
    checkable_detected: int = 0
    checkable_localised: int = 0
    family_findings: int = 0  # findings of the five kinds' families
    false_alarms: int = 0  # ... in a trajectory with no error of that kind injected
    clean_trajectories: int = 0
    clean_flagged: int = 0  # clean trajectories with any family finding
    by_kind: dict[str, dict[str, int]] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)
    alarms: list[str] = field(default_factory=list)

    def rate(self, part: int, whole: int) -> float:
        return part / whole if whole else 1.0

    def to_json(self) -> dict[str, Any]:
        return {
            "labels": self.labels, "detected": self.detected, "localised": self.localised,
            "detection": round(self.rate(self.detected, self.labels), 3),
            "localisation": round(self.rate(self.localised, self.labels), 3),
            "checkable_labels": self.checkable_labels,
            "checkable_detection": round(self.rate(self.checkable_detected, self.checkable_labels), 3),
            "checkable_localisation": round(self.rate(self.checkable_localised, self.checkable_labels), 3),
            "localisation_of_detected": round(self.rate(self.localised, self.detected), 3),
            "family_findings": self.family_findings, "false_alarms": self.false_alarms,
            "precision": round(self.rate(self.family_findings - self.false_alarms, self.family_findings), 3),
            "clean_trajectories": self.clean_trajectories, "clean_flagged": self.clean_flagged,
            "by_kind": self.by_kind, "misses": self.misses, "alarms": self.alarms,
        }


def agreement(items: list[Item], findings: dict[str, list[Finding]]) -> Agreement:
    """Compare each trajectory's findings with its labels."""
    result = Agreement()
    all_kinds = {kind: family for family, kinds in FAMILIES.items() for kind in kinds}
    for item in items:
        found = findings.get(item.id, [])
        counts = result.by_kind
        for label in item.labels:
            row = counts.setdefault(label.kind, {"labels": 0, "detected": 0, "localised": 0})
            matching = [f for f in found if f.kind in FAMILIES[label.kind]]
            detected = bool(matching)
            localised = any(set(f.steps) & set(label.steps) for f in matching)
            row["labels"] += 1
            row["detected"] += detected
            row["localised"] += localised
            result.labels += 1
            result.detected += detected
            result.localised += localised
            if label.checkable:
                result.checkable_labels += 1
                result.checkable_detected += detected
                result.checkable_localised += localised
            if not localised:
                what = "not detected" if not detected else f"found at steps {sorted({s for f in matching for s in f.steps})}"
                result.misses.append(f"{item.id}: {label.kind} at steps {list(label.steps)}: {what}"
                                     + ("" if label.checkable else " (not checkable)"))
        injected = {label.kind for label in item.labels}
        family_found = [f for f in found if f.kind in all_kinds]
        result.family_findings += len(family_found)
        for finding in family_found:
            if all_kinds[finding.kind] not in injected:
                result.false_alarms += 1
                result.alarms.append(f"{item.id}: {finding.kind} at steps {list(finding.steps)}: {finding.evidence}")
        if not item.labels:
            result.clean_trajectories += 1
            result.clean_flagged += bool(family_found)
    return result
