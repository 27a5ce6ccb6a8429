"""Judges: one model call per metric, through the ordinary model layer (any litellm model,
``local/…``, ``scripted:…``). A judge is given the goal (the task text), the plans the agent stated,
the trajectory with step IDs, and the analysers' findings for that metric as hints; never the
benchmark's tests (a session does not hold them). Its reply is parsed into a score, reasons and
step IDs; a reply that cannot be read is asked for once more, then recorded as unparsable.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from live_swe.grading.metrics import GOAL_FULFILLMENT, LABELS, MAX_SCORE, QUESTIONS, RUBRICS, Finding
from live_swe.grading.trajectory import Step, Trajectory
from live_swe.models.base import Model

TASK_CHARS = 4000
PATCH_CHARS = 3000
DEFAULT_PROMPT_CHARS = 24000  # about 6-8k tokens: fits the embedded local model's context with room to answer
ANSWER_FORMAT = '{"score": <0-3>, "steps": [<IDs of the faulty steps>], "reasons": "<one or two sentences>"}'

SYSTEM = ("You grade one aspect of a software-engineering agent's run, strictly and only from the record you "
          "are given. Cite steps by their IDs. Reply with only a JSON object, nothing else.")


class BadVerdict(ValueError):
    """A judge reply that holds no readable verdict; the message says what was wrong."""


@dataclass
class Verdict:
    status: str  # ok | unparsable | error
    score: int | None = None
    reasons: str = ""
    steps: list[int] = field(default_factory=list)
    detail: str = ""  # why unparsable or failed (and the reply's start)
    cost: float = 0.0
    calls: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "score": self.score, "reasons": self.reasons, "steps": self.steps,
                "detail": self.detail, "cost": self.cost, "calls": self.calls}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Verdict:
        return cls(status=str(data.get("status", "ok")), score=data.get("score"), reasons=str(data.get("reasons", "")),
                   steps=[int(s) for s in data.get("steps") or []], detail=str(data.get("detail", "")),
                   cost=float(data.get("cost") or 0.0), calls=int(data.get("calls") or 0))


# -- the prompt ------------------------------------------------------------------------------------------

def _clip(text: str, limit: int) -> str:
    text = str(text or "").strip()
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return text[:head] + f"\n[... {len(text) - limit} characters elided ...]\n" + text[len(text) - (limit - head):]


def _step_block(step: Step, output_chars: int) -> str:
    lines = [f"[step {step.id}]"]
    if step.user_note:
        lines.append(f"(the person watching said: {_clip(step.user_note, 300)})")
    if step.thought:
        lines.append(f"THOUGHT: {_clip(step.thought, 800)}")
    if step.format_error:
        lines.append(f"(no command ran: {step.format_error})")
    elif step.command is None:
        lines.append("(no command ran" + (f": the command was {step.review}ed" if step.review else "") + ")")
    elif step.submitted:
        lines.append(f"$ {step.command}\n(submitted)")
    else:
        end = "timed out" if step.timed_out else f"exit code {step.returncode}"
        lines.append(f"$ {_clip(step.command, 1200)}\n({end}) output:\n{_clip(step.output, output_chars) or '(none)'}")
    for change in step.tools:
        lines.append(f"(tool `{change.name}` {change.kind}{': ' + change.why if change.why else ''})")
    for change in step.scaffold:
        lines.append(f"(scaffold change {change.kind}: {', '.join(change.files)}{': ' + change.why if change.why else ''})")
    return "\n".join(lines)


def render_trajectory(trajectory: Trajectory, max_chars: int = DEFAULT_PROMPT_CHARS // 2,
                      keep: set[int] | None = None) -> str:
    """The steps as a judge reads them, within ``max_chars``: outputs are shortened first, then
    middle steps left out (never the first and last three, nor the steps in ``keep``)."""
    steps = trajectory.steps
    if not steps:
        return "(the agent took no steps)"
    for output_chars in (1500, 600, 250, 100):
        blocks = [_step_block(s, output_chars) for s in steps]
        if sum(len(b) + 2 for b in blocks) <= max_chars:
            return "\n\n".join(blocks)
    keep = set(keep or ()) | {s.id for s in steps[:3]} | {s.id for s in steps[-3:]}
    size = sum(len(b) + 2 for b, s in zip(blocks, steps, strict=True) if s.id in keep)
    for block, step in zip(blocks, steps, strict=True):  # then the first steps that still fit
        if step.id not in keep and size + len(block) + 2 <= max_chars:
            keep.add(step.id)
            size += len(block) + 2
    parts, skipped = [], []
    for block, step in zip(blocks, steps, strict=True):
        if step.id in keep:
            if skipped:
                parts.append(f"[steps {skipped[0]}-{skipped[-1]} left out for length]")
                skipped = []
            parts.append(block)
        else:
            skipped.append(step.id)
    if skipped:
        parts.append(f"[steps {skipped[0]}-{skipped[-1]} left out for length]")
    return "\n\n".join(parts)


def render_plans(trajectory: Trajectory) -> str:
    plans = trajectory.plans
    if not plans:
        return "No PLAN: was stated."
    parts = []
    for plan in plans:
        header = f"[step {plan.step}] PLAN:" + (f" {plan.reason}" if plan.reason else "")
        parts.append("\n".join([header] + [f"{i}. {item}" for i, item in enumerate(plan.items, 1)]))
    return "\n\n".join(parts)


def judge_messages(metric: str, trajectory: Trajectory, findings: list[Finding],
                   max_chars: int = DEFAULT_PROMPT_CHARS) -> list[dict[str, str]]:
    """The conversation a judge of ``metric`` receives."""
    hints = [f for f in findings if f.metric == metric]
    rubric = "\n".join(RUBRICS[metric])
    parts = [
        f"## Metric: {LABELS[metric]}\n{QUESTIONS[metric]}\n\nScore it 0 to {MAX_SCORE}:\n{rubric}",
        f"## Goal (the task the agent was given)\n<task>\n{_clip(trajectory.task, TASK_CHARS)}\n</task>",
        f"## Plans the agent stated (quoted from its replies)\n{render_plans(trajectory)}",
        f"## How the run ended\n{trajectory.status}" + (f": {trajectory.exit_message}" if trajectory.exit_message else ""),
    ]
    if metric == GOAL_FULFILLMENT:
        parts.append(f"## The submitted change (repository diff)\n{_clip(trajectory.patch, PATCH_CHARS) or '(empty)'}")
    parts.append("## Hints from automatic checks (verify them against the trajectory; they can be wrong)\n"
                 + ("\n".join(f"- steps {', '.join(map(str, f.steps))}: {f.kind}: {f.evidence}" for f in hints)
                    or "- none for this metric"))
    answer = f"## Your answer\nReply with only this JSON object:\n{ANSWER_FORMAT}"
    room = max_chars - sum(len(p) + 2 for p in parts) - len(answer) - len(SYSTEM)
    keep = {step for f in hints for step in f.steps}
    trajectory_text = render_trajectory(trajectory, max(2000, room - 40), keep)
    parts.insert(3, f"## Trajectory (steps by ID)\n{trajectory_text}")
    parts.append(answer)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


# -- the reply -------------------------------------------------------------------------------------------

_SCORE_LINE = re.compile(r"^\W*score\W*[:=]\s*([0-3])(?:\s*/\s*3)?\W*$", re.IGNORECASE | re.MULTILINE)
_STEPS_LINE = re.compile(r"^\W*steps?\W*[:=]\s*(.*)$", re.IGNORECASE | re.MULTILINE)
_REASONS_LINE = re.compile(r"^\W*reasons?\W*[:=]\s*(.*)$", re.IGNORECASE | re.MULTILINE)


def _json_objects(text: str):
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _end = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


def _score(value: Any) -> int:
    if isinstance(value, bool):
        raise BadVerdict("the score is not a number")
    try:
        number = float(str(value).strip().split("/")[0])
    except ValueError:
        raise BadVerdict(f"the score {str(value)[:20]!r} is not a number") from None
    if number != int(number) or not 0 <= number <= MAX_SCORE:
        raise BadVerdict(f"the score {number:g} is not a whole number from 0 to {MAX_SCORE}")
    return int(number)


def _steps(value: Any, known: set[int]) -> list[int]:
    items = value if isinstance(value, list) else re.findall(r"\d+", str(value or ""))
    found = []
    for item in items:
        digits = re.findall(r"\d+", str(item))
        if digits and int(digits[0]) in known and int(digits[0]) not in found:
            found.append(int(digits[0]))
    return found


def parse_verdict(text: str, known_steps: set[int]) -> tuple[int, list[int], str]:
    """(score, faulty step IDs that exist, reasons) from a judge's reply; BadVerdict when unreadable."""
    for data in _json_objects(text or ""):
        if "score" in data:
            reasons = data.get("reasons", data.get("reason", data.get("explanation", "")))
            if isinstance(reasons, list):
                reasons = " ".join(str(r) for r in reasons)
            return _score(data["score"]), _steps(data.get("steps", []), known_steps), " ".join(str(reasons).split())
    line = _SCORE_LINE.search(text or "")
    if line:
        steps = _STEPS_LINE.search(text)
        reasons = _REASONS_LINE.search(text)
        return (int(line.group(1)), _steps(steps.group(1) if steps else "", known_steps),
                " ".join(reasons.group(1).split()) if reasons else "")
    raise BadVerdict("it holds no JSON object with a \"score\"")


def judge_metric(model: Model, metric: str, trajectory: Trajectory, findings: list[Finding],
                 max_chars: int = DEFAULT_PROMPT_CHARS) -> Verdict:
    """Ask ``model`` for ``metric``'s score; one retry on an unreadable reply; never raises for the
    model's failures (they are recorded in the verdict)."""
    messages = judge_messages(metric, trajectory, findings, max_chars)
    verdict = Verdict(status="unparsable")
    for attempt in range(2):
        try:
            reply = model.query(messages)
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # noqa: BLE001 - a judge's failure is recorded, never fatal to the grade
            verdict.status, verdict.detail = "error", f"{type(exc).__name__}: {str(exc)[:300]}"
            return verdict
        verdict.calls += 1
        verdict.cost += reply.cost
        try:
            verdict.score, verdict.steps, verdict.reasons = parse_verdict(reply.content, trajectory.step_ids)
            verdict.status, verdict.detail = "ok", ""
            return verdict
        except BadVerdict as exc:
            verdict.detail = f"{exc}; the reply began: {' '.join(reply.content.split())[:200]!r}"
            if attempt == 0:
                messages = messages + [
                    {"role": "assistant", "content": reply.content},
                    {"role": "user", "content": f"Your answer could not be read: {exc}. Reply with only the JSON "
                                                f"object, for example: {ANSWER_FORMAT}"},
                ]
    return verdict
