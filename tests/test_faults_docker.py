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


@pytest.fixture(scope="module")
def private_docker(base_image, tmp_path_factory):
    """A Docker engine of this test's own, with the base image, that it may stop and start."""
    from private_docker import PrivateDocker

    why_not = PrivateDocker.available()
    if why_not:
        pytest.skip(why_not)
    engine = PrivateDocker(tmp_path_factory.mktemp("private-docker"))
    try:
        engine.start()
        engine.load(base_image)
        yield engine
    finally:
        engine.remove()


def test_the_engine_stopping_during_a_command_is_one_clear_line_and_the_session_resumes(private_docker, tmp_path):
    import json
    import os
    import subprocess
    import sys
    import time

    from conftest import BASE_IMAGE

    from live_swe.session.store import SessionStore

    repo = make_git_repo(tmp_path / "repo", {"calc.py": "def add(a, b):\n    return a - b\n"})
    slow = bash_reply("sleep 120", "Wait for a long time.")
    script = write_script(tmp_path / "s.yaml", [bash_reply("sed -i 's/a - b/a + b/' calc.py"), slow, SUBMIT])
    env = {**os.environ, "DOCKER_HOST": private_docker.host}
    cli = [sys.executable, "-m", "live_swe.cli.main"]
    run = subprocess.Popen([*cli, "run", "-t", "fix add", "--repo", str(repo), "--env", "docker", "--image", BASE_IMAGE,
                            "-m", f"scripted:{script}", "--yolo"], env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while "sleep 120" not in private_docker.docker("ps", "-q", check=False).stdout + _top(private_docker):
            assert time.monotonic() < deadline and run.poll() is None, run.stderr.read() if run.poll() else "slow"
            time.sleep(0.3)
        private_docker.stop()  # the engine goes away in the middle of the command
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
        private_docker.start()
    assert run.returncode == 1 and "Traceback" not in err, err
    [meta] = SessionStore.default().list()
    # the engine kills its containers as it stops: which it is seen as first depends on the moment
    said = ("stopped answering", "is gone or stopped")
    assert meta.status == "error" and any(s in meta.exit_message for s in said) and "resume" in meta.exit_message
    assert any(s in err for s in said)
    saved = SessionStore.default().open(meta.id).patch()
    assert "+    return a + b" in saved  # the last good patch stands

    write_script(script, [bash_reply("sed -i 's/a - b/a + b/' calc.py"), bash_reply("echo quick this time"), SUBMIT])
    resumed = subprocess.run([*cli, "resume", meta.id, "--yolo", "--json"], env=env, capture_output=True, text=True,
                             timeout=300, stdin=subprocess.DEVNULL)
    result = json.loads(resumed.stdout)
    assert result["status"] == "submitted" and "+    return a + b" in result["patch"], resumed.stderr


def _top(engine) -> str:
    """The processes of the engine's containers."""
    names = engine.docker("ps", "-q", check=False).stdout.split()
    return "".join(engine.docker("top", name, check=False).stdout for name in names)


def test_sigterm_during_a_docker_command_removes_the_container_and_the_session_resumes(docker_client, base_image,
                                                                                      tmp_path):
    import json
    import signal
    import subprocess
    import sys
    import time

    from conftest import labelled_containers

    from live_swe.session.store import SessionStore

    repo = make_git_repo(tmp_path / "repo", {"calc.py": "def add(a, b):\n    return a - b\n"})
    fix = bash_reply("sed -i 's/a - b/a + b/' calc.py")
    script = write_script(tmp_path / "s.yaml", [fix, bash_reply("sleep 120", "Wait."), SUBMIT])
    cli = [sys.executable, "-m", "live_swe.cli.main"]
    run = subprocess.Popen([*cli, "run", "-t", "fix add", "--repo", str(repo), "--env", "docker", "--image", base_image,
                            "-m", f"scripted:{script}", "--yolo"], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        session_id = None
        while True:
            assert time.monotonic() < deadline and run.poll() is None, "the slow command never started"
            metas = SessionStore.default().list()
            session_id = metas[0].id if metas else None
            running = labelled_containers(docker_client, f"live-swe.session={session_id}") if session_id else []
            if running and "sleep 120" in _processes(docker_client, running[0]["Id"]):
                break
            time.sleep(0.3)
        run.send_signal(signal.SIGTERM)
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 1 and "Traceback" not in err and "stopped by SIGTERM" in err, err
    deadline = time.monotonic() + 20
    while labelled_containers(docker_client, f"live-swe.session={session_id}") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert labelled_containers(docker_client, f"live-swe.session={session_id}") == []
    assert SessionStore.default().open(session_id).meta.status == "interrupted"
    write_script(script, [fix, bash_reply("echo quick this time"), SUBMIT])
    resumed = subprocess.run([*cli, "resume", session_id, "--yolo", "--json"], capture_output=True, text=True,
                             timeout=300, stdin=subprocess.DEVNULL)
    result = json.loads(resumed.stdout)
    assert result["status"] == "submitted" and "+    return a + b" in result["patch"], resumed.stderr


def _processes(docker_client, container_id: str) -> str:
    """What runs in the container ("" while it is not running yet, or gone)."""
    from docker.errors import APIError

    try:
        return str(docker_client.api.top(container_id))
    except APIError:
        return ""
