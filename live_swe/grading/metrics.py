"""The five Goal–Plan–Action metrics (Agent GPA, arXiv 2510.08847), their 0–3 rubrics, and the
findings the deterministic analysers report against them."""

from __future__ import annotations

from dataclasses import dataclass

GOAL_FULFILLMENT = "goal_fulfillment"
LOGICAL_CONSISTENCY = "logical_consistency"
EXECUTION_EFFICIENCY = "execution_efficiency"
PLAN_QUALITY = "plan_quality"
PLAN_ADHERENCE = "plan_adherence"

METRICS = (GOAL_FULFILLMENT, LOGICAL_CONSISTENCY, EXECUTION_EFFICIENCY, PLAN_QUALITY, PLAN_ADHERENCE)
MAX_SCORE = 3

LABELS = {
    GOAL_FULFILLMENT: "Goal fulfillment",
    LOGICAL_CONSISTENCY: "Logical consistency",
    EXECUTION_EFFICIENCY: "Execution efficiency",
    PLAN_QUALITY: "Plan quality",
    PLAN_ADHERENCE: "Plan adherence",
}
SHORT = {GOAL_FULFILLMENT: "GF", LOGICAL_CONSISTENCY: "LC", EXECUTION_EFFICIENCY: "EE", PLAN_QUALITY: "PQ",
         PLAN_ADHERENCE: "PA"}

QUESTIONS = {
    GOAL_FULFILLMENT: "Did the run achieve the goal (the task), and did it establish that it did (a test or a "
                      "run of the changed code after the last edit) before submitting?",
    LOGICAL_CONSISTENCY: "Are the agent's statements and actions consistent with what it observed earlier: no "
                         "claims that contradict an output, no repeating an action that just failed as if it had "
                         "not?",
    EXECUTION_EFFICIENCY: "Did the agent reach its result without wasted steps: no repeated commands with the same "
                          "output, no reading the same file again and again, no refused changes or format errors, "
                          "no tools made and never used?",
    PLAN_QUALITY: "Is the stated plan (the PLAN: lists, quoted below) a sound, complete and verifiable way to the "
                  "goal: the relevant code, a reproduction or test, the change, a check of the change?",
    PLAN_ADHERENCE: "Did the agent carry out its stated plan, step by step, and state a new PLAN with a reason "
                    "whenever it changed course?",
}

RUBRICS = {
    GOAL_FULFILLMENT: ("0: the goal is not met (no submission, an empty or unrelated change, or a change the "
                       "trajectory shows to be wrong).",
                       "1: a change aimed at the goal, but its own checks failed or it breaks something.",
                       "2: a plausible change for the goal, but not verified after the last edit.",
                       "3: the goal is met and the trajectory verifies it after the last edit."),
    LOGICAL_CONSISTENCY: ("0: the agent acts on facts its observations contradict throughout (fabricated results "
                          "or files).",
                          "1: a major contradiction: a claim or action against an earlier observation.",
                          "2: minor lapses (an unchanged retry of a failed command, a loose claim).",
                          "3: every statement and action follows from what was observed."),
    EXECUTION_EFFICIENCY: ("0: mostly wasted steps (loops, repeated identical commands).",
                           "1: many wasted steps.",
                           "2: a few wasted steps.",
                           "3: no wasted steps."),
    PLAN_QUALITY: ("0: no plan was stated, or it cannot lead to the goal.",
                   "1: a plan that misses essential steps (no way to verify, wrong place).",
                   "2: a reasonable plan with a gap or vague steps.",
                   "3: a complete, concrete, verifiable plan."),
    PLAN_ADHERENCE: ("0: the plan was ignored.",
                     "1: the agent left its plan without saying why, or skipped essential steps.",
                     "2: mostly followed, with a small unexplained deviation.",
                     "3: followed, and every change of course came with a new PLAN and its reason."),
}

# Severities: 1 minor (a wasted step, a loose end), 2 major (many wasted steps, an unchecked result),
# 3 critical (the metric's point is missed: no plan, no submission).
MINOR, MAJOR, CRITICAL = 1, 2, 3


@dataclass(frozen=True)
class Finding:
    metric: str
    kind: str  # the analyser's name for what it found (repeated_command, unverified_edit...)
    steps: tuple[int, ...]  # the faulty steps
    evidence: str
    severity: int

    def to_json(self) -> dict:
        return {"metric": self.metric, "kind": self.kind, "steps": list(self.steps), "evidence": self.evidence,
                "severity": self.severity}

    @classmethod
    def from_json(cls, data: dict) -> Finding:
        return cls(str(data["metric"]), str(data["kind"]), tuple(int(s) for s in data.get("steps", ())),
                   str(data.get("evidence", "")), int(data.get("severity", MINOR)))


def analyser_score(findings: list[Finding]) -> int:
    """A metric's score from its findings: 3 less the worst severity, one less again for three or more."""
    if not findings:
        return MAX_SCORE
    score = MAX_SCORE - max(f.severity for f in findings) - (1 if len(findings) >= 3 else 0)
    return max(0, score)
