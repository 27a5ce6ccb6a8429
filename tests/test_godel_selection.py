"""Parent selection follows its formula: DGM's score-weighted rule and the clade rule."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from godel.selection import Candidate, clade_counts, dgm_weights, select_parents


def _results(solved: int, total: int) -> dict[str, bool]:
    return {f"i{n}": n < solved for n in range(total)}


ARCHIVE = [
    Candidate("n0", None, _results(1, 5), children=0),  # score 0.2
    Candidate("n1", "n0", _results(1, 2), children=1),  # 0.5
    Candidate("n2", "n0", _results(4, 5), children=2),  # 0.8
    Candidate("n3", "n2", _results(5, 5), children=0),  # 1.0: nothing left to learn, not a candidate
]


def _by_hand(midpoint: float) -> dict[str, float]:
    # weight = 1 / (1 + exp(-10 (score - midpoint))) * 1 / (1 + children)
    raw = {
        "n0": 1 / (1 + math.exp(-10 * (0.2 - midpoint))) / 1,
        "n1": 1 / (1 + math.exp(-10 * (0.5 - midpoint))) / 2,
        "n2": 1 / (1 + math.exp(-10 * (0.8 - midpoint))) / 3,
    }
    total = sum(raw.values())
    return {k: v / total for k, v in raw.items()}


def test_dgm_probabilities_centred_at_the_median():
    weights = dgm_weights(ARCHIVE)  # median of 0.2, 0.5, 0.8 is 0.5
    expected = _by_hand(0.5)
    assert set(weights) == {"n0", "n1", "n2"}
    for key, value in expected.items():
        assert weights[key] == pytest.approx(value)
    # Written out: 0.0474 / 0.25 / 0.3175 over their sum 0.6150.
    assert weights["n2"] == pytest.approx(0.51634, abs=1e-4)
    assert weights["n0"] == pytest.approx(0.07712, abs=1e-4)


def test_dgm_probabilities_with_a_fixed_midpoint():
    weights = dgm_weights(ARCHIVE, midpoint=0.3)
    for key, value in _by_hand(0.3).items():
        assert weights[key] == pytest.approx(value)


def test_dgm_draws_match_the_probabilities():
    rng = random.Random(11)
    draws = Counter(select_parents(ARCHIVE, 20000, method="dgm", rng=rng))
    assert "n3" not in draws
    for key, value in _by_hand(0.5).items():
        assert draws[key] / 20000 == pytest.approx(value, abs=0.012)


def test_more_children_lowers_a_nodes_weight():
    fewer = dgm_weights([Candidate("a", None, _results(1, 2), 0), Candidate("b", None, _results(1, 2), 0)])
    more = dgm_weights([Candidate("a", None, _results(1, 2), 0), Candidate("b", None, _results(1, 2), 3)])
    assert fewer["a"] == pytest.approx(0.5)
    assert more["a"] == pytest.approx(4 / 5)  # 1/(1+0) against 1/(1+3) at equal scores


def test_all_perfect_nodes_remain_candidates():
    perfect = [Candidate("a", None, _results(2, 2), 0), Candidate("b", "a", _results(3, 3), 1)]
    assert set(dgm_weights(perfect)) == {"a", "b"}


def test_clade_counts_pool_each_node_with_all_its_descendants():
    counts = clade_counts(ARCHIVE)
    assert counts == {
        "n0": (1 + 1 + 4 + 5, 4 + 1 + 1 + 0),
        "n1": (1, 1),
        "n2": (4 + 5, 1),
        "n3": (5, 0),
    }


def _beta_win_probabilities(params: dict[str, tuple[int, int]], grid: int = 20000) -> dict[str, float]:
    """P(theta_i is the largest) = integral of pdf_i(t) * prod_j cdf_j(t) dt, on a grid."""

    def pdf(t, a, b):
        return math.exp((a - 1) * math.log(t) + (b - 1) * math.log(1 - t)
                        + math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b))

    ts = [(k + 0.5) / grid for k in range(grid)]
    cdfs = {}
    for key, (a, b) in params.items():
        running, values = 0.0, []
        for t in ts:
            running += pdf(t, a, b) / grid
            values.append(running)
        cdfs[key] = values
    wins = {}
    for key, (a, b) in params.items():
        total = 0.0
        for index, t in enumerate(ts):
            others = math.prod(cdfs[o][index] for o in params if o != key)
            total += pdf(t, a, b) * others / grid
        wins[key] = total
    return wins


def test_clade_thompson_draws_match_the_beta_integrals():
    counts = clade_counts(ARCHIVE)
    # n3 solves everything so it is not drawn; the others compete with Beta(1 + s, 1 + f).
    params = {k: (1 + s, 1 + f) for k, (s, f) in counts.items() if k != "n3"}
    expected = _beta_win_probabilities(params)
    assert sum(expected.values()) == pytest.approx(1.0, abs=1e-3)
    draws = Counter(select_parents(ARCHIVE, 6000, method="clade", rng=random.Random(5)))
    assert "n3" not in draws
    for key, value in expected.items():
        assert draws[key] / 6000 == pytest.approx(value, abs=0.02)
    # The clade of n2 (9 of 10 solved) is the strongest; n1 (1 of 2) the weakest evidence.
    assert draws["n2"] > draws["n0"] > 0


def test_unknown_selection_is_refused():
    with pytest.raises(ValueError, match="unknown selection"):
        select_parents(ARCHIVE, 1, method="greedy", rng=random.Random(0))
