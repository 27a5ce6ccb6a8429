"""The step loop of DESIGN.md: render, query, parse, execute, observe, check the scaffold, log."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jinja2 import TemplateError

from live_swe import events as ev
from live_swe.agent.interfaces import Approver, Hooks, NoHooks, Observer, ScaffoldGuard
from live_swe.agent.limits import effective_limits
from live_swe.agent.observation import output_context
from live_swe.agent.parse import BASH_TOOL, FormatError, parse_action
from live_swe.config import KernelLimits
from live_swe.environments.base import Environment, EnvironmentError_, Output
from live_swe.infra.redact import redactor
from live_swe.models.base import Model, ModelError, Reply, TokenSink
from live_swe.scaffolding.context import template_context
from live_swe.scaffolding.render import render
from live_swe.session.store import RunStatus, Session, SessionError

SUBMIT_MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
FOLLOW_UP = (
    "The user has a follow-up request. Your changes so far are still in the repository, and the final "
    "patch will hold all of them. Work on it the same way, then submit again.\n\n<task>\n{task}\n</task>"
)


class _Stop(Exception):
    def __init__(self, status: str, message: str = ""):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class RunResult:
    session_id: str
    status: str
    steps: int
    cost: float
    patch: str
    message: str = ""
    model: str = ""
    input_tokens: int = 0  # what this process's model calls used (a resumed run counts from the resume)
    output_tokens: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "status": self.status,
            "steps": self.steps,
            "cost": self.cost,
            "patch": self.patch,
            "message": self.message,
            "model": self.model,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }


def is_submission(output: Output) -> bool:
    lines = output.text.lstrip().splitlines()
    return bool(lines) and lines[0].strip() == SUBMIT_MARKER


class Agent:
    def __init__(
        self,
        *,
        model: Model,
        env: Environment,
        session: Session,
        guard: ScaffoldGuard,
        limits: KernelLimits,
        hooks: Hooks | None = None,
        approver: Approver | None = None,
        observers: list[Observer] | None = None,
        on_token: TokenSink | None = None,
        before_step: Callable[[], None] | None = None,
        on_output: Callable[[int, Output], None] | None = None,
        patch_fn=None,
        checkpoint_fn=None,
        contracts=None,
    ):
        self.model = model
        self.env = env
        self.session = session
        self.guard = guard
        self.kernel_limits = limits
        self.hooks = hooks or NoHooks()
        self.approver = approver
        self.observers = list(observers or [])
        self.patch_fn = patch_fn
        self.checkpoint_fn = checkpoint_fn  # saves the repository's changes where a kill would lose them
        self.contracts = contracts  # live_swe.contracts.ContractEngine: checks before and after each command
        self.messages: list[dict[str, Any]] = []
        self.step = session.meta.steps
        self.cost = session.meta.cost
        self.input_tokens = self.output_tokens = 0
        self._format_errors = 0
        self._started = time.monotonic()
        self._elapsed_before = session.meta.elapsed
        self._pending_user_note: str | None = None
        self.on_token = on_token  # a front end showing replies as they stream (the TUI, the demo)
        self.before_step = before_step  # a front end's pause point; may raise KeyboardInterrupt
        self.on_output = on_output  # a front end showing each command's own output, next to what the model is sent
        self._system_scaffold = None  # the scaffold messages[0] was last checked against
        self._listed_tools: set[str] | None = None  # the tools messages[0] lists (None: not known, after resume)
        # The secrets this process holds never reach the model, the hooks or the log.
        self._redact = redactor()
        for seam in (self.guard, self.hooks):
            seam.attach(self.emit)  # seams that log (scaffold commits, hook fallbacks) log through the agent

    # -- events
    def emit(self, event: ev.Event) -> None:
        self.session.append(event)
        for observer in self.observers:
            observer(event)

    def add_message(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self.emit(ev.Message(step=self.step, message=message))

    @property
    def limits(self) -> KernelLimits:
        return effective_limits(self.kernel_limits, self.guard.current.policy.limits)

    @property
    def elapsed(self) -> float:
        return self._elapsed_before + time.monotonic() - self._started

    def send_user_message(self, text: str) -> None:
        """A message from the person watching (TUI); added before the next query."""
        self._pending_user_note = text

    # -- rendering
    def _context(self, **extra: Any) -> dict[str, Any]:
        return template_context(self.guard.current, repo_dir=self.env.repo_dir, scaffold_dir=self.env.scaffold_dir,
                                command_timeout=self.limits.command_timeout, step=self.step,
                                model=self.model.name or "", **extra)

    def _render(self, role: str, **extra: Any) -> str:
        # a scaffold is agent-written: a tool description may carry what a command printed
        return self._redact(render(self.guard.current.template(role), self._context(**extra)))

    def system_message(self, only_tools: set[str] | None = None) -> dict[str, Any]:
        """The system message; with ``only_tools``, listing only those of the registered tools."""
        extra = {}
        if only_tools is not None:
            extra["tools"] = [t for t in self._context()["tools"] if t["name"] in only_tools]
        return {"role": "system", "content": self._render("system", **extra)}

    # -- the run
    def start(self, task: str, repo_map: str = "", repo_instructions: str = "") -> None:
        """Begin a fresh conversation. ``repo_instructions``: the repository's AGENTS.md (or the like)."""
        self.add_message(self.system_message())
        self._system_scaffold = self.guard.current
        self._listed_tools = {t.name for t in self.guard.current.tools}
        content = self._render("instance", task=task, repo_map=repo_map, repo_instructions=repo_instructions)
        if repo_instructions and repo_instructions not in content:  # a scaffold whose template predates them
            content += f"\n\nThe repository's own instructions:\n<repo_instructions>\n{self._redact(repo_instructions)}\n</repo_instructions>"
        self.add_message({"role": "user", "content": content})

    def restore(self, messages: list[dict[str, Any]]) -> None:
        """Continue a conversation from the log (``resume``). A trailing unanswered reply is dropped."""
        while messages and messages[-1].get("role") == "assistant":
            messages = messages[:-1]
        self.messages = list(messages)

    def follow_up(self, task: str) -> None:
        """The person asks for more once the run has ended: the same conversation goes on, on top of
        the work so far. A submission's tool call gets its answer first (an API expects one)."""
        last = self.messages[-1] if self.messages else {}
        if last.get("role") == "assistant":
            for call in last.get("tool_calls") or []:
                self.add_message({"role": "tool", "tool_call_id": call.get("id"), "content": "Submitted."})
        message = {"role": "user", "content": self._redact(FOLLOW_UP.format(task=task.strip()))}
        self.messages.append(message)
        self.emit(ev.Message(step=self.step, message=message, follow_up=True))

    def run(self) -> RunResult:
        status, message = RunStatus.ERROR, ""
        try:
            if self.contracts is not None:
                self.contracts.start()
            while True:
                self.one_step()
        except _Stop as stop:
            status, message = stop.status, stop.message
        except KeyboardInterrupt as stop:
            status, message = RunStatus.INTERRUPTED, str(stop) or "interrupted by the user"
        except (ModelError, EnvironmentError_) as exc:
            status, message = RunStatus.ERROR, str(exc)
        except SessionError:  # the session cannot be written (a full disk): no end can be recorded
            self._close_seams()
            raise
        return self.conclude(status, message)

    def conclude(self, status: str, message: str = "") -> RunResult:
        """End the run: the guard's last check, the patch, the ``end`` event. ``resume`` calls it
        alone for a session killed after its submission step: a submitted step is final."""
        self._close_seams()
        patch: str | None = ""
        if status != RunStatus.ERROR or self.patch_fn:
            try:
                patch = self.patch_fn() if self.patch_fn else ""
            except (EnvironmentError_, KeyboardInterrupt) as exc:
                message = message or f"could not read the patch: {exc}"
                patch = None
        if self.contracts is not None and patch is not None:
            patch = self._contract_patch(patch)
        return self._finish(status, message, patch)

    def _finish(self, status: str, message: str, patch: str | None) -> RunResult:
        """Record the end. ``patch`` None: it could not be read (a lost container), so the last
        good one saved with the session stands: an unreadable patch never replaces it."""
        meta = self.session.meta
        meta.status, meta.exit_message = status, message
        meta.steps, meta.cost, meta.elapsed = self.step, self.cost, round(self.elapsed, 3)
        if patch is None:
            patch = self.session.patch()
        else:
            self.session.write_patch(patch)
        self.emit(ev.End(status=status, message=message, steps=self.step, cost=self.cost))
        self.session.save_meta()
        return RunResult(meta.id, status, self.step, self.cost, patch, message, model=meta.model,
                         input_tokens=self.input_tokens, output_tokens=self.output_tokens)

    def _check_limits(self) -> None:
        limits = self.limits
        if self.step >= limits.step_limit:
            raise _Stop(RunStatus.LIMITS_EXCEEDED, f"step limit of {limits.step_limit} reached")
        if limits.cost_limit and self.cost >= limits.cost_limit:
            raise _Stop(RunStatus.LIMITS_EXCEEDED, f"cost limit of ${limits.cost_limit:.2f} reached")
        if self.elapsed >= limits.wall_time_limit:
            raise _Stop(RunStatus.LIMITS_EXCEEDED, f"wall-time limit of {limits.wall_time_limit:.0f}s reached")

    def one_step(self) -> None:
        if self.before_step:
            self.before_step()
        self._check_limits()
        self.step += 1
        if self._pending_user_note:
            self.add_message({"role": "user", "content": self._pending_user_note})
            self._pending_user_note = None
        fmt = self.guard.current.policy.action_format
        reply = self._query(fmt)
        try:
            command = parse_action(reply, fmt)
        except FormatError as exc:
            self._on_format_error(reply, str(exc))
            return
        self._format_errors = 0
        command = self._review(reply, command)
        if command is None or self._refused_by_contract(reply, command):
            return
        output, verdict = self._execute(command)
        if is_submission(output):
            self._checkpoint()  # the submitting command may have changed files too
            self.emit(ev.Step(step=self.step, command=command, returncode=0, cost=self.cost, submitted=True))
            raise _Stop(RunStatus.SUBMITTED)
        self._checkpoint()
        observation = self._observation(output)
        notes = [self.hooks.after_step(self.step, command, output.returncode)]
        notes += self.guard.after_step(self.step, reply.content)
        notes += verdict.notes if verdict else []  # after the hooks: no hook can strip them
        observation = self._redact("\n\n".join([observation] + [n for n in notes if n]))
        self._reply_to(reply, observation)
        self.emit(ev.Step(step=self.step, command=command, returncode=output.returncode, timed_out=output.timed_out,
                          cost=self.cost, elapsed=round(self.elapsed, 3)))
        # meta.json is rewritten only at start and end: steps and cost of a live or killed
        # session are read from the last step event (O(1) appends per step, nothing rewritten).
        if verdict and verdict.action:
            self._contract_action(verdict.action, verdict.reason)

    def _query(self, fmt: str) -> Reply:
        """The model's reply to the conversation as the context policy and the hooks prepare it."""
        self._refresh_system_message()
        prepared = self._apply_context_policy(self.messages)
        outgoing = self.hooks.transform_messages(prepared, self.step)
        if outgoing is not prepared:  # whatever the hooks put in is redacted too
            outgoing = [self._redacted_message(m) for m in outgoing]
        reply = self.model.query(outgoing, tools=[BASH_TOOL] if fmt == "tool_call" else None, on_token=self.on_token)
        self.cost += reply.cost
        self.input_tokens += reply.usage.prompt_tokens
        self.output_tokens += reply.usage.completion_tokens
        if reply.note:
            self.emit(ev.Note(step=self.step, text=reply.note))
        self.add_message(reply.to_message())
        return reply

    def _refused_by_contract(self, reply: Reply, command: str) -> bool:
        """The contract's check before the command: a refusal is the model's observation instead."""
        if self.contracts is None:
            return False
        limits = self.limits  # a reply can spend past a budget: its command then does not run
        spent = bool(limits.cost_limit and round(self.cost, 9) > limits.cost_limit) or \
            self.elapsed > limits.wall_time_limit  # rounded: $0.1 + $0.2 reaches a $0.30 budget, not past it
        verdict = self.contracts.before(command, step=self.step, cost=self.cost, scaffold=self.guard.current,
                                        budget_exceeded=spent)
        if verdict.refusal:
            self._reply_to(reply, self._redact(verdict.refusal))
        return bool(verdict.refusal)

    def _execute(self, command: str):
        """Run the command: its redacted output (as the contract's check after it left it) and that verdict."""
        output = self.env.execute(command, timeout=self.limits.command_timeout)
        verdict = None
        if self.contracts is not None:
            verdict = self.contracts.after(command, output.text, output.returncode, step=self.step,
                                           scaffold_changed=self.guard.changed())
            if verdict.output is not None:
                output = dataclasses.replace(output, text=verdict.output)
        output = dataclasses.replace(output, text=self._redact(output.text))
        if self.on_output:
            self.on_output(self.step, output)
        return output, verdict

    def _contract_action(self, action: str, reason: str) -> None:
        """A soft violation's recovery beyond a note. Without a person to hand control to (no
        approver: a headless run), lowering autonomy or escalating stops the run and marks it."""
        if action == "stop" or self.approver is None:
            raise _Stop(RunStatus.CONTRACT_STOPPED, f"contract: {reason}")
        self.emit(ev.ContractEvent.of("autonomy" if action == "reduce_autonomy" else "escalate", step=self.step,
                                      reason=reason))

    def _contract_patch(self, patch: str) -> str:
        """The patch, with any hard violation the steps let through taken out; open soft violations
        are recorded as persistent."""
        self.contracts.close(self.step)
        try:
            cleaned = self.contracts.clean_patch(patch, self.step)
        except (EnvironmentError_, KeyboardInterrupt) as exc:
            self.emit(ev.ContractEvent.of("final_revert", step=self.step, files=[], error=str(exc)[:300]))
            return ""  # a patch that could not be checked is not submitted
        return patch if cleaned is None else cleaned

    def _checkpoint(self) -> None:
        """Save the changes before the step is logged as done: a ``kill -9`` then loses at most
        the step in flight, even where the repository dies with the process (a container)."""
        if self.checkpoint_fn is None:
            return
        try:
            self.checkpoint_fn()
        except EnvironmentError_ as exc:
            self.emit(ev.Checkpoint(step=self.step, error=str(exc)[:500]))

    def _refresh_system_message(self) -> None:
        """After a scaffold change that alters the system message (an edited system prompt, a tight-
        ened command timeout, a listed tool removed) the next query sees the new one; the replacement
        is logged so the trajectory shows what the model saw. A new tool alone does not rewrite it:
        that would make the provider's cached prompt prefix worthless from the first message on, so
        the guard announces the tool in the observation of the step that registered it instead."""
        scaffold = self.guard.current
        if scaffold is self._system_scaffold or not self.messages or self.messages[0].get("role") != "system":
            return
        self._system_scaffold = scaffold
        if self._listed_tools is not None:
            if self.system_message(self._listed_tools)["content"] == self.messages[0].get("content"):
                return
        message = self.system_message()
        self._listed_tools = {t.name for t in scaffold.tools}
        if message["content"] != self.messages[0].get("content"):
            self.messages[0] = message
            self.emit(ev.System(step=self.step, message=message))

    def _close_seams(self) -> None:
        """The guard checks what the last step left in the scaffold; hook workers stop."""
        for seam in (self.guard, self.hooks):
            seam.close(self.step)

    def _observation(self, output: Output) -> str:
        scaffold = self.guard.current
        output_vars, truncated = output_context(output, scaffold.policy.truncation)
        reflection = ""
        if scaffold.policy.reflection.enabled and self.step % scaffold.policy.reflection.every == 0:
            reflection = self._render("reflection")
        text = self._render("observation", output=output_vars, truncated=truncated, reflection=reflection)
        return self.hooks.transform_observation(text, self.step)

    def _reply_to(self, reply: Reply, text: str) -> None:
        """The answer to a reply: a tool message per call in tool-call mode, else a user message."""
        if reply.tool_calls:
            for call in reply.tool_calls:
                self.add_message({"role": "tool", "tool_call_id": call.id, "content": text})
        else:
            self.add_message({"role": "user", "content": text})

    def _on_format_error(self, reply: Reply, reason: str) -> None:
        self._format_errors += 1
        self.emit(ev.FormatError(step=self.step, reason=reason, consecutive=self._format_errors))
        if self._format_errors >= self.limits.max_format_errors:
            raise _Stop(RunStatus.FORMAT_ERROR, f"{self._format_errors} consecutive replies without exactly one action ({reason})")
        try:
            text = self._render("format_error", error=reason)
        except TemplateError:
            text = f"Your reply was not run: {reason}"
        self._reply_to(reply, text)

    def _review(self, reply: Reply, command: str) -> str | None:
        if self.approver is None:
            return command
        decision = self.approver(command)
        self.emit(ev.Review(step=self.step, decision=decision.kind, command=decision.command or command,
                            comment=decision.comment))
        if decision.kind == "approve":
            return command
        if decision.kind == "edit" and decision.command.strip():
            return decision.command
        comment = f" The user says: {decision.comment}" if decision.comment else ""
        self._reply_to(reply, f"The user rejected this command; it was not run.{comment}")
        return None

    def _redacted_message(self, message: dict[str, Any]) -> dict[str, Any]:
        content = message.get("content")
        return {**message, "content": self._redact(content)} if isinstance(content, str) else message

    def _apply_context_policy(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        keep = self.guard.current.policy.context.keep_last_observations
        if not keep:
            return messages
        observation_indexes = [i for i, m in enumerate(messages) if m["role"] in ("user", "tool")][1:]
        elide = set(observation_indexes[:-keep]) if len(observation_indexes) > keep else set()
        if not elide:
            return messages
        return [
            {**m, "content": "[older observation elided by the context policy]"} if i in elide else m
            for i, m in enumerate(messages)
        ]
