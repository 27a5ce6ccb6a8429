#!/usr/bin/env python3
"""Build the local suite's rows from its sources: instances.jsonl, pro_instances.jsonl, images.json.

A task is a folder under tasks/ (SWE-bench rows) or pro/tasks/ (Pro rows) holding:

    task.yaml    project (a folder under repos/) and row metadata
    issue.md     the issue text (problem_statement)
    gold/        files as they are after the fix (changed or new), laid over the project
    tests/       test files as they are after the test change, laid over the project
    requirements.md, interface.md   (Pro tasks only)

For each task this script commits the project snapshot exactly as the Dockerfile does (same
author, committer and dates, so the same sha), derives the gold patch and the test patch with
git, runs the tests before and after the gold patch, and records FAIL_TO_PASS (fail before,
pass after) and PASS_TO_PASS (pass both times). It refuses tasks whose gold patch leaves a test
failing or fixes nothing. Run it after editing any task: ``python evals/suites/local/make_instances.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
IMAGE_REPOSITORY = "live-swe-local"
SWEBENCH_REPO_DIR = "/testbed"
PRO_REPO_DIR = "/app"
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
COMMIT_ENV = {
    "GIT_AUTHOR_NAME": "live-swe suite",
    "GIT_AUTHOR_EMAIL": "suite@live-swe.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+0000",
    "GIT_COMMITTER_NAME": "live-swe suite",
    "GIT_COMMITTER_EMAIL": "suite@live-swe.invalid",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+0000",
}
HEREDOC = "EOF_114329324912"  # the delimiter SWE-bench's own eval scripts use


def git(repo: Path, *args: str, env: dict | None = None) -> str:
    full_env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", **(env or {})}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=full_env).stdout


def snapshot(project: str, target: Path) -> str:
    """The project committed as the Dockerfile commits it; returns the sha."""
    shutil.copytree(HERE / "repos" / project, target, ignore=IGNORED)
    git(target, "init", "-q")
    git(target, "add", "-A")
    git(target, "-c", "commit.gpgsign=false", "commit", "-q", "-m", f"Import {project}", env=COMMIT_ENV)
    return git(target, "rev-parse", "HEAD").strip()


def overlay_diff(repo: Path, overlay: Path) -> str:
    """The diff that turns the committed tree into tree + overlay (then restores the tree)."""
    shutil.copytree(overlay, repo, dirs_exist_ok=True, ignore=IGNORED)
    git(repo, "add", "-A")
    diff = git(repo, "diff", "--cached", "--no-color", "--no-ext-diff")
    git(repo, "reset", "-q", "--hard", "HEAD")
    git(repo, "clean", "-qfdx")
    return diff


def patch_files(patch: str) -> list[str]:
    return [line.split(" b/", 1)[1] for line in patch.splitlines() if line.startswith("diff --git ")]


def apply(repo: Path, patch: str) -> None:
    subprocess.run(["git", "-C", str(repo), "apply", "-"], input=patch, text=True, check=True)


def pytest_statuses(repo: Path, test_files: list[str]) -> dict[str, str]:
    from swebench.harness.log_parsers import PARSER_REGISTRY

    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", *test_files],
        cwd=repo, capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    ).stdout
    return PARSER_REGISTRY["parse_log_pytest"](out, None)


def pro_statuses(repo: Path, task_id: str, test_files: list[str]) -> dict[str, str]:
    """Statuses through the task's own run script and parser, as the Pro harness gets them."""
    scripts = HERE / "pro" / "run_scripts" / task_id
    with tempfile.TemporaryDirectory() as tmp:
        stdout, stderr, output = Path(tmp, "stdout.log"), Path(tmp, "stderr.log"), Path(tmp, "output.json")
        with stdout.open("w") as out, stderr.open("w") as err:
            subprocess.run(["bash", str(scripts / "run_script.sh"), ",".join(test_files)], cwd=repo,
                           stdout=out, stderr=err, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        subprocess.run([sys.executable, str(scripts / "parser.py"), str(stdout), str(stderr), str(output)],
                       check=True)
        return {t["name"]: t["status"] for t in json.loads(output.read_text())["tests"]}


def classify(before: dict[str, str], after: dict[str, str], task: str) -> tuple[list[str], list[str]]:
    failing_after = sorted(name for name, status in after.items() if status != "PASSED")
    if failing_after:
        raise SystemExit(f"{task}: the gold patch leaves tests failing: {failing_after}")
    fail_to_pass = sorted(name for name in after if before.get(name) != "PASSED")
    pass_to_pass = sorted(name for name in after if before.get(name) == "PASSED")
    if not fail_to_pass:
        raise SystemExit(f"{task}: no test fails before the gold patch; the task tests nothing")
    return fail_to_pass, pass_to_pass


def eval_script(base_commit: str, test_patch: str, test_files: list[str], existing: list[str]) -> str:
    """An eval script in the shape of SWE-bench 5.x rows (reset tests, apply test patch, run, reset)."""
    reset = f"git checkout {base_commit} {' '.join(existing)}" if existing else ": no test file to reset"
    return "\n".join([
        "#!/bin/bash",
        "set -uxo pipefail",
        f"cd {SWEBENCH_REPO_DIR}",
        f"git config --global --add safe.directory {SWEBENCH_REPO_DIR}",
        "git status",
        "git show",
        f"git -c core.fileMode=false diff {base_commit}",
        reset,
        f"git apply -v - <<'{HEREDOC}'",
        test_patch.rstrip("\n"),
        HEREDOC,
        ": '>>>>> Start Test Output'",
        f"python3 -m pytest -rA -p no:cacheprovider {' '.join(test_files)}",
        ": '>>>>> End Test Output'",
        reset,
        "",
    ])


def build_task(task_dir: Path, pro: bool, images: dict) -> dict:
    meta = yaml.safe_load((task_dir / "task.yaml").read_text())
    project = meta["project"]
    task_id = task_dir.name
    with tempfile.TemporaryDirectory(prefix="live-swe-suite-") as tmp:
        repo = Path(tmp) / project
        base = snapshot(project, repo)
        patch = overlay_diff(repo, task_dir / "gold")
        test_patch = overlay_diff(repo, task_dir / "tests")
        test_files = patch_files(test_patch)
        existing = [f for f in test_files if (repo / f).exists()]
        statuses = (lambda r: pro_statuses(r, task_id, test_files)) if pro else (
            lambda r: pytest_statuses(r, test_files))
        apply(repo, test_patch)
        before = statuses(repo)
        apply(repo, patch)
        after = statuses(repo)
    fail_to_pass, pass_to_pass = classify(before, after, task_id)
    repo_dir = PRO_REPO_DIR if pro else SWEBENCH_REPO_DIR
    image = f"{IMAGE_REPOSITORY}/{project}{'-pro' if pro else ''}:{base[:12]}"
    images[image] = {"project": project, "base_commit": base, "repo_dir": repo_dir}
    problem = (task_dir / "issue.md").read_text().strip() + "\n"
    common = {"instance_id": task_id, "repo": f"livebench/{project}", "base_commit": base,
              "patch": patch, "test_patch": test_patch, "problem_statement": problem}
    if pro:
        return {
            **common,
            "requirements": (task_dir / "requirements.md").read_text().strip(),
            "interface": (task_dir / "interface.md").read_text().strip(),
            "repo_language": meta.get("repo_language", "python"),
            "fail_to_pass": repr(fail_to_pass),
            "pass_to_pass": repr(pass_to_pass),
            "issue_specificity": meta.get("issue_specificity", "[]"),
            "issue_categories": meta.get("issue_categories", "[]"),
            "before_repo_set_cmd": "\n".join([
                f"git reset --hard {base}", "git clean -fd", f"git checkout {base}",
                f"git checkout {base} -- {' '.join(existing)}",
            ]),
            "selected_test_files_to_run": repr(test_files),
            "dockerhub_tag": image,
            "image": image,
        }
    return {
        **common,
        "hints_text": meta.get("hints_text", ""),
        "created_at": meta.get("created_at", ""),
        "version": str(meta.get("version", "")),
        "FAIL_TO_PASS": json.dumps(fail_to_pass),
        "PASS_TO_PASS": json.dumps(pass_to_pass),
        "environment_setup_commit": base,
        "difficulty": meta.get("difficulty", ""),
        "eval_script": eval_script(base, test_patch, test_files, existing),
        "log_parser": "parse_log_pytest",
        "eval_type": "pass_and_fail",
        "image": image,
    }


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row, sort_keys=False) + "\n" for row in rows))


def main() -> None:
    images: dict = {}
    rows = [build_task(d, False, images) for d in sorted((HERE / "tasks").iterdir()) if d.is_dir()]
    pro_rows = [build_task(d, True, images) for d in sorted((HERE / "pro" / "tasks").iterdir()) if d.is_dir()]
    write_jsonl(HERE / "instances.jsonl", rows)
    write_jsonl(HERE / "pro_instances.jsonl", pro_rows)
    (HERE / "images.json").write_text(json.dumps(dict(sorted(images.items())), indent=2) + "\n")
    for row in rows + pro_rows:
        f2p = json.loads(row["FAIL_TO_PASS"]) if "FAIL_TO_PASS" in row else eval(row["fail_to_pass"])  # noqa: S307 - our own repr
        print(f"{row['instance_id']:<40} {row['base_commit'][:12]}  fail-to-pass: {len(f2p)}")
    print(f"{len(rows)} SWE-bench rows, {len(pro_rows)} Pro rows, {len(images)} images")


if __name__ == "__main__":
    main()
