"""How a grade is worded for people: the terminal report, one line per metric (the pull request
body, the TUI, ``sessions show``), and a batch's summary by metric. Findings quote commands the
agent wrote: callers that publish them pass each line through their own sanitiser."""

from __future__ import annotations

from typing import Any

from live_swe.grading.grade import Grade, MetricGrade
from live_swe.grading.metrics import LABELS, MAX_SCORE, METRICS, SHORT, Finding

SEVERITY = {1: "minor", 2: "major", 3: "critical"}


def score_text(metric: MetricGrade) -> str:
    return "-" if metric.score is None else f"{metric.score}/{MAX_SCORE}"


def steps_text(steps) -> str:
    steps = list(steps)
    return ("step " if len(steps) == 1 else "steps ") + ", ".join(str(s) for s in steps)


def finding_text(finding: Finding) -> str:
    return f"{steps_text(finding.steps)}: {finding.evidence} [{finding.kind}, {SEVERITY.get(finding.severity, '?')}]"


def worst(findings: list[Finding]) -> Finding | None:
    return max(findings, key=lambda f: (f.severity, -(f.steps[0] if f.steps else 0)), default=None)


def metric_line(grade: Grade, metric: str) -> str:
    """``Goal fulfillment: 2/3 — steps 7: ...``: the score and its main reason."""
    result = grade.metrics[metric]
    text = f"{LABELS[metric]}: {score_text(result)}"
    if result.score is None:
        return text + " — no PLAN was stated"
    if result.source == "judge" and result.judge is not None:
        steps = f" ({steps_text(result.judge.steps)})" if result.judge.steps else ""
        return text + (f" — judge: {result.judge.reasons}{steps}" if result.judge.reasons else " — judge")
    main = worst(grade.findings_for(metric))
    return text + (f" — {steps_text(main.steps)}: {main.evidence}" if main else "")


def metric_lines(grade: Grade) -> list[str]:
    return [metric_line(grade, metric) for metric in METRICS]


def headline(grade: Grade) -> str:
    scores = "  ".join(f"{SHORT[m]} {score_text(g)}" for m, g in grade.metrics.items())
    mean = f"{grade.mean:.2f}" if grade.mean is not None else "-"
    by = f"judge {grade.judge}" if grade.judge else "analysers"
    return f"GPA {mean}  {scores}  ({by})"


def text_report(grade: Grade, title: str = "") -> str:
    lines = [title] if title else []
    lines.append(headline(grade))
    for metric in METRICS:
        result = grade.metrics[metric]
        note = {"judge": "judge", "analysers": "analysers", "n/a": "no PLAN was stated"}[result.source]
        lines.append(f"  {LABELS[metric]:<21} {score_text(result):>4}  ({note})")
        if result.judge is not None:
            verdict = result.judge
            if verdict.status == "ok":
                steps = f" [{steps_text(verdict.steps)}]" if verdict.steps else ""
                lines.append(f"      judge: {verdict.reasons or '(no reasons given)'}{steps}")
            else:
                lines.append(f"      judge {verdict.status}: {verdict.detail}; the analysers' score counts")
    if grade.findings:
        lines.append("findings:")
        lines += [f"  {SHORT[f.metric]}  {finding_text(f)}" for f in grade.findings]
    else:
        lines.append("findings: none")
    if grade.judge:
        lines.append(f"judge cost: ${grade.cost:.4f}")
    return "\n".join(lines)


def summary_text(summary: dict[str, Any]) -> str:
    """A batch's summary (``live_swe.grading.batch.summarise``) as lines."""
    lines = [f"{summary['graded']} of {summary['total']} instance(s) graded"
             + (f" ({summary['missing']} without a session)" if summary.get("missing") else "")
             + (f", judge {summary['judge']}, cost ${summary['cost']:.4f}" if summary.get("judge") else "")]
    groups = summary.get("by_outcome") or {}
    header = f"  {'metric':<21} {'mean':>5}" + "".join(f" {name:>10}" for name in groups)
    lines.append(header)
    for metric in METRICS:
        row = summary["metrics"][metric]
        line = f"  {LABELS[metric]:<21} {_mean(row['mean']):>5}"
        line += "".join(f" {_mean(groups[name]['metrics'][metric]['mean']):>10}" for name in groups)
        lines.append(line)
    kinds = summary.get("finding_kinds") or {}
    if kinds:
        lines.append("findings: " + ", ".join(f"{kind} {count}" for kind, count in kinds.items()))
    return "\n".join(lines)


def _mean(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
