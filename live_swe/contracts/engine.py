"""The contract at work in one session: checks before and after each command, enforcement of hard
rules (refuse before, revert after), recovery of soft ones, and an event for each result that matters.

Events are ``ContractEvent`` (``live_swe.events``; on disk ``{"t": "contract", "kind": ..., "step": ...}``):
``loaded``; ``blocked`` (a command refused), ``reverted`` (a change undone), ``masked`` (a secret hidden
from the observation), ``violated`` (a hard rule broken that could not be contained); ``detected``,
``recovery``, ``recovered`` (with ``within`` steps), ``fallback`` and ``persistent`` for soft rules;
``final_revert`` when the submitted patch had to be cleaned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from live_swe import events as ev
from live_swe.command_safety import is_harmless
from live_swe.contracts import diffs
from live_swe.contracts.commands import Reader
from live_swe.contracts.fields import is_test_path
from live_swe.contracts.load import merge
from live_swe.contracts.model import SEVERITY, Contract, Rule
from live_swe.contracts.notes import NOTE_PREFIX
from live_swe.contracts.operators import compiled, holds
from live_swe.contracts.revert import restore_files
from live_swe.contracts.secrets import SecretFinder, mask_formats
from live_swe.environments.base import Environment

Emit = Callable[[ev.Event], None]



@dataclass
class Verdict:
    """What the loop does with a check's result."""

    refusal: str | None = None  # before: the command is not run; the model reads this instead
    notes: list[str] = field(default_factory=list)  # after: added to the observation
    output: str | None = None  # after: the output with secrets masked, when it had to be
    action: str | None = None  # reduce_autonomy, escalate or stop
    reason: str = ""


@dataclass
class _Open:
    since: int
    attempts: int = 0
    fell_back: bool = False


class ContractEngine:
    def __init__(self, contract: Contract, *, env: Environment, base_commit: str, patch_fn: Callable[[], str] | None,
                 emit: Emit, graded_test_files: tuple[str, ...] = (), finder: SecretFinder | None = None):
        self.base_contract = contract
        self.contract = contract
        self._scaffold_contract: Contract | None = None
        self.env = env
        self.base = base_commit
        self.patch_fn = patch_fn
        self.emit = emit
        self.graded = set(graded_test_files)
        self.finder = finder or SecretFinder()
        self.reader = Reader(env.repo_dir, env.scaffold_dir)
        self._patch = ""
        self._sections: dict[str, str] = {}
        self._initial: dict[str, str] = {}  # the diff the session started from (the person's own changes)
        self._touched: set[str] = set()  # files the session's commands changed
        self._state: dict[str, Any] = {"tests_run_since_edit": True, "diff_lines": 0, "files_in_diff": []}
        self._open: dict[str, _Open] = {}
        self._before: dict[str, Any] = {}
        self._started = False
        self._may_write = False
        self._facts = None
        self._split()

    def _split(self) -> None:
        rules = self.contract.rules()
        self._early = [(kind, r) for kind, r in rules if kind != "soft" and r.before]
        self._late = [(kind, r) for kind, r in rules if kind != "soft" and not r.before]
        self._soft = [r for kind, r in rules if kind == "soft"]
        self._tests = {r.id: (compiled(r.when) if r.when else None, compiled(r.check)) for _, r in rules}

    def _broken(self, rule: Rule, fields: dict[str, Any]) -> bool:
        when, check = self._tests[rule.id]
        return (when is None or when(fields)) and not check(fields)

    # -- the contract in force ------------------------------------------------------------------------
    def use_scaffold_rules(self, extra: Contract | None) -> None:
        """The scaffold's own rules, added to the run's (never in place of them)."""
        if extra is self._scaffold_contract:
            return
        self._scaffold_contract = extra
        self.contract = merge([self.base_contract, extra], name=self.base_contract.name + "+scaffold") \
            if extra is not None else self.base_contract
        self._split()
        self.emit(ev.ContractEvent.of("loaded", source="scaffold", rules=len(self.contract.rules())))

    def start(self) -> None:
        """A run begins. The diff it starts from (the person's own changes, or a resumed session's) is
        read before the first command that may write, so read-only steps never pay for it."""
        self._started = False

    def _begin(self) -> None:
        self._started = True
        self._read_patch()
        self._initial = dict(self._sections)
        self._measure()

    @property
    def latest_patch(self) -> str:
        """The repository diff as of the last check (read again only after commands that may write)."""
        if not self._started:
            self._begin()
        return self._patch

    def _measure(self) -> None:
        self._state["diff_lines"] = sum(diffs.changed_lines(s) for s in set(self._sections.values()))
        self._state["files_in_diff"] = sorted(self._sections)

    def _read_patch(self) -> None:
        if self.patch_fn is not None:
            self._patch = self.patch_fn()
            self._sections = diffs.sections(self._patch)

    # -- before the command ---------------------------------------------------------------------------
    def before(self, command: str, *, step: int, cost: float, scaffold=None, budget_exceeded: bool = False) -> Verdict:
        tools: set[str] = set()
        if scaffold is not None:
            tools = {t.name for t in scaffold.tools}
            self.use_scaffold_rules(getattr(scaffold.policy, "contract", None))
        facts = self._facts = self.reader.read(command)
        self._may_write = self.patch_fn is not None and not is_harmless(command, self.env.repo_dir)
        if self._may_write and not self._started:
            self._begin()
        fields = {
            **self._state,
            "command": command,
            "command_classes": sorted(facts.classes),
            "paths_outside_repo": facts.writes_outside,
            "secrets_in_command": self.finder.kinds(command),
            "tools_used": sorted(set(facts.programs) & set(tools)),
            "unregistered_tools_used": sorted({p for p in facts.programs if p not in tools and
                                               self.env.scaffold_dir and f"{self.env.scaffold_dir}/tools/" in command
                                               and f"/tools/{p}" in command}),
            "runs_tests": facts.runs_tests,
            "submitting": "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in command,
            "step": step,
            "cost": cost,
            "budget_exceeded": budget_exceeded,
        }
        self._before = fields
        broken = [(kind, rule) for kind, rule in self._early if self._broken(rule, fields)]
        if broken:
            for kind, rule in broken:
                self._event("blocked", step, rule, kind, fields)
            why = "; ".join(f"{rule.id}: {rule.message or 'rule broken'}" for _, rule in broken)
            return Verdict(refusal=f"{NOTE_PREFIX} command refused, it was not run ({why}). Do it another way.")
        if fields["submitting"]:
            return self._soft_check(fields, step, hold=True)
        return Verdict()

    # -- after the command ----------------------------------------------------------------------------
    def after(self, command: str, raw_output: str, returncode: int, *, step: int,
              scaffold_changed: bool = False) -> Verdict:
        fields = dict(self._before)
        facts = self._facts
        previous, before_sections = self._patch, self._sections
        changed: list[str] = []
        if self._may_write:
            self._read_patch()
            if self._patch != previous:
                changed = sorted(p for p in self._sections.keys() | before_sections.keys()
                                 if self._sections.get(p) != before_sections.get(p))
        self._touched.update(changed)
        added = "\n".join(diffs.new_lines(before_sections.get(p, ""), self._sections[p])
                          for p in changed if p in self._sections)
        tested_before = self._state["tests_run_since_edit"]
        if changed:
            self._state["tests_run_since_edit"] = bool(facts and facts.runs_tests)
        elif facts and facts.runs_tests:
            self._state["tests_run_since_edit"] = True
        self._measure()
        fields.update(self._state)
        fields.update({
            "returncode": returncode,
            "files_changed": changed,
            "test_files_touched": [p for p in changed if is_test_path(p)],
            "graded_test_files_touched": [p for p in changed if p in self.graded],
            "secrets_in_output": self.finder.kinds(raw_output),
            "secrets_in_diff": self.finder.kinds(added) if added else [],
            "scaffold_changed": scaffold_changed,
        })
        verdict = Verdict()
        broken = [(kind, rule) for kind, rule in self._late if self._broken(rule, fields)]
        if broken:
            if self._contain(broken, fields, changed, before_sections, raw_output, step, verdict):
                self._state["tests_run_since_edit"] = tested_before  # the edit is gone
            fields.update(self._state)
        if fields.get("submitting"):
            return verdict  # the soft rules were read before it; the run ends here
        soft = self._soft_check(fields, step, hold=False)
        verdict.notes += soft.notes
        verdict.action, verdict.reason = soft.action, soft.reason
        return verdict

    def _contain(self, broken, fields, changed, before_sections, raw_output, step, verdict: Verdict) -> bool:
        """Undo or mask what the broken hard rules found; whether this step's changes were undone."""
        to_undo: list[tuple[str, Rule, list[str]]] = []
        output_rules = {"secrets_in_output"}
        for kind, rule in broken:
            if rule.fields() <= output_rules | {"returncode", "step", "cost", "command", "submitting"}:
                if fields["secrets_in_output"]:
                    verdict.output = mask(raw_output, self.finder)
                    self._event("masked", step, rule, kind, fields)
                    verdict.notes.append(f"{NOTE_PREFIX} {rule.message or rule.id} ({', '.join(fields['secrets_in_output'])}).")
                else:
                    self._event("violated", step, rule, kind, fields)
                    verdict.notes.append(f"{NOTE_PREFIX} rule {rule.id} broken: {rule.message}.")
                continue
            if not changed:
                self._event("violated", step, rule, kind, fields)
                verdict.notes.append(f"{NOTE_PREFIX} rule {rule.id} broken: {rule.message}.")
                continue
            to_undo.append((kind, rule, self._culprits(rule, fields, changed, before_sections)))
        if to_undo:
            paths = sorted({p for _, _, culprits in to_undo for p in culprits})
            error = restore_files(self.env, self.base, paths,
                                  list({id(s): s for p, s in before_sections.items() if p in paths}.values()))
            self._read_patch()
            self._measure()
            if error:
                self.emit(ev.ContractEvent.of("revert_failed", step=step, error=error))
            for kind, rule, culprits in to_undo:
                self._event("violated" if error else "reverted", step, rule, kind, fields, files=culprits)
                verdict.notes.append(f"{NOTE_PREFIX} {rule.message or rule.id} ({rule.id}); " + (
                    "could not undo it." if error else f"your changes to {', '.join(culprits)} were undone."))
            return error is None and set(paths) >= set(changed)
        return False

    def _culprits(self, rule: Rule, fields: dict[str, Any], changed: list[str], before_sections) -> list[str]:
        """The changed files that alone break ``rule``; all of them where none does alone (a diff too big)."""
        culprits = []
        for path in changed:
            section = self._sections.get(path)
            alone = {**fields, "files_changed": [path], "test_files_touched": [path] if is_test_path(path) else [],
                     "graded_test_files_touched": [path] if path in self.graded else [],
                     "secrets_in_diff": self.finder.kinds(diffs.new_lines(before_sections.get(path, ""), section))
                     if section else []}
            if self._broken(rule, alone):
                culprits.append(path)
        return culprits or changed

    # -- soft rules ----------------------------------------------------------------------------------
    def _soft_check(self, fields: dict[str, Any], step: int, *, hold: bool) -> Verdict:
        verdict = Verdict()
        rec = self.contract.recovery
        for rule in self._soft:
            state = self._open.get(rule.id)
            if not self._broken(rule, fields):
                if state is not None and holds(rule.check, fields):
                    del self._open[rule.id]
                    self.emit(ev.ContractEvent.of("recovered", step=step, rule=rule.id, severity="soft",
                                            within=step - state.since, in_window=step - state.since <= rec.k))
                continue
            if state is None:
                state = self._open[rule.id] = _Open(since=step)
                self._event("detected", step, rule, "soft", fields)
            if state.fell_back or (hold and rule.recovery != "hold"):
                continue  # at a submission only a holding rule can still act; the others are recorded
            if state.attempts < rec.max_attempts and step - state.since < rec.k:
                state.attempts += 1
                strategy = rule.recovery
                self.emit(ev.ContractEvent.of("recovery", step=step, rule=rule.id, severity="soft", strategy=strategy,
                                        attempt=state.attempts))
                note = f"{NOTE_PREFIX} {rule.message or rule.id} (soft rule {rule.id}, correction {state.attempts} of {rec.max_attempts})."
                if hold:
                    verdict.refusal = (verdict.refusal + "\n" if verdict.refusal else "") + \
                        note + " Your submission was held back; do that, then submit again."
                else:
                    verdict.notes.append(note)
                if strategy not in ("inject", "hold"):
                    _escalate(verdict, strategy, f"soft rule {rule.id}: {rule.message}")
            else:
                state.fell_back = True
                self.emit(ev.ContractEvent.of("fallback", step=step, rule=rule.id, severity="soft", fallback=rec.fallback))
                if rec.fallback != "continue":
                    _escalate(verdict, rec.fallback, f"soft rule {rule.id} not restored: {rule.message}")
        return verdict

    # -- the end -------------------------------------------------------------------------------------
    def clean_patch(self, patch: str, step: int) -> str | None:
        """The submitted patch without a hard violation: files the session changed that hold one go
        back to how the session found them. None when nothing had to change."""
        bad = []
        for path, section in diffs.sections(patch).items():
            if path in self._touched and section != self._initial.get(path) and \
                    (path in self.graded or self.finder.kinds(diffs.added_text(section))):
                bad.append(path)
        if not bad or self.patch_fn is None:
            return None
        earlier = list({id(s): s for p, s in self._initial.items() if p in bad}.values())
        error = restore_files(self.env, self.base, sorted(set(bad)), earlier)
        self.emit(ev.ContractEvent.of("final_revert", step=step, files=sorted(set(bad)), **({"error": error} if error else {})))
        return self.patch_fn()

    def close(self, step: int) -> None:
        for rule_id, state in self._open.items():
            self.emit(ev.ContractEvent.of("persistent", step=step, rule=rule_id, severity="soft", since=state.since))
        self._open.clear()

    def _event(self, kind: str, step: int, rule: Rule, severity: str, fields: dict[str, Any], **extra) -> None:
        shown = {f: fields.get(f) for f in sorted(rule.fields()) if f in fields and f != "command"}
        self.emit(ev.ContractEvent.of(kind, step=step, rule=rule.id, severity=severity, message=rule.message,
                                fields=_short(shown), **extra))


def _escalate(verdict: Verdict, action: str, reason: str) -> None:
    if verdict.action is None or SEVERITY[action] > SEVERITY[verdict.action]:
        verdict.action, verdict.reason = action, reason


def _short(values: dict[str, Any]) -> dict[str, Any]:
    return {k: (v[:20] if isinstance(v, list) else v if not isinstance(v, str) else v[:200]) for k, v in values.items()}


def mask(text: str, finder: SecretFinder) -> str:
    """``text`` with the secrets the finder knows by value or by format replaced by ***."""
    return mask_formats(finder.known(text))


__all__ = ["NOTE_PREFIX", "ContractEngine", "Verdict", "mask"]
