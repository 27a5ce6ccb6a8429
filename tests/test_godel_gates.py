"""The gates a child scaffold passes before it is evaluated (the session gates, applied whole)."""

from __future__ import annotations

import os

import pytest

from godel.gates import check_child
from live_swe.scaffolding.refs import materialize


@pytest.fixture
def pair(tmp_path):
    parent, child = tmp_path / "parent", tmp_path / "child"
    materialize("seed", parent, library=None)
    materialize("seed", child, library=None)
    return parent, child


def _edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


CASES = {
    "unknown key": (lambda c: (c / "scaffold.yaml").write_text((c / "scaffold.yaml").read_text() + "bogus_key: 1\n"),
                    "bogus_key"),
    "raised budget": (lambda c: _edit(c / "scaffold.yaml", "step_limit: null", "step_limit: 100000"), "step_limit"),
    "template": (lambda c: (c / "prompts" / "observation.j2").write_text("{{ no_such_variable }}"),
                 "no_such_variable"),
    "hooks syntax": (lambda c: (c / "hooks.py").write_text("def after_step(:\n"), "hooks.py"),
    "hooks import": (lambda c: (c / "hooks.py").write_text("import requests\n"), "requests"),
    "hooks smoke": (lambda c: (c / "hooks.py").write_text("def after_step(step, command, rc):\n    return 5\n"),
                    "after_step"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_broken_child_is_refused_with_its_reason(pair, case):
    parent, child = pair
    break_it, expected = CASES[case]
    break_it(child)
    problems = check_child(parent, child)
    assert problems and expected in " ".join(problems)


def test_good_children_pass(pair):
    parent, child = pair
    assert check_child(parent, child) == []
    _edit(child / "scaffold.yaml", "step_limit: null", "step_limit: 40")  # tightening is fine
    _edit(child / "scaffold.yaml", "every: 1", "every: 3")
    (child / "prompts" / "system.j2").write_text((child / "prompts" / "system.j2").read_text() + "\nBe brief.\n")
    tool = child / "tools" / "find-def"
    tool.write_text('#!/bin/bash\n# live-swe-tool: find-def\n# description: find a definition\n'
                    '# usage: find-def NAME\nif [ "$1" = --help ]; then echo "usage: find-def NAME"; exit 0; fi\n'
                    'grep -rn "def $1" .\n')
    tool.chmod(0o755)
    assert check_child(parent, child) == []


def test_a_broken_new_tool_is_refused(pair):
    parent, child = pair
    tool = child / "tools" / "bad"
    tool.write_text("#!/bin/bash\n# live-swe-tool: bad\n# description: x\n# usage: bad\nif then fi(\n")
    os.chmod(tool, 0o755)
    problems = check_child(parent, child)
    assert problems and "tool bad" in problems[0] and "syntax" in problems[0]
