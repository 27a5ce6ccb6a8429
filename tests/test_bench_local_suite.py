"""The offline local suite (evals/suites/local): its rows, its images, and its gold patches through
the official swebench harness (and the Pro path) in a real Docker engine.

Images are built once per test session FROM the registry-free base image and kept for later runs.
"""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import pytest

from live_swe.bench.suites import load_suite

REPO_ROOT = Path(__file__).resolve().parent.parent
SUITE_DIR = REPO_ROOT / "evals" / "suites" / "local"
SUITE = "local:local"
ROW_COLUMNS = {
    "instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement", "hints_text", "version",
    "FAIL_TO_PASS", "PASS_TO_PASS", "environment_setup_commit", "difficulty", "eval_script", "log_parser",
    "eval_type", "image",
}
PRO_COLUMNS = {
    "instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement", "requirements", "interface",
    "repo_language", "fail_to_pass", "pass_to_pass", "before_repo_set_cmd", "selected_test_files_to_run",
    "dockerhub_tag",
}
NO_OP_PATCH = "\n".join([
    "diff --git a/README.md b/README.md",
    "--- a/README.md",
    "+++ b/README.md",
    "@@ -1,2 +1,4 @@",
    " # {name}",
    " ",  # an empty context line is one space in a diff
    "+(Maintained by the platform team.)",
    "+",
    "",
])


def rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (SUITE_DIR / name).read_text().splitlines() if line.strip()]


def no_op_patch(instance) -> str:
    """A patch that applies cleanly and changes nothing the tests look at."""
    return NO_OP_PATCH.format(name=instance.repo.split("/")[1])


def load_maker():
    spec = importlib.util.spec_from_file_location("make_instances", SUITE_DIR / "make_instances.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def local_suite_images(docker_client, base_image):
    """Every image of the local suite, built from its Dockerfile FROM the local base when missing."""
    from live_swe.bench.images import build_images, image_statuses

    suite = load_suite(SUITE)
    missing = [s.image for s in image_statuses(suite, docker_client) if not s.present]
    started = time.monotonic()
    if missing:
        build_images(suite, docker_client, missing, base=base_image)
    elapsed = time.monotonic() - started
    print(f"\nlocal suite: built {len(missing)} image(s) in {elapsed:.1f} s")
    return suite


# -- the rows (no Docker) --------------------------------------------------------------------------


def test_suite_has_twelve_swebench_rows_and_a_pro_row():
    main, pro = rows("instances.jsonl"), rows("pro_instances.jsonl")
    assert len(main) >= 12 and len(pro) >= 1
    for row in main:
        assert ROW_COLUMNS <= set(row), row["instance_id"]
        assert isinstance(row["FAIL_TO_PASS"], str) and json.loads(row["FAIL_TO_PASS"])
        assert isinstance(json.loads(row["PASS_TO_PASS"]), list)
        assert row["log_parser"] == "parse_log_pytest" and row["eval_type"] == "pass_and_fail"
        assert row["base_commit"] in row["eval_script"] and row["test_patch"].strip() in row["eval_script"]
    for row in pro:
        assert PRO_COLUMNS <= set(row), row["instance_id"]
        assert isinstance(row["fail_to_pass"], str) and row["fail_to_pass"].startswith("[")
    suite = load_suite(SUITE)
    assert {i.suite_kind for i in suite.instances} == {"local", "pro"}
    assert [i.repo_dir for i in suite.instances if i.suite_kind == "pro"] == ["/app"]


def test_rows_make_harness_test_specs():
    from swebench.harness.utils import make_test_spec

    for row in rows("instances.jsonl"):
        spec = make_test_spec(row)
        assert spec.image == row["image"] and spec.FAIL_TO_PASS == json.loads(row["FAIL_TO_PASS"])
        assert any(">>>>> Start Test Output" in line for line in spec.eval_script_list)


def test_tasks_are_varied():
    main = rows("instances.jsonl")
    changed = {r["instance_id"]: [line for line in r["patch"].splitlines() if line.startswith("diff --git")] for r in main}
    assert any("new file mode" in r["patch"] for r in main), "a task needing a new file"
    assert any(len(files) >= 3 for files in changed.values()), "a change across files"
    one_line = [r for r in main if sum(line.startswith("+") and not line.startswith("+++") for line in r["patch"].splitlines()) == 1]
    assert len(one_line) >= 3, "one-line fixes"
    assert any("Feature request" in r["problem_statement"] or "Support " in r["problem_statement"] for r in main)
    assert len({r["repo"] for r in main}) >= 5
    for row in main:  # gold patches never touch tests, test patches only touch tests
        assert "tests/" not in "".join(changed[row["instance_id"]])
        assert all(" b/tests/" in line for line in row["test_patch"].splitlines() if line.startswith("diff --git"))


def test_base_commits_are_reproducible():
    """The sha in each row is what committing the project snapshot (as the Dockerfile does) gives."""
    maker = load_maker()
    manifest = json.loads((SUITE_DIR / "images.json").read_text())
    for image, spec in manifest.items():
        target = Path(maker.tempfile.mkdtemp(prefix="live-swe-test-snapshot-")) / "repo"
        assert maker.snapshot(spec["project"], target) == spec["base_commit"], image
    for row in rows("instances.jsonl") + rows("pro_instances.jsonl"):
        assert manifest[row["image"]]["base_commit"] == row["base_commit"]


# -- images and the harness (Docker) ---------------------------------------------------------------


@pytest.mark.docker
def test_images_hold_the_repository_at_base_commit(local_suite_images, docker_client):
    for instance in {i.image: i for i in local_suite_images.instances}.values():
        out = docker_client.containers.run(
            instance.image, ["bash", "-c", "git rev-parse HEAD && git status --porcelain && python3 -m pytest --version"],
            working_dir=instance.repo_dir, remove=True, stderr=True,
        ).decode()
        lines = out.splitlines()  # the sha, nothing from `git status` (a clean tree), pytest's version
        assert lines[0] == instance.base_commit, instance.image
        assert len(lines) == 2 and lines[1].startswith("pytest"), out


@pytest.mark.docker
def test_gold_patches_resolve_every_task(local_suite_images, tmp_path):
    from live_swe.bench.evaluate import evaluate_gold

    started = time.monotonic()
    report = evaluate_gold(SUITE, tmp_path / "gold", run_id="gold-test", workers=2)
    elapsed = time.monotonic() - started
    print(f"\nlocal suite: gold evaluation of {len(report.outcomes)} tasks in {elapsed:.1f} s")
    summary = report.summary()
    not_resolved = {o.instance_id: o.detail for o in report.outcomes if not o.resolved}
    assert not_resolved == {}
    assert summary["total"] == len(local_suite_images.instances) >= 13
    assert summary["resolved"] == summary["total"] and summary["rate"] == 1.0
    saved = json.loads((tmp_path / "gold" / "report.json").read_text())
    assert saved["resolved_ids"] == summary["resolved_ids"]
    assert {o["kind"] for o in saved["instances"].values()} == {"local", "pro"}
    # The official harness graded the SWE-bench rows: its own per-instance report exists.
    harness_reports = list((tmp_path / "gold" / "eval" / "logs" / "run_evaluation" / "gold-test").glob("gold/*/report.json"))
    assert len(harness_reports) == summary["total"] - 1


@pytest.mark.docker
def test_empty_and_no_op_patches_resolve_nothing(local_suite_images, tmp_path):
    from live_swe.bench.evaluate import evaluate

    suite = local_suite_images
    empty = {i.instance_id: {"instance_id": i.instance_id, "model_name_or_path": "empty", "model_patch": ""}
             for i in suite.instances}
    report = evaluate(suite, suite.instances, empty, out=tmp_path / "empty", run_id="empty-test")
    assert report.summary()["resolved"] == 0
    assert {o.status for o in report.outcomes} == {"empty_patch"}

    no_op = {i.instance_id: {"instance_id": i.instance_id, "model_name_or_path": "no-op", "model_patch": no_op_patch(i)}
             for i in suite.instances}
    report = evaluate(suite, suite.instances, no_op, out=tmp_path / "no-op", run_id="noop-test", workers=2)
    assert report.summary()["resolved"] == 0
    assert report.summary()["total"] == len(suite.instances)
    # The patches applied and the tests ran: these are real failures, not infrastructure errors. Where
    # the harness cannot tell (a test importing what only the gold patch adds), its label is kept.
    statuses = {o.instance_id: (o.status, o.reason) for o in report.outcomes}
    assert {status for status, _ in statuses.values()} == {"unresolved", "ambiguous_failure"}, statuses
    ambiguous = {i: reason for i, (status, reason) in statuses.items() if status == "ambiguous_failure"}
    assert set(ambiguous.values()) <= {"missing_module", "no_tests_collected"}, ambiguous
    official = json.loads(Path(report.harness_report).read_text())
    assert sorted(official["ambiguous_failure_ids"]) == sorted(ambiguous)
    assert Path(report.harness_report).parent == tmp_path / "no-op"  # next to report.json


@pytest.mark.docker
def test_pro_task_runs_end_to_end(local_suite_images, tmp_path):
    from live_swe.bench.evaluate import evaluate

    suite = local_suite_images
    pro = [i for i in suite.instances if i.suite_kind == "pro"]
    gold = {i.instance_id: {"instance_id": i.instance_id, "model_name_or_path": "gold", "model_patch": i.patch}
            for i in pro}
    report = evaluate(suite, pro, gold, out=tmp_path / "gold", run_id="pro-gold")
    assert report.resolved_ids == [i.instance_id for i in pro]
    log_dir = Path(report.outcomes[0].log_dir)
    parsed = json.loads((log_dir / "output.json").read_text())["tests"]
    assert {t["name"] for t in parsed if t["status"] == "PASSED"} >= set(pro[0].fail_to_pass)

    empty = {i.instance_id: {"instance_id": i.instance_id, "model_name_or_path": "m", "model_patch": ""} for i in pro}
    assert evaluate(suite, pro, empty, out=tmp_path / "empty", run_id="pro-empty").resolved_ids == []

    # A wrong fix: release ordering right, numeric pre-release identifiers still compared as text.
    wrong = pro[0].patch.replace('(0, int(part), "") if part.isdigit() else (1, 0, part)', '(1, 0, part)')
    assert wrong != pro[0].patch
    partial = {pro[0].instance_id: {"instance_id": pro[0].instance_id, "model_name_or_path": "m", "model_patch": wrong}}
    report = evaluate(suite, pro, partial, out=tmp_path / "wrong", run_id="pro-wrong")
    assert report.resolved_ids == [] and report.outcomes[0].status == "unresolved"
    assert "test_numeric_identifiers_compare_as_numbers" in report.outcomes[0].detail
