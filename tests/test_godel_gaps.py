"""Gaps in the Gödel engine's coverage: clade selection inside a real evolve run, validate's
statistics fields on hand-computed cases, and Ctrl-C on the real ``live-swe evolve`` and
``live-swe validate`` processes (exit 130, then a rerun finishes without redoing finished work).

The first two use the synthetic setup of test_godel_evolve (real agent runs, scripted models, no
Docker); the Ctrl-C tests drive the real CLI on the local suite in Docker, as a user would.
"""

from __future__ import annotations

import json
import os
import random
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
from test_godel_evolve import IDS, MARKER, LocalTaskEvaluator, config, is_easy, make_evolver

from godel.archive import Archive
from godel.selection import Candidate, select_parents
from godel.staging import Stage
from godel.validate import validate
from live_swe.bench.batch import BATCH_FILE, BATCH_LABEL, RESULTS_FILE
from live_swe.bench.preds import PREDS_FILE

REPO_ROOT = Path(__file__).resolve().parent.parent

# -- clade selection in a real run ---------------------------------------------------------------

# With this seed the two rules disagree in generation 2: the clade rule keeps drawing the root (its
# clade holds a perfect child), DGM the root's neutral child (the same score, but no children yet).
CLADE_SEED = 3


def _thompson_by_hand(clades: dict[str, tuple[int, int]], k: int, rng: random.Random) -> list[str]:
    """Each draw: theta ~ Beta(1 + successes, 1 + failures) per candidate (in id order), largest wins."""
    chosen = []
    for _ in range(k):
        theta = {node: rng.betavariate(1 + s, 1 + f) for node, (s, f) in clades.items()}
        chosen.append(max(theta, key=theta.__getitem__))
    return chosen


def test_evolve_with_clade_selection_draws_parents_by_the_clade_rule(tmp_path):
    cfg = config(generations=2, children=3, seed=CLADE_SEED, selection="clade",
                 stages=[Stage(size=2, threshold=0.0), Stage(size=5, threshold=0.0)])
    plan = {"g1c0": "improve", "g1c1": "neutral", "g1c2": "break"}  # generation 2: noop children
    evolver = make_evolver(cfg, {**plan, "g2c0": "noop", "g2c1": "noop", "g2c2": "noop"})
    state = evolver.run()
    assert state.status == "done" and state.config.selection == "clade"
    archive = Archive.default()
    root = archive.get(state.root)
    improved = archive.get(state.children["g1c0"].node)
    neutral = archive.get(state.children["g1c1"].node)
    assert state.children["g1c2"].status == "rejected"
    assert state.generations[0].parents == [root.id] * 3  # the root was the only node

    # The archive generation 2 chose from: the root (r of 5 solved), its perfect child (5 of 5, so not a
    # candidate) and its neutral child (r of 5 again).
    r = sum(is_easy(i) for i in state.selection_split)
    assert (root.resolved, improved.resolved, neutral.resolved) == (r, 5, r)
    # Clades pooled by hand: the root's clade holds all three nodes, the neutral child only itself.
    clades = {root.id: (r + 5 + r, (5 - r) + 0 + (5 - r)), neutral.id: (r, 5 - r)}
    expected = _thompson_by_hand(clades, 3, random.Random(f"{CLADE_SEED}:2"))
    assert state.generations[1].parents == expected
    assert [state.children[f"g2c{n}"].parent for n in range(3)] == expected

    # DGM on the same archive and the same random stream would have chosen otherwise, so the check
    # above tells the two rules apart.
    before = [Candidate(root.id, None, root.results, 3), Candidate(improved.id, root.id, improved.results, 0),
              Candidate(neutral.id, root.id, neutral.results, 0)]
    assert select_parents(before, 3, method="dgm", rng=random.Random(f"{CLADE_SEED}:2")) != expected


# -- validate's statistics fields on a hand-computed case -----------------------------------------


def test_validate_json_pairs_interval_and_p_value_on_a_hand_computed_case(tmp_path):
    # task-01..04: the seed solves the EASY ones (02, 04), the marked scaffold all four.
    result = validate(f"path:{_marked_scaffold(tmp_path)}", "seed", suite="tasks", model="solver",
                      instance_ids=["task-03", "task-01", "task-04", "task-02"], evaluate=LocalTaskEvaluator(),
                      resamples=10000, seed=4)
    report = json.loads(json.dumps(result.to_json()))  # what `validate --json` prints
    assert report["pairs"] == [
        {"instance_id": "task-01", "candidate": True, "baseline": False},
        {"instance_id": "task-02", "candidate": True, "baseline": True},
        {"instance_id": "task-03", "candidate": True, "baseline": False},
        {"instance_id": "task-04", "candidate": True, "baseline": True},
    ]
    assert (report["n"], report["wins"], report["losses"], report["delta"]) == (4, 2, 0, 0.5)
    # McNemar: 2 discordant pairs, both won: 2 * P(Binomial(2, 1/2) <= 0) = 2 * 1/4.
    assert report["p_value"] == pytest.approx(0.5)
    # The per-instance differences are [1, 0, 1, 0]: a resampled mean is Binomial(4, 1/2) / 4, which is
    # 0 and 1 each with probability 1/16 > 2.5%, so the 2.5% and 97.5% percentiles are exactly 0 and 1.
    assert (report["ci_low"], report["ci_high"]) == (0.0, 1.0)
    assert (report["resamples"], report["seed"], report["alpha"]) == (10000, 4, 0.05)
    assert report["verdict"] == "no evidence"
    recorded = Archive.default().validations()[-1]
    assert {k: recorded[k] for k in ("ci_low", "ci_high", "p_value")} == {
        k: report[k] for k in ("ci_low", "ci_high", "p_value")}


def test_validate_json_on_a_clear_regression(tmp_path):
    # Against the marked scaffold, the seed loses the 3 HARD tasks of task-01..06 and wins none.
    marked = f"path:{_marked_scaffold(tmp_path)}"
    report = validate("seed", marked, suite="tasks", model="solver", instance_ids=IDS[:6],
                      evaluate=LocalTaskEvaluator(), resamples=2000).to_json()
    assert [(p["candidate"], p["baseline"]) for p in report["pairs"]] == [(is_easy(i), True) for i in IDS[:6]]
    assert (report["wins"], report["losses"], report["delta"]) == (0, 3, -0.5)
    assert report["p_value"] == pytest.approx(2 / 8)  # 2 * 0.5**3
    # Differences [-1, 0] * 3: the mean of 6 resamples is -Binomial(6, 1/2) / 6; P(all -1) = 1/64 < 2.5%
    # < P(at most one 0) = 7/64, so the 2.5% percentile is -5/6; symmetrically the 97.5% one is -1/6.
    assert report["ci_low"] == pytest.approx(-5 / 6) and report["ci_high"] == pytest.approx(-1 / 6)
    assert report["verdict"] == "no evidence"  # the interval excludes 0 but p = 0.25 does not reject


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
