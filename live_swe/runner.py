"""Assemble a run: session, scaffold, environment, model, agent. Used by every front end
(CLI, TUI, bench, GitHub) so they all start and resume sessions the same way."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from live_swe import events as ev
from live_swe.agent.interfaces import Approver, Observer
from live_swe.agent.loop import Agent, RunResult
from live_swe.agent.patch import base_commit, repository_patch
from live_swe.config import KernelLimits, home
from live_swe.contracts.session import contract_engine, recorded_contract, run_contract
from live_swe.environments.base import Environment, EnvironmentError_, Output
from live_swe.environments.docker import DockerEnvironment
from live_swe.environments.local import LocalEnvironment
from live_swe.errors import UserError
from live_swe.evolution.guard import GatedScaffold
from live_swe.evolution.history import export_accepted
from live_swe.evolution.hook_client import HookClient
from live_swe.infra.git import SHELL_GIT, shell_prelude
from live_swe.models.base import Model, TokenSink, resume_model
from live_swe.models.resolve import make_model
from live_swe.repo_instructions import RepoInstructions
from live_swe.repomap import build_repo_map
from live_swe.repomap.snapshot import environment_repo_map
from live_swe.scaffolding.refs import IGNORE as SCAFFOLD_IGNORE
from live_swe.scaffolding.refs import SOURCES as SCAFFOLD_SOURCES
from live_swe.scaffolding.refs import materialize
from live_swe.session.baseline import working_tree_commit
from live_swe.session.store import RunStatus, Session, SessionError, SessionStore
from live_swe.session.trust import (
    check_same_repository,
    record_base,
    record_confinement,
    record_follow_up,
    record_start,
    started_limits,
    trusted_start,
    turn_limits,
)
from live_swe.session.view import SessionView

DOCKER_SCAFFOLD_DIR = "/opt/live-swe/scaffold"


def session_scaffold(session_id: str, target: Path) -> None:
    """``session:ID``: a session's last accepted scaffold from its history, never what a killed
    step left behind; a session without history has only its work tree."""
    session = SessionStore.default().open(session_id)
    if not export_accepted(session, target):
        shutil.copytree(session.scaffold_dir, target, dirs_exist_ok=True, ignore=SCAFFOLD_IGNORE)


SCAFFOLD_SOURCES["session"] = session_scaffold


@dataclass
class RunRequest:
    task: str
    model: str
    repo: Path | None = None  # host repository (local env; copied into docker when set)
    env: str = "local"
    image: str | None = None
    repo_dir: str = "/testbed"  # where the repository is inside a container
    scaffold_ref: str = "seed"
    limits: KernelLimits = field(default_factory=KernelLimits)
    session_id: str | None = None
    parent: str | None = None
    extra: dict = field(default_factory=dict)
    repo_map: str = ""
    labels: dict[str, str] = field(default_factory=dict)  # extra container labels (e.g. a bench batch)
    sandbox: str = "bubblewrap"  # local env: "none" only when the user opts out explicitly
    network: bool = False  # local env: the sandbox's network
    api_base: str | None = None  # the model's server (litellm models); else the configured one
    repo_instructions: RepoInstructions | None = None  # the repository's AGENTS.md & co., read by the front end
    contract_files: list[Path] = field(default_factory=list)  # --contract FILE, added to the built-in and the user's
    graded_test_files: tuple[str, ...] | None = None  # bench mode: the files of the tests the benchmark grades
    allow_dirty: bool = False  # start from the host repository's tree as it is (uncommitted changes included)


@dataclass
class RunHooks:
    """What a front end plugs in: command review, event observers, and model/env factories."""

    approver: Approver | None = None
    observers: list[Observer] = field(default_factory=list)
    model_factory: Callable[[str], Model] | None = None  # tests inject scripted models directly
    on_agent: Callable[[Agent], None] | None = None  # the TUI keeps the agent to message it
    on_token: TokenSink | None = None  # shows replies as they stream (the TUI, the demo)
    before_step: Callable[[], None] | None = None  # a front end's pause point; may raise KeyboardInterrupt
    on_output: Callable[[int, Output], None] | None = None  # shows each command's own output (the UI)


def _make_env(session: Session, request_env: str, image: str | None, repo: Path | None, repo_dir: str,
              labels: dict[str, str] | None = None, confinement: dict | None = None) -> Environment:
    if request_env == "local":
        if repo is None:
            raise EnvironmentError_("the local environment needs a repository (--repo PATH)")
        confinement = confinement or {}
        return LocalEnvironment(repo, scaffold_dir=session.scaffold_dir, sandbox=confinement.get("mode", "bubblewrap"),
                                network=bool(confinement.get("network", False)))
    if request_env == "docker":
        return DockerEnvironment(
            image=image or "python:3.11-slim",
            repo_dir=repo_dir,
            copy_repo_from=repo,
            scaffold_host_dir=session.scaffold_dir,
            scaffold_dir=DOCKER_SCAFFOLD_DIR,
            labels={**(labels or {}), "live-swe.session": session.id},
        )
    raise EnvironmentError_(f"unknown environment {request_env!r}; use local or docker")


def _make_guard(session: Session, env: Environment, limits: KernelLimits):
    """The gated scaffold: a new session's history starts here; a resumed one is reset to its last commit."""
    return GatedScaffold(session, env, limits)


def _make_hooks(session: Session, guard):
    """The scaffold's hooks, run in an isolated worker process."""
    return HookClient(guard)


CONTAINER_PATCH_INDEX = "/tmp/live-swe-patch.index"


def _agent(session: Session, env: Environment, model: Model, limits: KernelLimits, hooks: RunHooks,
           contract=None) -> Agent:
    guard = _make_guard(session, env, limits)
    base = session.meta.base_commit or ""
    # A container dies with the process: its changes are saved after every command, and the
    # scratch index stays in its /tmp so each of those diffs only re-reads what changed.
    in_container = session.meta.env == "docker"
    index_file = CONTAINER_PATCH_INDEX if in_container else None

    def patch() -> str:
        return repository_patch(env, base, index_file=index_file)

    agent = Agent(
        model=model,
        env=env,
        session=session,
        guard=guard,
        limits=limits,
        hooks=_make_hooks(session, guard),
        approver=hooks.approver,
        observers=hooks.observers,
        on_token=hooks.on_token,
        before_step=hooks.before_step,
        on_output=hooks.on_output,
        patch_fn=patch,
        checkpoint_fn=(lambda: session.write_patch(patch())) if in_container else None,
    )
    if contract is not None:
        engine = agent.contracts = contract_engine(contract, env=env, base=base, patch_fn=patch, emit=agent.emit)
        if in_container:  # the contract re-reads the diff after each command that may write: save that one
            agent.checkpoint_fn = lambda: session.write_patch(engine.latest_patch)
    if hooks.on_agent:
        hooks.on_agent(agent)
    return agent


def _model(name: str, hooks: RunHooks, api_base: str | None = None) -> Model:
    if hooks.model_factory:
        return hooks.model_factory(name)
    return make_model(name, api_base=api_base)


def _without_credentials(url: str | None) -> str | None:
    """The URL as it may be saved with the session: a user:password part is dropped."""
    if not url:
        return None
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    return urlunsplit(parts._replace(netloc=f"{host}:{parts.port}" if parts.port else host))


def start_run(request: RunRequest, hooks: RunHooks | None = None, store: SessionStore | None = None) -> RunResult:
    """Create a session for ``request`` and run it to the end."""
    hooks = hooks or RunHooks()
    store = store or SessionStore.default()
    model = _model(request.model, hooks, request.api_base)  # fail on a bad model before anything is created
    contract = run_contract(request)  # and on a bad contract or a failed precondition
    session = store.create(
        id=request.session_id,
        task=request.task,
        model=request.model,
        env=request.env,
        image=request.image,
        repo=str(request.repo) if request.repo else None,
        scaffold_ref=request.scaffold_ref,
        parent=request.parent,
        extra={"limits": request.limits.model_dump(), "repo_dir": request.repo_dir,
               "sandbox": {"mode": request.sandbox, "network": request.network},
               **({"api_base": _without_credentials(request.api_base)} if request.api_base else {}), **request.extra},
    )
    session.claim()
    record_start(session, repo=request.repo, env=request.env, image=request.image, repo_dir=request.repo_dir,
                 model=request.model, limits=request.limits,
                 sandbox={"mode": request.sandbox, "network": request.network},
                 api_base=_without_credentials(request.api_base) if request.api_base else None)
    with _ending(session) as ending:
        materialize(request.scaffold_ref, session.scaffold_dir, library=home() / "tools")
        baseline = working_tree_commit(request.repo, session.id) if request.allow_dirty and request.repo else None
        env = ending.env = _make_env(session, request.env, request.image, request.repo, request.repo_dir,
                                     request.labels, confinement={"mode": request.sandbox, "network": request.network})
        session.meta.repo_dir = env.repo_dir
        session.meta.base_commit = baseline or base_commit(env)
        record_base(session, session.meta.base_commit)
        session.save_meta()
        agent = _agent(session, env, model, request.limits, hooks, contract)
        instructions = request.repo_instructions
        if instructions is not None:
            agent.emit(ev.RepoInstructions(files=list(instructions.files), chars=len(instructions.text),
                                           truncated=instructions.truncated))
        agent.start(request.task, repo_map=request.repo_map or _repo_map(request, agent, session, env),
                    repo_instructions=instructions.text if instructions else "")
        return agent.run()


def resume_run(session_id: str, hooks: RunHooks | None = None, store: SessionStore | None = None,
               limits: KernelLimits | None = None, limit_overrides: dict | None = None,
               sandbox: dict | None = None, follow_up: str | None = None) -> RunResult:
    """Continue a session from its log: the conversation, the evolved scaffold, the budgets spent.

    With ``follow_up`` (``run --continue``, the UI's next message after a run) an ended session goes
    on: the person's new request joins the conversation, on top of the work so far (the patch stays
    the diff against the session's starting commit), with budgets for this turn of their own.

    It runs where the kernel recorded the session's start (repository, environment, model, budgets),
    whatever meta.json says now; ``limits`` replaces the budgets, ``limit_overrides`` (the person's
    new budgets) replaces some of them.
    ``sandbox`` ({"mode", "network"}) is the confinement the person chose now, recorded from then on."""
    hooks = hooks or RunHooks()
    store = store or SessionStore.default()
    session = store.open(session_id)
    session.claim()  # before anything is read or written: a second process stops here
    try:
        return _resume(session, session_id, hooks, limits, limit_overrides, sandbox, follow_up)
    finally:
        session.close()


def _resume(session: Session, session_id: str, hooks: RunHooks, limits: KernelLimits | None,
            limit_overrides: dict | None, sandbox: dict | None, follow_up: str | None) -> RunResult:
    meta = session.meta
    _check_resumable(meta.status, session_id, follow_up)
    view = SessionView.read(session)
    start = trusted_start(session, view.events)
    confinement = {**(start.sandbox or {}), **(sandbox or {})}
    if sandbox:
        record_confinement(session, confinement)
    meta.extra["sandbox"] = confinement
    repo = Path(start.repo) if start.repo else None
    if repo is not None and start.base_commit:
        check_same_repository(repo, start.base_commit, session_id)
    model = _model(start.model, hooks, start.api_base)
    for problem in view.problems:
        session.append(ev.LogProblem(detail=problem))
    meta.steps, meta.cost, meta.elapsed = view.logged_steps, view.cost, view.elapsed
    if follow_up is not None:
        per_turn = started_limits(view.events, start).model_copy(
            update={k: v for k, v in (limit_overrides or {}).items() if v is not None})
        limits = limits or turn_limits(per_turn, meta.steps, meta.cost, meta.elapsed)
        record_follow_up(session, follow_up, limits)
        meta.extra["limits"] = limits.model_dump()
    limits = limits or start.kernel_limits(limit_overrides)
    meta.base_commit = start.base_commit
    meta.status = RunStatus.RUNNING
    with _ending(session) as ending:
        env = ending.env = _make_env(session, start.env, start.image, repo, start.repo_dir, confinement=confinement)
        if not meta.base_commit:  # the first run stopped before it knew its starting commit
            meta.base_commit = base_commit(env)
            record_base(session, meta.base_commit)
        if start.env == "docker":
            _restore_container_work(session, env)
        agent = _agent(session, env, model, limits, hooks, recorded_contract(view.contract_events))
        return _go_on(agent, model, view, follow_up)


def _check_resumable(status: str, session_id: str, follow_up: str | None) -> None:
    """A follow-up needs an ended session; a plain resume, one that has not submitted."""
    if status == RunStatus.RUNNING and follow_up is not None:
        raise UserError(f"session {session_id} is still running (or was killed: `live-swe resume {session_id}` "
                        "finishes it first); a follow-up continues a session that has ended")
    if status == RunStatus.SUBMITTED and follow_up is None:
        raise UserError(
            f"session {session_id} already submitted its patch; nothing to resume "
            f"(see it with `live-swe sessions show {session_id}`, or start a new task from its scaffold "
            f"with `live-swe run --scaffold session:{session_id}`)"
        )


def _go_on(agent: Agent, model: Model, view: SessionView, follow_up: str | None) -> RunResult:
    """The resumed agent, from the logged conversation: ended at once when the session was killed after
    its submission step (before the end), given the follow-up, or running on."""
    messages = view.messages
    if follow_up is None and view.submitted:  # a submitted step is final
        agent.messages = list(messages)
        agent.emit(ev.Resume(step=agent.step, log_problems=view.problems, submitted=True))
        return agent.conclude(RunStatus.SUBMITTED)
    if follow_up is not None:
        agent.messages = list(messages)  # the submission reply stays: the follow-up answers it
    elif messages:
        agent.restore(messages)
    else:
        agent.start(agent.session.meta.task)
    if messages:  # scripted and replay models continue where the log stops
        resume_model(model, sum(1 for m in agent.messages if m.get("role") == "assistant"))
    if follow_up is not None:
        agent.follow_up(follow_up)
    else:
        agent.emit(ev.Resume(step=agent.step, log_problems=view.problems))
    return agent.run()


def _restore_container_work(session: Session, env: Environment) -> None:
    """A container does not outlive its run: the new one gets the repository changes the session
    had when it stopped (its last patch), so the agent resumes on the files it left."""
    patch = session.patch()
    if not patch.strip():
        return
    with tempfile.NamedTemporaryFile("w", suffix=".diff", delete=False) as handle:
        handle.write(patch)
    try:
        env.copy_in(Path(handle.name), "/tmp/live-swe-resume.diff")
    finally:
        os.unlink(handle.name)
    out = env.execute(shell_prelude() + f"{SHELL_GIT} apply --binary /tmp/live-swe-resume.diff && "
                      "rm -f /tmp/live-swe-resume.diff", timeout=120)
    if out.returncode != 0:
        raise EnvironmentError_(
            f"could not put the session's changes back into the new container ({out.text.strip()[:300]}); "
            f"they are in {session.patch_path}"
        )
    session.append(ev.RestorePatch(bytes=len(patch)))


def _repo_map(request: RunRequest, agent: Agent, session: Session, env: Environment) -> str:
    """The tree-sitter map of the repository, when the scaffold asks for one: of the host repository,
    or, without one (a benchmark image's own), of a copy of the environment's. A map that cannot be
    built is noted in the log and the run goes on without it."""
    policy = agent.guard.current.policy.repo_map
    if not (policy.enabled and policy.token_budget):
        return ""
    source = "host" if request.repo else "environment"
    try:
        if request.repo:
            result = build_repo_map(request.repo, request.task, policy.token_budget)
        else:
            result = environment_repo_map(env, request.task, policy.token_budget)
    except Exception as exc:  # noqa: BLE001 - a missing map must never stop the run
        session.append(ev.RepoMap(source=source, error=f"{type(exc).__name__}: {exc}"[:500]))
        return ""
    session.append(ev.RepoMap(source=source, files=result.files, parsed=result.parsed, shown=result.shown,
                              tokens=result.tokens, seconds=round(result.seconds, 3)))
    return result.text


@dataclass
class _Ending:
    env: Environment | None = None  # closed when the run ends, once it is made


@contextmanager
def _ending(session: Session) -> Iterator[_Ending]:
    """A run's end: its environment closed and its session let go however it ends; a stop before
    the loop runs (a missing image, Ctrl-C) is recorded as the session's end too."""
    ending = _Ending()
    try:
        yield ending
    except (Exception, KeyboardInterrupt) as exc:
        _record_failure(session, exc)
        raise
    finally:
        if ending.env is not None:
            ending.env.close()
        session.close()


def _record_failure(session: Session, exc: BaseException) -> None:
    status = RunStatus.INTERRUPTED if isinstance(exc, KeyboardInterrupt) else RunStatus.ERROR
    session.meta.status = status
    session.meta.exit_message = str(exc)[:2000] or "interrupted by the user"
    try:
        session.append(ev.End(status=status, message=session.meta.exit_message))
        session.save_meta()
    except SessionError:
        pass  # the session files cannot be written (a full disk): it stays as its last whole event left it
