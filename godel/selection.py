"""Parent selection over the archive's nodes.

``dgm`` (the Darwin Gödel Machine's rule): each candidate i with score a_i (resolved rate on the
selection split) and n_i children gets weight

    w_i = sigmoid(lambda * (a_i - a_0)) * 1 / (1 + n_i)

where a_0 is the median score of the candidates (``midpoint="median"``) or a fixed number; parents
are drawn with probability w_i / sum(w), with replacement. Nodes that solve everything are not
candidates (nothing left to learn from their failures) unless every node does.

``clade`` (in the spirit of the Huxley-Gödel Machine): a node is judged by its clade, the node and
all its descendants, whose pooled per-instance results give successes s and failures f. Each draw is
Thompson sampling: theta_i ~ Beta(1 + s, 1 + f) for every candidate, the largest theta wins.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping
from dataclasses import dataclass

DGM, CLADE = "dgm", "clade"
SELECTIONS = (DGM, CLADE)


@dataclass(frozen=True)
class Candidate:
    id: str
    parent: str | None
    results: Mapping[str, bool]
    children: int  # children attempted from this node (accepted or not)

    @property
    def score(self) -> float:
        return sum(self.results.values()) / len(self.results) if self.results else 0.0


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def eligible(candidates: list[Candidate]) -> list[Candidate]:
    open_ = [c for c in candidates if c.score < 1.0]
    return open_ or list(candidates)


def dgm_weights(candidates: list[Candidate], *, steepness: float = 10.0,
                midpoint: float | str = "median") -> dict[str, float]:
    """Normalised selection probabilities of the DGM rule."""
    pool = eligible(candidates)
    if not pool:
        return {}
    centre = statistics.median(c.score for c in pool) if midpoint == "median" else float(midpoint)
    raw = {c.id: sigmoid(steepness * (c.score - centre)) / (1 + c.children) for c in pool}
    total = sum(raw.values())
    return {key: value / total for key, value in raw.items()}


def clade_counts(candidates: list[Candidate]) -> dict[str, tuple[int, int]]:
    """(successes, failures) pooled over each node's clade (itself and every descendant)."""
    kids: dict[str | None, list[str]] = {}
    by_id = {c.id: c for c in candidates}
    for c in candidates:
        kids.setdefault(c.parent, []).append(c.id)
    counts = {}
    for c in candidates:
        successes = failures = 0
        stack = [c.id]
        while stack:
            node = by_id[stack.pop()]
            successes += sum(node.results.values())
            failures += len(node.results) - sum(node.results.values())
            stack.extend(kids.get(node.id, []))
        counts[c.id] = (successes, failures)
    return counts


def select_parents(candidates: list[Candidate], k: int, *, method: str = DGM, rng: random.Random,
                   steepness: float = 10.0, midpoint: float | str = "median") -> list[str]:
    """Draw ``k`` parent ids (with replacement)."""
    if method not in SELECTIONS:
        raise ValueError(f"unknown selection {method!r}; use one of {', '.join(SELECTIONS)}")
    pool = eligible(candidates)
    if not pool or k <= 0:
        return []
    if method == DGM:
        weights = dgm_weights(candidates, steepness=steepness, midpoint=midpoint)
        ids = list(weights)
        return rng.choices(ids, weights=[weights[i] for i in ids], k=k)
    counts = clade_counts(candidates)
    chosen = []
    for _ in range(k):
        draws = {c.id: rng.betavariate(1 + counts[c.id][0], 1 + counts[c.id][1]) for c in pool}
        chosen.append(max(draws, key=draws.__getitem__))
    return chosen
