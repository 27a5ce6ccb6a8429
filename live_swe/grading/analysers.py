"""Deterministic analysers: pure functions from a trajectory to findings (metric, steps, evidence,
severity). Free, always on, and the judges' hints. Each one is linear in the number of steps.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from functools import lru_cache

from live_swe.grading.commands import normalise_path, normalised_pattern
from live_swe.grading.metrics import (
    CRITICAL,
    EXECUTION_EFFICIENCY,
    GOAL_FULFILLMENT,
    LOGICAL_CONSISTENCY,
    MAJOR,
    MINOR,
    PLAN_ADHERENCE,
    PLAN_QUALITY,
    Finding,
)
from live_swe.grading.plans import Plan
from live_swe.grading.trajectory import Step, Trajectory

Analyser = Callable[[Trajectory], list[Finding]]

EXPLORATION_RUN = 8  # inspect-only steps in a row before more of them count as wasted
_TIMING = re.compile(r"\d+(?:\.\d+)?\s*(?:s|ms|sec|seconds)\b|0x[0-9a-f]+", re.IGNORECASE)


def _clip(text: str, limit: int = 100) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _steps_text(ids: list[int]) -> str:
    return ", ".join(str(i) for i in ids)


def _same_output(a: Step, b: Step) -> bool:
    return _TIMING.sub("#", a.output).strip() == _TIMING.sub("#", b.output).strip()


def _epochs(trajectory: Trajectory) -> dict[int, int]:
    """Step ID -> how many steps changed the repository before it (results may differ across epochs)."""
    epochs, epoch = {}, 0
    for step in trajectory.steps:
        epochs[step.id] = epoch
        if step.command is not None and (step.facts.changes or step.facts.scaffold):
            epoch += 1
    return epochs


def exact_repeats(trajectory: Trajectory) -> dict[int, tuple[Step, bool]]:
    """Steps that ran a command already run since the last change: step ID -> (the earlier step,
    whether both failed). Only counted where the output is the same or the command failed both times."""
    epochs, seen, repeats = _epochs(trajectory), {}, {}
    for step in trajectory.acted():
        if step.submitted:
            continue
        key = " ".join(step.command.split())
        earlier = seen.get(key)
        if earlier is not None and epochs[earlier.id] == epochs[step.id]:
            both_failed = earlier.failed and step.failed
            if both_failed or _same_output(earlier, step):
                repeats[step.id] = (earlier, both_failed)
        seen[key] = step
    return repeats


# -- execution efficiency and loops ---------------------------------------------------------------------

def repeated_actions(trajectory: Trajectory) -> list[Finding]:
    """The same command again with the same output (a loop), or a failed command retried unchanged."""
    groups: dict[tuple[str, bool], list[int]] = defaultdict(list)
    first: dict[tuple[str, bool], Step] = {}
    by_id = {s.id: s for s in trajectory.steps}
    for step_id, (earlier, failed) in exact_repeats(trajectory).items():
        key = (" ".join(by_id[step_id].command.split()), failed)
        groups[key].append(step_id)
        first.setdefault(key, earlier)
    findings = []
    for (command, failed), ids in groups.items():
        origin = first[(command, failed)]
        severity = MAJOR if len(ids) >= 2 else MINOR
        if failed:
            findings.append(Finding(LOGICAL_CONSISTENCY, "retried_failure", tuple(ids),
                                    f"`{_clip(command, 80)}` failed at step {origin.id} (exit {origin.returncode}) and "
                                    f"was run again unchanged at step(s) {_steps_text(ids)} with nothing changed "
                                    "in between", severity))
        else:
            findings.append(Finding(EXECUTION_EFFICIENCY, "repeated_command", tuple(ids),
                                    f"`{_clip(command, 80)}` (first at step {origin.id}) was run again at step(s) "
                                    f"{_steps_text(ids)} and printed the same output", severity))
    return findings


def redundant_reads(trajectory: Trajectory) -> list[Finding]:
    """A file read again while unchanged: after it was shown whole (any later look at it, a grep
    included), the same partial read again, or a third partial read."""
    repeats = exact_repeats(trajectory)
    version: dict[str, int] = defaultdict(int)
    reads: dict[str, list[tuple[int, str]]] = defaultdict(list)  # path -> (version, how) of each look
    wasted: dict[str, list[int]] = defaultdict(list)
    for step in trajectory.acted():
        facts = step.facts
        for path in sorted((facts.reads | facts.greps) - facts.changes) if not step.failed else ():
            shown_whole = path in facts.whole_reads and not step.truncated
            how = "whole" if shown_whole else " ".join(step.command.split())
            same_version = [h for v, h in reads[path] if v == version[path]]
            partial_again = path in facts.reads and (how in same_version or len(same_version) >= 2)
            if ("whole" in same_version or partial_again) and step.id not in repeats:
                wasted[path].append(step.id)
            reads[path].append((version[path], how))
        for path in facts.changes:
            version[path] += 1
    return [Finding(EXECUTION_EFFICIENCY, "redundant_read", tuple(ids),
                    f"{path} was looked at again at step(s) {_steps_text(ids)} although it had not changed since "
                    f"it was shown ({len(reads[path])} looks in all)", MAJOR if len(ids) >= 2 else MINOR)
            for path, ids in wasted.items()]


def repeated_searches(trajectory: Trajectory) -> list[Finding]:
    """The same search (pattern, or listing) made again with nothing changed since."""
    repeats, epochs = exact_repeats(trajectory), _epochs(trajectory)
    seen: dict[str, tuple[int, int]] = {}  # pattern -> (first step, epoch)
    wasted: dict[str, list[int]] = defaultdict(list)
    for step in trajectory.acted():
        for pattern in dict.fromkeys(normalised_pattern(p) for p in step.facts.searches):
            if len(pattern) < 3:
                continue
            earlier = seen.get(pattern)
            if earlier is not None and earlier[1] == epochs[step.id] and earlier[0] != step.id:
                if step.id not in repeats:
                    wasted[pattern].append(step.id)
            else:
                seen[pattern] = (step.id, epochs[step.id])
    return [Finding(EXECUTION_EFFICIENCY, "repeated_search", tuple(ids),
                    f"the search for '{_clip(pattern, 60)}' (first at step {seen[pattern][0]}) was made again at "
                    f"step(s) {_steps_text(ids)} with nothing changed in between", MAJOR if len(ids) >= 2 else MINOR)
            for pattern, ids in wasted.items()]


def long_exploration(trajectory: Trajectory) -> list[Finding]:
    """More than EXPLORATION_RUN steps in a row that only read or search."""
    findings, run = [], []
    for step in trajectory.acted() + [None]:
        if step is not None and step.facts.inspects_only:
            run.append(step.id)
            continue
        if len(run) > EXPLORATION_RUN:
            extra = run[EXPLORATION_RUN:]
            findings.append(Finding(EXECUTION_EFFICIENCY, "long_exploration", tuple(extra),
                                    f"{len(run)} steps in a row (steps {run[0]}-{run[-1]}) only read or searched",
                                    MAJOR if len(extra) > EXPLORATION_RUN else MINOR))
        run = []
    return findings


def unused_tools(trajectory: Trajectory) -> list[Finding]:
    """Tools the agent made (and the gates registered) that no later command used."""
    findings = []
    for step in trajectory.steps:
        for change in step.tools:
            if change.kind != "registered":
                continue
            word = re.compile(rf"(^|[\s;&|/(`$]){re.escape(change.name)}($|[\s;&|)`])")
            if not any(word.search(s.command) for s in trajectory.acted() if s.id > step.id):
                findings.append(Finding(EXECUTION_EFFICIENCY, "unused_tool", (step.id,),
                                        f"the tool `{change.name}` made at step {step.id} was never used", MINOR))
    return findings


def refused_changes(trajectory: Trajectory) -> list[Finding]:
    """Scaffold changes the gates refused or rolled back, and tools they refused: work undone."""
    ids, reasons = [], []
    for step in trajectory.steps:
        undone = [c for c in step.scaffold if c.kind in ("reject", "rollback") and c.reason != "resume"]
        tools = [t for t in step.tools if t.kind == "refused"]
        if undone or tools:
            ids.append(step.id)
            reasons += [f"step {step.id}: {', '.join(c.files) or 'hooks'} {c.kind}ed ({_clip(c.why, 80)})" for c in undone]
            reasons += [f"step {step.id}: tool `{t.name}` refused ({_clip(t.why, 80)})" for t in tools]
    if not ids:
        return []
    return [Finding(EXECUTION_EFFICIENCY, "reverted_scaffold_change", tuple(ids), "; ".join(reasons[:4]),
                    MAJOR if len(ids) >= 3 else MINOR)]


def format_errors(trajectory: Trajectory) -> list[Finding]:
    ids = [s.id for s in trajectory.steps if s.format_error]
    if not ids:
        return []
    reasons = sorted({s.format_error for s in trajectory.steps if s.format_error})
    return [Finding(EXECUTION_EFFICIENCY, "format_error", tuple(ids),
                    f"{len(ids)} repl{'y' if len(ids) == 1 else 'ies'} ran nothing: {_clip('; '.join(reasons), 120)}",
                    MAJOR if len(ids) >= 3 else MINOR)]


# -- goal fulfillment ------------------------------------------------------------------------------------

def goal_checks(trajectory: Trajectory) -> list[Finding]:
    """No submission, an empty patch, edits nothing ran after, a submission without a test after the
    last edit, or with the last test failing."""
    findings: list[Finding] = []
    acted = trajectory.acted()
    last_id = trajectory.steps[-1].id if trajectory.steps else 0
    submit = next((s for s in reversed(acted) if s.submitted), None)
    if not trajectory.submitted:
        ended = (f"the run ended `{trajectory.status}` without a submission" if trajectory.status != "unknown"
                 else "the run has not ended (still running, or killed): no submission")
        findings.append(Finding(GOAL_FULFILLMENT, "not_submitted", (last_id,), ended
                                + (f": {_clip(trajectory.exit_message)}" if trajectory.exit_message else ""), CRITICAL))
    elif not trajectory.patch.strip():
        findings.append(Finding(GOAL_FULFILLMENT, "empty_patch", (submit.id if submit else last_id,),
                                "submitted without changing any file", CRITICAL))
    changed = [i for i, s in enumerate(acted) if s.facts.changes]
    if not changed:
        return findings
    last_change = changed[-1]
    ran = [s for s in acted[last_change:] if s.facts.runs]
    if not ran:
        last_run = max((i for i, s in enumerate(acted) if s.facts.runs), default=-1)
        unverified = [s.id for s in acted[last_run + 1:] if s.facts.changes]
        files = sorted({p for s in acted[last_run + 1:] for p in s.facts.changes})
        findings.append(Finding(GOAL_FULFILLMENT, "unverified_edit", tuple(unverified),
                                f"the edit(s) at step(s) {_steps_text(unverified)} ({_clip(', '.join(files), 80)}) "
                                "were never followed by a run of the code or the tests", MAJOR))
    if trajectory.submitted and submit is not None:
        tests = [s for s in acted[last_change:] if s.facts.tests]
        if not tests:
            last_edit = acted[last_change].id
            findings.append(Finding(GOAL_FULFILLMENT, "untested_submission", (submit.id,),
                                    f"submitted at step {submit.id} with no test run after the last edit "
                                    f"(step {last_edit})" + ("; only other code ran" if ran else ""),
                                    MINOR if ran else MAJOR))
        elif tests[-1].failed:
            findings.append(Finding(GOAL_FULFILLMENT, "submitted_failing", (submit.id, tests[-1].id),
                                    f"submitted although the last test run (step {tests[-1].id}, "
                                    f"`{_clip(tests[-1].command, 60)}`) exited with code {tests[-1].returncode}",
                                    MAJOR))
    return findings


# -- logical consistency ---------------------------------------------------------------------------------

_MISSING = (
    re.compile(r"(?:cat|sed|grep|head|tail|ls|nl|wc|python3?|awk|less|cp|mv|stat|diff): (?:can't read |cannot "
               r"(?:access|open|stat) )?'?([^\s':]+)'?: No such file or directory"),
    re.compile(r"cannot access '([^']+)': No such file"),
    re.compile(r"can't open file '([^']+)'"),
    re.compile(r"No such file or directory: '([^']+)'"),
)
_NEGATION = re.compile(r"\b(not|no|n't|missing|instead|absent|nonexistent|non-existent|doesn|isn|wasn|never|"
                       r"without|wrong|create|creating|new file)\b", re.IGNORECASE)
_TESTS_PASS = re.compile(r"\btests?\b(?:[^.!?]|\.(?=\S)){0,60}?\b(?:pass|passes|passed|are passing|succeed|succeeded|are green)\b"
                         r"|\b(?:pass|passes|passing) now\b", re.IGNORECASE)
_HEDGE = re.compile(r"\b(should|will|would|let's|let me|whether|if|make sure|ensure|verify|check|expect|"
                    r"hopefully|to see|might|could)\b|\?", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def _same_path(a: str, b: str) -> bool:
    a, b = normalise_path(a), normalise_path(b)
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.split(text) if s.strip()]


def _mentions(sentence: str, path: str) -> bool:
    name = normalise_path(path)
    return name in sentence if "/" in name else bool(re.search(rf"(^|[\s`'\"(/]){re.escape(name)}\b", sentence))


def contradictions(trajectory: Trajectory) -> list[Finding]:
    """Acting on, or asserting, what an earlier observation contradicts: a file it said does not exist
    read or edited (or talked about as if it existed), tests said to pass when the last run failed."""
    findings: list[Finding] = []
    missing: dict[str, Step] = {}  # path -> the step whose output said it does not exist
    last_test: Step | None = None
    for step in trajectory.steps:
        facts = step.facts if step.command is not None else None
        for path, origin in list(missing.items()):
            if facts is not None and any(_same_path(path, p) for p in facts.creates):
                del missing[path]  # created: it exists from now on
                continue
            acted_on = facts is not None and step.command != origin.command and any(
                _same_path(path, p) for p in facts.reads | facts.greps | (facts.edits - facts.creates))
            claimed = any(_mentions(s, path) and not _NEGATION.search(s) for s in _sentences(step.thought))
            if acted_on or claimed:
                how = "acts on it" if acted_on else "talks about it as if it existed"
                findings.append(Finding(LOGICAL_CONSISTENCY, "contradicts_observation", (step.id,),
                                        f"step {origin.id} showed that {path} does not exist, yet step {step.id} {how}",
                                        MAJOR))
                del missing[path]
        claim = next((s for s in _sentences(step.thought) if _TESTS_PASS.search(s) and not _HEDGE.search(s)
                      and not _NEGATION.search(s)), None)
        if claim is not None and (last_test is None or last_test.failed):
            why = (f"the last test run (step {last_test.id}) exited with code {last_test.returncode}" if last_test
                   else "no test had run")
            findings.append(Finding(LOGICAL_CONSISTENCY, "claim_contradicts_output", (step.id,),
                                    f"step {step.id} says \"{_clip(claim, 80)}\", but {why}", MAJOR))
        if facts is None:
            continue
        if facts.tests:
            last_test = step
        for pattern in _MISSING:
            for match in pattern.finditer(step.output):
                path = normalise_path(match.group(1))
                if path and not any(_same_path(path, p) for p in facts.creates):
                    missing.setdefault(path, step)
    return findings


# -- plans -----------------------------------------------------------------------------------------------

_VERBS = {
    "inspect": re.compile(r"\b(read|look|open|inspect|examine|view|understand|review|study|check|see|find|locate|"
                          r"search|grep|explore|identify|list|investigate)\b", re.IGNORECASE),
    "run": re.compile(r"\b(run|reproduce|test|tests|verify|check|confirm|execute|validate|ensure)\b", re.IGNORECASE),
    "edit": re.compile(r"\b(fix|edit|change|modify|update|implement|add|patch|correct|replace|write|create|adjust|"
                       r"refactor|remove|rename|make|keep|cap|clamp|limit|handle|use|return|raise|strip|drop|"
                       r"set|convert|guard|apply|move|delete)\b", re.IGNORECASE),
    "submit": re.compile(r"\b(submit|finish)\b", re.IGNORECASE),
}
_ANCHOR = re.compile(r"`([^`]+)`|([\w./-]+\.(?:py|js|ts|go|rs|md|toml|yaml|yml|json|cfg|txt|c|h))\b|\b(\w+)\(\)")
_CHECK = re.compile(r"\b(test|tests|verify|check|confirm|reproduce|validate|run)\b", re.IGNORECASE)
_GREP_LINE = re.compile(r"^([\w./-]+\.\w+)[:-]\d+[:-]", re.MULTILINE)


def _step_kinds(step: Step) -> set[str]:
    facts, kinds = step.facts, set()
    if facts.reads or facts.greps or facts.searches:
        kinds.add("inspect")
    if facts.runs:
        kinds.add("run")
    if facts.changes:
        kinds.add("edit")
    if facts.submits or step.submitted:
        kinds.add("submit")
    return kinds


class _Known:
    """What the trajectory showed of each file (printed whole, written by a command, grep lines), with
    the answers to "does this file mention / define that name" kept, so each is worked out once."""

    def __init__(self, trajectory: Trajectory):
        texts: dict[str, dict[str, None]] = defaultdict(dict)  # path -> distinct texts, in order
        for step in trajectory.acted():
            facts = step.facts
            for path in facts.whole_reads:
                texts[path][step.output] = None
            for path in facts.creates:
                texts[path][step.command] = None
            for match in _GREP_LINE.finditer(step.output):
                end = step.output.find("\n", match.end())
                texts[normalise_path(match.group(1))][step.output[match.start(): end if end >= 0 else None]] = None
        self.texts = {path: "\n".join(parts) for path, parts in texts.items()}
        self._answers: dict[tuple[str, str, bool], bool] = {}
        self._files = "\n".join(self.texts.values())
        self._seen: dict[str, bool] = {}

    def seen(self, name: str) -> bool:
        """Whether a step can be tied to ``name``: a path always can; a name (a function) only when a
        file the trajectory showed, or a command, holds it. Otherwise the anchor cannot be checked."""
        if "/" in name or "." in name:
            return True
        if name not in self._seen:
            self._seen[name] = name in self._files
        return self._seen[name]

    def has(self, path: str, name: str, definition: bool) -> bool:
        key = (path, name, definition)
        if key not in self._answers:
            text = self.texts.get(path, "")
            if definition:
                found = re.search(_DEFINITION.format(name=re.escape(name)), text, re.MULTILINE) is not None
            else:
                found = name in text
            self._answers[key] = found
        return self._answers[key]


_DEFINITION = "(?:def|class|function|fn|func)\\s+{name}\\b|^\\s*{name}\\s*="


def _anchored(anchor: str, step: Step, known: _Known) -> bool:
    """Whether the step concerns ``anchor`` (a path or a name): it names it, touches that file, runs
    or edits a file that mentions it, or looks at a file that defines it."""
    command = step.command or ""
    if anchor in command or anchor.rsplit("/", 1)[-1] in command:
        return True
    facts = step.facts
    looked = facts.reads | facts.greps | {normalise_path(m) for m in _GREP_LINE.findall(step.output)}
    worked = facts.changes | facts.targets
    if any(_same_path(anchor, path) or anchor.startswith(path + "/") for path in looked | worked):
        return True  # `pytest tests/` runs tests/test_x.py
    return (any(known.has(path, anchor, definition=False) for path in worked)
            or any(known.has(path, anchor, definition=True) for path in looked))


@lru_cache(maxsize=1024)
def _leading_verbs(item: str) -> frozenset[str]:
    """The kinds of action the item's first verb names (``check`` is both looking and running)."""
    found = [(match.start(), kind) for kind, pattern in _VERBS.items() for match in [pattern.search(item)] if match]
    first = min((start for start, _kind in found), default=None)
    return frozenset(kind for start, kind in found if start == first)


@lru_cache(maxsize=1024)
def _anchors(item: str) -> tuple[str, ...]:
    return tuple(a for group in _ANCHOR.findall(item) for a in group if a)


def _vague(item: str, known: _Known) -> bool:
    """No action word and nothing the trajectory shows named: whether it was carried out cannot be told."""
    return not _leading_verbs(item) and not any(known.seen(a) for a in _anchors(item))


def _acts_on(item: str, step: Step, known: _Known) -> bool:
    """Whether ``step`` carries out plan ``item`` (its kind of action, on what it names)."""
    verbs = _leading_verbs(item)
    anchors = [a for a in _anchors(item) if known.seen(a)]
    if not verbs & _step_kinds(step) and (verbs or not {"edit", "run"} & _step_kinds(step)):
        return False
    return not anchors or any(_anchored(a, step, known) for a in anchors)


def plan_quality(trajectory: Trajectory) -> list[Finding]:
    plans = trajectory.plans
    first_id = trajectory.steps[0].id if trajectory.steps else 0
    if not plans:
        return [Finding(PLAN_QUALITY, "no_plan", (first_id,), "no PLAN: was stated", CRITICAL)]
    plan = plans[0]
    findings = []
    if len(plan.items) < 2:
        findings.append(Finding(PLAN_QUALITY, "thin_plan", (plan.step,),
                                f"the plan at step {plan.step} has {len(plan.items)} numbered step(s)",
                                MAJOR if not plan.items else MINOR))
    if plan.items and not any(_CHECK.search(item) for item in plan.items):
        findings.append(Finding(PLAN_QUALITY, "plan_without_check", (plan.step,),
                                f"the plan at step {plan.step} has no step that tests or verifies the change", MINOR))
    return findings


def _follow(plan: Plan, window: list[Step], known: _Known) -> dict[int, list[int]]:
    """Plan item index -> the steps that carried it out, in the plan's order: an item counts as done
    by steps from the first step of the item done before it on (a vague item counts as done)."""
    done: dict[int, list[int]] = {}
    since = plan.step
    for index, item in enumerate(plan.items):
        if _vague(item, known):
            done[index] = [since]
            continue
        steps = [step.id for step in window if step.id >= since and _acts_on(item, step, known)]
        if steps:
            done[index] = steps
            since = steps[0]
    return done


def plan_adherence(trajectory: Trajectory) -> list[Finding]:
    """A plan left for other work without a new PLAN, plan items skipped, a new PLAN without a reason."""
    plans, findings = trajectory.plans, []
    acted, known = trajectory.acted(), _Known(trajectory)
    for number, plan in enumerate(plans):
        following = plans[number + 1] if number + 1 < len(plans) else None
        if following is not None:
            if not following.reason:
                findings.append(Finding(PLAN_ADHERENCE, "unexplained_replan", (following.step,),
                                        f"the new PLAN at step {following.step} gives no reason for the change",
                                        MINOR))
            continue  # a plan replaced by another one is not followed any further
        window = [s for s in acted if s.id >= plan.step]
        done = _follow(plan, window, known)
        left = [i for i in range(len(plan.items)) if i not in done]
        if not left:
            continue
        names = "; ".join(f"{i + 1}. {_clip(plan.items[i], 50)}" for i in left[:3])
        planned = {step for steps in done.values() for step in steps}
        off_plan = [s.id for s in window if s.id not in planned and not s.submitted]
        if len(off_plan) >= 2:
            findings.append(Finding(PLAN_ADHERENCE, "plan_abandoned", (plan.step, off_plan[0]),
                                    f"from step {off_plan[0]} the agent did work outside the plan of step "
                                    f"{plan.step} without a new PLAN, and never acted on: {names}", MAJOR))
            continue
        later = [step for index, steps in done.items() if index > left[0] for step in steps]
        skipped_at = min(later) if later else (window[-1].id if window else plan.step)
        check_left = any(_CHECK.search(plan.items[i]) for i in left)
        findings.append(Finding(PLAN_ADHERENCE, "plan_step_not_acted", (skipped_at,),
                                f"by step {skipped_at} the plan of step {plan.step} had skipped: {names}",
                                MAJOR if check_left else MINOR))
    return findings


ANALYSERS: tuple[Analyser, ...] = (
    goal_checks, contradictions, repeated_actions, redundant_reads, repeated_searches, long_exploration,
    unused_tools, refused_changes, format_errors, plan_quality, plan_adherence,
)


def analyse(trajectory: Trajectory) -> list[Finding]:
    """Every analyser's findings, by first step."""
    findings = [finding for analyser in ANALYSERS for finding in analyser(trajectory)]
    return sorted(findings, key=lambda f: (f.steps[0] if f.steps else 0, f.metric, f.kind))
