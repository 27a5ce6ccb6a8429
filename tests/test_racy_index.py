"""A change made in the same second as the repository's index was written (an agent's edit right
after `git stash`, `git checkout` or a resume that sets changes aside) has the size and mtime second
of what the index records. The scratch indexes the patch and the baseline start from must keep the
index file's time, or git trusts the stale stat and the change is missing. Real git, real files."""

from __future__ import annotations

import os
import subprocess
import time

from live_swe.agent.patch import diff_command
from live_swe.session.baseline import working_tree_commit

BEFORE = "def add(a, b):\n    return a - b\n"
AFTER = "def add(a, b):\n    return a + b\n"  # the same size


def run_git(repo, *args: str, input: str | None = None) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "-C", str(repo), *args],
                          check=True, capture_output=True, text=True, input=input).stdout


def racy_repository(path):
    """A repository whose calc.py changed in the second its index was last written, seen a second later."""
    path.mkdir()
    run_git(path, "init", "-q")
    (path / "calc.py").write_text(BEFORE)
    run_git(path, "add", ".")
    run_git(path, "commit", "-qm", "init")
    for _ in range(20):
        (path / "calc.py").write_text(AFTER)
        fix = run_git(path, "diff")
        (path / "notes.txt").write_text("the person's\n")
        run_git(path, "stash", "push", "--include-untracked", "-m", "set aside")  # writes the index
        run_git(path, "apply", "-", input=fix)
        index = path / ".git" / "index"
        if int(os.stat(index).st_mtime) == int(os.stat(path / "calc.py").st_mtime):
            time.sleep(1.1)  # the copy would otherwise be made in the same second, which git re-checks
            return run_git(path, "rev-parse", "HEAD").strip()
        run_git(path, "checkout", "--", "calc.py")
        run_git(path, "stash", "drop", "-q")
    raise AssertionError("could not make the change in the index's second in 20 tries")


def test_the_patch_holds_a_change_made_in_the_second_the_index_was_written(tmp_path):
    repo = tmp_path / "repo"
    base = racy_repository(repo)
    out = subprocess.run(["bash", "-c", diff_command(base)], cwd=repo, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "+    return a + b" in out.stdout, out.stdout


def test_the_starting_point_holds_a_change_made_in_the_second_the_index_was_written(tmp_path):
    repo = tmp_path / "repo"
    base = racy_repository(repo)
    commit = working_tree_commit(repo, "s1")
    assert commit != base
    assert run_git(repo, "show", f"{commit}:calc.py") == AFTER
