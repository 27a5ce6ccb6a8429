"""The pieces of self-evolution on their own: exact tree restore, the fingerprint, the tool and
scaffold gates, the reason taken from a reply."""

from __future__ import annotations

import os
import shutil
import threading

import pytest

from live_swe.agent.limits import effective_limits
from live_swe.config import KernelLimits
from live_swe.evolution.gates import Refused, check_policy, check_templates, import_problems
from live_swe.evolution.guard import stated_reason
from live_swe.evolution.tool_gates import interpreter_language, name_problem, static_problem, syntax_problem
from live_swe.evolution.tree import Entry, changed_paths, fingerprint, restore, snapshot
from live_swe.evolution.verdict import (
    ToolCheck,
    classify,
    judge_scaffold,
    judge_strays,
    judge_tools,
    refuse_changed,
)
from live_swe.resources import resource_path
from live_swe.scaffolding.policy import ScaffoldPolicy
from live_swe.scaffolding.scaffold import load_policy


def _tree(root):
    (root / "prompts").mkdir(parents=True)
    (root / "prompts" / "a.j2").write_text("hello {{ step }}")
    (root / "tools").mkdir()
    tool = root / "tools" / "t"
    tool.write_text("#!/bin/sh\necho t\n")
    tool.chmod(0o755)
    (root / "scaffold.yaml").write_text("version: 1\n")
    (root / "private").write_text("secret")
    (root / "private").chmod(0o600)
    return root


def test_restore_undoes_every_kind_of_change_exactly(tmp_path):
    root = _tree(tmp_path / "s")
    accepted = snapshot(root)
    (root / "prompts" / "a.j2").write_text("changed")              # contents
    (root / "tools" / "t").chmod(0o644)                            # mode
    (root / "private").chmod(0o644)                                # a non-default mode
    (root / "scaffold.yaml").unlink()                              # deleted
    (root / "new.txt").write_text("added")                         # added
    (root / "deep" / "er").mkdir(parents=True)                     # added folders
    (root / "deep" / "er" / "x").write_text("x")
    shutil.rmtree(root / "prompts")                                # a folder replaced by a file
    (root / "prompts").write_text("not a folder")
    os.symlink("/etc/passwd", root / "tools" / "link")             # a link
    (root / "tools").chmod(0o700)                                  # a folder's mode
    changed = changed_paths(accepted, snapshot(root))
    assert changed
    restore(root, accepted, changed)
    assert snapshot(root) == accepted
    assert changed_paths(accepted, snapshot(root)) == []


def test_fingerprint_sees_every_change_and_nothing_else(tmp_path):
    root = _tree(tmp_path / "s")
    before = fingerprint(root)
    assert fingerprint(root) == before
    (root / "tools" / "t").chmod(0o700)
    after_chmod = fingerprint(root)
    assert after_chmod != before
    (root / "prompts" / "b.j2").write_text("")
    assert fingerprint(root) != after_chmod
    (root / "prompts" / "b.j2").unlink()
    os.utime(root / "prompts" / "a.j2", ns=(1, 1))  # same size, same bytes, other time: still noticed
    assert fingerprint(root) != after_chmod


@pytest.mark.parametrize(("language", "good", "bad", "line"), [
    ("python", "def f(x):\n    return x\n", "import sys\ndef f(:\n    pass\n", 2),
    ("bash", 'if [ -n "$1" ]; then\n  echo "$1"\nfi\n', 'echo start\nif [ -n "$1" ]; then\n  echo "$1"\n', None),
    ("javascript", "#!/usr/bin/env node\nconsole.log(process.argv);\n", "#!/usr/bin/env node\nconsole.log(\n", None),
])
def test_syntax_check_per_language(language, good, bad, line):
    assert syntax_problem(good.encode(), language) is None
    problem = syntax_problem(bad.encode(), language)
    assert problem and problem.startswith(f"{language} syntax error")
    if line:
        assert f"at line {line}" in problem


@pytest.mark.parametrize(("shebang", "language"), [
    ("#!/usr/bin/env python3", "python"), ("#!/usr/bin/python3.11", "python"), ("#!/usr/bin/env -S python3 -u", "python"),
    ("#!/bin/bash", "bash"), ("#!/bin/sh", "bash"), ("#!/usr/bin/env node", "javascript"), ("#!/usr/bin/perl", None),
])
def test_the_language_comes_from_the_shebang(shebang, language):
    assert interpreter_language(shebang) == language


@pytest.mark.parametrize(("name", "fragment"), [
    ("../x", "path separator"), ("a/b", "path separator"), (".hidden", "path separator"),
    ("has space", "not allowed"), ("git", "clashes"), ("bash", "clashes"), ("rm", "clashes"), ("cd", "clashes"),
    ("python", "clashes"), ("live-swe", "clashes"), ("x" * 65, "not allowed"),
])
def test_tool_names_that_are_refused(name, fragment):
    assert fragment in name_problem(name)


def test_tool_names_that_are_fine():
    for name in ("find-def", "run_tests", "grep2", "T"):
        assert name_problem(name) is None


def test_a_perl_tool_skips_the_syntax_check_but_not_the_header(tmp_path):
    tool = tmp_path / "count"
    tool.write_text("#!/usr/bin/perl\n# live-swe-tool: count\n# description: Count\n# usage: count FILE\nprint 1;\n")
    tool.chmod(0o755)
    assert static_problem(tool, "count") is None
    tool.write_text("#!/usr/bin/perl\n# description: Count\n# usage: count FILE\nprint 1;\n")
    assert "first comment lines" in static_problem(tool, "count")
    tool.write_text("#!/usr/bin/perl\n# live-swe-tool: count\n# description: Count\n# usage: other FILE\n")
    assert "usage line must start with the tool's name" in static_problem(tool, "count")


def test_stdlib_only_imports_are_checked_statically():
    import ast

    assert import_problems(ast.parse("import os, json\nfrom collections import deque\nimport xml.etree.ElementTree\n")) == []
    problems = import_problems(ast.parse(
        "import numpy\nfrom requests import get\nfrom . import sibling\n__import__('yaml')\n"
        "import importlib\nimportlib.import_module(name)\n"))
    assert len(problems) == 5
    assert any("'numpy'" in p for p in problems) and any("'requests'" in p for p in problems)
    assert any("relative import" in p for p in problems) and any("'yaml'" in p for p in problems)
    assert any("computed name" in p for p in problems)


def _refusal(check) -> str:
    try:
        check()
    except Refused as exc:
        return str(exc)
    return "accepted"


def test_each_template_renders_over_the_context_of_its_role(tmp_path):
    root = tmp_path / "s"
    shutil.copytree(resource_path("scaffold"), root)
    shutil.copytree(resource_path("prompts"), root / "prompts")
    policy = load_policy(root)
    assert set(check_templates(root, policy)) == {"system", "instance", "observation", "format_error", "reflection"}
    # `task` exists for the instance prompt, not for the system prompt: refused there
    (root / "prompts" / "system.j2").write_text("You work on {{ task }}")
    with pytest.raises(Refused, match="system prompt: UndefinedError: 'task' is undefined"):
        check_templates(root, policy)
    # an error hidden in a branch the sample does not take is still found (the variant takes it)
    (root / "prompts" / "system.j2").write_text("{% if tools %}{{ tools | length }}{% else %}{{ tool_list }}{% endif %}")
    with pytest.raises(Refused, match="'tool_list' is undefined"):
        check_templates(root, policy)
    # the sandbox refuses attribute tricks
    (root / "prompts" / "system.j2").write_text("{{ ''.__class__.__mro__ }}")
    with pytest.raises(Refused, match="does not render"):
        check_templates(root, policy)
    # a template that would render for ages is stopped and refused
    (root / "prompts" / "system.j2").write_text("{% for a in range(99999) %}{% for b in range(99999) %}{% endfor %}{% endfor %}")
    with pytest.raises(Refused, match="took more than 2s to render"):
        check_templates(root, policy)
    # ... on a worker thread too (the TUI's agent), where no timer signal can interrupt it
    outcome = []
    worker = threading.Thread(target=lambda: outcome.append(_refusal(lambda: check_templates(root, policy))))
    worker.start()
    worker.join(30)
    assert not worker.is_alive() and "took more than 2s to render" in outcome[0]
    # a syntax error names the line
    (root / "prompts" / "system.j2").write_text("ok\n{% if %}")
    with pytest.raises(Refused, match=r"prompts/system.j2 \(line 2\)"):
        check_templates(root, policy)


def test_budget_gates(tmp_path):
    kernel = KernelLimits(step_limit=100, cost_limit=2.0)
    root = tmp_path / "s"
    root.mkdir()
    previous = ScaffoldPolicy.model_validate({"limits": {"step_limit": 50}})
    (root / "scaffold.yaml").write_text("limits:\n  step_limit: 20\n  cost_limit: 1.0\n")
    assert check_policy(root, previous, kernel).limits.step_limit == 20  # tighter: fine
    (root / "scaffold.yaml").write_text("limits:\n  step_limit: 60\n")
    with pytest.raises(Refused, match="step_limit: 50 -> 60"):
        check_policy(root, previous, kernel)
    (root / "scaffold.yaml").write_text("limits:\n  step_limit: null\n")  # back to the kernel's 100: looser
    with pytest.raises(Refused, match="step_limit: 50 -> 100"):
        check_policy(root, previous, kernel)
    (root / "scaffold.yaml").write_text("limits:\n  step_limit: 50\n  cost_limit: 9.0\n")
    with pytest.raises(Refused, match="cost_limit: 9.0 is above the kernel's 2.0"):
        check_policy(root, previous, kernel)
    (root / "scaffold.yaml").write_text("limits:\n  step_limit: 50\n  steps: 3\n")
    with pytest.raises(Refused, match="limits.steps: Extra inputs are not permitted"):
        check_policy(root, previous, kernel)
    # a cost limit of 0 means "no cost budget" to the kernel: a scaffold cannot ask for it
    (root / "scaffold.yaml").write_text("limits:\n  step_limit: 50\n  cost_limit: 0\n")
    with pytest.raises(Refused, match="cost_limit"):
        check_policy(root, previous, kernel)
    # under a kernel without a cost budget, a scaffold may set one; dropping it again loosens
    unlimited = KernelLimits(step_limit=100, cost_limit=0)
    (root / "scaffold.yaml").write_text("limits:\n  step_limit: 50\n  cost_limit: 1.5\n")
    tightened = check_policy(root, previous, unlimited)
    assert effective_limits(unlimited, tightened.limits).cost_limit == 1.5
    (root / "scaffold.yaml").write_text("limits:\n  step_limit: 50\n")
    with pytest.raises(Refused, match="cost_limit: 1.5 -> no limit"):
        check_policy(root, tightened, unlimited)


def test_the_reason_is_the_thought_trimmed():
    assert stated_reason("THOUGHT: Add a tool\n  to find things.\n\n```bash\nls\n```") == "Add a tool to find things."
    assert stated_reason("```bash\nls\n```") == ""
    long = stated_reason("THOUGHT: " + "word " * 200)
    assert len(long) == 300 and long.endswith("…")


def test_changed_paths_are_sorted_and_judged_without_touching_anything(tmp_path):
    (tmp_path / "tools" / "sub").mkdir(parents=True)
    (tmp_path / "prompts").mkdir()
    for rel in ("tools/find", "tools/.hidden", "tools/sub/x", "prompts/system.j2", "hooks.py", "notes.txt",
                "tools/__pycache__/a.pyc"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    (tmp_path / "link").symlink_to("notes.txt")
    current = snapshot(tmp_path)
    changed = sorted(rel for rel in current if current[rel].kind != "dir") + ["tools/gone"]
    paths = classify(changed, current, "tools", {"hooks.py"})
    assert paths.junk == ["tools/__pycache__/a.pyc"]
    assert paths.tools == {"find": "tools/find", "gone": "tools/gone"}
    assert paths.scaffold == ["hooks.py", "prompts/system.j2"]
    assert [rel for rel, _ in paths.strays] == ["link", "notes.txt", "tools/.hidden", "tools/sub/x"]

    verdict = (judge_strays(paths.strays, {"notes.txt": "../x"}, "tools", 3)
               + judge_tools([ToolCheck("find", "tools/find", problem="no usage line"),
                              ToolCheck("gone", "tools/gone", deleted=True)], 3)
               + judge_scaffold(paths.scaffold, None))
    assert verdict.accepted == ["tools/gone", "hooks.py", "prompts/system.j2"]
    assert verdict.refused == ["link", "notes.txt", "tools/.hidden", "tools/sub/x", "tools/find"]
    assert [(e.kind, e.name) for e in verdict.tool_events] == [("refused", "../x"), ("refused", "find")]
    assert len(verdict.rejects) == 2 and verdict.rejects[1] == (["tools/find"], "no usage line")
    assert "The file was removed" in verdict.notes[0] and "restored" not in verdict.notes[2]

    after = dict(current, **{"hooks.py": Entry("file", 0o644, b"y", 1)})
    later = refuse_changed(verdict, current, after)
    assert later.accepted == ["tools/gone", "prompts/system.j2"] and later.refused[-1] == "hooks.py"
    assert later.rejects[-1] == (["hooks.py"], "changed while its gates were running")
    assert refuse_changed(verdict, current, current) is verdict
    assert judge_scaffold(["scaffold.yaml"], "bad policy").notes == [
        "Scaffold: change to scaffold.yaml refused: bad policy. The files were restored to the last accepted version."]
