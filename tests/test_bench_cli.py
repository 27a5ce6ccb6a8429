"""`live-swe bench` as a user types it: the real command in its own process, on the local suite in Docker.

The only stand-in is the language model (a scripted file of replies). Every other part is real: the
selection options, the worker pool, the containers, the official harness behind ``bench eval --gold``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SUBMIT, bash_reply, write_script
from test_bench_local_suite import SUITE, SUITE_DIR, local_suite_images  # noqa: F401 - the session fixture

from live_swe.bench.preds import read_jsonl

REPO_ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "live_swe.cli.main", "bench"]
MARK = "Touched by the scripted model."

# In suite order the local suite starts configlite-31, configlite-44, csvtools-19, ..., textkit-101,
# textkit-102. The ids keep five; the filter drops csvtools; the slice keeps the 2nd and 3rd left.
NAMED = "livebench__configlite-31,livebench__configlite-44 livebench__csvtools-19,livebench__textkit-101,livebench__textkit-102"
FILTER = "configlite|textkit"
SLICE = "1:3"
SELECTED = ["livebench__configlite-44", "livebench__textkit-101"]


def bench(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``live-swe bench ARGS`` in a child process (LIVE_SWE_HOME comes from the live_swe_home fixture)."""
    return subprocess.run([*CLI, *args], cwd=REPO_ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout, env=os.environ.copy())


def ids_in(path: Path) -> list[str]:
    return sorted(record["instance_id"] for record in read_jsonl(path))


def assert_bad_input(result: subprocess.CompletedProcess, message: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "live-swe: error: " in result.stderr and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


# -- bench run -------------------------------------------------------------------------------------


@pytest.mark.docker
def test_run_selects_with_every_option_then_skips_then_redoes(local_suite_images, tmp_path):  # noqa: F811 - the fixture
    script = write_script(tmp_path / "edit-then-submit.yaml", [
        bash_reply(f"echo '{MARK}' >> README.md", "Leave a trace in the repository."),
        SUBMIT,
    ])
    out = tmp_path / "batch"
    run_args = ["run", SUITE, "--model", f"scripted:{script}", "--out", str(out), "--instances", NAMED,
                "--filter", FILTER, "--slice", SLICE, "--workers", "2", "--scaffold", "seed", "--no-progress"]

    first = bench(*run_args)
    assert first.returncode == 0, (first.stdout, first.stderr)
    assert "2 selected, 0 already done, 2 finished (2 submitted), 0 failed" in first.stdout
    assert ids_in(out / "preds.jsonl") == SELECTED
    assert ids_in(out / "results.jsonl") == SELECTED
    for pred in read_jsonl(out / "preds.jsonl"):
        assert pred["status"] == "submitted" and pred["model_name_or_path"] == f"scripted:{script}"
        assert f"+{MARK}" in pred["model_patch"] and "diff --git a/README.md b/README.md" in pred["model_patch"]
        assert (out / "sessions" / pred["session"] / "events.jsonl").is_file()
    batch = json.loads((out / "batch.json").read_text())
    assert (batch["suite"], batch["scaffold"], batch["model"]) == (SUITE, "seed", f"scripted:{script}")

    again = bench(*run_args)
    assert again.returncode == 0, (again.stdout, again.stderr)
    assert "2 selected, 2 already done, 0 finished (0 submitted), 0 failed" in again.stdout
    assert len(read_jsonl(out / "preds.jsonl")) == 2 and len(read_jsonl(out / "results.jsonl")) == 2

    redone = bench(*run_args, "--redo")
    assert redone.returncode == 0, (redone.stdout, redone.stderr)
    assert "2 selected, 0 already done, 2 finished (2 submitted), 0 failed" in redone.stdout
    preds = read_jsonl(out / "preds.jsonl")
    assert sorted(p["instance_id"] for p in preds) == sorted(SELECTED * 2)
    # A redone instance gets a second session next to the first; nothing is overwritten.
    assert sorted(p["session"] for p in preds[2:]) == [f"{i}.2" for i in SELECTED]
    assert json.loads((out / "batch.json").read_text())["batch_id"] == batch["batch_id"]


# -- bench eval --gold ------------------------------------------------------------------------------


@pytest.mark.docker
def test_eval_gold_prints_the_rate_and_its_interval(local_suite_images, tmp_path):  # noqa: F811 - the fixture
    chosen = ["livebench__ratelimit-5", "instance_livebench__semverlite-3"]  # a SWE-bench row and the Pro row
    out = tmp_path / "gold"
    result = bench("eval", "--gold", SUITE, "--out", str(out), "--instances", ",".join(chosen),
                   "--run-id", "cli-gold", "--workers", "2")
    assert result.returncode == 0, (result.stdout, result.stderr)
    for instance_id in chosen:
        assert re.search(rf"^\s+resolved\s+{re.escape(instance_id)}\b", result.stdout, re.MULTILINE), result.stdout
    # Two of two: the rate is 100% and the Wilson interval runs from 34.2% to 100%.
    assert f"{SUITE}: resolved 2 / 2 (100.0%), 95% CI [34.2%, 100.0%] (Wilson)" in result.stdout
    assert f"report: {out.resolve() / 'report.json'}" in result.stdout
    saved = json.loads((out / "report.json").read_text())
    assert saved["resolved_ids"] == sorted(chosen) and set(saved["instances"]) == set(chosen)


@pytest.mark.docker
def test_eval_gold_json_prints_only_the_summary(local_suite_images, tmp_path):  # noqa: F811 - the fixture
    result = bench("eval", "--gold", SUITE, "--out", str(tmp_path / "gold"), "--instances", "livebench__datespan-58",
                   "--run-id", "cli-gold-json", "--json")
    assert result.returncode == 0, (result.stdout, result.stderr)
    summary = json.loads(result.stdout)  # nothing else on stdout
    assert set(summary) == {"total", "resolved", "resolved_ids", "rate", "ci_low", "ci_high", "errors"}
    assert (summary["total"], summary["resolved"], summary["resolved_ids"]) == (1, 1, ["livebench__datespan-58"])
    assert summary["errors"] == {}
    assert summary["rate"] == 1.0 and summary["ci_high"] == 1.0
    assert summary["ci_low"] == pytest.approx(0.2065, abs=5e-5)


# -- bad input (no Docker: all of it is refused before a container or an output folder exists) ----


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["no-such-suite"], "unknown suite 'no-such-suite'"),
        ([SUITE, "--slice", "1:x"], "--slice '1:x' is not a slice; write START:STOP"),
        ([SUITE, "--slice", "1:2:3:4"], "--slice '1:2:3:4' is not a slice"),
        ([SUITE, "--instances", "livebench__textkit-101,livebench__nope-1"], "no instance(s) livebench__nope-1;"),
        ([SUITE, "--filter", "text(kit"], "--filter 'text(kit' is not a valid regular expression"),
        ([SUITE, "--filter", "no-such-id"], "the selection matches no instance (of 13)"),
        ([SUITE, "--workers", "0"], "--workers must be at least 1 (got 0)"),
    ],
)
def test_run_refuses_bad_input_with_a_clear_message(tmp_path, options, message):
    out = tmp_path / "batch"
    result = bench("run", *options, "--model", "scripted:unused.yaml", "--out", str(out), timeout=60)
    assert_bad_input(result, message)
    assert not out.exists()


def test_run_refuses_an_unknown_model_before_any_container(tmp_path):
    result = bench("run", SUITE, "--model", "nosuch:thing", "--out", str(tmp_path / "batch"), "--slice", "1",
                   timeout=60)
    assert_bad_input(result, "unknown model prefix 'nosuch'")
    assert not (tmp_path / "batch").exists()  # nothing written


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gold", "no-such-suite", "--out", "DIR"], "unknown suite 'no-such-suite'"),
        (["--gold", SUITE, "--out", "DIR", "--instances", "livebench__nope-1"], "no instance(s) livebench__nope-1"),
        (["--gold", SUITE], "--gold SUITE takes no DIR argument but needs --out DIR"),
        (["DIR", "--gold", SUITE, "--out", "DIR"], "--gold SUITE takes no DIR argument"),
        ([], "give a batch directory (live-swe bench eval DIR) or --gold SUITE --out DIR"),
    ],
)
def test_eval_refuses_bad_input_with_a_clear_message(tmp_path, args, message):
    out = tmp_path / "gold"
    result = bench("eval", *[str(out) if a == "DIR" else a for a in args], timeout=60)
    assert_bad_input(result, message)
    assert not (out / "report.json").exists()


# -- budgets ---------------------------------------------------------------------------------------

ONE = "livebench__textkit-101"


def session_meta(out: Path, instance_id: str) -> dict:
    (record,) = [r for r in read_jsonl(out / "results.jsonl") if r["instance_id"] == instance_id][-1:]
    return json.loads((out / "sessions" / record["session"] / "meta.json").read_text())


@pytest.mark.docker
def test_run_budgets_follow_cli_then_environment_then_config(local_suite_images, tmp_path, live_swe_home,  # noqa: F811
                                                             monkeypatch):
    """--step-limit & co. per instance; LIVE_SWE_* and config.yaml `limits` apply when the option is not given."""
    script = write_script(tmp_path / "never-submits.yaml", [bash_reply("sleep 2; echo slept")] * 10)
    (live_swe_home / "config.yaml").write_text(
        "limits: {step_limit: 3, cost_limit: 0.5, wall_time_limit: 900, command_timeout: 60}\n")

    def run_once(name: str, *options: str) -> dict:
        out = tmp_path / name
        result = bench("run", SUITE, "--model", f"scripted:{script}", "--out", str(out), "--instances", ONE,
                       "--no-progress", *options)
        assert result.returncode == 0, (result.stdout, result.stderr)
        (record,) = read_jsonl(out / "results.jsonl")
        return {"record": record, "limits": session_meta(out, ONE)["extra"]["limits"],
                "batch": json.loads((out / "batch.json").read_text())["limits"]}

    from_config = run_once("config")
    assert (from_config["record"]["status"], from_config["record"]["steps"]) == ("limits_exceeded", 3)
    assert "step limit of 3 reached" in from_config["record"]["reason"]
    assert from_config["limits"] == {**from_config["limits"], "step_limit": 3, "cost_limit": 0.5,
                                     "wall_time_limit": 900.0, "command_timeout": 60.0}
    assert from_config["batch"] == from_config["limits"]

    monkeypatch.setenv("LIVE_SWE_STEP_LIMIT", "2")
    monkeypatch.setenv("LIVE_SWE_COMMAND_TIMEOUT", "30")
    from_env = run_once("env")
    assert (from_env["record"]["steps"], from_env["limits"]["command_timeout"]) == (2, 30.0)
    assert from_env["limits"]["cost_limit"] == 0.5  # still the config file's

    from_cli = run_once("cli", "--step-limit", "1", "--cost-limit", "0.25", "--wall-time-limit", "120",
                        "--command-timeout", "1")
    assert from_cli["limits"] == {**from_cli["limits"], "step_limit": 1, "cost_limit": 0.25,
                                  "wall_time_limit": 120.0, "command_timeout": 1.0}
    assert from_cli["record"]["steps"] == 1
    events = [json.loads(line) for line in (tmp_path / "cli" / "sessions" / ONE / "events.jsonl").read_text().splitlines()]
    (step,) = [e for e in events if e.get("t") == "step"]
    assert step["timed_out"] is True  # `sleep 2` outlived --command-timeout 1


@pytest.mark.docker
def test_run_stops_starting_instances_once_the_total_cost_limit_is_spent(local_suite_images, tmp_path):  # noqa: F811
    """$0.40 a reply: the first instance costs $0.80; the second starts with $0.20 left, which becomes
    its own budget; then nothing is left and the third never starts, now or in a rerun."""
    script = write_script(tmp_path / "priced.yaml", [
        {"content": bash_reply(f"echo '{MARK}' >> README.md"), "cost": 0.4},
        {"content": SUBMIT, "cost": 0.4},
    ])
    out = tmp_path / "batch"
    args = ["run", SUITE, "--model", f"scripted:{script}", "--out", str(out), "--filter", "textkit|datespan",
            "--slice", "0:3", "--total-cost-limit", "1", "--no-progress"]
    first = bench(*args)
    assert first.returncode == 0, (first.stdout, first.stderr)
    assert "3 selected, 0 already done, 2 finished (1 submitted), 0 failed, cost $1.2000" in first.stdout
    assert ("stopped: the total cost limit of $1.00 is spent ($1.2000); 1 instance(s) not started "
            "(rerun with a higher --total-cost-limit to go on)") in first.stdout
    records = read_jsonl(out / "results.jsonl")
    assert [(r["status"], r["cost"]) for r in records] == [("submitted", 0.8), ("limits_exceeded", 0.4)]
    assert "cost limit of $0.20 reached" in records[1]["reason"]

    again = bench(*args)
    assert "3 selected, 2 already done, 0 finished" in again.stdout and "1 instance(s) not started" in again.stdout
    assert len(read_jsonl(out / "results.jsonl")) == 2

    more = bench(*args[:-3], "--total-cost-limit", "2", "--no-progress")
    assert "3 selected, 2 already done, 1 finished (1 submitted)" in more.stdout and "stopped" not in more.stdout


# -- selection on images and eval ------------------------------------------------------------------


@pytest.mark.docker
def test_images_and_eval_select_like_run(local_suite_images, tmp_path):  # noqa: F811
    shown = bench("images", SUITE, "--filter", "textkit", "--check")
    assert shown.returncode == 0, shown.stderr
    assert [line.split()[1].split(":")[0] for line in shown.stdout.splitlines()[:-1]] == ["live-swe-local/textkit"]
    assert shown.stdout.splitlines()[-1] == f"1 of 1 image(s) present for {SUITE}"

    out = tmp_path / "batch"
    out.mkdir()
    (out / "batch.json").write_text(json.dumps({"suite": SUITE}))
    gold = {i.instance_id: i.patch for i in local_suite_images.instances}
    (out / "preds.jsonl").write_text("".join(
        json.dumps({"instance_id": i, "model_name_or_path": "m", "model_patch": gold[i]}) + "\n"
        for i in ("livebench__datespan-58", "livebench__textkit-101")))
    graded = bench("eval", str(out), "--instances", "livebench__textkit-101", "--run-id", "select", "--json")
    assert graded.returncode == 0, graded.stderr
    assert json.loads(graded.stdout)["resolved_ids"] == ["livebench__textkit-101"]
    assert json.loads(graded.stdout)["total"] == 1


def test_a_zero_step_slice_is_refused_without_a_traceback(tmp_path):
    for command in (["run", SUITE, "--model", "scripted:unused.yaml", "--out", str(tmp_path / "batch")],
                    ["images", SUITE], ["eval", "--gold", SUITE, "--out", str(tmp_path / "gold")]):
        result = bench(*command, "--slice", "0:2:0", timeout=60)
        assert_bad_input(result, "--slice '0:2:0': the step must be 1 or more")
    assert not (tmp_path / "batch").exists() and not (tmp_path / "gold").exists()


@pytest.mark.docker
def test_eval_gold_grades_what_it_can_and_names_the_missing_images(local_suite_images, tmp_path):  # noqa: F811
    suite_dir = tmp_path / "suite"
    suite_dir.mkdir()
    for name in ("Dockerfile", ".dockerignore", "images.json"):
        (suite_dir / name).write_text((SUITE_DIR / name).read_text())
    rows = [json.loads(line) for line in (SUITE_DIR / "instances.jsonl").read_text().splitlines() if line.strip()]
    chosen = {r["instance_id"]: r for r in rows if r["instance_id"] in ("livebench__datespan-58", "livebench__ratelimit-5")}
    chosen["livebench__ratelimit-5"]["image"] = "live-swe-test-gold-missing/ratelimit:never-built"
    (suite_dir / "instances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in chosen.values()))
    out = tmp_path / "gold"
    result = bench("eval", "--gold", f"local:{suite_dir}", "--out", str(out), "--run-id", "gold-missing")
    assert result.returncode == 3, (result.stdout, result.stderr)  # graded what it could, but not all of it
    assert "1 instance(s) could not be graded as resolved or unresolved (1 missing_image)" in result.stderr
    assert re.search(r"^\s+resolved\s+livebench__datespan-58\b", result.stdout, re.MULTILINE), result.stdout
    assert re.search(r"^\s+missing_image livebench__ratelimit-5\b", result.stdout, re.MULTILINE), result.stdout
    assert "resolved 1 / 1 (100.0%)" in result.stdout and "1 not graded (image missing)" in result.stdout
    assert ("missing image: live-swe-test-gold-missing/ratelimit:never-built (for livebench__ratelimit-5); "
            "it is not in") in result.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["not_graded"] == ["livebench__ratelimit-5"] and report["total"] == 1
