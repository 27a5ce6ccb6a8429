"""The read-only approval mode: which commands run without asking."""

from __future__ import annotations

import pytest

from live_swe.command_safety import is_harmless


@pytest.mark.parametrize("command", [
    "ls -la", "cat calc.py | grep add", "grep -rn 'def add' . | head -20", "git status", "git diff HEAD~1",
    "git log --oneline -5", "find . -name '*.py' | wc -l", "head -n 5 a.py && tail -n 5 a.py", "git branch -a",
    "sort names.txt | uniq -c", "echo 'a > b'", "git grep -n add", "git log -p --stat", "rg -n --type py add",
    "sort -k2,2 -t, a.csv", "tree -L 2", "date -u +%s", "file calc.py", "grep -o 'x' a",
])
def test_readers_run_without_asking(command):
    assert is_harmless(command)


@pytest.mark.parametrize("command", [
    "rm -rf build", "ls > listing.txt", "cat a >> b", "echo $(rm x)", "echo `rm x`", "find . -delete",
    "find . -exec rm {} +", "git commit -m x", "git branch -D main", "git diff --output=x", "cat a && rm b",
    "ls; touch x", "(ls)", "ls &", "FOO=1 ls", "sort -o out in", "uniq in out", "./script.sh", "cat <<EOF",
    "python -c 'print(1)'", "grep x a | tee out", "ls | xargs rm", "cat 'unclosed", "", "diff <(ls) b",
    # readers with an option that writes a file or runs a program
    "git grep -Orm x", "git grep -O rm x", "git grep --open-files-in-pager=rm x", "git grep --open=rm x",
    "git log --out=x", "git show --ext-diff", "rg --pre rm x", "rg --pre=rm x", "sort --compress-program=rm a",
    "sort --compress=rm a", "sort -no out in", "tree -o out.txt", "date -s 2020-01-01", "date --set=2020-01-01",
    "date -us 1", "file -C -m magic", "diff --output=x a b",
])
def test_everything_else_is_asked_for(command):
    assert not is_harmless(command)
