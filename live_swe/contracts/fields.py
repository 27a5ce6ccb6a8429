"""The fields a contract reads: their names, types, and when they are known.

Before the command runs the kernel knows what the command says (its classes, the paths it writes,
secrets in its text, the tools it calls) and the state left by earlier steps (edits, tests, diff
size, cost, steps). After it runs it also knows the output and what changed in the repository.
"""

from __future__ import annotations

import re

FIELD_TYPES = {
    # before the command
    "command": str,
    "command_classes": list,  # network, package_install, git_history_rewrite, git_push, rm_r_outside, write_outside
    "paths_outside_repo": list,  # paths the command writes outside the repository, scaffold and scratch folders
    "secrets_in_command": list,  # kinds of secret found in the command
    "tools_used": list,  # registered tools the command calls
    "unregistered_tools_used": list,  # files in the scaffold's tools folder called without being registered
    "runs_tests": bool,
    "submitting": bool,
    "step": int,
    "cost": float,
    "budget_exceeded": bool,
    # state from earlier steps (known before; updated after)
    "tests_run_since_edit": bool,
    "diff_lines": int,  # lines added plus removed in the repository diff so far
    "files_in_diff": list,
    # after the command
    "returncode": int,
    "files_changed": list,  # repository files this step changed
    "test_files_touched": list,
    "graded_test_files_touched": list,  # bench mode: files holding the tests the benchmark grades
    "secrets_in_output": list,
    "secrets_in_diff": list,
    "scaffold_changed": bool,
    # preconditions (before a session exists)
    "env": str,
    "model": str,
    "network": bool,
    "sandbox": str,
    "step_limit": int,
    "cost_limit": float,
    "wall_time_limit": float,
    "repo_is_git": bool,
    "repo_dirty_files": list,
}
PRECONDITION_FIELDS = frozenset({"env", "model", "network", "sandbox", "step_limit", "cost_limit", "wall_time_limit",
                                 "repo_is_git", "repo_dirty_files"})
AFTER_ONLY = frozenset({"returncode", "files_changed", "test_files_touched", "graded_test_files_touched",
                        "secrets_in_output", "secrets_in_diff", "scaffold_changed"})
BEFORE_FIELDS = frozenset(FIELD_TYPES) - AFTER_ONLY - PRECONDITION_FIELDS
AFTER_FIELDS = frozenset(FIELD_TYPES) - PRECONDITION_FIELDS

TEST_PATH = re.compile(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*\.py$|_tests?\.py$|(^|/)conftest\.py$|\.(spec|test)\.[jt]sx?$")


def is_test_path(path: str) -> bool:
    return TEST_PATH.search(path) is not None
