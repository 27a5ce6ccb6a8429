"""A trajectory's grade: the five metrics' scores (0–3 and normalised) and the findings with steps.

Each metric has the analysers' score (always, free) and, when a judge model is given, the judge's;
the judge's counts where it could be read. Plan adherence has no score without a stated plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from live_swe.grading.analysers import analyse
from live_swe.grading.judge import DEFAULT_PROMPT_CHARS, Verdict, judge_metric
from live_swe.grading.metrics import MAX_SCORE, METRICS, PLAN_ADHERENCE, Finding, analyser_score
from live_swe.grading.trajectory import Trajectory
from live_swe.models.base import Model

GRADE_VERSION = 1


@dataclass
class MetricGrade:
    metric: str
    analysers: int | None  # None: not applicable (plan adherence without a plan)
    judge: Verdict | None = None

    @property
    def score(self) -> int | None:
        if self.judge is not None and self.judge.status == "ok":
            return self.judge.score
        return self.analysers

    @property
    def source(self) -> str:
        if self.judge is not None and self.judge.status == "ok":
            return "judge"
        return "analysers" if self.analysers is not None else "n/a"

    @property
    def normalised(self) -> float | None:
        return None if self.score is None else round(self.score / MAX_SCORE, 3)

    def to_json(self) -> dict[str, Any]:
        return {"score": self.score, "normalised": self.normalised, "source": self.source,
                "analysers": self.analysers, "judge": self.judge.to_json() if self.judge else None}


@dataclass
class Grade:
    metrics: dict[str, MetricGrade]
    findings: list[Finding]
    status: str = "unknown"
    steps: int = 0
    judge: str | None = None  # the judge model's name
    cost: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def scores(self) -> dict[str, int | None]:
        return {m: g.score for m, g in self.metrics.items()}

    @property
    def mean(self) -> float | None:
        values = [g.normalised for g in self.metrics.values() if g.normalised is not None]
        return round(sum(values) / len(values), 3) if values else None

    def findings_for(self, metric: str) -> list[Finding]:
        return [f for f in self.findings if f.metric == metric]

    def to_json(self) -> dict[str, Any]:
        return {"version": GRADE_VERSION, "status": self.status, "steps": self.steps, "judge": self.judge,
                "cost": round(self.cost, 6), "mean": self.mean,
                "metrics": {m: g.to_json() for m, g in self.metrics.items()},
                "findings": [f.to_json() for f in self.findings]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Grade:
        metrics = {}
        for metric in METRICS:
            raw = (data.get("metrics") or {}).get(metric) or {}
            judge = Verdict.from_json(raw["judge"]) if isinstance(raw.get("judge"), dict) else None
            metrics[metric] = MetricGrade(metric, raw.get("analysers"), judge)
        return cls(metrics, [Finding.from_json(f) for f in data.get("findings") or []], str(data.get("status", "")),
                   int(data.get("steps") or 0), data.get("judge"), float(data.get("cost") or 0.0))


def grade(trajectory: Trajectory, judge: Model | None = None, *, max_chars: int = DEFAULT_PROMPT_CHARS,
          on_metric=None) -> Grade:
    """Analyse ``trajectory`` and, with a ``judge`` model, ask it for each metric's score.
    ``on_metric(metric, verdict)`` is told as each judge answers (progress for long grades)."""
    findings = analyse(trajectory)
    has_plan = bool(trajectory.plans)
    metrics: dict[str, MetricGrade] = {}
    cost = 0.0
    for metric in METRICS:
        applicable = has_plan or metric != PLAN_ADHERENCE
        own = [f for f in findings if f.metric == metric]
        result = MetricGrade(metric, analyser_score(own) if applicable else None)
        if judge is not None and applicable:
            result.judge = judge_metric(judge, metric, trajectory, findings, max_chars)
            cost += result.judge.cost
            if on_metric is not None:
                on_metric(metric, result.judge)
        metrics[metric] = result
    return Grade(metrics, findings, trajectory.status, len(trajectory.steps),
                 getattr(judge, "name", None) if judge is not None else None, cost)
