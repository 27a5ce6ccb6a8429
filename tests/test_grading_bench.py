"""``live-swe bench grade`` on a real batch run in Docker (a small suite built here, scripted
models): per-instance grades next to preds.jsonl, a summary by metric, and judges that never see
the benchmark's tests."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import SUBMIT, bash_reply
from test_bench_batch import REPOS, _build_image, _row, make_suite

from live_swe.bench.batch import run_batch
from live_swe.bench.grade import GRADE_SUMMARY_FILE, GRADES_FILE, grade_batch
from live_swe.bench.preds import read_jsonl
from live_swe.models.base import Reply
from live_swe.models.scripted import ScriptedModel

CLI = [sys.executable, "-m", "live_swe.cli.main"]
HIDDEN_TEST = "tests/test_hidden.py::test_grading_marker_never_shown"
HIDDEN_PATCH = "HIDDEN-TEST-PATCH-MARKER"
PLAN = "PLAN:\n1. Read add() in calc/ops.py\n2. Fix the operator in add()\n3. Run the tests in tests/\n\n"
FIX = "sed -i 's/return a - b/return a + b/' calc/ops.py"
SCRIPTS = {
    "example__calc-1": [PLAN + bash_reply("cat calc/ops.py"), bash_reply(FIX), bash_reply("python3 -m pytest -q tests/"),
                        SUBMIT],
    "example__calc-2": [bash_reply("cat calc/ops.py"), bash_reply("cat calc/ops.py"), bash_reply(FIX), SUBMIT],
}


@pytest.fixture(scope="module")
def calc_image(docker_client, base_image, tmp_path_factory):
    tag = _build_image(docker_client, base_image, tmp_path_factory.mktemp("image-grade"), REPOS["calc"],
                       "live-swe-test-grade-calc:latest")
    yield tag
    try:
        docker_client.images.remove(tag, force=True)
    except Exception:  # noqa: BLE001 - a shared engine; a leftover is only disk
        pass


@pytest.fixture
def batch(tmp_path, calc_image):
    rows = []
    for instance_id in SCRIPTS:
        row = _row(instance_id, "calc", calc_image, "add() in calc/ops.py subtracts; make it add.")
        row.update({"FAIL_TO_PASS": json.dumps([HIDDEN_TEST]), "test_patch": f"+ {HIDDEN_PATCH}\n"})
        rows.append(row)
    suite = make_suite(tmp_path / "suite", rows)
    out = tmp_path / "run"

    def factory(name, instance):
        return ScriptedModel([Reply(r) for r in SCRIPTS[instance.instance_id]], name=name)

    summary = run_batch(suite, model="scripted", out=out, model_factory=factory, show_progress=False)
    assert summary.done == 2, summary.records
    return out


def test_bench_grade_writes_grades_next_to_the_predictions_and_a_summary(batch):
    done = subprocess.run([*CLI, "bench", "grade", str(batch), "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary == json.loads((batch / GRADE_SUMMARY_FILE).read_text())
    grades = {r["instance_id"]: r for r in read_jsonl(batch / GRADES_FILE)}
    assert set(grades) == set(SCRIPTS)
    clean, sloppy = grades["example__calc-1"], grades["example__calc-2"]
    assert clean["mean"] == 1.0 and clean["findings"] == []
    assert {f["kind"] for f in sloppy["findings"]} >= {"repeated_command", "unverified_edit", "no_plan"}
    assert summary["graded"] == 2 and summary["metrics"]["goal_fulfillment"]["mean"] == pytest.approx(0.667, abs=0.01)
    assert summary["metrics"]["plan_adherence"]["mean"] == 1.0  # only the run with a plan has a score
    assert summary["finding_kinds"]["repeated_command"] == 1 and "by_outcome" not in summary

    # once the batch is evaluated (bench eval writes report.json), the summary splits by outcome
    (batch / "report.json").write_text(json.dumps({"resolved_ids": ["example__calc-1"]}))
    text = subprocess.run([*CLI, "bench", "grade", str(batch)], capture_output=True, text=True, timeout=120)
    assert text.returncode == 0, text.stderr
    assert "2 of 2 instance(s) graded" in text.stdout and "resolved" in text.stdout and "unresolved" in text.stdout
    split = json.loads((batch / GRADE_SUMMARY_FILE).read_text())["by_outcome"]
    assert split["resolved"]["metrics"]["goal_fulfillment"]["mean"] == 1.0
    assert split["unresolved"]["aim"] == "plan_quality"


def test_a_batch_judge_sees_the_task_but_never_the_benchmarks_tests(batch):
    judge = ScriptedModel([Reply('{"score": 2, "steps": [1], "reasons": "ok"}')] * 10, name="scripted:judge")
    summary = grade_batch(batch, judge)
    assert summary["judge"] == "scripted:judge" and judge.calls == 9  # 5 + 4 (no plan: no adherence verdict)
    prompts = "\n".join(m["content"] for conversation in judge.seen for m in conversation)
    assert "add() in calc/ops.py subtracts" in prompts
    assert HIDDEN_TEST not in prompts and "test_grading_marker" not in prompts and HIDDEN_PATCH not in prompts


def test_bench_grade_of_a_folder_without_predictions_is_one_clear_line(tmp_path):
    done = subprocess.run([*CLI, "bench", "grade", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "no finished instances to grade" in done.stderr and "Traceback" not in done.stderr
