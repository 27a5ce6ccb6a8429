"""Grades of many trajectories together: mean normalised score per metric, the metric to aim at,
and a batch summary (overall and split by resolved / unresolved when the batch was evaluated)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from live_swe.grading.grade import Grade
from live_swe.grading.metrics import METRICS


def mean_scores(grades: list[Grade]) -> dict[str, float | None]:
    """Each metric's mean normalised score over the grades that have one (None when none has)."""
    means: dict[str, float | None] = {}
    for metric in METRICS:
        values = [g.metrics[metric].normalised for g in grades if g.metrics[metric].normalised is not None]
        means[metric] = round(sum(values) / len(values), 3) if values else None
    return means


def aim(means: dict[str, float | None]) -> str | None:
    """The metric with the lowest mean: where an improvement has most room (the first on ties)."""
    scored = [(value, METRICS.index(metric), metric) for metric, value in means.items() if value is not None]
    return min(scored)[2] if scored else None


def _block(grades: list[Grade]) -> dict[str, Any]:
    means = mean_scores(grades)
    return {"count": len(grades), "metrics": {m: {"mean": means[m]} for m in METRICS}, "aim": aim(means)}


def summarise(grades: dict[str, Grade], *, total: int, resolved: set[str] | None = None,
              judge: str | None = None) -> dict[str, Any]:
    """A batch's summary by metric; ``resolved`` (the evaluated instances that passed) splits it."""
    summary = {"total": total, "graded": len(grades), "missing": total - len(grades), "judge": judge,
               "cost": round(sum(g.cost for g in grades.values()), 6), **_block(list(grades.values())),
               "finding_kinds": dict(Counter(f.kind for g in grades.values() for f in g.findings).most_common())}
    if resolved is not None:
        summary["by_outcome"] = {
            "resolved": _block([g for i, g in grades.items() if i in resolved]),
            "unresolved": _block([g for i, g in grades.items() if i not in resolved]),
        }
    return summary
