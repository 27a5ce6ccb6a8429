"""Ctrl-C on the real ``live-swe evolve`` and ``live-swe validate`` processes: exit 130, then a rerun
finishes without redoing finished work. They drive the real CLI on the local suite in Docker, as a
user would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SUBMIT, bash_reply, labelled_containers, write_script
from test_bench_local_suite import SUITE, local_suite_images  # noqa: F401 - the session fixture
from test_godel_bench import pick_instances
from test_godel_cli import _marked_scaffold
from test_godel_evolve import MARKER

from godel.archive import Archive
from live_swe.bench.batch import BATCH_FILE, BATCH_LABEL, RESULTS_FILE
from live_swe.bench.preds import PREDS_FILE

REPO_ROOT = Path(__file__).resolve().parent.parent


# -- Ctrl-C on the real CLI (Docker) --------------------------------------------------------------


def _start_cli(args: list[str], home: Path) -> subprocess.Popen:
    """``live-swe ARGS`` in its own process group, as a terminal would start it."""
    return subprocess.Popen([sys.executable, "-m", "live_swe.cli.main", *args], cwd=REPO_ROOT,
                            env={**os.environ, "LIVE_SWE_HOME": str(home)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _ctrl_c_once(process: subprocess.Popen, pattern: str, home: Path, timeout: float = 120) -> Path:
    """Wait until the batch matching ``pattern`` (under ``home``) has finished an instance, then send
    SIGINT to the process group, like Ctrl-C in a terminal. Returns that batch's folder."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        for preds in home.glob(pattern + "/" + PREDS_FILE):
            if preds.read_text().strip():
                os.killpg(process.pid, signal.SIGINT)
                return preds.parent
        time.sleep(0.05)
    out, err = process.communicate(timeout=30) if process.poll() is None else process.communicate()
    raise AssertionError(f"no instance finished before the deadline (exit {process.returncode}):\n{out}\n{err}")


def _records(batch: Path) -> list[dict]:
    return [json.loads(line) for line in (batch / RESULTS_FILE).read_text().splitlines() if line.strip()]


def _finished(batch: Path) -> list[str]:
    return [json.loads(line)["instance_id"] for line in (batch / PREDS_FILE).read_text().splitlines() if line.strip()]


def _no_containers_left(docker_client, batch: Path) -> None:
    batch_id = json.loads((batch / BATCH_FILE).read_text())["batch_id"]
    assert labelled_containers(docker_client, f"{BATCH_LABEL}={batch_id}") == []


def _slow_solver(tmp_path: Path) -> Path:
    """Looks around for a second per instance, then submits nothing: a Ctrl-C lands mid-batch."""
    return write_script(tmp_path / "solver.yaml", [bash_reply("sleep 1; git status --short", "Look."), SUBMIT])


@pytest.mark.docker
def test_ctrl_c_on_the_evolve_command_exits_130_and_a_rerun_continues(
        local_suite_images, docker_client, tmp_path, live_swe_home):  # noqa: F811
    solver = _slow_solver(tmp_path)
    improver = write_script(tmp_path / "improver.yaml", [
        bash_reply(f"printf '\\n{MARKER}: be careful.\\n' >> prompts/system.j2", "Add a note."), SUBMIT])
    args = ["evolve", "--suite", SUITE, "--model", f"scripted:{solver}", "--improver-model", f"scripted:{improver}",
            "-g", "1", "-k", "1", "--selection", "clade", "--instances", ",".join(pick_instances(local_suite_images, 4)),
            "--report-fraction", "0.25", "--stages", "1,3", "--thresholds", "0,0", "--json"]
    process = _start_cli(args, live_swe_home)
    root_batch = _ctrl_c_once(process, "archive/runs/*/eval/root", live_swe_home)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, out + err
    assert "interrupted; state of run-" in err and "rerun the same command" in err and "Traceback" not in err
    state_path = next((live_swe_home / "archive" / "runs").glob("*/state.json"))
    state = json.loads(state_path.read_text())  # whole, readable JSON
    assert state["status"] == "running" and state["root"] is None and state["config"]["selection"] == "clade"
    finished = _finished(root_batch)
    assert 1 <= len(finished) < 3 and Archive.default().nodes() == []
    _no_containers_left(docker_client, root_batch)

    rerun = _start_cli(args, live_swe_home)
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out + err
    final = json.loads(out)
    assert final["run_id"] == state["run_id"] and final["status"] == "done"
    assert final["children"]["g1c0"]["status"] == "accepted"
    # The root instances finished before Ctrl-C were not run again; the rest ran once more.
    runs = [r["instance_id"] for r in _records(root_batch) if r["status"] != "interrupted"]
    assert sorted(runs) == sorted(final["selection_split"]) and sorted(_finished(root_batch)) == sorted(runs)
    assert [n.run_key for n in Archive.default().nodes()] == ["root", "g1c0"]


@pytest.mark.docker
def test_ctrl_c_on_the_validate_command_exits_130_and_a_rerun_reports(
        local_suite_images, docker_client, tmp_path, live_swe_home):  # noqa: F811
    solver = _slow_solver(tmp_path)
    ids = pick_instances(local_suite_images, 3)
    args = ["validate", "--scaffold", f"path:{_marked_scaffold(tmp_path)}", "--suite", SUITE,
            "--model", f"scripted:{solver}", "--instances", ",".join(ids), "--json"]
    process = _start_cli(args, live_swe_home)
    batch = _ctrl_c_once(process, "archive/validation-runs/*/candidate", live_swe_home)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, out + err
    assert "interrupted; rerun the same command" in err and "Traceback" not in err and out == ""
    finished = _finished(batch)
    assert 1 <= len(finished) < 3 and Archive.default().validations() == []
    _no_containers_left(docker_client, batch)

    rerun = _start_cli(args, live_swe_home)
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out + err
    report = json.loads(out)
    runs = [r["instance_id"] for r in _records(batch) if r["status"] != "interrupted"]
    assert sorted(runs) == sorted(ids)  # each candidate instance ran to its end exactly once
    # Neither scaffold resolves anything: every pair is (no, no), the interval is [0, 0], p = 1.
    assert report["pairs"] == [{"instance_id": i, "candidate": False, "baseline": False} for i in sorted(ids)]
    assert (report["n"], report["wins"], report["losses"], report["delta"]) == (3, 0, 0, 0.0)
    assert (report["ci_low"], report["ci_high"], report["p_value"], report["verdict"]) == (0.0, 0.0, 1.0,
                                                                                          "no evidence")
    assert Archive.default().validations()[-1]["id"] == report["id"]
