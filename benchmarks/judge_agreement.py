"""A judge model on the labelled set: how often its replies could be read, whether the metric an
injected error belongs to scored below 3 (detection), and whether the judge named a labelled step
(localisation); clean trajectories scoring below 3 are false alarms. The analysers' figures on the
same trajectories are printed next to it.

Run through ``benchmarks/grading_agreement.py --judge MODEL [--limit N]`` (which builds the set), e.g.
``nice -n 10 python benchmarks/grading_agreement.py --judge local/qwen2.5-coder-0.5b --limit 8``.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from live_swe.grading.grade import grade
from live_swe.grading.metrics import (
    EXECUTION_EFFICIENCY,
    GOAL_FULFILLMENT,
    LOGICAL_CONSISTENCY,
    METRICS,
    PLAN_ADHERENCE,
)
from live_swe.models.resolve import make_model

KIND_METRIC = {
    "looping": EXECUTION_EFFICIENCY,
    "inefficient_search": EXECUTION_EFFICIENCY,
    "unverified_edit": GOAL_FULFILLMENT,
    "plan_abandoned": PLAN_ADHERENCE,
    "fabricated_claim": LOGICAL_CONSISTENCY,
}
LOCAL_PROMPT_CHARS = 12000  # the embedded model reads slowly on a CPU: a shorter trajectory excerpt


def stratified(items: list, limit: int | None) -> list:
    """Up to ``limit`` items, taking the kinds (and clean trajectories) in turn."""
    if not limit or limit >= len(items):
        return list(items)
    groups: dict[str, list] = {}
    for item in items:
        groups.setdefault(item.labels[0].kind if item.labels else "clean", []).append(item)
    chosen = []
    while len(chosen) < limit:
        for group in groups.values():
            if group and len(chosen) < limit:
                chosen.append(group.pop(0))
    return chosen


def judge_figures(items: list, trajectories: dict, findings: dict, judge_name: str,
                  limit: int | None) -> dict[str, Any]:
    model = make_model(judge_name)
    max_chars = LOCAL_PROMPT_CHARS if judge_name.startswith("local/") else 24000
    chosen = stratified(items, limit)
    calls = parsed = 0
    labels = detected = localised = analysers_detected = 0
    clean_metrics = clean_alarms = 0
    seconds: list[float] = []
    rows = []
    for item in chosen:
        started = time.monotonic()
        result = grade(trajectories[item.id], model, max_chars=max_chars)
        seconds.append(time.monotonic() - started)
        verdicts = {m: g.judge for m, g in result.metrics.items() if g.judge is not None}
        calls += sum(v.calls for v in verdicts.values())
        parsed += sum(v.status == "ok" for v in verdicts.values())
        for label in item.labels:
            metric = KIND_METRIC[label.kind]
            verdict = verdicts.get(metric)
            labels += 1
            hit = verdict is not None and verdict.status == "ok" and verdict.score < 3
            detected += hit
            localised += hit and bool(set(verdict.steps) & set(label.steps))
            analysers_detected += (result.metrics[metric].analysers or 0) < 3
        if not item.labels:
            for verdict in verdicts.values():
                if verdict.status == "ok":
                    clean_metrics += 1
                    clean_alarms += verdict.score < 3
        rows.append({"id": item.id, "scores": {m: (v.score if v.status == "ok" else v.status)
                                               for m, v in verdicts.items()},
                     "analysers": {m: result.metrics[m].analysers for m in METRICS},
                     "seconds": round(seconds[-1], 1)})
        print(f"judged {item.id} in {seconds[-1]:.0f} s: {rows[-1]['scores']}", file=sys.stderr)
    metrics_asked = sum(len(r["scores"]) for r in rows)
    return {
        "model": judge_name, "trajectories": len(chosen), "metric_verdicts": metrics_asked,
        "parsed": parsed, "calls": calls, "labels": labels, "detected": detected, "localised": localised,
        "analysers_detected": analysers_detected, "clean_verdicts": clean_metrics, "clean_alarms": clean_alarms,
        "median_seconds_per_trajectory": sorted(seconds)[len(seconds) // 2] if seconds else None,
        "rows": rows,
    }
