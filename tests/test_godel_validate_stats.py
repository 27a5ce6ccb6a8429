"""validate's statistics fields (pairs, interval, p-value) on hand-computed cases, with the synthetic
setup of test_godel_evolve."""

from __future__ import annotations

import json

import pytest
from test_godel_cli import _marked_scaffold
from test_godel_evolve import IDS, LocalTaskEvaluator, is_easy

from godel.archive import Archive
from godel.validate import validate

# -- validate's statistics fields on a hand-computed case -----------------------------------------


def test_validate_json_pairs_interval_and_p_value_on_a_hand_computed_case(tmp_path):
    # task-01..04: the seed solves the EASY ones (02, 04), the marked scaffold all four.
    result = validate(f"path:{_marked_scaffold(tmp_path)}", "seed", suite="tasks", model="solver",
                      instance_ids=["task-03", "task-01", "task-04", "task-02"], evaluate=LocalTaskEvaluator(),
                      resamples=10000, seed=4)
    report = json.loads(json.dumps(result.to_json()))  # what `validate --json` prints
    assert report["pairs"] == [
        {"instance_id": "task-01", "candidate": True, "baseline": False},
        {"instance_id": "task-02", "candidate": True, "baseline": True},
        {"instance_id": "task-03", "candidate": True, "baseline": False},
        {"instance_id": "task-04", "candidate": True, "baseline": True},
    ]
    assert (report["n"], report["wins"], report["losses"], report["delta"]) == (4, 2, 0, 0.5)
    # McNemar: 2 discordant pairs, both won: 2 * P(Binomial(2, 1/2) <= 0) = 2 * 1/4.
    assert report["p_value"] == pytest.approx(0.5)
    # The per-instance differences are [1, 0, 1, 0]: a resampled mean is Binomial(4, 1/2) / 4, which is
    # 0 and 1 each with probability 1/16 > 2.5%, so the 2.5% and 97.5% percentiles are exactly 0 and 1.
    assert (report["ci_low"], report["ci_high"]) == (0.0, 1.0)
    assert (report["resamples"], report["seed"], report["alpha"]) == (10000, 4, 0.05)
    assert report["verdict"] == "no evidence"
    recorded = Archive.default().validations()[-1]
    assert {k: recorded[k] for k in ("ci_low", "ci_high", "p_value")} == {
        k: report[k] for k in ("ci_low", "ci_high", "p_value")}


def test_validate_json_on_a_clear_regression(tmp_path):
    # Against the marked scaffold, the seed loses the 3 HARD tasks of task-01..06 and wins none.
    marked = f"path:{_marked_scaffold(tmp_path)}"
    report = validate("seed", marked, suite="tasks", model="solver", instance_ids=IDS[:6],
                      evaluate=LocalTaskEvaluator(), resamples=2000).to_json()
    assert [(p["candidate"], p["baseline"]) for p in report["pairs"]] == [(is_easy(i), True) for i in IDS[:6]]
    assert (report["wins"], report["losses"], report["delta"]) == (0, 3, -0.5)
    assert report["p_value"] == pytest.approx(2 / 8)  # 2 * 0.5**3
    # Differences [-1, 0] * 3: the mean of 6 resamples is -Binomial(6, 1/2) / 6; P(all -1) = 1/64 < 2.5%
    # < P(at most one 0) = 7/64, so the 2.5% percentile is -5/6; symmetrically the 97.5% one is -1/6.
    assert report["ci_low"] == pytest.approx(-5 / 6) and report["ci_high"] == pytest.approx(-1 / 6)
    assert report["verdict"] == "no evidence"  # the interval excludes 0 but p = 0.25 does not reject
