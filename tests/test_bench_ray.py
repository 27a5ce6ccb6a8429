"""``--executor ray`` on a real Ray cluster on loopback: a head (127.0.0.1, no Docker work) and two
worker nodes (127.0.0.2, 127.0.0.3) that offer one `docker` unit each, all on this machine's Docker
engine. The local suite through ``bench run`` / ``bench eval`` gives what the thread pool gives; a
killed driver resumes; a worker node killed mid-run loses nothing. The nodes are started here with
``ray start --block`` in process groups of their own and stopped by their own PIDs (never ``ray stop``).
The only stand-in is the language model (scripted replies).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SUBMIT, bash_reply, labelled_containers, write_script
from ray_nodes import free_ports, start_cluster
from test_bench_batch import wait_for
from test_bench_eval import FIXES
from test_bench_local_suite import SUITE, local_suite_images  # noqa: F401 - the session fixture

from live_swe.bench.batch import BATCH_FILE, BATCH_LABEL
from live_swe.bench.preds import read_jsonl, read_preds

REPO_ROOT = Path(__file__).resolve().parent.parent
INSTANCES = sorted(FIXES)  # configlite-31 (a wrong fix), datespan-58, textkit-101
FIX_ALL = "; ".join(f"{{ [ -f {cmd.split()[-1]} ] && {cmd}; }}" for cmd in FIXES.values()) + "; true"
SLEEPING = "livebench__configlite-31"  # the instance a script can keep busy: `sleep` where configlite is


@pytest.fixture(scope="module")
def cluster(local_suite_images, tmp_path_factory):  # noqa: F811 - the imported fixture
    """A head (no Docker work) and two Docker worker nodes on loopback; the head's address and the nodes.
    Skipped only where Ray is not installed (CI installs it: .ci/run)."""
    ray = pytest.importorskip("ray")
    address, nodes = start_cluster(tmp_path_factory.mktemp("ray"), head_docker=0, workers=2)
    try:
        if not wait_for(lambda: _docker_units(address) == 2, timeout=120, interval=2):
            pytest.fail("the Ray cluster did not come up: " + " | ".join(n.log.read_text()[-500:] for n in nodes))
        yield {"address": address, "nodes": {n.name: n for n in nodes}}
    finally:
        if ray.is_initialized():
            ray.shutdown()
        for node in reversed(nodes):
            node.stop()


def _docker_units(address: str) -> int:
    probe = (f"import ray; ray.init(address={address!r}, _node_ip_address='127.0.0.1', logging_level='ERROR'); "
             "print(int(ray.cluster_resources().get('docker', 0)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    try:
        return int(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return 0


def bench(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "live_swe.cli.main", "bench", *args], cwd=REPO_ROOT,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})


def _script(path: Path, *commands: str) -> Path:
    return write_script(path, [bash_reply(command) for command in commands] + [SUBMIT])


def _run_args(script: Path, out: Path, *extra: str) -> list[str]:
    return ["run", SUITE, "--model", f"scripted:{script}", "--out", str(out), "--instances", ",".join(INSTANCES),
            "--no-progress", *extra]


# -- bench run and bench eval: the same as the thread pool -------------------------------------------


@pytest.mark.docker
def test_ray_runs_and_grades_the_local_suite_as_the_thread_pool_does(cluster, tmp_path):
    script = _script(tmp_path / "fix.yaml", FIX_ALL)
    threads, on_ray = tmp_path / "threads", tmp_path / "ray"
    done = bench(*_run_args(script, threads, "--workers", "2"))
    assert done.returncode == 0, done.stderr
    done = bench(*_run_args(script, on_ray, "--executor", "ray", "--ray-address", cluster["address"]))
    assert done.returncode == 0, done.stderr
    assert "tasks per node: " in done.stdout

    # The same predictions, in the same formats, written once each by the driver.
    mine, theirs = read_preds(on_ray / "preds.jsonl"), read_preds(threads / "preds.jsonl")
    assert sorted(mine) == sorted(theirs) == INSTANCES
    assert len(read_jsonl(on_ray / "preds.jsonl")) == 3
    for instance_id in INSTANCES:
        assert mine[instance_id]["model_patch"] == theirs[instance_id]["model_patch"] != ""
        assert set(mine[instance_id]) == set(theirs[instance_id])
    records = read_jsonl(on_ray / "results.jsonl")
    assert sorted(r["instance_id"] for r in records) == INSTANCES
    ids = {cluster["nodes"][name].node_id() for name in ("a", "b")}
    assert {r["node"] for r in records} <= ids and all(r["status"] == "submitted" for r in records)
    # Sessions written on the nodes are in the driver's folder, whole.
    for record in records:
        session = on_ray / "sessions" / record["session"]
        meta = json.loads((session / "meta.json").read_text())
        assert meta["status"] == "submitted" and (session / "scaffold.git").is_dir()
        assert (session / "patch.diff").read_text() == mine[record["instance_id"]]["model_patch"]
        assert any(json.loads(line).get("t") == "end" for line in (session / "events.jsonl").read_text().splitlines())

    # Rerunning resumes: everything finished is skipped, nothing is written again.
    again = bench(*_run_args(script, on_ray, "--executor", "ray", "--ray-address", cluster["address"], "--json"))
    assert again.returncode == 0, again.stderr
    assert (json.loads(again.stdout)["skipped"], json.loads(again.stdout)["done"]) == (3, 0)
    assert len(read_jsonl(on_ray / "preds.jsonl")) == 3

    graded = {}
    for name, out, extra in (("threads", threads, ()), ("ray", on_ray, ("--executor", "ray", "--ray-address",
                                                                        cluster["address"]))):
        done = bench("eval", str(out), "--json", "--run-id", "cmp", *extra)
        assert done.returncode == 0, done.stderr
        graded[name] = json.loads(done.stdout)
    assert graded["ray"] == graded["threads"]
    assert graded["ray"]["resolved_ids"] == ["livebench__datespan-58", "livebench__textkit-101"]
    report = json.loads((on_ray / "report.json").read_text())
    unresolved = report["instances"]["livebench__configlite-31"]
    assert unresolved["status"] == "unresolved" and "test_false_bool" in unresolved["detail"]
    assert Path(unresolved["log_dir"]).is_relative_to(on_ray) and Path(unresolved["log_dir"], "report.json").is_file()
    official = json.loads(Path(report["harness_report"]).read_text())
    assert Path(report["harness_report"]).parent == on_ray
    assert (official["total_instances"], sorted(official["resolved_ids"])) == (3, graded["ray"]["resolved_ids"])


# -- evolve and validate ---------------------------------------------------------------------------


@pytest.mark.docker
def test_one_evolve_generation_and_a_validation_run_on_the_cluster(cluster, tmp_path):
    from test_godel_evolve import MARKER
    from typer.testing import CliRunner

    from live_swe.cli.main import app

    runner = CliRunner()
    solver = _script(tmp_path / "solver.yaml", "git status --short")
    improver = write_script(tmp_path / "improver.yaml", [
        bash_reply(f"printf '\\n{MARKER}: be careful.\\n' >> prompts/system.j2", "Add a note."), SUBMIT])
    on_ray = ["--executor", "ray", "--ray-address", cluster["address"]]
    evolve = runner.invoke(app, [
        "evolve", "--suite", SUITE, "--model", f"scripted:{solver}", "--improver-model", f"scripted:{improver}",
        "-g", "1", "-k", "1", "--instances", ",".join(INSTANCES), "--report-fraction", "0.34", "--stages", "1,2",
        "--thresholds", "0,0", "--json", *on_ray])
    assert evolve.exit_code == 0, evolve.output
    state = json.loads(evolve.stdout)
    assert state["status"] == "done" and state["children"]["g1c0"]["status"] == "accepted"
    node = state["children"]["g1c0"]["node"]
    validated = runner.invoke(app, [
        "validate", "--scaffold", f"archive:{node}", "--against", f"archive:{state['root']}", "--suite", SUITE,
        "--model", f"scripted:{solver}", "--instances", ",".join(state["report_split"]), "--json", *on_ray])
    assert validated.exit_code == 0, validated.output
    report = json.loads(validated.stdout)
    assert (report["n"], report["wins"], report["losses"]) == (len(state["report_split"]), 0, 0)

    # Every agent run of the generation and of the validation was a task on a Docker node, graded there.
    ids = {cluster["nodes"][name].node_id() for name in ("a", "b")}
    folders = [p.parent for p in Path(os.environ["LIVE_SWE_HOME"]).rglob("results.jsonl")]
    assert len(folders) >= 4  # the root, the child's two stages, and the two scaffolds validated
    for folder in folders:
        records = read_jsonl(folder / "results.jsonl")
        assert records and all(r["node"] in ids and r["status"] == "submitted" for r in records), folder
        assert json.loads((folder / "report.json").read_text())["total"] == len(records)


# -- faults ------------------------------------------------------------------------------------------


def _sleeping_container(docker_client, out: Path) -> bool:
    try:
        batch_id = json.loads((out / BATCH_FILE).read_text())["batch_id"]
    except (OSError, ValueError, KeyError):
        return False
    for container in labelled_containers(docker_client, f"{BATCH_LABEL}={batch_id}"):
        try:
            processes = docker_client.api.top(container["Id"]).get("Processes") or []
        except Exception:  # noqa: BLE001 - gone meanwhile
            continue
        if any("sleep 300" in " ".join(map(str, row)) for row in processes):
            return True
    return False


def _start_driver(args: list[str]) -> subprocess.Popen:
    """``live-swe bench ARGS`` in its own process (text pipes for its stdout and stderr)."""
    return subprocess.Popen([sys.executable, "-m", "live_swe.cli.main", "bench", *args], cwd=REPO_ROOT,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_until_one_sleeps(docker_client, out: Path) -> None:
    """Until two instances are done and the third sleeps in its container."""
    assert wait_for(lambda: len(read_preds(out / "preds.jsonl")) == 2 and _sleeping_container(docker_client, out),
                    timeout=180), "the batch never got to the sleeping instance"


@pytest.mark.docker
def test_a_killed_driver_resumes_and_nothing_is_recorded_twice(cluster, tmp_path, docker_client):
    script = _script(tmp_path / "fix.yaml", FIX_ALL, "[ -f configlite/values.py ] && sleep 300; true")
    out = tmp_path / "run"
    args = _run_args(script, out, "--executor", "ray", "--ray-address", cluster["address"])
    driver = _start_driver(args)
    try:
        _wait_until_one_sleeps(docker_client, out)
        driver.kill()
        driver.wait(timeout=30)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert sorted(read_preds(out / "preds.jsonl")) == [i for i in INSTANCES if i != SLEEPING]
    # The killed driver's task goes with it, and its container with the task.
    assert wait_for(lambda: not _sleeping_container(docker_client, out), timeout=60)

    _script(script, FIX_ALL)  # the same command again; this time the instance does not sleep
    done = bench(*args, "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["skipped"], summary["done"], summary["failed"]) == (2, 1, 0)
    preds = read_jsonl(out / "preds.jsonl")
    assert sorted(p["instance_id"] for p in preds) == INSTANCES  # each once
    finished = [r["instance_id"] for r in read_jsonl(out / "results.jsonl") if r["finished"]]
    assert sorted(finished) == INSTANCES
    # Only whole sessions in the driver's folder: none reserved for an attempt that never came back.
    sessions = sorted(p.name for p in (out / "sessions").iterdir())
    assert sessions == INSTANCES and all((out / "sessions" / s / "meta.json").is_file() for s in sessions)


@pytest.mark.docker
def test_ctrl_c_cancels_the_tasks_and_leaves_no_container(cluster, tmp_path, docker_client):
    script = _script(tmp_path / "fix.yaml", FIX_ALL, "[ -f configlite/values.py ] && sleep 300; true")
    out = tmp_path / "run"
    driver = _start_driver(_run_args(script, out, "--executor", "ray", "--ray-address", cluster["address"]))
    try:
        _wait_until_one_sleeps(docker_client, out)
        driver.send_signal(signal.SIGINT)
        _, stderr = driver.communicate(timeout=120)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 130, stderr
    assert "Traceback" not in stderr
    batch_id = json.loads((out / BATCH_FILE).read_text())["batch_id"]
    assert labelled_containers(docker_client, f"{BATCH_LABEL}={batch_id}") == []
    (stopped,) = [r for r in read_jsonl(out / "results.jsonl") if r["instance_id"] == SLEEPING]
    assert stopped["status"] == "interrupted" and not stopped["finished"]
    assert sorted(read_preds(out / "preds.jsonl")) == [i for i in INSTANCES if i != SLEEPING]


@pytest.mark.docker
def test_a_worker_node_killed_mid_run_loses_nothing(cluster, tmp_path, docker_client):
    """Node a's raylet is SIGKILLed while each node runs one instance: node a's instance runs again
    on node b, and each instance is recorded once. (Last: the cluster keeps one Docker node.)"""
    two = [i for i in INSTANCES if i != SLEEPING]
    script = _script(tmp_path / "slow.yaml", FIX_ALL, "sleep 12")
    out = tmp_path / "run"
    args = ["run", SUITE, "--model", f"scripted:{script}", "--out", str(out), "--instances", ",".join(two),
            "--no-progress", "--json", "--executor", "ray", "--ray-address", cluster["address"]]
    driver = _start_driver(args)
    node_a, node_b = cluster["nodes"]["a"], cluster["nodes"]["b"]
    lost, kept = node_a.node_id(), node_b.node_id()

    def both_sleeping() -> bool:
        try:
            batch_id = json.loads((out / BATCH_FILE).read_text())["batch_id"]
        except (OSError, ValueError, KeyError):
            return False
        running = 0
        for container in labelled_containers(docker_client, f"{BATCH_LABEL}={batch_id}"):
            try:
                rows = docker_client.api.top(container["Id"]).get("Processes") or []
            except Exception:  # noqa: BLE001 - gone meanwhile
                continue
            running += any("sleep 12" in " ".join(map(str, row)) for row in rows)
        return running == 2

    try:
        assert wait_for(both_sleeping, timeout=180), "the two instances never ran at once"
        os.kill(node_a.raylet(), signal.SIGKILL)
        stdout, stderr = driver.communicate(timeout=240)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 0, stderr
    summary = json.loads(stdout)
    assert (summary["done"], summary["failed"]) == (2, 0)
    assert sorted(p["instance_id"] for p in read_jsonl(out / "preds.jsonl")) == two  # each once
    records = read_jsonl(out / "results.jsonl")
    assert sorted(r["instance_id"] for r in records) == two  # one record each: the lost attempt is not one
    assert {r["node"] for r in records} == {kept} != {lost}  # the lost node's instance ran again on b
    assert all(r["status"] == "submitted" for r in records)


# -- keys and installation ------------------------------------------------------------------------------


@pytest.mark.docker
def test_provider_keys_reach_the_node_through_the_runtime_env_never_as_task_arguments(cluster, tmp_path,
                                                                                      monkeypatch):
    import cloudpickle

    from live_swe.bench import ray_batch
    from live_swe.bench.batch import run_batch
    from live_swe.models.base import Reply
    from live_swe.models.scripted import ScriptedModel

    key = "sk-live-swe-test-" + "7" * 24
    monkeypatch.setenv("OPENAI_API_KEY", key)
    sent: list[bytes] = []
    arguments = ray_batch.RayBatch._task_arguments

    def spy(self, job, session_id):
        made = arguments(self, job, session_id)
        sent.append(cloudpickle.dumps(made))
        return made

    monkeypatch.setattr(ray_batch.RayBatch, "_task_arguments", spy)

    def factory(name, instance):  # runs on the node: says whether the key is in its environment there
        import os as node_os

        seen = "key-on-the-node" if len(node_os.environ.get("OPENAI_API_KEY", "")) == 41 else "no-key"
        return ScriptedModel([Reply(f"THOUGHT: {seen}.\n\n```bash\necho {seen}\n```"), Reply(SUBMIT)], name=name)

    out = tmp_path / "run"
    summary = run_batch(SUITE, model="scripted-key", out=out, instances=["livebench__textkit-101"],
                        model_factory=factory, show_progress=False, executor="ray", ray_address=cluster["address"])
    assert (summary.done, summary.failed) == (1, 0), summary.records
    assert len(key) == 41 and len(sent) == 1 and key.encode() not in sent[0]
    events = (out / "sessions" / "livebench__textkit-101" / "events.jsonl").read_text()
    assert "key-on-the-node" in events and "no-key" not in events
    for path in out.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path


def test_without_ray_the_executor_says_how_to_install_it(tmp_path):
    block = ("import sys; sys.modules['ray'] = None; sys.argv = ['live-swe'] + sys.argv[1:]; "
             "from live_swe.cli.main import main; main()")
    done = subprocess.run([sys.executable, "-c", block, "bench", "run", SUITE, "--model", "scripted:x.yaml", "--out",
                           str(tmp_path / "out"), "--executor", "ray"], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr
    assert "pip install 'live-swe[ray]'" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_an_address_where_no_cluster_answers_is_one_line_and_nothing_is_written(tmp_path):
    pytest.importorskip("ray")
    port = free_ports(1)  # nothing listens there
    done = bench("run", SUITE, "--model", "scripted:x.yaml", "--out", str(tmp_path / "out"), "--executor", "ray",
                 "--ray-address", f"127.0.0.1:{port}", timeout=60)
    assert done.returncode == 2, done.stderr
    assert f"no Ray cluster answers at '127.0.0.1:{port}'" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
