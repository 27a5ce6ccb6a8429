"""The embedded local models on 15 tasks: the demo in three wordings and the 12 local-suite tasks.

The wordings go from the fix spelled out to the symptom only (``evals/demo/tasks/*.md``); the
suite's SWE-bench rows (``evals/suites/local/instances.jsonl``) are run in the local environment
on their project snapshot (the rows' base commit, fixed file dates, a fixed path, so the model gets
the same input on every run) and graded like the harness does: the row's test patch over the
agent's patch, FAIL_TO_PASS and PASS_TO_PASS all passing. Temperature 0, a fixed seed, a step
limit of 20 by default.

For each model and task it prints: the result, the run's status, the steps, the format errors, and
the median seconds per step; with ``--repeat 2`` each task runs twice and a last column says
whether the two runs gave the same replies. Results are appended to ``--out`` (JSON lines) as they
come, and tasks already there are skipped, so a long evaluation can be stopped and continued.

    nice -n 10 python benchmarks/local_tasks.py --models qwen2.5-coder-0.5b [--tasks demo:* textkit] \\
        [--step-limit 20] [--repeat 2] [--out results.jsonl]
    python benchmarks/local_tasks.py --table results.jsonl [other.jsonl]   # print only

Run against another checkout's code (e.g. main) with ``PYTHONPATH=/path/to/checkout``: the script
uses only the run API, so the same tasks are measured before and after a change.
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO_TASKS = ROOT / "evals" / "demo" / "tasks"
SUITE = ROOT / "evals" / "suites" / "local"
WORK = Path("/tmp/lsw-tasks")  # fixed: the repository path is part of the prompt
DATES = 1_704_067_200  # 2024-01-01: `ls -la` shows the same thing on every run
DEMO_WORDINGS = ("fix-given", "line-named", "file-and-symptom", "symptom-only")  # most to least dictated


def _suite_module():
    spec = importlib.util.spec_from_file_location("make_instances", SUITE / "make_instances.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def all_tasks() -> list[dict]:
    tasks = [{"id": f"demo:{name}", "kind": "demo", "text": (DEMO_TASKS / f"{name}.md").read_text()}
             for name in DEMO_WORDINGS]
    for line in (SUITE / "instances.jsonl").read_text().splitlines():
        row = json.loads(line)
        tasks.append({"id": row["instance_id"], "kind": "suite", "text": row["problem_statement"], "row": row})
    return tasks


def _fix_dates(repo: Path) -> None:
    for folder, dirs, files in os.walk(repo, topdown=False):
        for name in files + dirs:
            os.utime(os.path.join(folder, name), (DATES, DATES), follow_symlinks=False)
    subprocess.run(["git", "-C", str(repo), "update-index", "-q", "--refresh"], capture_output=True)
    os.utime(repo, (DATES, DATES))


def prepare(task: dict) -> Path:
    """A fresh repository for the task, at a path that does not change between runs."""
    if task["kind"] == "demo":
        from live_swe.cli.demo_cmd import default_demo_dir, make_demo_repo

        return make_demo_repo(default_demo_dir())
    row = task["row"]
    project = row["repo"].split("/", 1)[1]
    target = WORK / task["id"] / project
    if target.parent.exists():
        shutil.rmtree(target.parent)
    target.parent.mkdir(parents=True)
    sha = _suite_module().snapshot(project, target)
    if sha != row["base_commit"]:
        sys.exit(f"{task['id']}: the snapshot is {sha}, the row says {row['base_commit']}")
    _fix_dates(target)
    return target


def resolved(task: dict, patch: str) -> bool:
    """Graded on a clean copy, as the harness does: agent patch, test files reset, test patch, tests."""
    if task["kind"] == "demo":
        from live_swe.cli.demo_cmd import demo_tests_pass, make_demo_repo

        clean = make_demo_repo(WORK / "grading" / "shop")
        if patch.strip() and subprocess.run(["git", "-C", str(clean), "apply", "-"], input=patch, text=True,
                                            capture_output=True).returncode != 0:
            return False
        return demo_tests_pass(clean)
    suite = _suite_module()
    row = task["row"]
    clean = WORK / "grading" / row["repo"].split("/", 1)[1]
    if clean.exists():
        shutil.rmtree(clean)
    clean.parent.mkdir(parents=True, exist_ok=True)
    suite.snapshot(row["repo"].split("/", 1)[1], clean)
    if patch.strip() and subprocess.run(["git", "-C", str(clean), "apply", "-"], input=patch, text=True,
                                        capture_output=True).returncode != 0:
        return False
    test_files = suite.patch_files(row["test_patch"])
    existing = [f for f in test_files if subprocess.run(["git", "-C", str(clean), "cat-file", "-e", f"HEAD:{f}"],
                                                        capture_output=True).returncode == 0]
    if existing:
        subprocess.run(["git", "-C", str(clean), "checkout", "HEAD", "--", *existing], check=True, capture_output=True)
    suite.apply(clean, row["test_patch"])
    statuses = suite.pytest_statuses(clean, test_files)
    wanted = json.loads(row["FAIL_TO_PASS"]) + json.loads(row["PASS_TO_PASS"])
    return all(statuses.get(name) == "PASSED" for name in wanted)


def make_local_model(name: str):
    """The model as this checkout makes it; a catalogue without the model gets the file directly."""
    from live_swe.models import catalog
    from live_swe.models.resolve import make_model

    bare = name.removeprefix("local/")
    if bare in catalog.CATALOG:
        return make_model(f"local/{bare}")
    from live_swe.models.local import LocalModel  # an older checkout: same settings as the default model

    path = catalog.models_dir() / f"{bare}-instruct-q4_k_m.gguf"
    if not path.is_file():
        sys.exit(f"{name}: not in this checkout's catalogue and no {path}")
    return LocalModel(f"local/{bare}", str(path), n_ctx=16384, max_tokens=768)


class Recorder:
    """The model as the run sees it, keeping each reply; the clock per step."""

    def __init__(self, model):
        self.model = model
        self.name = model.name
        self.replies: list[str] = []
        self.times: list[float] = []
        self.format_errors = 0
        self._last = time.perf_counter()

    def query(self, messages, *, tools=None, on_token=None):
        reply = self.model.query(messages, tools=tools, on_token=on_token)
        self.replies.append(reply.content)
        return reply

    def on_event(self, event: dict) -> None:
        if event.get("t") in ("step", "format_error"):
            now = time.perf_counter()
            self.times.append(now - self._last)
            self._last = now
            self.format_errors += event.get("t") == "format_error"


def run_task(model, task: dict, step_limit: int) -> dict:
    from live_swe.config import KernelLimits
    from live_swe.runner import RunHooks, RunRequest, start_run

    repo = prepare(task)
    recorder = Recorder(model)
    request = RunRequest(task=task["text"], model=model.name, repo=repo,
                         limits=KernelLimits(step_limit=step_limit, wall_time_limit=6 * 3600))
    started = time.perf_counter()
    recorder._last = started
    result = start_run(request, RunHooks(observers=[recorder.on_event], model_factory=lambda _n: recorder))
    wall = time.perf_counter() - started
    return {
        "model": model.name, "task": task["id"], "resolved": resolved(task, result.patch), "status": result.status,
        "steps": result.steps, "format_errors": recorder.format_errors,
        "s_per_step": round(statistics.median(recorder.times), 2) if recorder.times else None,
        "wall_s": round(wall, 1), "replies": recorder.replies, "patch": result.patch,
    }


def table(rows: list[dict]) -> str:
    """One line per model and task (runs of the same pair are compared), then the totals."""
    pairs: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        pairs.setdefault((row["model"], row["task"]), []).append(row)
    lines = [f"{'model':<27}{'task':<28}{'result':<9}{'status':<17}{'steps':>6}{'fmt err':>8}{'s/step':>8}"
             f"{'runs agree':>12}"]
    totals: dict[str, list[int]] = {}
    for (model, task), runs in pairs.items():
        first = runs[0]
        agree = "-" if len(runs) == 1 else ("yes" if all(r["replies"] == first["replies"] for r in runs) else "NO")
        step = f"{first['s_per_step']:.1f}" if first["s_per_step"] is not None else "-"
        lines.append(f"{model:<27}{task:<28}{'solved' if first['resolved'] else 'failed':<9}{first['status']:<17}"
                     f"{first['steps']:>6}{first['format_errors']:>8}{step:>8}{agree:>12}")
        total = totals.setdefault(model, [0, 0, 0, 0])
        total[0] += bool(first["resolved"])
        total[1] += 1
        total[2] += first["format_errors"]
        total[3] += first["resolved"] and not first["task"].startswith("demo:fix-given")
    for model, (solved, count, errors, open_solved) in totals.items():
        lines.append(f"{model}: solved {solved}/{count} (open tasks: {open_solved}), format errors {errors}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["qwen2.5-coder-0.5b"])
    parser.add_argument("--tasks", nargs="+", default=["*"], help="task ids or shell patterns (demo:*, *textkit*)")
    parser.add_argument("--step-limit", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=1, help="runs per task (2: check that runs agree)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/lsw-tasks/results.jsonl"))
    parser.add_argument("--table", nargs="+", type=Path, help="print the table of these result files and stop")
    args = parser.parse_args()
    if args.table:
        print(table([json.loads(line) for path in args.table for line in path.read_text().splitlines() if line]))
        return
    os.environ.setdefault("LIVE_SWE_HOME", "/tmp/lsw-tasks/home")
    import live_swe

    print(f"live_swe from {Path(live_swe.__file__).parent.parent}", file=sys.stderr)
    tasks = [t for t in all_tasks() if any(fnmatch.fnmatch(t["id"], p) or p in t["id"] for p in args.tasks)]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    done = [json.loads(line) for line in args.out.read_text().splitlines() if line] if args.out.exists() else []
    for name in args.models:
        model = make_local_model(name)
        for task in tasks:
            for attempt in range(args.repeat):
                if sum(1 for r in done if r["model"] == model.name and r["task"] == task["id"]) > attempt:
                    continue
                row = run_task(model, task, args.step_limit)
                print(f"{row['model']} {row['task']}: {'solved' if row['resolved'] else 'failed'} ({row['status']}, "
                      f"{row['steps']} steps, {row['format_errors']} format errors, {row['wall_s']} s)",
                      file=sys.stderr, flush=True)
                done.append(row)
                with args.out.open("a") as handle:
                    handle.write(json.dumps(row) + "\n")
    print(table([r for r in done if r["task"] in {t["id"] for t in tasks}]))


if __name__ == "__main__":
    main()
