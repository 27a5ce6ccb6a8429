"""Diagnose a parent scaffold from its failed trajectories, and write the self-improvement task.

Only what the agent itself saw and did is read: each failed session's event log (commands, return
codes, timeouts, format errors, refused scaffold changes, how it ended) and its task text. Hidden
tests, test patches and gold patches are never read (they are not in a session at all), and only
sessions from the selection split are passed in by the evolve loop.

Each failed trajectory is also graded (Goal–Plan–Action, ``live_swe.grading``: the deterministic
analysers, no model call): its five scores and the findings with their steps and evidence go into
the task, which names the metric to aim at, the weakest across the failures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from live_swe import events as ev
from live_swe.grading.aggregate import aim, mean_scores
from live_swe.grading.grade import Grade
from live_swe.grading.metrics import LABELS, QUESTIONS, SHORT
from live_swe.grading.report import SEVERITY, score_text, steps_text
from live_swe.grading.session import grade_session_dir, open_session_dir
from live_swe.infra.jsonl import read_jsonl
from live_swe.session.store import SessionError, SessionMeta
from live_swe.session.view import SessionView

MAX_TRAJECTORIES = 4
LAST_COMMANDS = 6
EXCERPT = 300
MAX_FINDINGS = 5


@dataclass
class Trajectory:
    instance_id: str
    task: str = ""
    status: str = "unknown"
    exit_message: str = ""
    steps: int = 0
    format_errors: list[str] = field(default_factory=list)
    failed_commands: int = 0
    timeouts: int = 0
    commands: list[tuple[str, int]] = field(default_factory=list)  # (command, returncode)
    refused_changes: list[str] = field(default_factory=list)
    last_observation: str = ""
    submitted_patch_chars: int = 0


def _clip(text: str, limit: int = EXCERPT) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def read_trajectory(instance_id: str, session_dir: Path) -> Trajectory:
    """Summarise one session directory (missing or partial logs give a partial summary)."""
    trajectory = Trajectory(instance_id)
    try:
        view = SessionView.read(open_session_dir(session_dir))
    except (SessionError, OSError):
        trajectory.exit_message = "no readable session metadata"
        view = SessionView(SessionMeta(id=Path(session_dir).name, task="", model="", status="unknown"),
                           ev.parse_all(read_jsonl(Path(session_dir) / "events.jsonl")))
    else:
        trajectory.task, trajectory.status = view.meta.task, view.status
        trajectory.exit_message, trajectory.steps = view.meta.exit_message, view.steps
    for event in view.events:
        _note_event(trajectory, event)
    patch = Path(session_dir) / "patch.diff"
    trajectory.submitted_patch_chars = len(patch.read_text(errors="replace")) if patch.exists() else 0
    return trajectory


def _note_event(trajectory: Trajectory, event: ev.Event) -> None:
    match event:
        case ev.Step():
            code = event.returncode or 0
            trajectory.commands.append((event.command, code))
            trajectory.failed_commands += code != 0
            trajectory.timeouts += event.timed_out
        case ev.FormatError():
            trajectory.format_errors.append(event.reason)
        case ev.ScaffoldChange() if event.kind in ("reject", "rollback"):
            trajectory.refused_changes.append(f"{event.kind}: {event.why}")
        case ev.ToolChange() if event.kind == "refused":
            trajectory.refused_changes.append(f"tool {event.name} refused: {event.why}")
        case ev.Message() if event.message.get("role") in ("user", "tool"):
            trajectory.last_observation = str(event.message.get("content") or "")


def describe_grade(grade: Grade) -> list[str]:
    """The grade's scores and its worst findings, with steps and evidence."""
    scores = "  ".join(f"{SHORT[m]} {score_text(g)}" for m, g in grade.metrics.items())
    lines = [f"Grade (0-3; GF goal fulfillment, LC logical consistency, EE execution efficiency, PQ plan quality, "
             f"PA plan adherence): {scores}"]
    worst = sorted(grade.findings, key=lambda f: (-f.severity, f.steps[0] if f.steps else 0))[:MAX_FINDINGS]
    if worst:
        lines.append("Where it went wrong:")
        lines += [f"- {steps_text(f.steps)} [{SHORT[f.metric]} {f.kind}, {SEVERITY[f.severity]}]: "
                  f"{_clip(f.evidence, 220)}" for f in worst]
    return lines


def describe(trajectory: Trajectory, grade: Grade | None = None) -> str:
    lines = [f"### {trajectory.instance_id}: ended `{trajectory.status}` after {trajectory.steps} steps"
             + (f" ({_clip(trajectory.exit_message, 160)})" if trajectory.exit_message else "")]
    if trajectory.task:
        lines.append(f"Task (start): {_clip(trajectory.task)}")
    lines.append(f"Commands that failed: {trajectory.failed_commands}; timed out: {trajectory.timeouts}; "
                 f"format errors: {len(trajectory.format_errors)}; submitted patch: "
                 f"{trajectory.submitted_patch_chars} characters.")
    if trajectory.format_errors:
        lines.append("Format errors: " + "; ".join(sorted(set(trajectory.format_errors)))[:EXCERPT])
    for change in trajectory.refused_changes[:3]:
        lines.append(f"Refused self-change: {_clip(change, 200)}")
    if trajectory.commands:
        lines.append("Last commands (return code):")
        for command, code in trajectory.commands[-LAST_COMMANDS:]:
            lines.append(f"- [{code}] {_clip(command, 160)}")
    if trajectory.last_observation:
        lines.append(f"Last observation: {_clip(trajectory.last_observation)}")
    if grade is not None:
        lines += describe_grade(grade)
    return "\n".join(lines)


def aim_text(grades: list[Grade]) -> str:
    """Which metric the change should aim at: the weakest across the failed trajectories."""
    means = mean_scores(grades)
    target = aim(means)
    if target is None:
        return ""
    table = ", ".join(f"{LABELS[m]} {v:.2f}" for m, v in means.items() if v is not None)
    return (f"## Where to aim\nMean scores over the failed trajectories (0 worst, 1 best): {table}.\n"
            f"Aim your change at {LABELS[target].lower()}: {QUESTIONS[target]}")


TASK_HEADER = """\
You are improving the scaffold of live-swe, a software-engineering agent. The repository you are in
IS that scaffold: `scaffold.yaml` (its policy: truncation, reflection cadence, context policy,
budgets, which prompt files), `prompts/*.j2` (Jinja templates the agent sees), `hooks.py` (Python
hooks, standard library only) and `tools/` (command-line tools registered for the agent).

Below are tasks the agent FAILED with this scaffold, summarised from its own trajectories. Find a
general weakness behind them and make ONE focused change to the files here that would help on tasks
like these (not only these). Rules: unknown keys in scaffold.yaml are refused; budgets may only be
lowered; every template must still render; hooks must compile and import only the standard library.
Do not commit; edit the files, read them back to check them, then submit with
`echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`.
"""


def improvement_task(parent_id: str, trajectories: list[Trajectory], *, solved: int, total: int,
                     grades: dict[str, Grade] | None = None) -> str:
    """The task text given to the agent that makes a child of ``parent_id``; ``grades`` (by instance)
    add each failure's scores and findings, and the metric to aim at."""
    grades = grades or {}
    parts = [TASK_HEADER, f"The scaffold (archive node {parent_id}) resolved {solved} of {total} selection tasks."]
    if trajectories:
        parts.append("\n## Failed trajectories\n")
        parts.extend(describe(t, grades.get(t.instance_id)) + "\n" for t in trajectories[:MAX_TRAJECTORIES])
        target = aim_text([grades[t.instance_id] for t in trajectories if t.instance_id in grades])
        if target:
            parts.append(target)
    else:
        parts.append("\nIt failed none of them; look for a change that makes it faster or cheaper.")
    return "\n".join(parts).strip() + "\n"


def diagnose(parent_id: str, results: dict[str, bool], sessions: dict[str, str],
             selection: set[str]) -> str:
    """The self-improvement task for a parent: its failures on the selection split only."""
    failed = sorted(i for i, ok in results.items() if not ok and i in selection)
    trajectories = [read_trajectory(i, Path(sessions[i])) for i in failed if sessions.get(i)]
    graded = {i: grade_session_dir(sessions[i]) for i in failed if sessions.get(i)}
    in_split = [i for i in results if i in selection]
    return improvement_task(parent_id, trajectories, solved=sum(results[i] for i in in_split), total=len(in_split),
                            grades={i: g for i, g in graded.items() if g is not None})
