"""The contract scenario suite (tests/fixtures/contract_scenarios): every labelled violation is
detected, nothing else is, the run ends as labelled, and no hard violation reaches the patch."""

from __future__ import annotations

import pytest
from conftest import make_git_repo
from contract_scenarios import load_scenarios, run_scenario

SCENARIOS = load_scenarios()


def test_the_suite_is_large_and_covers_every_builtin_rule():
    from live_swe.contracts.load import BENCH, BUILTIN, read

    assert len(SCENARIOS) >= 40
    labelled = {rule for s in SCENARIOS for step in s["steps"] for rule in step.get("expect") or []}
    rules = {r.id for c in (read(BUILTIN), read(BENCH)) for _, r in c.rules()} - {"within-budget"}
    assert rules <= labelled, rules - labelled
    assert any(not any(step.get("expect") for step in s["steps"]) for s in SCENARIOS)  # benign ones too


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_scenario(scenario, tmp_path):
    outcome = run_scenario(scenario, tmp_path, make_git_repo)
    assert outcome.found - outcome.expected == set(), "false positives"
    assert outcome.expected - outcome.found == set(), "missed violations"
    assert outcome.problems == []
    hard = {x for x in outcome.expected if not x[1].startswith(("soft-", "test-after", "small-diff"))}
    assert hard <= outcome.contained  # refused, undone or masked, never only noticed
