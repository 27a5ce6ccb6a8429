"""Batch runs in Docker on a small suite built here: predictions, resume, failures, kill -9, Ctrl-C.

The suite's images are built FROM the registry-free base image with each repository at /testbed;
the only stand-in is the language model (scripted replies, per instance).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import SUBMIT, bash_reply, labelled_containers

from live_swe.bench.batch import BATCH_FILE, BATCH_LABEL, run_batch
from live_swe.bench.preds import JsonlAppender, cut_torn_tail, read_jsonl, read_preds
from live_swe.errors import UserError
from live_swe.models.base import Reply
from live_swe.models.scripted import ScriptedModel

REPO_ROOT = Path(__file__).resolve().parent.parent
MISSING_IMAGE = "live-swe-test-bench-missing:never-built"
VERIFIED_ROWS = REPO_ROOT / "tests" / "fixtures" / "swebench_verified_rows.jsonl"

REPOS = {
    "calc": {
        "calc/__init__.py": "",
        "calc/ops.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
        "tests/test_ops.py": "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    },
    "text": {
        "text/__init__.py": "",
        "text/words.py": "def count_words(s):\n    return len(s.split(' '))\n",
    },
}

FIXES = {
    "calc": "sed -i 's/return a - b/return a + b/' calc/ops.py",
    "text": "sed -i \"s/s.split(' ')/s.split()/\" text/words.py",
}


# -- the suite -------------------------------------------------------------------------------------


def _build_image(docker_client, base_image: str, context: Path, files: dict[str, str], tag: str,
                 repo_dir: str = "/testbed") -> str:
    repo = context / "repo"
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    (context / "Dockerfile").write_text(textwrap.dedent("""\
        ARG BASE
        FROM ${BASE}
        COPY repo REPO_DIR
        RUN cd REPO_DIR && git init -q -b main && git add -A \\
            && git -c user.email=dev@example.com -c user.name=Dev commit -q -m initial
        WORKDIR REPO_DIR
        """).replace("REPO_DIR", repo_dir))
    docker_client.images.build(path=str(context), tag=tag, buildargs={"BASE": base_image}, rm=True)
    return tag


@pytest.fixture(scope="module")
def suite_images(docker_client, base_image, tmp_path_factory):
    tags = {}
    for name, files in REPOS.items():
        context = tmp_path_factory.mktemp(f"image-{name}")
        tags[name] = _build_image(docker_client, base_image, context, files, f"live-swe-test-bench-{name}:latest")
    # The calc repository again, at /app as in SWE-bench Pro images.
    tags["calc-pro"] = _build_image(docker_client, base_image, tmp_path_factory.mktemp("image-calc-pro"),
                                    REPOS["calc"], "live-swe-test-bench-calc-pro:latest", repo_dir="/app")
    yield tags
    for tag in tags.values():
        try:
            docker_client.images.remove(tag, force=True)
        except Exception:  # noqa: BLE001 - a shared engine; leftovers are only disk
            pass


def _row(instance_id: str, repo: str, image: str, problem: str) -> dict:
    return {
        "instance_id": instance_id, "repo": f"example/{repo}", "base_commit": "HEAD", "patch": "",
        "test_patch": "", "problem_statement": problem, "hints_text": "", "version": "0.1",
        "FAIL_TO_PASS": json.dumps(["tests/test_ops.py::test_add"]), "PASS_TO_PASS": "[]",
        "environment_setup_commit": "HEAD", "eval_script": "", "log_parser": "pytest", "eval_type": "pass_and_fail",
        "image": image,
    }


def make_suite(directory: Path, rows: list[dict]) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "instances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f"local:{directory}"


@pytest.fixture
def suite(tmp_path, suite_images) -> str:
    return make_suite(tmp_path / "suite", [
        _row("example__calc-1", "calc", suite_images["calc"], "add() subtracts instead of adding."),
        _row("example__text-2", "text", suite_images["text"], "count_words('a  b') returns 3, expected 2."),
        _row("example__calc-3", "calc", suite_images["calc"], "mul() is fine; add() is wrong."),
    ])


def fixing_models(calls: list[str] | None = None):
    """A model factory whose model fixes the instance's repository, then submits."""

    def factory(name: str, instance) -> ScriptedModel:
        if calls is not None:
            calls.append(instance.instance_id)
        kind = instance.repo.split("/")[1]
        return ScriptedModel([Reply(bash_reply(FIXES[kind], "Fix it.")), Reply(SUBMIT)], name=name)

    return factory


def batch_containers(docker_client, batch_id: str) -> list:
    return labelled_containers(docker_client, f"{BATCH_LABEL}={batch_id}")


def wait_for(predicate, timeout: float, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()


# -- files (no Docker) -----------------------------------------------------------------------------


def test_a_torn_last_line_is_cut_and_appending_continues(tmp_path):
    path = tmp_path / "preds.jsonl"
    path.write_text('{"instance_id": "a", "model_patch": "x"}\n{"instance_id": "b", "model_pa')
    assert list(read_preds(path)) == ["a"]  # readers skip the torn line
    with JsonlAppender(path) as appender:
        assert appender.torn_bytes == len('{"instance_id": "b", "model_pa')
        appender.append({"instance_id": "c", "model_patch": "y"})
    assert [json.loads(line)["instance_id"] for line in path.read_text().splitlines()] == ["a", "c"]
    assert cut_torn_tail(path) == 0


def test_the_last_prediction_of_an_instance_wins(tmp_path):
    path = tmp_path / "preds.jsonl"
    with JsonlAppender(path) as appender:
        appender.append({"instance_id": "a", "model_patch": "old"})
        appender.append({"instance_id": "b", "model_patch": "b"})
        appender.append({"instance_id": "a", "model_patch": "new"})
    preds = read_preds(path)
    assert preds["a"]["model_patch"] == "new" and len(preds) == 2


def test_batch_json_records_suite_paths_that_work_from_anywhere(tmp_path, monkeypatch):
    from live_swe.bench.batch import portable_spec

    (tmp_path / "mine").mkdir()
    (tmp_path / "rows.jsonl").write_text("")
    monkeypatch.chdir(tmp_path)
    assert portable_spec("local:./mine") == f"local:{tmp_path / 'mine'}"
    assert portable_spec("swebench-pro:rows.jsonl") == f"swebench-pro:{tmp_path / 'rows.jsonl'}"
    assert portable_spec("rows.jsonl") == str(tmp_path / "rows.jsonl")
    for unchanged in ("swebench-verified", "local:local", "local:./missing", "swebench-lite:/abs/x.parquet"):
        assert portable_spec(unchanged) == unchanged


# -- batches in Docker -----------------------------------------------------------------------------


@pytest.mark.docker
def test_batch_writes_predictions_then_skips_and_redoes(suite, tmp_path, docker_client):
    out = tmp_path / "run"
    calls: list[str] = []
    summary = run_batch(suite, model="scripted-fixer", out=out, workers=2, model_factory=fixing_models(calls),
                        show_progress=False)
    assert (summary.total, summary.done, summary.submitted, summary.failed, summary.skipped) == (3, 3, 3, 0, 0)
    preds = read_preds(out / "preds.jsonl")
    assert sorted(preds) == ["example__calc-1", "example__calc-3", "example__text-2"]
    for pred in preds.values():
        assert pred["model_name_or_path"] == "scripted-fixer"
        assert pred["status"] == "submitted"
        assert (out / "sessions" / pred["session"] / "events.jsonl").is_file()
    assert "-    return a - b\n+    return a + b" in preds["example__calc-1"]["model_patch"]
    assert "+    return len(s.split())" in preds["example__text-2"]["model_patch"]
    assert ".live-swe" not in preds["example__calc-1"]["model_patch"]  # the scaffold never leaks in
    results = read_jsonl(out / "results.jsonl")
    assert {r["status"] for r in results} == {"submitted"}
    assert all({"setup", "agent", "patch", "teardown"} <= set(r["timings"]) for r in results)
    batch_id = json.loads((out / BATCH_FILE).read_text())["batch_id"]
    assert batch_containers(docker_client, batch_id) == []

    again = run_batch(suite, model="scripted-fixer", out=out, workers=2, model_factory=fixing_models(calls),
                      show_progress=False)
    assert (again.skipped, again.done) == (3, 0)
    assert len(calls) == 3  # nothing ran
    assert len((out / "preds.jsonl").read_text().splitlines()) == 3

    redo = run_batch(suite, model="scripted-fixer", out=out, instances=["example__text-2"], redo=True,
                     model_factory=fixing_models(calls), show_progress=False)
    assert (redo.total, redo.done, redo.skipped) == (1, 1, 0)
    assert calls[-1] == "example__text-2"
    lines = (out / "preds.jsonl").read_text().splitlines()
    assert len(lines) == 4 and json.loads(lines[-1])["session"] == "example__text-2.2"
    assert (out / "sessions" / "example__text-2.2" / "meta.json").is_file()


@pytest.mark.docker
def test_a_missing_image_stops_the_batch_before_anything_runs(tmp_path, suite_images):
    suite = make_suite(tmp_path / "suite", [
        _row("example__calc-1", "calc", suite_images["calc"], "add() subtracts."),
        _row("example__gone-9", "calc", MISSING_IMAGE, "Never runs."),
    ])
    calls: list[str] = []
    with pytest.raises(UserError) as refused:
        run_batch(suite, model="m", out=tmp_path / "run", model_factory=fixing_models(calls), show_progress=False)
    assert MISSING_IMAGE in str(refused.value) and "example__gone-9" in str(refused.value)
    assert f"live-swe bench images {suite} --build" in str(refused.value)
    assert "--skip-missing" in str(refused.value)
    assert calls == [] and not (tmp_path / "run").exists()


@pytest.mark.docker
def test_with_skip_missing_a_missing_image_fails_that_instance_at_once_and_the_rest_finish(tmp_path, suite_images):
    suite = make_suite(tmp_path / "suite", [
        _row("example__calc-1", "calc", suite_images["calc"], "add() subtracts."),
        _row("example__gone-9", "calc", MISSING_IMAGE, "Never runs."),
        _row("example__text-2", "text", suite_images["text"], "Split on any whitespace."),
    ])
    out = tmp_path / "run"
    summary = run_batch(suite, model="m", out=out, model_factory=fixing_models(), show_progress=False,
                        skip_missing=True)
    assert (summary.done, summary.failed) == (2, 1)
    failed = next(r for r in summary.records if r["instance_id"] == "example__gone-9")
    assert failed["status"] == "error" and failed["elapsed"] < 5
    assert MISSING_IMAGE in failed["reason"]
    assert f"live-swe bench images {suite} --build" in failed["reason"]
    assert sorted(read_preds(out / "preds.jsonl")) == ["example__calc-1", "example__text-2"]
    assert [r["instance_id"] for r in read_jsonl(out / "results.jsonl") if r["status"] == "error"] == ["example__gone-9"]


@pytest.mark.docker
def test_swebench_instances_without_their_images_are_refused_up_front_with_how_to_get_them(tmp_path, docker_client):
    for image in ("swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest",
                  "sweb.eval.x86_64.astropy__astropy-12907:latest"):
        try:
            docker_client.images.get(image)
            pytest.skip(f"{image} is present on this machine")
        except Exception:  # noqa: BLE001 - ImageNotFound: the case under test
            pass
    from live_swe.environments._docker_engine import registry_reachable

    if registry_reachable("swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest"):
        pytest.skip("Docker Hub answers here: the images would be pulled")
    calls: list[str] = []
    with pytest.raises(UserError) as refused:
        run_batch(f"swebench-verified:{VERIFIED_ROWS}", model="m", out=tmp_path / "run", slice="0:2",
                  model_factory=lambda name, instance: calls.append(instance.instance_id), show_progress=False)
    message = str(refused.value)
    assert message.startswith("2 image(s) of swebench-verified:")
    assert "docker pull swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest" in message
    assert ("python -m swebench.harness.prepare_images --dataset_name princeton-nlp/SWE-bench_Verified "
            "--instance_ids django__django-11099") in message
    assert "sweb.eval.x86_64.django__django-11099:latest, found as is" in message
    assert calls == [] and not (tmp_path / "run").exists()


@pytest.mark.docker
def test_a_crashing_or_exhausted_model_is_recorded_and_retried_next_time(suite, tmp_path):
    out = tmp_path / "run"

    def flaky(name, instance):
        if instance.instance_id == "example__calc-1":
            raise RuntimeError("provider exploded")
        if instance.instance_id == "example__text-2":
            return ScriptedModel([Reply(bash_reply("ls"))], name=name)  # runs out before submitting
        return fixing_models()(name, instance)

    summary = run_batch(suite, model="m", out=out, model_factory=flaky, show_progress=False)
    by_id = {r["instance_id"]: r for r in summary.records}
    assert by_id["example__calc-1"]["reason"] == "RuntimeError: provider exploded"
    assert by_id["example__text-2"]["status"] == "error" and "ran out" in by_id["example__text-2"]["reason"]
    assert (summary.done, summary.failed) == (1, 2)
    assert list(read_preds(out / "preds.jsonl")) == ["example__calc-3"]

    second = run_batch(suite, model="m", out=out, model_factory=fixing_models(), show_progress=False)
    assert (second.skipped, second.done, second.failed) == (1, 2, 0)


@pytest.mark.docker
def test_image_override_pro_rows_at_app_and_budgets(tmp_path, suite_images, docker_client):
    suite_dir = tmp_path / "suite"
    make_suite(suite_dir, [
        _row("example__calc-1", "calc", MISSING_IMAGE, "add() subtracts."),
        _row("example__text-2", "text", suite_images["text"], "Split on any whitespace."),
    ])
    pro_row = {
        "instance_id": "instance_example__calc-pro-1", "repo": "example/calc", "base_commit": "HEAD",
        "patch": "", "test_patch": "", "problem_statement": "add() subtracts.", "requirements": "- add adds",
        "interface": "No new interfaces are introduced.", "repo_language": "python",
        "fail_to_pass": "['tests/test_ops.py::test_add']", "pass_to_pass": "[]", "before_repo_set_cmd": "",
        "selected_test_files_to_run": "['tests/test_ops.py']", "dockerhub_tag": suite_images["calc-pro"],
    }
    (suite_dir / "pro_instances.jsonl").write_text(json.dumps(pro_row) + "\n")
    suite = f"local:{suite_dir}"
    out = tmp_path / "run"
    seen: dict[str, ScriptedModel] = {}

    def factory(name, instance):
        if instance.instance_id == "example__text-2":  # never submits: the step budget ends it
            model = ScriptedModel([Reply(bash_reply("pwd"))] * 5, name=name)
        else:
            model = fixing_models()(name, instance)
        seen[instance.instance_id] = model
        return model

    from live_swe.config import KernelLimits

    summary = run_batch(
        suite, model="m", out=out, model_factory=factory, show_progress=False,
        limits=KernelLimits(step_limit=2),
        image_override=lambda i: suite_images["calc"] if i.image == MISSING_IMAGE else i.image,
    )
    by_id = {r["instance_id"]: r for r in summary.records}
    assert by_id["example__calc-1"]["image"] == suite_images["calc"] and by_id["example__calc-1"]["status"] == "submitted"
    assert by_id["example__text-2"]["status"] == "limits_exceeded" and by_id["example__text-2"]["steps"] == 2
    assert by_id["instance_example__calc-pro-1"]["status"] == "submitted"
    assert (summary.done, summary.submitted, summary.failed) == (3, 2, 0)
    preds = read_preds(out / "preds.jsonl")
    assert "+    return a + b" in preds["instance_example__calc-pro-1"]["model_patch"]
    assert preds["example__text-2"]["model_patch"] == ""  # finished without a change: still a prediction
    first_prompt = seen["instance_example__calc-pro-1"].seen[0][1]["content"]
    assert "repository at /app" in first_prompt and "New interfaces introduced:" in first_prompt
    meta = json.loads((out / "sessions" / "instance_example__calc-pro-1" / "meta.json").read_text())
    assert meta["repo_dir"] == "/app" and meta["parent"].startswith("bench:")


def test_progress_lines_without_a_terminal_and_a_bar_in_one():
    import io

    from live_swe.bench.progress import BatchProgress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    records = [
        {"instance_id": "a", "status": "submitted", "finished": True, "steps": 3, "cost": 0.25},
        {"instance_id": "b", "status": "error", "finished": False, "steps": 0, "cost": 0.0, "reason": "no image"},
    ]
    log = io.StringIO()
    with BatchProgress(3, skipped=1, enabled=True, stream=log) as progress:
        for record in records:
            progress.finished_one(record)
    assert log.getvalue().splitlines() == [
        "[2/3] a: submitted after 3 steps, $0.2500",
        "[3/3] b: error after 0 steps, $0.0000 (no image)",
    ]
    screen = Terminal()
    with BatchProgress(3, skipped=1, enabled=True, stream=screen) as progress:
        assert progress.mode == "bar"
        for record in records:
            progress.finished_one(record)
    assert "done 1  submitted 1  failed 1  skipped 1  $0.25" in screen.getvalue()
    quiet = Terminal()
    with BatchProgress(3, skipped=0, enabled=False, stream=quiet) as progress:
        progress.finished_one(records[0])
    assert quiet.getvalue() == ""


# A batch in its own process: instance 1 submits at once, instance 2 sleeps in its container.
_CHILD = textwrap.dedent("""\
    import sys
    from pathlib import Path
    from live_swe.bench.batch import run_batch
    from live_swe.models.base import Reply
    from live_swe.models.scripted import ScriptedModel

    def bash(cmd):
        return Reply("THOUGHT: go.\\n\\n```bash\\n" + cmd + "\\n```")

    def factory(name, instance):
        if instance.instance_id == "example__calc-1":
            return ScriptedModel([bash("sed -i 's/a - b/a + b/' calc/ops.py"),
                                  bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")], name=name)
        return ScriptedModel([bash("sleep 120"), bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")], name=name)

    run_batch(sys.argv[1], model="m", out=Path(sys.argv[2]), workers=1, model_factory=factory, show_progress=False)
    """)


def _start_child(suite: str, out: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen([sys.executable, "-c", _CHILD, suite, str(out)], cwd=REPO_ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _running_sleep(out: Path, docker_client):
    """The batch id once instance 2's agent is sleeping in its running container.

    Only then: a container killed between its creation and its start is never started, so
    auto-remove cannot apply to it (the next batch's sweep removes it, not the engine)."""
    try:
        batch_id = json.loads((out / BATCH_FILE).read_text())["batch_id"]
    except (OSError, ValueError, KeyError):
        return None
    if not read_preds(out / "preds.jsonl"):
        return None
    for container in batch_containers(docker_client, batch_id):
        if container.get("State") != "running":
            continue
        try:
            processes = docker_client.api.top(container["Id"]).get("Processes") or []
        except Exception:  # noqa: BLE001 - gone meanwhile: look again
            continue
        if any("sleep 120" in " ".join(map(str, row)) for row in processes):
            return batch_id
    return None


@pytest.mark.docker
def test_resume_after_kill_9_skips_what_was_done_and_redoes_the_rest(suite, tmp_path, docker_client):
    out = tmp_path / "run"
    child = _start_child(suite, out)
    try:
        batch_id = wait_for(lambda: _running_sleep(out, docker_client), timeout=120)
        assert batch_id, child.stdout.read().decode() if child.poll() is not None else "batch never got going"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert list(read_preds(out / "preds.jsonl")) == ["example__calc-1"]
    # The killed process's container goes with it (its stdin closes), nothing left with the batch label.
    assert wait_for(lambda: batch_containers(docker_client, batch_id) == [], timeout=30)

    # The killed attempt's session was left `running`, with no end event.
    killed = out / "sessions" / "example__text-2"
    assert json.loads((killed / "meta.json").read_text())["status"] == "running"

    calls: list[str] = []
    summary = run_batch(suite, model="m", out=out, model_factory=fixing_models(calls), show_progress=False)
    assert (summary.skipped, summary.done, summary.failed, summary.stale) == (1, 2, 0, 1)
    assert calls == ["example__text-2", "example__calc-3"]
    preds = read_preds(out / "preds.jsonl")
    assert sorted(preds) == ["example__calc-1", "example__calc-3", "example__text-2"]
    assert preds["example__text-2"]["session"] == "example__text-2.2"  # the killed attempt's session is kept ...
    meta = json.loads((killed / "meta.json").read_text())  # ... and closed as stale, not `running` forever
    assert meta["status"] == "interrupted" and meta["exit_message"].startswith("stale: ")
    end = [json.loads(line) for line in (killed / "events.jsonl").read_text().splitlines()][-1]
    assert (end["t"], end["status"], end["stale"]) == ("end", "interrupted", True)
    booked = [r for r in read_jsonl(out / "results.jsonl") if r.get("stale")]
    assert [(r["instance_id"], r["session"], r["status"]) for r in booked] == [
        ("example__text-2", "example__text-2", "interrupted")]
    assert batch_containers(docker_client, batch_id) == []
    assert run_batch(suite, model="m", out=out, model_factory=fixing_models(calls), show_progress=False).stale == 0


def _stop_child_mid_sleep(suite: str, out: Path, docker_client, signum: int) -> str:
    """Start the batch in its own process, send it ``signum`` once instance 2 sleeps; the batch id."""
    child = _start_child(suite, out)
    try:
        batch_id = wait_for(lambda: _running_sleep(out, docker_client), timeout=120)
        assert batch_id, "batch never got going"
        started = time.monotonic()
        os.kill(child.pid, signum)
        child.wait(timeout=60)
        assert time.monotonic() - started < 30  # it did not wait for `sleep 120`
    finally:
        if child.poll() is None:
            child.kill()
    return batch_id


@pytest.mark.docker
def test_sigterm_stops_the_batch_like_ctrl_c_and_leaves_no_session_running(suite, tmp_path, docker_client):
    out = tmp_path / "run"
    batch_id = _stop_child_mid_sleep(suite, out, docker_client, signal.SIGTERM)
    assert batch_containers(docker_client, batch_id) == []
    statuses = {r["instance_id"]: r["status"] for r in read_jsonl(out / "results.jsonl")}
    assert statuses == {"example__calc-1": "submitted", "example__text-2": "interrupted"}
    for meta in (out / "sessions").glob("*/meta.json"):
        assert json.loads(meta.read_text())["status"] != "running", meta
        events = meta.with_name("events.jsonl").read_text().splitlines()
        assert json.loads(events[-1])["t"] == "end", meta


@pytest.mark.docker
def test_ctrl_c_stops_the_batch_and_leaves_no_container(suite, tmp_path, docker_client):
    out = tmp_path / "run"
    batch_id = _stop_child_mid_sleep(suite, out, docker_client, signal.SIGINT)
    assert batch_containers(docker_client, batch_id) == []
    assert list(read_preds(out / "preds.jsonl")) == ["example__calc-1"]
    statuses = {r["instance_id"]: r["status"] for r in read_jsonl(out / "results.jsonl")}
    assert statuses == {"example__calc-1": "submitted", "example__text-2": "interrupted"}


# -- what a record says ----------------------------------------------------------------------------


class SlowGarbleModel:
    """Answers after ``delay`` seconds without any bash block: every reply is a format error."""

    def __init__(self, name: str, delay: float):
        self.name = name
        self.delay = delay

    def query(self, messages, *, tools=None, on_token=None):
        time.sleep(self.delay)
        return Reply("I would rather talk about the weather.")


@pytest.mark.docker
def test_model_time_is_booked_as_model_time_when_a_run_ends_in_format_errors(suite, tmp_path):
    from live_swe.config import KernelLimits

    summary = run_batch(suite, model="m", out=tmp_path / "run", instances=["example__calc-1"], show_progress=False,
                        limits=KernelLimits(max_format_errors=3),
                        model_factory=lambda name, instance: SlowGarbleModel(name, 0.5))
    (record,) = summary.records
    assert record["status"] == "format_error"
    timings = record["timings"]
    assert timings["model"] >= 1.5  # three replies, half a second each
    assert timings["agent"] >= timings["model"]  # the replies are the agent's time ...
    assert timings["patch"] < 1.0  # ... not the patch extraction's


@pytest.mark.docker
def test_benchmark_instances_get_the_repository_map_from_their_image(suite, tmp_path):
    seen: dict[str, ScriptedModel] = {}

    def factory(name, instance):
        seen[instance.instance_id] = fixing_models()(name, instance)
        return seen[instance.instance_id]

    out = tmp_path / "run"
    summary = run_batch(suite, model="m", out=out, instances=["example__calc-1"], model_factory=factory,
                        show_progress=False)
    assert summary.submitted == 1
    first = seen["example__calc-1"].seen[0][1]["content"]
    assert "<repo_map>" in first and "calc/ops.py:" in first and "def add(a, b):" in first
    events = [json.loads(line) for line in (out / "sessions" / "example__calc-1" / "events.jsonl").read_text().splitlines()]
    (mapped,) = [e for e in events if e.get("t") == "repo_map"]
    assert mapped["source"] == "environment" and mapped["files"] == 3 and "error" not in mapped


# -- exit codes --------------------------------------------------------------------------------------


def _bench_run(suite: str, script: Path, out: Path, *extra: str) -> tuple[int, dict, str]:
    """``live-swe bench run --json`` in its own process: its exit code, its summary, its stderr."""
    done = subprocess.run([sys.executable, "-m", "live_swe.cli.main", "bench", "run", suite, "--model",
                           f"scripted:{script}", "--out", str(out), "--json", *extra],
                          cwd=REPO_ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    return done.returncode, json.loads(done.stdout), done.stderr


@pytest.mark.docker
def test_bench_run_exits_3_when_an_instance_failed_and_counts_errors_by_kind(tmp_path, suite_images):
    from conftest import write_script

    suite = make_suite(tmp_path / "suite", [
        _row("example__calc-1", "calc", suite_images["calc"], "add() subtracts."),
        _row("example__gone-9", "calc", MISSING_IMAGE, "Never runs."),
    ])
    submits = write_script(tmp_path / "submit.yaml", [SUBMIT])
    code, summary, stderr = _bench_run(suite, submits, tmp_path / "missing", "--skip-missing")
    assert code == summary["exit_code"] == 3, stderr
    assert (summary["done"], summary["failed"], summary["errors"]) == (1, 1, {"missing_image": 1})
    assert "Traceback" not in stderr

    calc_only = ["--instances", "example__calc-1"]
    runs_out = write_script(tmp_path / "runs-out.yaml", [bash_reply("ls")])  # the script ends: the model fails
    code, summary, _ = _bench_run(suite, runs_out, tmp_path / "model", *calc_only)
    assert (code, summary["failed"], summary["errors"]) == (3, 1, {"model": 1})
    assert read_jsonl(tmp_path / "model" / "results.jsonl")[0]["error_kind"] == "model"

    # Ran, not submitted (the step budget ended it): a result, not an error.
    code, summary, _ = _bench_run(suite, write_script(tmp_path / "looks.yaml", [bash_reply("ls")] * 3),
                                  tmp_path / "budget", *calc_only, "--step-limit", "1")
    assert (code, summary["done"], summary["submitted"], summary["errors"]) == (0, 1, 0, {})
    code, summary, _ = _bench_run(suite, submits, tmp_path / "clean", *calc_only)
    assert (code, summary["submitted"], summary["failed"]) == (0, 1, 0)
