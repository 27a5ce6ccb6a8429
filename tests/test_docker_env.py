"""The docker environment against a real engine and the local base image."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from conftest import SUBMIT, bash_reply, labelled_containers, run_git, write_script

from live_swe.agent.patch import base_commit, repository_patch
from live_swe.environments.base import OUTPUT_CAP_BYTES, EnvironmentError_

pytestmark = pytest.mark.docker
REPO_ROOT = Path(__file__).resolve().parent.parent


def container_exists(client, name: str) -> bool:
    from docker.errors import NotFound

    try:
        client.containers.get(name)
        return True
    except NotFound:
        return False


def wait_until_gone(client, name: str, within: float = 20.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not container_exists(client, name):
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def docker_env(docker_client, base_image):
    from live_swe.environments.docker import DockerEnvironment

    env = DockerEnvironment(base_image, repo_dir="/tmp", labels={"live-swe.test": "docker_env"})
    yield env
    env.close()


def test_execute_merges_output_and_returns_the_exit_code(docker_env):
    out = docker_env.execute("echo to-stdout; echo to-stderr >&2; exit 7", timeout=30)
    assert out.returncode == 7
    assert out.text == "to-stdout\nto-stderr\n"
    assert not out.timed_out
    assert docker_env.execute("printf 'no newline'", timeout=30).text == "no newline"


def test_each_command_gets_a_fresh_shell_in_the_repository(docker_env):
    first = docker_env.execute("cd /etc && export LEFTOVER=yes && pwd", timeout=30)
    assert first.text.strip() == "/etc"
    second = docker_env.execute('pwd; echo "leftover=${LEFTOVER:-unset}"', timeout=30)
    assert second.text.split() == ["/tmp", "leftover=unset"]


def test_a_timeout_kills_the_command_group_but_not_the_container(docker_env):
    started = time.monotonic()
    out = docker_env.execute("sleep 300 & echo started; sleep 300", timeout=1.5)
    assert out.timed_out and out.returncode == -1
    assert out.text == "started\n"
    assert time.monotonic() - started < 15
    container_before = docker_env.container_id
    after = docker_env.execute("echo alive; ps -eo args | grep -c '^sleep 300' || true", timeout=30)
    assert after.text.split() == ["alive", "0"]  # the background sleep of that group died too
    assert docker_env.container_id == container_before


def test_big_output_is_capped_in_memory(docker_env):
    out = docker_env.execute(f"head -c {OUTPUT_CAP_BYTES + 5000} /dev/zero | tr '\\0' x; echo; exit 3", timeout=60)
    assert out.returncode == 3
    assert out.text.startswith("x" * 1000)
    assert out.text.count("x") == OUTPUT_CAP_BYTES
    assert "5001 more bytes of output were dropped" in out.text


def test_a_lost_channel_is_reopened_transparently(docker_env, docker_client):
    container = docker_client.containers.get(docker_env.container_id)
    driver = docker_env._channel.driver_pid
    container.exec_run(["kill", "-9", str(driver)])
    out = docker_env.execute("echo still-here", timeout=30)
    assert (out.text, out.returncode) == ("still-here\n", 0)
    assert docker_env._channel.driver_pid != driver


def test_killing_the_driver_mid_command_reports_it_and_recovers(docker_env):
    out = docker_env.execute("echo before; kill -9 $PPID; sleep 5", timeout=30)
    assert out.returncode == -1 and "channel was lost" in out.text and "before" in out.text
    assert docker_env.execute("echo recovered", timeout=30).text == "recovered\n"


def test_repository_copied_in_keeps_git_and_gives_a_patch(docker_client, base_image, git_repo):
    from live_swe.environments.docker import DockerEnvironment

    with DockerEnvironment(base_image, repo_dir="/testbed", copy_repo_from=git_repo) as env:
        assert base_commit(env) == run_git(git_repo, "rev-parse", "HEAD").strip()
        edit = env.execute("sed -i 's/a - b/a + b/' calc.py && echo 'x = 1' > new_module.py", timeout=30)
        assert edit.returncode == 0
        patch = repository_patch(env, base_commit(env))
    assert "-    return a - b\n+    return a + b" in patch
    assert "+++ b/new_module.py" in patch
    assert "return a - b" in (git_repo / "calc.py").read_text()  # the host copy is untouched


def test_what_the_agent_writes_in_the_scaffold_belongs_to_the_host_user(docker_client, base_image, tmp_path):
    """A non-root host user must be able to roll back (delete) files the container's root wrote."""
    from live_swe.environments.docker import DockerEnvironment

    scaffold = tmp_path / "scaffold"
    scaffold.mkdir()
    with DockerEnvironment(base_image, repo_dir="/tmp", scaffold_host_dir=scaffold, host_owner=(1234, 2345)) as env:
        made = env.execute("mkdir -p $LIVE_SWE_SCAFFOLD/tools && echo x > $LIVE_SWE_SCAFFOLD/tools/t && id -u",
                           timeout=30)
        assert made.text.strip() == "0"  # written as the container's root
        for path in (scaffold / "tools", scaffold / "tools" / "t"):
            assert (path.stat().st_uid, path.stat().st_gid) == (1234, 2345)
    with DockerEnvironment(base_image, repo_dir="/tmp", scaffold_host_dir=scaffold) as env:  # a root host
        env.execute("echo y > $LIVE_SWE_SCAFFOLD/root.txt", timeout=30)
    assert (scaffold / "root.txt").stat().st_uid == os.getuid()


def test_copy_in_and_out_round_trip(docker_env, tmp_path):
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "a.txt").write_text("alpha\n")
    (source / "b.txt").write_text("beta\n")
    docker_env.copy_in(source, "/work/data")
    docker_env.copy_in(source / "b.txt", "/work/single/renamed.txt")
    listing = docker_env.execute("cat /work/data/sub/a.txt /work/data/b.txt /work/single/renamed.txt", timeout=30)
    assert listing.text == "alpha\nbeta\nbeta\n"
    docker_env.execute("echo gamma > /work/data/sub/c.txt", timeout=30)
    docker_env.copy_out("/work/data", tmp_path / "back")
    assert (tmp_path / "back" / "sub" / "c.txt").read_text() == "gamma\n"
    assert (tmp_path / "back" / "b.txt").read_text() == "beta\n"
    docker_env.copy_out("/work/data/sub/a.txt", tmp_path / "one.txt")
    assert (tmp_path / "one.txt").read_text() == "alpha\n"
    with pytest.raises(EnvironmentError_, match="does not exist"):
        docker_env.copy_out("/no/such/file", tmp_path / "x")


def test_scaffold_is_mounted_with_tools_first_on_path(docker_client, base_image, tmp_path):
    from live_swe.environments.docker import DockerEnvironment

    scaffold = tmp_path / "scaffold"
    (scaffold / "tools").mkdir(parents=True)
    tool = scaffold / "tools" / "ls"  # shadows the system ls: the tools folder must come first
    tool.write_text("#!/bin/bash\necho \"tool ls from $LIVE_SWE_SCAFFOLD\"\n")
    tool.chmod(0o755)
    with DockerEnvironment(base_image, repo_dir="/tmp", scaffold_host_dir=scaffold,
                           scaffold_dir="/opt/live-swe/scaffold") as env:
        assert env.scaffold_dir == "/opt/live-swe/scaffold"
        assert env.execute("ls", timeout=30).text == "tool ls from /opt/live-swe/scaffold\n"
        assert env.execute("echo $PATH", timeout=30).text.startswith("/opt/live-swe/scaffold/tools:")
        env.execute("echo written-inside > $LIVE_SWE_SCAFFOLD/note.txt", timeout=30)
    assert (scaffold / "note.txt").read_text() == "written-inside\n"


def test_no_credentials_reach_the_container(docker_client, base_image, monkeypatch):
    from live_swe.environments.docker import DockerEnvironment

    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret-1")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-host-secret-2")
    with DockerEnvironment(base_image, repo_dir="/tmp",
                           env={"ANTHROPIC_API_KEY": "sk-passed-secret-3", "HARMLESS": "visible"}) as env:
        seen = env.execute("env", timeout=30).text
    assert "HARMLESS=visible" in seen
    for secret in ("sk-host-secret-1", "ghp-host-secret-2", "sk-passed-secret-3", "API_KEY", "TOKEN"):
        assert secret not in seen


def test_close_removes_the_container(docker_client, base_image):
    from live_swe.environments.docker import DockerEnvironment

    env = DockerEnvironment(base_image, repo_dir="/tmp")
    name = env.container_name
    assert docker_client.containers.get(name).labels["live-swe"] == "1"
    env.close()
    assert not container_exists(docker_client, name)
    with pytest.raises(EnvironmentError_, match="closed"):
        env.execute("true", timeout=5)


def _owner_process(base_image: str) -> subprocess.Popen:
    script = textwrap.dedent(f"""
        from live_swe.environments.docker import DockerEnvironment
        env = DockerEnvironment({base_image!r}, repo_dir="/tmp")
        print(env.container_name, flush=True)
        env.execute("echo started > /tmp/started; sleep 120", timeout=300)
    """)
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})


def _wait_for_command(client, name: str) -> None:
    container = client.containers.get(name)
    deadline = time.monotonic() + 30
    while container.exec_run(["test", "-e", "/tmp/started"]).exit_code != 0:
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.2)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_container_removed_when_the_owner_dies_mid_command(docker_client, base_image, sig):
    owner = _owner_process(base_image)
    try:
        name = owner.stdout.readline().strip()
        assert name.startswith("live-swe-")
        _wait_for_command(docker_client, name)
        owner.send_signal(sig)
        owner.wait(timeout=30)
        assert wait_until_gone(docker_client, name), f"{name} outlived its owner ({sig.name})"
    finally:
        owner.kill()
        owner.wait()


def test_leftover_containers_are_found_by_label(docker_client, base_image):
    from live_swe.environments.docker import DockerEnvironment, remove_leftover_containers

    mark = uuid.uuid4().hex[:8]
    env = DockerEnvironment(base_image, repo_dir="/tmp", labels={"live-swe.test": mark})
    other = DockerEnvironment(base_image, repo_dir="/tmp", labels={"live-swe.test": "someone-else"})
    try:
        assert remove_leftover_containers({"live-swe.test": mark}) == [env.container_name]
        assert not container_exists(docker_client, env.container_name)
        assert container_exists(docker_client, other.container_name)
    finally:
        env.close()
        other.close()


def test_a_missing_image_is_a_clear_error_without_a_long_pull(docker_client):
    from live_swe.environments.docker import DockerEnvironment

    started = time.monotonic()
    with pytest.raises(EnvironmentError_) as caught:
        DockerEnvironment("live-swe-no-such-image:never", repo_dir="/tmp")
    message = str(caught.value)
    assert "'live-swe-no-such-image:never'" in message
    assert "docker pull live-swe-no-such-image:never" in message
    assert "live-swe bench images" in message
    assert time.monotonic() - started < 20


def test_engine_down_is_a_clear_error(tmp_path, monkeypatch):
    pytest.importorskip("docker")
    from live_swe.environments.docker import DockerEnvironment

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(EnvironmentError_) as caught:
        DockerEnvironment("live-swe-base", repo_dir="/tmp")
    message = str(caught.value)
    assert "no Docker engine answers" in message and "no-engine.sock" in message
    assert "systemctl start docker" in message and "dockerd" in message


def test_bench_runs_and_evaluation_say_the_same_when_no_engine_answers(tmp_path, monkeypatch):
    pytest.importorskip("docker")
    from live_swe.bench.batch import _Engine
    from live_swe.bench.images import docker_client

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    messages = []
    for connect in (_Engine, docker_client):
        with pytest.raises(EnvironmentError_) as caught:
            connect()
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert "no Docker engine answers" in messages[0] and "no-engine.sock" in messages[0]
    assert "systemctl start docker" in messages[0]


def test_permission_denied_says_how_to_get_access():
    pytest.importorskip("docker")
    from docker.errors import DockerException

    from live_swe.environments._docker_engine import engine_error

    try:
        try:
            raise PermissionError(13, "Permission denied")
        except PermissionError as inner:
            raise DockerException("Error while fetching server API version") from inner
    except DockerException as exc:
        message = str(engine_error(exc))
    assert "permission denied" in message and "docker group" in message and "sudo" in message


def test_a_run_in_docker_edits_the_copied_repository_and_submits(docker_client, base_image, git_repo, tmp_path):
    from live_swe.models.scripted import ScriptedModel
    from live_swe.runner import RunHooks, RunRequest, start_run

    script = write_script(tmp_path / "script.yaml", [
        bash_reply("test -d .git && sed -i 's/a - b/a + b/' calc.py && cat calc.py", "Fix the operator."),
        SUBMIT,
    ])
    request = RunRequest(task="Make add() add.", model=f"scripted:{script}", repo=git_repo, env="docker",
                         image=base_image)
    hooks = RunHooks(model_factory=lambda name: ScriptedModel.from_path(script))
    result = start_run(request, hooks)
    assert result.status == "submitted"
    assert "+    return a + b" in result.patch and "-    return a - b" in result.patch
    assert "scaffold" not in result.patch
    labelled = labelled_containers(docker_client, f"live-swe.session={result.session_id}")
    assert labelled == []


@pytest.mark.docker
def test_resume_in_docker_restores_the_changes_of_the_stopped_container(base_image, tmp_path):
    """The first container is gone after a stop; resume puts the session's changes into the new one."""
    from conftest import SUBMIT, bash_reply, make_git_repo

    from live_swe.config import KernelLimits
    from live_swe.models.scripted import ScriptedModel
    from live_swe.runner import RunHooks, RunRequest, resume_run, start_run

    repo = make_git_repo(tmp_path / "repo", {"calc.py": "def add(a, b):\n    return a - b\n"})
    replies = [bash_reply("sed -i 's/a - b/a + b/' calc.py"), bash_reply("echo more > notes.txt"),
               bash_reply("cat calc.py notes.txt"), SUBMIT]
    script = tmp_path / "s.yaml"
    import yaml

    script.write_text(yaml.safe_dump(replies))
    factory = RunHooks(model_factory=lambda name: ScriptedModel.from_path(script))
    request = RunRequest(task="fix add", model=f"scripted:{script}", repo=repo, env="docker", image=base_image,
                         limits=KernelLimits(step_limit=2))
    first = start_run(request, factory)
    assert first.status == "limits_exceeded" and "notes.txt" in first.patch
    assert (repo / "calc.py").read_text().endswith("a - b\n")  # the host repository was never touched

    second = resume_run(first.session_id, factory, limits=KernelLimits(step_limit=10))
    assert second.status == "submitted"
    assert "+    return a + b" in second.patch and "+more" in second.patch


@pytest.fixture(scope="module")
def image_with_repository(docker_client, base_image):
    """A SWE-bench-style image: the repository is already in it, at /testbed."""
    import io

    tag = "live-swe-test-image-repo:latest"
    dockerfile = (f"FROM {base_image}\n"
                  "RUN mkdir /testbed && cd /testbed && git init -q && echo 'v = 1' > app.py && git add -A "
                  "&& git -c user.email=t@example.com -c user.name=t commit -qm init\n")
    docker_client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True)
    return tag


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "live_swe.cli.main", *args], capture_output=True, text=True,
                          timeout=180, cwd=cwd, stdin=subprocess.DEVNULL)


def test_without_a_repository_here_the_image_s_own_is_used(image_with_repository, tmp_path, live_swe_home):
    """Run from a folder that is not a repository: nothing of it is copied into the image's /testbed."""
    here = tmp_path / "not-a-repo"
    here.mkdir()
    (here / "junk.txt").write_text("not part of any repository\n")
    script = write_script(tmp_path / "s.yaml", [bash_reply("echo 'v = 2' > app.py"), SUBMIT])
    out = _cli("run", "-t", "bump v", "--yolo", "--json", "--env", "docker", "--image", image_with_repository,
               "-m", f"scripted:{script}", cwd=here)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "submitted" and "+v = 2" in result["patch"] and "junk" not in result["patch"]
    assert "using the one inside the image at /testbed" in out.stderr
    # an explicit --repo that is not a repository is refused before anything starts
    refused = _cli("run", "-t", "x", "--yolo", "--env", "docker", "--image", image_with_repository,
                   "-m", f"scripted:{script}", "--repo", str(here), cwd=tmp_path)
    assert refused.returncode == 2 and "is not a git repository" in refused.stderr


def test_a_run_that_cannot_start_still_prints_its_json(git_repo, tmp_path, live_swe_home):
    script = write_script(tmp_path / "s.yaml", [SUBMIT])
    out = _cli("run", "-t", "x", "--yolo", "--json", "--env", "docker", "--image", "live-swe-no-such-image:1",
               "-m", f"scripted:{script}", "--repo", str(git_repo), cwd=tmp_path)
    assert out.returncode == 2 and "live-swe-no-such-image:1" in out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "error" and "live-swe-no-such-image:1" in result["message"]
    shown = json.loads(_cli("sessions", "show", result["session_id"], "--json", cwd=tmp_path).stdout)
    assert shown["status"] == "error"
