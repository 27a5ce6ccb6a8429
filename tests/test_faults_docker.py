"""Faults of the Docker side: the container or the engine going away mid-run loses no saved work."""

from __future__ import annotations

import pytest
from conftest import SUBMIT, bash_reply, make_git_repo, write_script

pytestmark = pytest.mark.docker


def _remove_container_after_step(docker_client, session_ref: dict, step: int):
    """An observer that removes the session's container (as a crash or a daemon restart would) once
    ``step`` is logged."""

    def observe(event: dict) -> None:
        if event.get("t") == "step" and event.get("step") == step:
            for info in docker_client.api.containers(all=True, filters={"label": f"live-swe.session={session_ref['id']}"}):
                docker_client.api.remove_container(info["Id"], force=True)

    return observe


def test_a_lost_container_never_replaces_the_saved_patch_and_resume_keeps_the_edits(docker_client, base_image,
                                                                                     tmp_path):
    from live_swe.models.scripted import ScriptedModel
    from live_swe.runner import RunHooks, RunRequest, resume_run, start_run
    from live_swe.session.store import new_session_id

    repo = make_git_repo(tmp_path / "repo", {"calc.py": "def add(a, b):\n    return a - b\n"})
    script = write_script(tmp_path / "s.yaml", [
        bash_reply("sed -i 's/a - b/a + b/' calc.py"),
        bash_reply("echo kept > notes.txt"),
        bash_reply("echo never-ran > lost.txt"),
        bash_reply("cat calc.py notes.txt"),
        SUBMIT,
    ])
    session_id = new_session_id()
    hooks = RunHooks(model_factory=lambda name: ScriptedModel.from_path(script),
                     observers=[_remove_container_after_step(docker_client, {"id": session_id}, 2)])
    request = RunRequest(task="fix add", model=f"scripted:{script}", repo=repo, env="docker", image=base_image,
                         session_id=session_id)
    first = start_run(request, hooks)
    assert first.status == "error"
    assert "+    return a + b" in first.patch and "+kept" in first.patch  # the last good patch, not ""
    from live_swe.session.store import SessionStore

    saved = SessionStore.default().open(session_id).patch()
    assert "+    return a + b" in saved and "+kept" in saved

    again = RunHooks(model_factory=lambda name: ScriptedModel.from_path(script))
    second = resume_run(session_id, again)
    assert second.status == "submitted"
    assert "+    return a + b" in second.patch and "+kept" in second.patch
