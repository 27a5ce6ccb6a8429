"""Evaluation: the confidence interval, batch directories, the CLI, and a scripted model's batch on
the local suite graded by the official harness in Docker."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import SUBMIT, bash_reply
from test_bench_local_suite import SUITE, SUITE_DIR, local_suite_images  # noqa: F401 - the session fixture
from typer.testing import CliRunner

from live_swe.bench.evaluate import batch_suite, evaluate_batch
from live_swe.bench.stats import wilson_interval
from live_swe.cli.main import app
from live_swe.errors import UserError
from live_swe.models.base import Reply
from live_swe.models.scripted import ScriptedModel

SUMMARY_KEYS = {"total", "resolved", "resolved_ids", "rate", "ci_low", "ci_high", "errors"}

# What the scripted model types into the container, per instance.
FIXES = {
    "livebench__textkit-101": "sed -i 's/width - len(ellipsis) + 1\\]/width - len(ellipsis)]/' textkit/truncate.py",
    "livebench__datespan-58": (
        "sed -i 's/self.start <= other.end and other.start <= self.end/"
        "self.start < other.end and other.start < self.end/' datespan/spans.py"
    ),
    # A plausible but wrong fix: the tests still fail.
    "livebench__configlite-31": "sed -i 's/FALSE_VALUES = {/FALSE_VALUES = {\"n\", /' configlite/values.py",
}


# -- the interval ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("successes", "total", "low", "high"),
    [
        # Worked by hand: centre (p + z²/2n)/(1 + z²/n), half-width z·sqrt(p(1-p)/n + z²/4n²)/(1 + z²/n)
        (5, 10, 0.2366, 0.7634),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (81, 100, 0.7222, 0.8749),
        (1, 1, 0.2065, 1.0),
    ],
)
def test_wilson_interval_matches_hand_computed_values(successes, total, low, high):
    got_low, got_high = wilson_interval(successes, total)
    assert got_low == pytest.approx(low, abs=5e-5)
    assert got_high == pytest.approx(high, abs=5e-5)


def test_wilson_interval_edges():
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert wilson_interval(10, 10)[1] == 1.0 and wilson_interval(0, 10)[0] == 0.0
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


# -- batch directories -----------------------------------------------------------------------------


def test_batch_directory_names_its_suite(tmp_path):
    (tmp_path / "batch.json").write_text(json.dumps({"batch_id": "b1", "suite": "local:local"}))
    assert batch_suite(tmp_path, None) == "local:local"
    assert batch_suite(tmp_path, "swebench-lite") == "swebench-lite"
    with pytest.raises(UserError, match="--suite"):
        batch_suite(tmp_path / "nowhere", None)


def test_eval_of_a_directory_without_predictions_says_what_to_do(tmp_path):
    result = CliRunner().invoke(app, ["bench", "eval", str(tmp_path)])
    assert result.exit_code == 2
    assert "no preds.jsonl" in result.output and "bench run" in result.output


def test_predictions_outside_the_suite_are_refused(tmp_path):
    (tmp_path / "batch.json").write_text(json.dumps({"suite": SUITE}))
    (tmp_path / "preds.jsonl").write_text(json.dumps(
        {"instance_id": "nobody__nothing-1", "model_name_or_path": "m", "model_patch": "x"}) + "\n")
    with pytest.raises(UserError, match="nobody__nothing-1"):
        evaluate_batch(tmp_path)


def test_pro_run_scripts_come_from_the_pro_repository_layout(tmp_path):
    from live_swe.bench.pro_eval import scripts_dir_for

    scripts = tmp_path / "SWE-bench_Pro-os" / "run_scripts" / "instance_x"
    scripts.mkdir(parents=True)
    (scripts / "run_script.sh").write_text("true\n")
    (scripts / "parser.py").write_text("")
    assert scripts_dir_for("instance_x", tmp_path / "SWE-bench_Pro-os") == scripts
    with pytest.raises(UserError, match="run_scripts/instance_y.*--pro-repo"):
        scripts_dir_for("instance_y", tmp_path / "SWE-bench_Pro-os")


# -- images ----------------------------------------------------------------------------------------


def copy_suite_with_image_prefix(target: Path, prefix: str) -> str:
    """The local suite under ``target`` with every image renamed (so none of them exists yet)."""
    for name in ("Dockerfile", ".dockerignore"):
        shutil.copy(SUITE_DIR / name, target / name)
    shutil.copytree(SUITE_DIR / "repos", target / "repos")
    for name in ("instances.jsonl", "pro_instances.jsonl"):
        lines = (SUITE_DIR / name).read_text().replace("live-swe-local/", prefix)
        (target / name).write_text(lines)
    (target / "images.json").write_text((SUITE_DIR / "images.json").read_text().replace("live-swe-local/", prefix))
    return f"local:{target}"


@pytest.mark.docker
def test_images_command_names_missing_images_and_builds_them(local_suite_images, base_image, docker_client, tmp_path):  # noqa: F811 - the imported fixture
    runner = CliRunner()
    present = runner.invoke(app, ["bench", "images", SUITE, "--check"])
    assert present.exit_code == 0, present.output
    assert "MISSING" not in present.stdout and "present" in present.stdout

    suite = copy_suite_with_image_prefix(tmp_path, "live-swe-test-images/")
    missing = runner.invoke(app, ["bench", "images", suite, "--check"])
    assert missing.exit_code == 1
    assert "MISSING  live-swe-test-images/textkit:" in missing.stdout
    assert "--build" in missing.output and "--base live-swe-base" in missing.output

    built = []
    try:
        result = runner.invoke(app, ["bench", "images", suite, "--build", "--base", base_image, "--quiet"])
        built = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("present ")]
        assert result.exit_code == 0, result.output
        assert "MISSING" not in result.stdout and len(built) == 7
    finally:
        for image in built:
            docker_client.images.remove(image)


@pytest.mark.docker
def test_eval_names_a_missing_image_and_grades_nothing_for_it(local_suite_images, tmp_path):  # noqa: F811 - the imported fixture
    suite_dir = tmp_path / "suite"
    suite_dir.mkdir()
    suite = copy_suite_with_image_prefix(suite_dir, "live-swe-test-missing/")
    out = tmp_path / "batch"
    out.mkdir()
    (out / "batch.json").write_text(json.dumps({"suite": suite}))
    (out / "preds.jsonl").write_text(json.dumps(
        {"instance_id": "livebench__textkit-101", "model_name_or_path": "m", "model_patch": "diff"}) + "\n")
    report = evaluate_batch(out)
    (line,) = report.missing_images
    assert "live-swe-test-missing/textkit:" in line and "livebench__textkit-101" in line
    assert "bench images" in line and "--build" in line
    assert [(o.instance_id, o.status) for o in report.outcomes] == [("livebench__textkit-101", "missing_image")]
    assert report.summary()["total"] == 0 and "1 not graded (image missing)" in report.text()
    # Nothing was graded: that is not a clean evaluation (exit 3), and --json counts it.
    result = CliRunner().invoke(app, ["bench", "eval", str(out), "--json"])
    assert result.exit_code == 3, result.output
    assert json.loads(result.stdout)["errors"] == {"missing_image": 1}


# -- a scripted model's batch, graded --------------------------------------------------------------


def fixing_model(name: str, instance) -> ScriptedModel:
    command = FIXES[instance.instance_id]
    return ScriptedModel([Reply(bash_reply(command, "Fix the bug.")), Reply(SUBMIT)], name=name)


@pytest.mark.docker
def test_scripted_fixes_are_graded_by_the_harness(local_suite_images, tmp_path):  # noqa: F811 - the imported fixture
    from live_swe.bench.batch import run_batch

    out = tmp_path / "batch"
    summary = run_batch(SUITE, model="scripted-fixer", out=out, workers=1, instances=sorted(FIXES),
                        model_factory=fixing_model, show_progress=False)
    assert summary.done == 3 and summary.submitted == 3, summary.records
    preds = [json.loads(line) for line in (out / "preds.jsonl").read_text().splitlines()]
    assert all(p["model_patch"].startswith("diff --git") for p in preds)

    result = CliRunner().invoke(app, ["bench", "eval", str(out), "--json", "--run-id", "scripted"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert set(printed) == SUMMARY_KEYS
    assert printed["resolved_ids"] == ["livebench__datespan-58", "livebench__textkit-101"]
    assert (printed["total"], printed["resolved"], printed["errors"]) == (3, 2, {})  # unresolved is no error
    assert printed["rate"] == pytest.approx(2 / 3)
    assert (printed["ci_low"], printed["ci_high"]) == pytest.approx(wilson_interval(2, 3))

    report = json.loads((out / "report.json").read_text())
    assert report["instances"]["livebench__configlite-31"]["status"] == "unresolved"
    assert "test_false_bool" in report["instances"]["livebench__configlite-31"]["detail"]
    assert report["suite"] == SUITE


# -- what the harness says, kept -------------------------------------------------------------------


def hand_made_suite(directory: Path, changes: dict[str, dict]) -> str:
    """Local suite rows changed by hand (``{new id: {"from": id, field: value}}``), on the suite's images."""
    rows = {json.loads(line)["instance_id"]: json.loads(line)
            for line in (SUITE_DIR / "instances.jsonl").read_text().splitlines() if line.strip()}
    made = []
    for new_id, fields in changes.items():
        row = {**rows[fields["from"]], **{k: v for k, v in fields.items() if k != "from"}, "instance_id": new_id}
        made.append(row)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "instances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in made))
    return f"local:{directory}"


def batch_dir(out: Path, suite: str, patches: dict[str, str]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "batch.json").write_text(json.dumps({"suite": suite}))
    (out / "preds.jsonl").write_text("".join(
        json.dumps({"instance_id": i, "model_name_or_path": "m", "model_patch": p}) + "\n" for i, p in patches.items()))
    return out


@pytest.mark.docker
def test_the_harness_s_own_errors_are_shown_not_its_last_log_line(local_suite_images, tmp_path):  # noqa: F811
    """A grader that does not exist and tests that outlive --timeout: each says what the harness said."""
    textkit = local_suite_images.get("livebench__textkit-101")
    slow_script = textkit.row["eval_script"].replace(
        ": '>>>>> Start Test Output'\n", ": '>>>>> Start Test Output'\nsleep 60\n")
    suite = hand_made_suite(tmp_path / "suite", {
        "handmade__no-parser-1": {"from": textkit.instance_id, "log_parser": "parse_log_nonexistent"},
        "handmade__slow-2": {"from": textkit.instance_id, "eval_script": slow_script},
    })
    out = batch_dir(tmp_path / "batch", suite, {"handmade__no-parser-1": textkit.patch, "handmade__slow-2": textkit.patch})
    result = CliRunner().invoke(app, ["bench", "eval", str(out), "--run-id", "errors", "--timeout", "5"])
    assert result.exit_code == 3, result.output  # graded, but not all of it: not a clean evaluation
    assert "2 instance(s) could not be graded as resolved or unresolved (1 ambiguous_failure, 1 error)" in result.stderr
    report = json.loads((out / "report.json").read_text())["instances"]
    no_parser, slow = report["handmade__no-parser-1"], report["handmade__slow-2"]
    assert no_parser["status"] == "error"
    assert no_parser["detail"].startswith("the harness failed: KeyError: 'parse_log_nonexistent'")
    assert (slow["status"], slow["reason"]) == ("ambiguous_failure", "tests_timed_out")
    assert slow["detail"].startswith("tests_timed_out: the harness failed: Test timed out after 5 seconds.")
    for outcome in (no_parser, slow):
        assert "removed" not in outcome["detail"] and outcome["detail"] in result.stdout


@pytest.mark.docker
def test_a_regrade_under_the_same_run_id_grades_the_new_patch(local_suite_images, tmp_path):  # noqa: F811
    from live_swe.bench.evaluate import evaluate

    suite = local_suite_images
    instance = suite.get("livebench__datespan-58")
    out = tmp_path / "eval"

    def grade(patch: str):
        preds = {instance.instance_id: {"instance_id": instance.instance_id, "model_name_or_path": "m",
                                        "model_patch": patch}}
        (outcome,) = evaluate(suite, [instance], preds, out=out, run_id="same").outcomes
        return outcome

    assert grade(instance.patch).status == "resolved"
    assert grade(instance.patch).status == "resolved"  # the same patch: the grade is reused
    log_dir = out / "eval" / "logs" / "run_evaluation" / "same" / "m"
    assert not (log_dir / "stale").exists()
    from test_bench_local_suite import no_op_patch

    changed = grade(no_op_patch(instance))
    assert (changed.status, changed.resolved) == ("unresolved", False)
    assert "required test(s) fail" in changed.detail
    (stale,) = (log_dir / "stale").iterdir()  # the old grade is kept aside, never shown again
    assert json.loads((stale / "report.json").read_text())[instance.instance_id]["resolved"] is True
    assert grade(instance.patch).status == "resolved"


@pytest.mark.docker
def test_a_patch_that_does_not_apply_is_labelled_so_and_the_official_report_sits_next_to_ours(
        local_suite_images, tmp_path):  # noqa: F811
    instance = local_suite_images.get("livebench__textkit-101")
    broken = instance.patch.replace("textkit/truncate.py", "textkit/not_there.py")
    assert broken != instance.patch
    out = batch_dir(tmp_path / "batch", SUITE, {instance.instance_id: broken})
    result = CliRunner().invoke(app, ["bench", "eval", str(out), "--run-id", "labels"])
    assert result.exit_code == 0, result.output
    saved = json.loads((out / "report.json").read_text())
    outcome = saved["instances"][instance.instance_id]
    assert outcome["status"] == "patch_failed" and "could not apply the patch" in outcome["detail"]
    assert saved["statuses"] == {"patch_failed": 1}
    official = out / "m.labels.json"
    assert saved["harness_report"] == str(official) and f"official report: {official}" in result.stdout
    assert json.loads(official.read_text())["error_ids"] == [instance.instance_id]
