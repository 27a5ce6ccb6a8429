"""The verdict statistics on hand-checked cases."""

from __future__ import annotations

import pytest

from godel.stats import (
    BETTER,
    NO_EVIDENCE,
    WORSE,
    Pair,
    bootstrap_interval,
    compare,
    mcnemar_exact,
    pair_outcomes,
)


@pytest.mark.parametrize(
    ("wins", "losses", "expected"),
    [
        (0, 0, 1.0),
        (0, 5, 2 * 1 / 32),  # only the all-losses table is as extreme: 2 * 0.5**5
        (0, 6, 2 * 1 / 64),
        (1, 9, 2 * (1 + 10) / 1024),  # C(10,0) + C(10,1) in the lower tail
        (3, 3, 1.0),  # 2 * (1 + 6 + 15 + 20) / 64 > 1, capped
        (2, 7, 2 * (1 + 9 + 36) / 512),
    ],
)
def test_mcnemar_exact_matches_hand_computed_binomial_tails(wins, losses, expected):
    assert mcnemar_exact(wins, losses) == pytest.approx(expected)
    assert mcnemar_exact(losses, wins) == pytest.approx(expected)  # two-sided: symmetric


def _pairs(wins: int, losses: int, both: int, neither: int) -> list[Pair]:
    rows = [(True, False)] * wins + [(False, True)] * losses + [(True, True)] * both + [(False, False)] * neither
    return [Pair(f"i{n:03d}", c, b) for n, (c, b) in enumerate(rows)]


def test_pairing_treats_a_missing_side_as_unresolved():
    pairs = pair_outcomes({"a": True, "b": False}, {"a": True, "c": True})
    assert pairs == [Pair("a", True, True), Pair("b", False, False), Pair("c", False, True)]


def test_bootstrap_interval_brackets_the_delta_and_is_seeded():
    diffs = [1] * 8 + [-1] * 2 + [0] * 10
    low, high = bootstrap_interval(diffs, resamples=4000, seed=7)
    assert low < 6 / 20 < high
    assert -1 <= low and high <= 1
    assert (low, high) == bootstrap_interval(diffs, resamples=4000, seed=7)
    # A constant difference has no spread at all.
    assert bootstrap_interval([1] * 5, resamples=500, seed=1) == (1.0, 1.0)
    assert bootstrap_interval([0] * 5, resamples=500, seed=1) == (0.0, 0.0)


def test_bootstrap_interval_width_shrinks_with_more_instances():
    small = bootstrap_interval([1, 0, 0, -1, 1] * 4, resamples=3000, seed=3)
    large = bootstrap_interval([1, 0, 0, -1, 1] * 40, resamples=3000, seed=3)
    assert (large[1] - large[0]) < (small[1] - small[0])


def test_verdicts_on_hand_checked_tables():
    better = compare(_pairs(wins=6, losses=0, both=2, neither=2), resamples=2000)
    assert better.p_value == pytest.approx(2 / 64)
    assert better.delta == pytest.approx(0.6)
    assert better.ci_low > 0 and better.verdict == BETTER

    # 5 wins and no loss: p = 0.0625, not enough evidence at alpha 0.05.
    weak = compare(_pairs(wins=5, losses=0, both=3, neither=2), resamples=2000)
    assert weak.p_value == pytest.approx(0.0625) and weak.verdict == NO_EVIDENCE

    worse = compare(_pairs(wins=0, losses=8, both=4, neither=0), resamples=2000)
    assert worse.p_value == pytest.approx(2 / 256)
    assert worse.ci_high < 0 and worse.verdict == WORSE

    tie = compare(_pairs(wins=3, losses=3, both=5, neither=5), resamples=2000)
    assert tie.delta == 0 and tie.p_value == 1.0 and tie.verdict == NO_EVIDENCE
    assert tie.ci_low < 0 < tie.ci_high

    assert (tie.wins, tie.losses, tie.candidate_resolved, tie.baseline_resolved, tie.n) == (3, 3, 8, 8, 16)
