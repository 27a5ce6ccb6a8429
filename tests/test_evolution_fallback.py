"""The hook fallback on a real session: a real scaffold history (git), a real guard, a real local
environment. Failed hooks are rolled back at the step boundary to the newest version that has not
failed (then the seed hooks, then none); a "live" mark left by a run that died makes its resume
fall back; hooks that cannot run are off once."""

from __future__ import annotations

import pytest

from live_swe.config import KernelLimits
from live_swe.environments.local import LocalEnvironment
from live_swe.events import HooksOff, ScaffoldChange, parse
from live_swe.evolution.guard import GatedScaffold
from live_swe.evolution.hook_fallback import LIVE_HOOKS_FILE
from live_swe.evolution.hook_process import source_digest
from live_swe.resources import resource_path
from live_swe.scaffolding.refs import materialize
from live_swe.session.store import SessionStore

V1 = 'def after_step(step, command, returncode):\n    return "v1"\n'
V2 = 'def after_step(step, command, returncode):\n    return "v2"\n'
SEED = resource_path("scaffold", "hooks.py").read_text()


@pytest.fixture
def session():
    session = SessionStore.default().create(task="fallback", model="scripted:fallback")
    materialize("seed", session.scaffold_dir, library=None)
    return session


def _guard(session):
    repo = session.dir / "repo"  # the hooks and the gates run in the environment; its repository is not used
    repo.mkdir(exist_ok=True)
    guard = GatedScaffold(session, LocalEnvironment(repo, scaffold_dir=session.scaffold_dir), KernelLimits())
    events = []

    def emit(event):  # as the agent does: to the log, then to the observers
        session.append(event)
        events.append(event)

    guard.attach(emit)
    return guard, events


def _accept(guard, step, source):
    (guard.root / "hooks.py").write_text(source)
    notes = guard.after_step(step, "THOUGHT: hooks")
    assert any("accepted" in n for n in notes), notes


def test_failed_hooks_roll_back_to_the_newest_version_that_has_not_failed(session):
    (session.scaffold_dir / "hooks.py").write_text(V1)  # a starting scaffold with hooks of its own
    guard, events = _guard(session)
    fallback = guard.hook_fallback
    _accept(guard, 1, V2)
    start = guard.history.revisions()[1].rev

    fallback.failed(source_digest(V2), "after_step", "boom")
    fallback.failed(source_digest(V2), "transform_observation", "later failure")  # the first one is kept
    assert fallback.disabled(source_digest(V2)) and not fallback.disabled(source_digest(V1))
    notes = guard.after_step(2, "THOUGHT: nothing")

    assert (guard.root / "hooks.py").read_text() == V1
    assert guard.history.file_at("HEAD", "hooks.py").decode() == V1
    head = guard.history.revisions()[0]
    assert head.subject == "step 2: roll back hooks.py" and head.body == "after_step failed: boom"
    rollback = events[-1]
    assert isinstance(rollback, ScaffoldChange) and rollback.kind == "rollback" and rollback.step == 2
    assert (rollback.files, rollback.reason, rollback.why, rollback.rev) == (["hooks.py"], "hook after_step failed",
                                                                            "boom", head.rev)
    assert rollback.summary == "rolled back hooks.py: boom"
    assert notes == [f"Scaffold: hooks.py failed (after_step: boom). It was rolled back to the last version that "
                     f"worked (commit {start[:8]}), committed as {head.rev[:8]}; the run goes on."]
    assert guard.after_step(3, "") == [] and len(guard.history.revisions()) == 3  # nothing pending any more
    assert guard.hooks_source() == ("hooks.py", V1) and not guard.changed()

    # v1 fails too: no version in the history is left, so the seed hooks
    fallback.failed(source_digest(V1), "after_step", "boom again")
    assert "worked (the seed hooks)" in guard.after_step(4, "")[0]
    assert guard.hooks_source() == ("hooks.py", SEED)
    # and when they fail as well, hooks are off: nothing is committed
    fallback.failed(source_digest(SEED), "load", "no luck")
    head = guard.history.head()
    assert guard.after_step(5, "") == ["Scaffold: hooks.py failed (load: no luck); there is no earlier version to "
                                       "fall back to, so hooks are off for the rest of this run."]
    assert guard.history.head() == head and guard.hooks_source() == ("hooks.py", SEED)
    assert (events[-1].kind, events[-1].files, events[-1].rev) == ("rollback", [], head)
    assert events[-1].why == "no luck; no earlier hooks to fall back to, so hooks are off"


def test_hooks_replaced_in_the_same_step_are_not_rolled_back(session):
    guard, events = _guard(session)
    _accept(guard, 1, V1)
    guard.hook_fallback.failed(source_digest(V1), "after_step", "boom")
    (guard.root / "hooks.py").write_text(V2)
    notes = guard.after_step(2, "THOUGHT: fix the hooks")
    assert guard.hooks_source() == ("hooks.py", V2)
    assert [e.kind for e in events if isinstance(e, ScaffoldChange)] == ["commit", "commit"]
    assert not any("rolled back" in n for n in notes)


def test_a_resume_after_a_run_that_died_while_hooks_ran_falls_back(session):
    guard, _ = _guard(session)
    _accept(guard, 1, V1)
    _accept(guard, 2, V2)
    mark = session.dir / LIVE_HOOKS_FILE
    guard.hook_fallback.live(source_digest(V2))
    assert mark.read_text() == source_digest(V2)
    session.meta.steps = 2  # the run dies here: the mark stays

    resumed, events = _guard(session)
    assert not mark.exists()
    assert resumed.hooks_source() == ("hooks.py", V1) and resumed.hook_fallback.disabled(source_digest(V2))
    (rollback,) = [e for e in events if isinstance(e, ScaffoldChange)]
    assert (rollback.kind, rollback.step, rollback.reason) == ("rollback", 2, "hook run failed")
    assert rollback.why == "the last run died while these hooks were running"
    logged = [parse(record) for record in session.events()[0]]
    assert logged[-1].rev == rollback.rev == resumed.history.head()  # its history event, written before the move
    assert "rolled back to the last version that worked" in resumed.after_step(3, "")[0]

    # a mark for hooks that are no longer the accepted ones is dropped, nothing rolled back
    resumed.hook_fallback.live(source_digest(V2))
    again, events = _guard(session)
    assert not mark.exists() and again.hooks_source() == ("hooks.py", V1)
    assert not [e for e in events if isinstance(e, ScaffoldChange)]


def test_the_live_mark_is_removed_when_the_hooks_return(session):
    guard, _ = _guard(session)
    mark = session.dir / LIVE_HOOKS_FILE
    guard.hook_fallback.live(None)  # nothing marked: nothing to remove
    guard.hook_fallback.live(source_digest(SEED))
    assert mark.exists()
    guard.hook_fallback.live(None)
    assert not mark.exists()


def test_hooks_that_cannot_run_are_off_once(session):
    guard, events = _guard(session)
    digest = source_digest(SEED)
    guard.hook_fallback.off(digest, "hooks cannot run in this environment: it has no python3")
    guard.hook_fallback.off(digest, "again")
    (off,) = [e for e in events if isinstance(e, HooksOff)]
    assert (off.step, off.why) == (0, "hooks cannot run in this environment: it has no python3")
    assert guard.hook_fallback.disabled(digest)
    assert guard.after_step(1, "") == ["Scaffold: hooks cannot run in this environment: it has no python3, so hooks "
                                       "are off for this run; the run goes on."]
