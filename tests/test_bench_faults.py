"""Batch runs when the Docker engine goes away: on a private engine this test starts and restarts
(its own data root, exec root, socket and bridge; the shared engine is never touched).

The engine is real and so are its containers; the only stand-in is the language model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import SUBMIT, bash_reply, write_script
from private_engine import PrivateEngine
from test_bench_batch import REPOS, _row, make_suite, wait_for

from live_swe.bench.batch import run_batch
from live_swe.bench.preds import read_jsonl, read_preds
from live_swe.models.base import Reply
from live_swe.models.scripted import ScriptedModel

REPO_ROOT = Path(__file__).resolve().parent.parent
IMAGE = "live-swe-test-faults-calc:latest"
SLEEP = "sleep 6"
LONG_SLEEP = "sleep 60"  # outlives the engine's shutdown, which kills it


@pytest.fixture(scope="module")
def engine(docker_client, base_image, tmp_path_factory):
    """A private engine holding the base image and one instance image built from it."""
    why = PrivateEngine.can_run()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"CI must be able to start a private dockerd: {why}")
        pytest.skip(why)
    engine = PrivateEngine()
    try:
        engine.start()
        engine.load_image(base_image)
        context = tmp_path_factory.mktemp("faults-image")
        for name, text in REPOS["calc"].items():
            (context / "repo" / name).parent.mkdir(parents=True, exist_ok=True)
            (context / "repo" / name).write_text(text)
        (context / "Dockerfile").write_text(
            f"FROM {base_image}\nCOPY repo /testbed\nRUN cd /testbed && git init -q -b main && git add -A "
            "&& git -c user.email=dev@example.com -c user.name=Dev commit -q -m initial\nWORKDIR /testbed\n")
        engine.docker("build", "-q", "-t", IMAGE, str(context))
        yield engine
    finally:
        engine.close()


@pytest.fixture
def on_engine(engine, monkeypatch):
    """The private engine, running, and live-swe pointed at it."""
    if subprocess.run(["docker", "-H", engine.host, "version"], capture_output=True).returncode != 0:
        engine.start()
    monkeypatch.setenv("DOCKER_HOST", engine.host)
    return engine


def four_instances(directory: Path) -> str:
    return make_suite(directory, [_row(f"example__calc-{n}", "calc", IMAGE, "add() subtracts.") for n in range(1, 5)])


def sleeping_containers(engine: PrivateEngine, sleep: str = SLEEP) -> int:
    """How many containers run the scripted ``sleep`` right now."""
    listed = subprocess.run(["docker", "-H", engine.host, "ps", "-q"], capture_output=True, text=True)
    count = 0
    for container in listed.stdout.split():
        top = subprocess.run(["docker", "-H", engine.host, "top", container], capture_output=True, text=True)
        count += sleep in top.stdout
    return count


def restart_mid_batch(engine: PrivateEngine, suite: str, out: Path, factory, sleep: str):
    """Run the batch (two workers) and restart the engine once two instances run ``sleep``: its summary."""
    done: dict = {}
    batch = threading.Thread(target=lambda: done.update(summary=run_batch(
        suite, model="m", out=out, workers=2, model_factory=factory, show_progress=False, engine_wait=120)))
    batch.start()
    try:
        assert wait_for(lambda: sleeping_containers(engine, sleep) == 2, timeout=120), "the first two never started"
        engine.stop()  # returns once the engine has stopped its containers and exited
        time.sleep(3)
        engine.start()
    finally:
        batch.join(timeout=600)
    return done["summary"]


def sleeper(name, instance) -> ScriptedModel:
    return ScriptedModel([Reply(bash_reply(SLEEP)), Reply(bash_reply("sed -i 's/a - b/a + b/' calc/ops.py")),
                          Reply(SUBMIT)], name=name)


@pytest.mark.docker
def test_a_daemon_restart_mid_batch_loses_no_instance(on_engine, tmp_path):
    """Two instances run and two wait when the engine restarts: the queued ones wait for it, the
    ones it killed run again, every instance ends submitted and nothing counts as failed."""
    suite, out = four_instances(tmp_path / "suite"), tmp_path / "run"
    # queued instances come up for their turn while no engine answers
    summary = restart_mid_batch(on_engine, suite, out, sleeper, SLEEP)
    assert (summary.done, summary.submitted, summary.failed, summary.not_started) == (4, 4, 0, 0), summary.records
    assert summary.clean and summary.errors == {}
    preds = read_preds(out / "preds.jsonl")
    assert sorted(preds) == [f"example__calc-{n}" for n in range(1, 5)]
    assert all("+    return a + b" in pred["model_patch"] for pred in preds.values())
    # An instance the restart killed is booked as such, then run again (one its shutdown spared just ends).
    lost = [r for r in read_jsonl(out / "results.jsonl") if r["status"] == "error"]
    assert len(lost) == summary.retried
    for record in lost:
        assert (record["error_kind"], record["engine"]) == ("engine", "back")
        assert record["reason"].startswith(f"the Docker engine at {on_engine.host} stopped answering")


@pytest.mark.docker
def test_an_engine_that_stays_away_stops_the_batch_cleanly_and_a_rerun_goes_on(on_engine, tmp_path):
    suite, out = four_instances(tmp_path / "suite"), tmp_path / "run"
    script = write_script(tmp_path / "replies.yaml", [bash_reply(LONG_SLEEP), SUBMIT])
    command = [sys.executable, "-m", "live_swe.cli.main", "bench", "run", suite, "--model", f"scripted:{script}",
               "--out", str(out), "--workers", "2", "--engine-wait", "4", "--json"]
    child = subprocess.Popen(command, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        assert wait_for(lambda: sleeping_containers(on_engine, LONG_SLEEP) == 2, timeout=120), "never started"
        on_engine.stop()
        stdout, stderr = child.communicate(timeout=180)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 3, (stdout, stderr)
    assert "Traceback" not in stderr and "Connection aborted" not in stderr, stderr
    assert "did not come back within 4 s" in stderr  # the progress lines say it, as the records do
    summary = json.loads(stdout)
    assert summary["exit_code"] == 3 and summary["done"] == 0
    assert summary["errors"] == {"engine": summary["failed"]} and summary["failed"] >= 2
    assert summary["failed"] + summary["not_started"] == 4
    assert "stopped answering and did not come back within 4 s" in summary["stopped"]
    for record in read_jsonl(out / "results.jsonl"):
        assert record["error_kind"] == "engine" and "did not come back within 4 s" in record["reason"]
        assert record["reason"].startswith(f"the Docker engine at {on_engine.host} ")
    assert not (out / "preds.jsonl").exists() or read_preds(out / "preds.jsonl") == {}

    on_engine.start()
    write_script(script, [SUBMIT])  # the same model; this time it submits at once
    again = subprocess.run(command, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=600, env=os.environ.copy())
    assert again.returncode == 0, (again.stdout, again.stderr)
    assert json.loads(again.stdout)["done"] == 4
    assert len(read_preds(out / "preds.jsonl")) == 4


@pytest.mark.docker
def test_instances_the_engine_killed_run_again_once_it_is_back(on_engine, tmp_path):
    """The engine's shutdown kills two running instances; when it is back they run again, and the
    batch ends clean. Their first attempts are booked in results.jsonl."""
    suite, out = four_instances(tmp_path / "suite"), tmp_path / "run"
    attempts: dict[str, int] = {}

    def factory(name, instance):
        attempts[instance.instance_id] = attempts.get(instance.instance_id, 0) + 1
        first = [Reply(bash_reply(LONG_SLEEP))] if attempts[instance.instance_id] == 1 and len(attempts) <= 2 else []
        return ScriptedModel([*first, Reply(bash_reply("sed -i 's/a - b/a + b/' calc/ops.py")), Reply(SUBMIT)],
                             name=name)

    summary = restart_mid_batch(on_engine, suite, out, factory, LONG_SLEEP)
    assert (summary.done, summary.submitted, summary.failed, summary.retried) == (4, 4, 0, 2), summary.records
    assert summary.clean and summary.errors == {}
    killed = [r for r in read_jsonl(out / "results.jsonl") if r["status"] == "error"]
    assert sorted(r["instance_id"] for r in killed) == sorted(i for i, n in attempts.items() if n == 2)
    for record in killed:
        assert (record["error_kind"], record["engine"]) == ("engine", "back")
        assert record["reason"] == (f"the Docker engine at {on_engine.host} went away during this instance; "
                                    "it is back, so the instance runs again")
    assert len(read_preds(out / "preds.jsonl")) == 4
