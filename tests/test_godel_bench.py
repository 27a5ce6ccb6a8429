"""One generation of evolve, then validate, on the local suite in Docker: the real batch runner and
the official harness behind the evaluator seam.

The solver stands in for a capable model only when its scaffold tells it to be (MARKER-FIX in the
system prompt): then it applies the instance's fix; otherwise it looks around and submits nothing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import SUBMIT, bash_reply
from test_bench_local_suite import SUITE, local_suite_images  # noqa: F401 - the session fixture
from test_godel_evolve import MARKER, ScriptedImprover

from godel.archive import Archive
from godel.evaluation import BenchEvaluator
from godel.evolve import EvolveConfig, Evolver
from godel.staging import Stage
from godel.validate import validate
from live_swe.models.base import Reply


class FixIfMarked:
    """Scripted replies: the fix (as a heredoc'd patch applied with git) only under a marked scaffold."""

    def __init__(self, name: str, patch: str):
        self.name = name
        self.patch = patch
        self.calls = 0

    def query(self, messages, *, tools=None, on_token=None):
        self.calls += 1
        if self.calls > 1:
            return Reply(SUBMIT)
        if MARKER in messages[0]["content"]:
            command = f"cat > /tmp/fix.diff <<'LIVE_SWE_EOF'\n{self.patch.rstrip()}\nLIVE_SWE_EOF\ngit apply /tmp/fix.diff"
            return Reply(bash_reply(command, "I know what to change."))
        return Reply(bash_reply("git status --short", "Let me look around."))


def solver_factory(name: str, instance) -> FixIfMarked:
    return FixIfMarked(name, instance.patch)


def pick_instances(suite, count: int) -> list[str]:
    return [i.instance_id for i in suite.instances if i.suite_kind != "pro"][:count]


@pytest.mark.docker
def test_one_generation_and_a_validation_in_docker(local_suite_images):  # noqa: F811
    ids = pick_instances(local_suite_images, 4)
    evaluator = BenchEvaluator(SUITE, "solver", model_factory=solver_factory, run_id="godel-test")
    config = EvolveConfig(suite=SUITE, model="solver", improver_model="improver", generations=1, children=3,
                          seed=1, report_fraction=0.25, instances=ids,
                          stages=[Stage(size=2, threshold=0.5), Stage(size=3, threshold=0.0)])
    improver = ScriptedImprover({"g1c0": "improve", "g1c1": "regress", "g1c2": "break"})
    evolver = Evolver(config, evaluate=evaluator, improve=improver, instance_ids=evaluator.instance_ids)
    state = evolver.run()

    archive = Archive.default()
    root = archive.get(state.root)
    child = state.children["g1c0"]
    assert len(state.selection_split) == 3 and len(state.report_split) == 1
    assert root.results == {i: False for i in state.selection_split}
    assert child.status == "accepted", child.reason
    node = archive.get(child.node)
    assert node.results == {i: True for i in state.selection_split}
    # Diagnosis read the root's real bench sessions (selection split only).
    task = (evolver.child_dir(child) / "task.md").read_text()
    assert all(f"### {i}:" in task for i in state.selection_split)
    assert state.report_split[0] not in task and "git status --short" in task
    # The regressing child solved nothing in stage 1 and was stopped there; the broken one never ran.
    regressed, broken = state.children["g1c1"], state.children["g1c2"]
    assert regressed.status == "stopped" and "stage 1: 0/2 resolved" in regressed.reason
    assert regressed.results == {i: False for i in state.selection_split[:2]}
    assert broken.status == "rejected" and "bogus_key" in broken.reason and broken.node is None
    assert [n.id for n in archive.nodes()] == [root.id, node.id]
    ran = [json.loads(line) for line in (evolver.run_dir / "ran.jsonl").read_text().splitlines()]
    assert not {i for entry in ran for i in entry["instances"]} & set(state.report_split)
    assert [entry["label"] for entry in ran] == ["root", "g1c0-s1", "g1c0-s2", "g1c1-s1"]
    for session in node.sessions.values():
        assert (Path(session) / "events.jsonl").exists()

    # The held-out report split is measured only now, by validate.
    result = validate(f"archive:{node.id}", f"archive:{root.id}", suite=SUITE, model="solver",
                      instance_ids=state.report_split, evaluate=evaluator, resamples=1000)
    c = result.comparison
    assert (c.n, c.wins, c.losses, c.p_value, c.verdict) == (1, 1, 0, 1.0, "no evidence")
    assert archive.validations()[-1]["candidate"] == {state.report_split[0]: True}


@pytest.mark.docker
def test_the_commands_end_to_end(local_suite_images, tmp_path):  # noqa: F811
    from conftest import write_script
    from typer.testing import CliRunner

    from live_swe.cli.main import app

    runner = CliRunner()
    solver = write_script(tmp_path / "solver.yaml", [bash_reply("git status --short", "Look."), SUBMIT])
    improver = write_script(tmp_path / "improver.yaml", [
        bash_reply(f"printf '\\n{MARKER}: be careful.\\n' >> prompts/system.j2", "Add a note."), SUBMIT])
    ids = ",".join(pick_instances(local_suite_images, 4))
    evolve = runner.invoke(app, [
        "evolve", "--suite", SUITE, "--model", f"scripted:{solver}", "--improver-model", f"scripted:{improver}",
        "-g", "1", "-k", "1", "--instances", ids, "--report-fraction", "0.25", "--stages", "1,3",
        "--thresholds", "0,0", "--json"])
    assert evolve.exit_code == 0, evolve.output
    state = json.loads(evolve.stdout)
    assert state["status"] == "done" and state["children"]["g1c0"]["status"] == "accepted"
    node = state["children"]["g1c0"]["node"]

    shown = runner.invoke(app, ["archive", "show"])
    # the node's line: its score, then its grade over the sessions it ran (gpa ...), then what changed
    assert re.search(rf"└── {node}  0\.00 \(0/3\)  gpa \d\.\d\d \[GF [^]]*\]  changed prompts/system\.j2",
                     shown.stdout), shown.stdout

    validated = runner.invoke(app, [
        "validate", "--scaffold", f"archive:{node}", "--against", f"archive:{state['root']}", "--suite", SUITE,
        "--model", f"scripted:{solver}", "--instances", ",".join(state["report_split"]), "--json"])
    assert validated.exit_code == 0, validated.output
    report = json.loads(validated.stdout)
    assert (report["n"], report["wins"], report["losses"], report["verdict"]) == (1, 0, 0, "no evidence")
    refused = runner.invoke(app, ["scaffold", "promote", f"archive:{node}"])
    assert refused.exit_code == 2 and "no recorded 'better' validation" in refused.stderr
