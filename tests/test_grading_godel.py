"""The Gödel engine and the grades: the diagnosis of a parent carries its failed selection-split
trajectories' scores and findings and names the metric to aim at; archive nodes record their mean
GPA scores, which ``archive show`` and the lineage plot show."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import SUBMIT, bash_reply, make_git_repo

from godel.archive import Archive
from godel.diagnose import diagnose
from godel.evolve import node_gpa
from live_swe.config import KernelLimits, home
from live_swe.grading.metrics import METRICS
from live_swe.models.base import Reply
from live_swe.models.scripted import ScriptedModel
from live_swe.runner import RunHooks, RunRequest, start_run
from live_swe.scaffolding.refs import materialize

CLI = [sys.executable, "-m", "live_swe.cli.main"]
PLAN = "PLAN:\n1. Read value.py\n2. Set VALUE to 1 in value.py\n3. Run a check of VALUE\n\n"
CHECK = "python3 -c 'import value; assert value.VALUE == 1'"


def session(tmp_path, name: str, replies: list[str], task: str) -> str:
    repo = make_git_repo(tmp_path / name, {"value.py": "VALUE = 0\n"})
    model = ScriptedModel([Reply(r) for r in replies])
    result = start_run(RunRequest(task=task, model="scripted:solver", repo=repo, limits=KernelLimits()),
                       RunHooks(model_factory=lambda _name: model))
    return str(home() / "sessions" / result.session_id)


def test_the_diagnosis_grades_selection_failures_and_names_the_metric_to_aim_at(tmp_path):
    sessions = {
        # looped on the file and never ran the change: efficiency and goal findings
        "sel-1": session(tmp_path, "a", [PLAN + bash_reply("cat value.py"), bash_reply("cat value.py"),
                                         bash_reply("cat value.py"), bash_reply("sed -i 's/0/1/' value.py"), SUBMIT],
                         "Task one: VALUE must be 1."),
        "sel-2": session(tmp_path, "b", [bash_reply("cat value.py"), bash_reply("cat value.py"), SUBMIT],
                         "Task two: VALUE must be 1."),
        "sel-ok": session(tmp_path, "c", [PLAN + bash_reply("cat value.py"), bash_reply("sed -i 's/0/1/' value.py"),
                                          bash_reply(CHECK), SUBMIT], "Task three."),
        "report-1": session(tmp_path, "d", [bash_reply("cat value.py"), bash_reply("cat value.py"), SUBMIT],
                            "SECRET held-out task."),
    }
    results = {"sel-1": False, "sel-2": False, "sel-ok": True, "report-1": False}
    task = diagnose("n3", results, sessions, selection={"sel-1", "sel-2", "sel-ok"})
    one = task.split("### sel-1:", 1)[1].split("###", 1)[0]
    assert "Grade (0-3;" in one and "GF 1/3" in one and "EE 1/3" in one
    assert "- steps 2, 3 [EE repeated_command, major]: `cat value.py` (first at step 1)" in one
    assert "- step 4 [GF unverified_edit, major]: the edit(s) at step(s) 4 (value.py)" in one
    two = task.split("### sel-2:", 1)[1]
    assert "PQ 0/3" in two and "PA -" in two and "no PLAN: was stated" in two
    # sel-2 has no plan and an empty patch: goal fulfillment is the weakest across the failures
    assert "## Where to aim" in task and "Aim your change at goal fulfillment:" in task
    assert "sel-ok" not in task and "report-1" not in task and "SECRET" not in task


def test_nodes_record_mean_gpa_scores_and_show_and_plot_them(tmp_path):
    sessions = {
        "a": session(tmp_path, "a", [PLAN + bash_reply("cat value.py"), bash_reply("sed -i 's/0/1/' value.py"),
                                     bash_reply(CHECK), SUBMIT], "Make VALUE 1."),
        "b": session(tmp_path, "b", [bash_reply("cat value.py"), SUBMIT], "Make VALUE 1."),
    }
    gpa = node_gpa(sessions)
    assert gpa["goal_fulfillment"] == 0.5 and gpa["plan_quality"] == 0.5 and gpa["plan_adherence"] == 1.0
    archive = Archive.default()
    materialize("seed", tmp_path / "scaffold", library=None)
    node = archive.add_node(tmp_path / "scaffold", origin="seed", summary="root",
                            results={"a": True, "b": False}, sessions=sessions, gpa=gpa)
    assert archive.get(node.id).gpa == gpa and set(gpa) == set(METRICS)

    shown = subprocess.run([*CLI, "archive", "show"], capture_output=True, text=True, timeout=60)
    assert f"{node.id}  0.50 (1/2)  gpa 0.80 [GF 0.50 LC 1.00 EE 1.00 PQ 0.50 PA 1.00]  root" in shown.stdout
    listed = json.loads(subprocess.run([*CLI, "archive", "show", "--json"], capture_output=True, text=True).stdout)
    assert listed[0]["gpa"] == gpa and listed[0]["gpa_mean"] == 0.8
    out = tmp_path / "lineage.svg"
    plotted = subprocess.run([*CLI, "archive", "plot", "--out", str(out), "--metric", "plan_quality"],
                             capture_output=True, text=True, timeout=60)
    assert plotted.returncode == 0, plotted.stderr
    svg = out.read_text()
    assert "coloured by plan_quality" in svg and ">0.50</text>" in svg and "gpa 0.80 [GF 0.50" in svg
    bad = subprocess.run([*CLI, "archive", "plot", "--out", str(out), "--metric", "speed"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--metric speed: use gpa or one of goal_fulfillment" in bad.stderr
