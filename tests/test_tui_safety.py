"""The read-only approval mode: which commands run without asking."""

from __future__ import annotations

import pytest

from live_swe.tui.safety import is_harmless


@pytest.mark.parametrize("command", [
    "ls -la", "cat calc.py | grep add", "grep -rn 'def add' . | head -20", "git status", "git diff HEAD~1",
    "git log --oneline -5", "find . -name '*.py' | wc -l", "head -n 5 a.py && tail -n 5 a.py", "git branch -a",
    "sort names.txt | uniq -c", "echo 'a > b'",
])
def test_readers_run_without_asking(command):
    assert is_harmless(command)


@pytest.mark.parametrize("command", [
    "rm -rf build", "ls > listing.txt", "cat a >> b", "echo $(rm x)", "echo `rm x`", "find . -delete",
    "find . -exec rm {} +", "git commit -m x", "git branch -D main", "git diff --output=x", "cat a && rm b",
    "ls; touch x", "(ls)", "ls &", "FOO=1 ls", "sort -o out in", "uniq in out", "./script.sh", "cat <<EOF",
    "python -c 'print(1)'", "grep x a | tee out", "ls | xargs rm", "cat 'unclosed", "", "diff <(ls) b",
])
def test_everything_else_is_asked_for(command):
    assert not is_harmless(command)
