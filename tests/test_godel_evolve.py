"""The evolve loop on real agent runs with scripted models.

Each "instance" is a real git repository whose hidden check is ``value.py`` holding ``VALUE = 1``.
The solver is a scripted model whose replies depend on what its scaffold shows it, so a scaffold
change really changes outcomes: it fixes EASY tasks when the system prompt still tells it to run
"one shell command at a time" (the seed says so), and any task when the prompt carries MARKER-FIX.
The improver is a scripted model making real edits in the scaffold repository:
- ``improve`` appends the MARKER-FIX line to prompts/system.j2;
- ``regress`` rewrites the phrase the solver relies on, so it solves nothing;
- ``break`` adds an unknown key to scaffold.yaml (the gates must refuse it);
- ``neutral`` appends a line the solver ignores, so the child scores what its parent scores.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SUBMIT, bash_reply, make_git_repo

from godel.archive import Archive
from godel.evaluation import Outcome
from godel.evolve import EvolveConfig, Evolver, node_gpa
from godel.improve import AgentImprover
from godel.staging import Stage
from live_swe.grading.metrics import METRICS
from live_swe.models.base import Reply
from live_swe.models.scripted import ScriptedModel

BASELINE = "one shell command at a time"
MARKER = "MARKER-FIX"
FIX = "sed -i 's/VALUE = 0/VALUE = 1/' value.py"
IDS = [f"task-{n:02d}" for n in range(1, 10)]


def is_easy(instance_id: str) -> bool:
    return int(instance_id.rsplit("-", 1)[1]) % 2 == 0


class MarkerSolver:
    """Answers like an LLM would, deciding from the scaffold-rendered messages it is sent."""

    name = "marker-solver"

    def __init__(self):
        self.calls = 0

    def query(self, messages, *, tools=None, on_token=None):
        self.calls += 1
        if self.calls > 1:
            return Reply(SUBMIT)
        system, task = messages[0]["content"], messages[1]["content"]
        if MARKER in system or ("EASY" in task and BASELINE in system):
            return Reply(bash_reply(FIX, "The constant is wrong; set it to 1."))
        return Reply(bash_reply("cat value.py", "Let me look first."))


class LocalTaskEvaluator:
    """Runs the real agent (local environment) on each instance and checks it like a hidden test."""

    def __init__(self, log: Path | None = None, delay: float = 0.0, cost: float = 0.0):
        self.log = log
        self.delay = delay
        self.cost = cost  # charged per instance run (scripted models cost nothing)

    def __call__(self, scaffold_ref: str, instance_ids: list[str], out_dir: Path) -> dict[str, Outcome]:
        from live_swe.config import KernelLimits, home
        from live_swe.runner import RunHooks, RunRequest, start_run

        outcomes = {}
        for instance_id in instance_ids:
            if self.log:
                with self.log.open("a") as handle:
                    handle.write(instance_id + "\n")
            repo = out_dir / instance_id / "repo"
            if repo.exists():
                import shutil

                shutil.rmtree(repo)
            make_git_repo(repo, {"value.py": "VALUE = 0\n"})
            kind = "EASY" if is_easy(instance_id) else "HARD"
            result = start_run(
                RunRequest(task=f"{kind} task {instance_id}: make VALUE equal 1 in value.py.", model="solver",
                           repo=repo, scaffold_ref=scaffold_ref, limits=KernelLimits(step_limit=5)),
                RunHooks(model_factory=lambda name: MarkerSolver()),
            )
            if result.status == "interrupted":
                raise KeyboardInterrupt
            resolved = (repo / "value.py").read_text().strip() == "VALUE = 1"
            outcomes[instance_id] = Outcome(resolved, result.cost + self.cost,
                                            str(home() / "sessions" / result.session_id), result.status)
            time.sleep(self.delay)
        return outcomes


SCRIPTS = {
    "improve": [bash_reply(f"printf '\\n{MARKER}: fix the constant you are told about.\\n' >> prompts/system.j2",
                           "A clearer instruction helps."), SUBMIT],
    "regress": [bash_reply(f"sed -i 's/{BASELINE}/commands/' prompts/system.j2", "Shorter."), SUBMIT],
    "break": [bash_reply("echo 'bogus_key: 1' >> scaffold.yaml", "A new setting."), SUBMIT],
    "noop": [bash_reply("ls", "Nothing to change."), SUBMIT],
    "neutral": [bash_reply("printf '\\nRead the task twice.\\n' >> prompts/system.j2", "A reminder."), SUBMIT],
}


class ScriptedImprover:
    """The real improver (an agent run on the scaffold repository), its script chosen per child."""

    def __init__(self, plan: dict[str, str], default: str = "improve"):
        self.plan = plan
        self.default = default

    def __call__(self, parent_dir: Path, task: str, workdir: Path):
        script = SCRIPTS[self.plan.get(workdir.name, self.default)]
        improver = AgentImprover("improver", model_factory=lambda name: ScriptedModel(
            [Reply(text) for text in script], name="improver"))
        return improver(parent_dir, task, workdir)


def config(**overrides) -> EvolveConfig:
    values = dict(suite="tasks", model="solver", improver_model="improver", generations=1, children=3, seed=3,
                  report_fraction=0.34, stages=[Stage(size=2, threshold=0.5), Stage(size=5, threshold=0.0)],
                  instances=None)
    values.update(overrides)
    return EvolveConfig(**values)


def make_evolver(cfg: EvolveConfig, plan: dict[str, str], log: Path | None = None, delay: float = 0.0) -> Evolver:
    return Evolver(cfg, evaluate=LocalTaskEvaluator(log, delay), improve=ScriptedImprover(plan),
                   instance_ids=lambda: list(IDS), say=lambda line: print(line, flush=True))


def expected_rate(instances: list[str], solves) -> float:
    return sum(bool(solves(i)) for i in instances) / len(instances)


def test_children_that_improve_regress_and_break(tmp_path):
    log = tmp_path / "ran.txt"
    evolver = make_evolver(config(), {"g1c0": "improve", "g1c1": "regress", "g1c2": "break"}, log)
    state = evolver.run()
    assert state.status == "done"
    archive = Archive.default()
    selection, report = state.selection_split, state.report_split
    assert len(selection) == 5 and len(report) == 4 and not set(selection) & set(report)

    root = archive.get(state.root)
    assert root.results == {i: is_easy(i) for i in selection}

    improved, regressed, broken = (state.children[c] for c in ("g1c0", "g1c1", "g1c2"))
    assert {improved.parent, regressed.parent, broken.parent} == {root.id}
    # The improving child went through both stages into the archive and scores higher than the root.
    assert improved.status == "accepted" and improved.node
    node = archive.get(improved.node)
    assert node.parent == root.id and node.results == {i: True for i in selection}
    assert node.score > root.score
    assert MARKER in archive.diff(node.id) and "prompts/system.j2" in node.summary

    # The regressing child solved nothing at stage 1 (threshold 0.5) and was stopped there.
    assert regressed.status == "stopped" and "stage 1" in regressed.reason
    assert set(regressed.results) == set(selection[:2])

    # The broken child never entered the archive; the gate's reason is recorded.
    assert broken.status == "rejected" and "bogus_key" in broken.reason and broken.node is None
    assert [n.id for n in archive.nodes()] == [root.id, node.id]

    # Split separation: nothing from the report split was ever run (two independent records).
    ran = log.read_text().split()
    assert ran and not set(ran) & set(report)
    logged = [json.loads(line) for line in (evolver.run_dir / "ran.jsonl").read_text().splitlines()]
    assert not {i for entry in logged for i in entry["instances"]} & set(report)
    assert [e["label"] for e in logged] == ["root", "g1c0-s1", "g1c0-s2", "g1c1-s1"]

    # The improver was told about failures on the selection split only.
    task = (evolver.child_dir(improved) / "task.md").read_text()
    for instance_id in selection:
        assert (f"### {instance_id}:" in task) == (not is_easy(instance_id))
    for instance_id in report:
        assert instance_id not in task
    assert "HARD task" in task and "VALUE = 1" not in task  # the hidden check is never shown
    # ... with each failure's grade and the metric to aim at; every node records its mean GPA scores
    assert "Where it went wrong:" in task and "## Where to aim" in task and "Aim your change at" in task
    assert set(root.gpa) == set(METRICS) and root.gpa == node_gpa(root.sessions)
    assert node.gpa == node_gpa(node.sessions) and node.gpa["goal_fulfillment"] > root.gpa["goal_fulfillment"]


def test_second_generation_selects_from_the_grown_archive(tmp_path):
    evolver = make_evolver(config(generations=2, children=1, seed=5), {"g1c0": "improve", "g2c0": "noop"})
    state = evolver.run()
    parents = state.generations[1].parents
    assert len(parents) == 1 and parents[0] in {n.id for n in evolver.run_nodes()}
    assert state.children["g2c0"].status == "rejected" and "no change" in state.children["g2c0"].reason
    # Re-running a finished run does nothing new.
    again = make_evolver(config(generations=2, children=1, seed=5), {}).run()
    assert again.children.keys() == state.children.keys() and again.status == "done"


DRIVER = """
import sys
sys.path.insert(0, {tests!r})
from test_godel_evolve import config, make_evolver
cfg = config(generations=2, children=2, seed=9)
make_evolver(cfg, {{"g1c0": "improve", "g1c1": "break", "g2c0": "noop", "g2c1": "improve"}},
             delay={delay}).run()
print("FINISHED")
"""


def test_resume_after_kill_9(tmp_path, live_swe_home):
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER.format(tests=str(Path(__file__).parent), delay=0.15))
    env = {**os.environ, "LIVE_SWE_HOME": str(live_swe_home)}
    process = subprocess.Popen([sys.executable, str(driver)], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    runs = live_swe_home / "archive" / "runs"
    deadline = time.monotonic() + 120
    killed_at = None
    while time.monotonic() < deadline and process.poll() is None:
        states = list(runs.glob("*/state.json")) if runs.exists() else []
        if states:
            state = json.loads(states[0].read_text())
            children = state["children"]
            if children.get("g1c0", {}).get("status") == "accepted":
                os.killpg(process.pid, signal.SIGKILL)
                killed_at = state
                break
        time.sleep(0.05)
    process.wait(timeout=30)
    assert killed_at is not None, process.stdout.read()
    assert process.returncode == -signal.SIGKILL
    log_before = (states[0].parent / "ran.jsonl").read_text().splitlines()

    rerun = subprocess.run([sys.executable, str(driver)], env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "resuming" in rerun.stdout and "FINISHED" in rerun.stdout
    state = json.loads(states[0].read_text())
    assert state["status"] == "done"
    assert {c: r["status"] for c, r in state["children"].items()} == {
        "g1c0": "accepted", "g1c1": "rejected", "g2c0": "rejected", "g2c1": "accepted"}
    # Nothing finished before the kill was done again, and no node was added twice.
    labels = [json.loads(line)["label"] for line in (states[0].parent / "ran.jsonl").read_text().splitlines()]
    assert labels[: len(log_before)] == [json.loads(line)["label"] for line in log_before]
    assert labels.count("root") == 1 and labels.count("g1c0-s1") == 1 and labels.count("g1c0-s2") == 1
    nodes = Archive.default().nodes()
    assert len(nodes) == 3 and len({n.run_key for n in nodes}) == 3


class ChargedImprover(ScriptedImprover):
    """The scripted improver, its model charged a fixed price per child (as a paid provider would be)."""

    def __init__(self, plan: dict[str, str], cost: float):
        super().__init__(plan)
        self.cost = cost

    def __call__(self, parent_dir: Path, task: str, workdir: Path):
        return dataclasses.replace(super().__call__(parent_dir, task, workdir), cost=self.cost)


def test_budget_stops_the_run_and_a_larger_budget_resumes_it(tmp_path):
    cfg = config(children=1, budget=0.25)
    evolver = Evolver(cfg, evaluate=LocalTaskEvaluator(cost=0.1), improve=ChargedImprover({"g1c0": "improve"}, 0.07),
                      instance_ids=lambda: list(IDS))
    state = evolver.run()
    # The root's 5 selection runs cost $0.50 >= $0.25: no child is started.
    assert state.status == "budget" and state.spent == pytest.approx(0.5)
    assert [c.status for c in state.children.values()] == ["pending"]
    resumed = Evolver(config(children=1, budget=2.0), evaluate=LocalTaskEvaluator(cost=0.1),
                      improve=ChargedImprover({"g1c0": "improve"}, 0.07), instance_ids=lambda: list(IDS)).run()
    assert resumed.status == "done" and resumed.children["g1c0"].status == "accepted"
    assert resumed.spent == pytest.approx(0.5 + 0.07 + 0.5)  # the improver, then the child's 2 + 3 stage runs

    # Each node records what it cost: the root its 5 runs, the child its improver and its 2 + 3 runs.
    child = resumed.children["g1c0"]
    assert (child.eval_cost, child.improve_cost) == (pytest.approx(0.5), pytest.approx(0.07))
    root, node = Archive.default().get(resumed.root), Archive.default().get(child.node)
    assert (root.eval_cost, root.improve_cost) == (pytest.approx(0.5), 0.0)
    assert (node.eval_cost, node.improve_cost) == (pytest.approx(0.5), pytest.approx(0.07))
    assert root.cost + node.cost == pytest.approx(resumed.spent)


def test_ctrl_c_leaves_a_resumable_state(tmp_path, live_swe_home):
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER.format(tests=str(Path(__file__).parent), delay=0.3))
    env = {**os.environ, "LIVE_SWE_HOME": str(live_swe_home)}
    process = subprocess.Popen([sys.executable, str(driver)], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    runs = live_swe_home / "archive" / "runs"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        log = list(runs.glob("*/ran.jsonl")) if runs.exists() else []
        if log and "g1c0-s1" in log[0].read_text():
            os.killpg(process.pid, signal.SIGINT)
            break
        time.sleep(0.05)
    output = process.communicate(timeout=60)[0]
    assert process.returncode != 0 and "KeyboardInterrupt" in output and "FINISHED" not in output
    state_path = next(runs.glob("*/state.json"))
    state = json.loads(state_path.read_text())  # whole, readable JSON
    assert state["status"] == "running" and state["children"]["g1c0"]["status"] in ("gated", "accepted")
    rerun = subprocess.run([sys.executable, str(driver)], env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0 and "FINISHED" in rerun.stdout, rerun.stdout + rerun.stderr
    final = json.loads(state_path.read_text())
    assert final["status"] == "done" and final["children"]["g1c0"]["status"] == "accepted"
    assert len(Archive.default().nodes()) == 3


def test_a_failing_improver_rejects_that_child_and_the_run_goes_on(tmp_path):
    def improver_that_crashes(parent_dir, task, workdir):
        raise RuntimeError("provider unreachable")

    state = Evolver(config(children=2), evaluate=LocalTaskEvaluator(), improve=improver_that_crashes,
                    instance_ids=lambda: list(IDS)).run()
    assert state.status == "done"
    assert [c.status for c in state.children.values()] == ["rejected", "rejected"]
    assert "the improver failed: RuntimeError: provider unreachable" in state.children["g1c0"].reason
    assert len(Archive.default().nodes()) == 1
