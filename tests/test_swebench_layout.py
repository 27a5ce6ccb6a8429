"""The official SWE-bench image layout, on an offline replica (tests/fixtures/swebench_layout):
conda's base `python` first on the default PATH, the repository importable only in the conda env
`testbed`, which /root/.bashrc activates. An agent's command and a tool's `--help` gate must see
exactly what `docker exec CONTAINER bash -lc '...'` sees there.
"""

from __future__ import annotations

import json
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
