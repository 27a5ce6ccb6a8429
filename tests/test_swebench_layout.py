"""The official SWE-bench image layout, on an offline replica (tests/fixtures/swebench_layout):
conda's base `python` first on the default PATH, the repository importable only in the conda env
`testbed`, which /root/.bashrc activates. An agent's command and a tool's `--help` gate must see
exactly what `docker exec CONTAINER bash -lc '...'` sees there.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SUBMIT, bash_reply, write_script

pytestmark = pytest.mark.docker
REPO_ROOT = Path(__file__).resolve().parent.parent
TESTBED = "/opt/miniconda3/envs/testbed"

# What a command learns about its shell: which python, whether the repository imports, the env.
PROBE = ("command -v python python3; python -c 'import sys, shapes; print(sys.prefix, shapes.area(2, 3))'; "
         "echo \"env=${CONDA_DEFAULT_ENV:-none} pwd=$(pwd)\"; echo \"$PATH\"")

SHAPE_AREA_TOOL = '''#!/usr/bin/env python
# live-swe-tool: shape-area
# description: the area of a WIDTH x HEIGHT rectangle, computed by the repository's own code
# usage: shape-area WIDTH HEIGHT
import sys

import shapes  # the repository: it imports only in the testbed env

if sys.argv[1:] == ["--help"]:
    print("usage: shape-area WIDTH HEIGHT (shapes from " + shapes.__file__ + ")")
    sys.exit(0)
print(shapes.area(int(sys.argv[1]), int(sys.argv[2])))
'''


def write_tool_command(name: str, source: str) -> str:
    return (f"mkdir -p \"$LIVE_SWE_SCAFFOLD/tools\" && cat > \"$LIVE_SWE_SCAFFOLD/tools/{name}\" <<'EOF'\n"
            f"{source}EOF\nchmod +x \"$LIVE_SWE_SCAFFOLD/tools/{name}\"")


def test_the_replica_is_faithful(docker_client, swebench_layout_image):
    """Without a login shell the conda base interpreter answers and the repository does not import;
    `bash -lc` activates testbed from /root/.bashrc, whose first line is the activation."""
    plain = docker_client.containers.run(swebench_layout_image, ["bash", "-c", PROBE], remove=True,
                                         stderr=True).decode()
    assert plain.startswith("/opt/miniconda3/bin/python\n/opt/miniconda3/bin/python3\n")
    assert "ModuleNotFoundError: No module named 'shapes_units'" in plain and "env=none" in plain
    login = docker_client.containers.run(swebench_layout_image, ["bash", "-lc", PROBE], remove=True,
                                         stderr=True).decode()
    assert login.startswith(f"{TESTBED}/bin/python\n{TESTBED}/bin/python3\n{TESTBED} 6\nenv=testbed pwd=/testbed\n")
    bashrc = docker_client.containers.run(swebench_layout_image, ["cat", "/root/.bashrc"], remove=True).decode()
    assert bashrc == "source /opt/miniconda3/etc/profile.d/conda.sh && conda activate testbed\n"
    system = docker_client.containers.run(swebench_layout_image, ["/usr/bin/python3", "-c", "import sys; print(sys.prefix)"],
                                          remove=True).decode()
    assert system == "/usr\n"  # a third interpreter: the system's


def test_a_command_sees_what_docker_exec_bash_lc_sees(docker_client, swebench_layout_image, tmp_path):
    from live_swe.environments.docker import DockerEnvironment

    scaffold = tmp_path / "scaffold"
    (scaffold / "tools").mkdir(parents=True)
    with DockerEnvironment(swebench_layout_image, repo_dir="/testbed", scaffold_host_dir=scaffold,
                           scaffold_dir="/opt/live-swe/scaffold", labels={"live-swe.test": "swebench-layout"}) as env:
        seen = env.execute(PROBE, timeout=60)
        container = docker_client.containers.get(env.container_id)
        exec_result = container.exec_run(["bash", "-lc", PROBE], workdir="/testbed")
    assert seen.returncode == 0, seen.text
    assert seen.text == exec_result.output.decode()
    lines = seen.text.splitlines()
    assert lines[:4] == [f"{TESTBED}/bin/python", f"{TESTBED}/bin/python3", f"{TESTBED} 6", "env=testbed pwd=/testbed"]
    assert lines[4].split(":")[:2] == [f"{TESTBED}/bin", "/opt/miniconda3/condabin"]
    assert "/opt/live-swe/scaffold/tools" in lines[4].split(":")  # the tools stay on PATH


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "live_swe.cli.main", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd, stdin=subprocess.DEVNULL)


def test_a_run_s_tool_gate_and_commands_use_the_testbed_env(swebench_layout_image, tmp_path, live_swe_home):
    """A Python tool whose `--help` imports the repository is registered (its gate runs in testbed),
    used, and the repository's tests run with testbed's pytest, as on the official images."""
    script = write_script(tmp_path / "replies.yaml", [
        bash_reply(write_tool_command("shape-area", SHAPE_AREA_TOOL), "A tool that uses the repository's code."),
        bash_reply("shape-area 2 3", "Try the tool."),
        bash_reply("sed -i 's/ - 1$//' shapes/__init__.py && python -m pytest -q tests", "Fix and test."),
        SUBMIT,
    ])
    here = tmp_path / "elsewhere"
    here.mkdir()
    out = _cli("run", "-t", "perimeter() is one short", "--yolo", "--json", "--env", "docker",
               "--image", swebench_layout_image, "--repo-dir", "/testbed", "-m", f"scripted:{script}", cwd=here)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "submitted"
    assert "-    return 2 * (width + height) - 1\n+    return 2 * (width + height)" in result["patch"]
    events = [json.loads(line) for line in
              (live_swe_home / "sessions" / result["session_id"] / "events.jsonl").read_text().splitlines()]
    tools = [(e["kind"], e["name"], e["why"]) for e in events if e.get("t") == "tool"]
    assert tools == [("registered", "shape-area", "")]
    observations = [e["message"]["content"] for e in events
                    if e.get("t") == "message" and e["message"]["role"] == "user"][1:]
    assert "<output>\n6\n" in observations[1]
    assert "2 passed" in observations[2]



def test_hooks_run_with_the_python_a_login_shell_finds(swebench_layout_image, tmp_path, live_swe_home):
    """The hook worker starts as `bash -lc python3` would: the testbed env's interpreter."""
    from test_evolution_support import write_file_command

    hooks = ('import sys\n\ndef after_step(step, command, returncode):\n'
             '    return "HOOK-PYTHON " + sys.executable if command.startswith("echo probe") else ""\n')
    script = write_script(tmp_path / "replies.yaml", [
        bash_reply(write_file_command("hooks.py", hooks), "Hooks."), bash_reply("echo probe"), SUBMIT])
    here = tmp_path / "elsewhere"
    here.mkdir()
    out = _cli("run", "-t", "probe the hooks", "--yolo", "--json", "--env", "docker",
               "--image", swebench_layout_image, "--repo-dir", "/testbed", "-m", f"scripted:{script}", cwd=here)
    assert out.returncode == 0, out.stderr
    session_id = json.loads(out.stdout)["session_id"]
    events = [json.loads(line) for line in
              (live_swe_home / "sessions" / session_id / "events.jsonl").read_text().splitlines()]
    said = " ".join(e["message"]["content"] for e in events if e.get("t") == "message" and e["message"]["role"] == "user")
    assert f"HOOK-PYTHON {TESTBED}/bin/python3" in said

# -- a SWE-bench row on the replica: images under their upstream names, run and graded -------------

INSTANCE = "livetest__shapes-1"
HUB_NAME = "swebench/sweb.eval.x86_64.livetest_1776_shapes-1:latest"  # never present here
LOCAL_BUILD_NAME = "sweb.eval.x86_64.livetest__shapes-1:latest"  # what upstream swebench names a local build
EVAL_SCRIPT = """#!/bin/bash
set -uxo pipefail
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git -c core.fileMode=false diff {base}
source /opt/miniconda3/bin/activate
conda activate testbed
git checkout {base} tests/test_shapes.py
git apply -v - <<'EOF_114329324912'
{test_patch}
EOF_114329324912
: '>>>>> Start Test Output'
pytest -rA tests/test_shapes.py
: '>>>>> End Test Output'
git checkout {base} tests/test_shapes.py
"""


def diff_of(repo: Path, path: str, old: str, new: str) -> str:
    """A real `git diff` of one edit in a scratch copy of the replica's repository."""
    from conftest import SWEBENCH_LAYOUT, make_git_repo, run_git

    files = {p.relative_to(SWEBENCH_LAYOUT / "repo").as_posix(): p.read_text()
             for p in (SWEBENCH_LAYOUT / "repo").rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    make_git_repo(repo, files)
    target = repo / path
    assert old in target.read_text()
    target.write_text(target.read_text().replace(old, new))
    return run_git(repo, "diff")


def layout_row(tmp_path: Path, base_commit: str, image: str = HUB_NAME) -> dict:
    """A SWE-bench 5.x row for the replica, in the shape of the official ones (eval script included)."""
    test_patch = diff_of(tmp_path / "t", "tests/test_shapes.py", "def test_perimeter():\n",
                         "def test_perimeter_square():\n    assert perimeter(1, 1) == 4\n\n\ndef test_perimeter():\n")
    gold = diff_of(tmp_path / "g", "shapes/__init__.py", "(width + height) - 1", "(width + height)")
    return {
        "repo": "livetest/shapes", "instance_id": INSTANCE, "base_commit": base_commit, "patch": gold,
        "test_patch": test_patch, "problem_statement": "perimeter(2, 3) returns 9; it should be 10.",
        "hints_text": "", "created_at": "2024-01-01T00:00:00Z", "version": "0.1",
        "FAIL_TO_PASS": json.dumps(["tests/test_shapes.py::test_perimeter", "tests/test_shapes.py::test_perimeter_square"]),
        "PASS_TO_PASS": json.dumps(["tests/test_shapes.py::test_area"]), "environment_setup_commit": base_commit,
        "difficulty": "<15 min fix", "eval_script": EVAL_SCRIPT.format(base=base_commit, test_patch=test_patch.rstrip("\n")),
        "log_parser": "parse_log_pytest", "eval_type": "pass_and_fail", "image": image,
    }


@pytest.fixture
def tagged(docker_client, swebench_layout_image):
    """Extra names for the replica image (this test's own tags, removed after it)."""
    made: list[str] = []

    def tag(name: str) -> str:
        repository, _, version = name.rpartition(":")
        docker_client.images.get(swebench_layout_image).tag(repository, version)
        made.append(name)
        return name

    yield tag
    for name in made:
        try:
            docker_client.images.remove(name)  # the tag only; the replica stays
        except Exception:  # noqa: BLE001 - a shared engine; a leftover tag is only a name
            pass


def bench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return _cli("bench", *args, cwd=cwd)


def test_a_locally_built_swebench_image_is_found_run_and_graded(docker_client, swebench_layout_image, tagged,
                                                                tmp_path, live_swe_home):
    base = docker_client.containers.run(swebench_layout_image, ["git", "rev-parse", "HEAD"], remove=True).decode().strip()
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(layout_row(tmp_path, base)) + "\n")
    suite = f"swebench-verified:{rows}"

    missing = bench("images", suite, "--check", cwd=tmp_path)
    assert missing.returncode == 1 and f"MISSING  {HUB_NAME}" in missing.stdout
    assert f"docker pull {HUB_NAME}" in missing.stderr and f"--instance_ids {INSTANCE}" in missing.stderr

    tagged(LOCAL_BUILD_NAME)
    found = bench("images", suite, "--check", cwd=tmp_path)
    assert found.returncode == 0 and f"present  {LOCAL_BUILD_NAME}" in found.stdout

    script = write_script(tmp_path / "replies.yaml", [
        bash_reply("python -m pytest -q tests 2>&1 | tail -1", "Reproduce."),
        bash_reply("sed -i 's/ - 1$//' shapes/__init__.py && python -m pytest -q tests 2>&1 | tail -1", "Fix."),
        SUBMIT,
    ])
    out = tmp_path / "batch"
    run = bench("run", suite, "--model", f"scripted:{script}", "--out", str(out), "--no-progress", cwd=tmp_path)
    assert run.returncode == 0, (run.stdout, run.stderr)
    (record,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert (record["status"], record["image"]) == ("submitted", LOCAL_BUILD_NAME)
    events = [json.loads(line) for line in (out / "sessions" / INSTANCE / "events.jsonl").read_text().splitlines()]
    observations = [e["message"]["content"] for e in events if e.get("t") == "message" and e["message"]["role"] == "user"]
    assert "1 failed, 1 passed" in observations[1] and "2 passed" in observations[2]  # testbed's pytest

    graded = bench("eval", str(out), "--run-id", "layout", cwd=tmp_path)
    assert graded.returncode == 0, (graded.stdout, graded.stderr)
    assert re.search(rf"^\s+resolved\s+{INSTANCE}\b", graded.stdout, re.MULTILINE), graded.stdout
    dataset = [json.loads(line) for line in (out / "eval" / "layout.dataset.jsonl").read_text().splitlines()]
    assert dataset[0]["image"] == LOCAL_BUILD_NAME  # what the harness was told to run


def test_an_image_template_names_images_the_user_s_way(docker_client, swebench_layout_image, tagged, tmp_path):
    base = docker_client.containers.run(swebench_layout_image, ["git", "rev-parse", "HEAD"], remove=True).decode().strip()
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(layout_row(tmp_path, base)) + "\n")
    mine = tagged("live-swe-test-mine/livetest__shapes-1:v1")
    template = "live-swe-test-mine/{instance_id}:v1"
    shown = bench("images", f"swebench-verified:{rows}", "--image-template", template, "--check", cwd=tmp_path)
    assert shown.returncode == 0 and f"present  {mine}" in shown.stdout
    out = tmp_path / "gold"
    graded = bench("eval", "--gold", f"swebench-verified:{rows}", "--out", str(out), "--image-template", template,
                   "--run-id", "template", "--json", cwd=tmp_path)
    assert graded.returncode == 0, graded.stderr
    assert json.loads(graded.stdout)["resolved_ids"] == [INSTANCE]
    bad = bench("images", f"swebench-verified:{rows}", "--image-template", "x/{nope}:1", cwd=tmp_path)
    assert bad.returncode == 2 and "--image-template 'x/{nope}:1': use the fields {instance_id}" in bad.stderr
    assert "Traceback" not in bad.stderr
