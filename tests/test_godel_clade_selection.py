"""Clade selection inside a real evolve run (the synthetic setup of test_godel_evolve: real agent
runs, scripted models, no Docker)."""

from __future__ import annotations

import random

from test_godel_evolve import config, is_easy, make_evolver

from godel.archive import Archive
from godel.selection import Candidate, select_parents
from godel.staging import Stage

# -- clade selection in a real run ---------------------------------------------------------------

# With this seed the two rules disagree in generation 2: the clade rule keeps drawing the root (its
# clade holds a perfect child), DGM the root's neutral child (the same score, but no children yet).
CLADE_SEED = 3


def _thompson_by_hand(clades: dict[str, tuple[int, int]], k: int, rng: random.Random) -> list[str]:
    """Each draw: theta ~ Beta(1 + successes, 1 + failures) per candidate (in id order), largest wins."""
    chosen = []
    for _ in range(k):
        theta = {node: rng.betavariate(1 + s, 1 + f) for node, (s, f) in clades.items()}
        chosen.append(max(theta, key=theta.__getitem__))
    return chosen


def test_evolve_with_clade_selection_draws_parents_by_the_clade_rule(tmp_path):
    cfg = config(generations=2, children=3, seed=CLADE_SEED, selection="clade",
                 stages=[Stage(size=2, threshold=0.0), Stage(size=5, threshold=0.0)])
    plan = {"g1c0": "improve", "g1c1": "neutral", "g1c2": "break"}  # generation 2: noop children
    evolver = make_evolver(cfg, {**plan, "g2c0": "noop", "g2c1": "noop", "g2c2": "noop"})
    state = evolver.run()
    assert state.status == "done" and state.config.selection == "clade"
    archive = Archive.default()
    root = archive.get(state.root)
    improved = archive.get(state.children["g1c0"].node)
    neutral = archive.get(state.children["g1c1"].node)
    assert state.children["g1c2"].status == "rejected"
    assert state.generations[0].parents == [root.id] * 3  # the root was the only node

    # The archive generation 2 chose from: the root (r of 5 solved), its perfect child (5 of 5, so not a
    # candidate) and its neutral child (r of 5 again).
    r = sum(is_easy(i) for i in state.selection_split)
    assert (root.resolved, improved.resolved, neutral.resolved) == (r, 5, r)
    # Clades pooled by hand: the root's clade holds all three nodes, the neutral child only itself.
    clades = {root.id: (r + 5 + r, (5 - r) + 0 + (5 - r)), neutral.id: (r, 5 - r)}
    expected = _thompson_by_hand(clades, 3, random.Random(f"{CLADE_SEED}:2"))
    assert state.generations[1].parents == expected
    assert [state.children[f"g2c{n}"].parent for n in range(3)] == expected

    # DGM on the same archive and the same random stream would have chosen otherwise, so the check
    # above tells the two rules apart.
    before = [Candidate(root.id, None, root.results, 3), Candidate(improved.id, root.id, improved.results, 0),
              Candidate(neutral.id, root.id, neutral.results, 0)]
    assert select_parents(before, 3, method="dgm", rng=random.Random(f"{CLADE_SEED}:2")) != expected
