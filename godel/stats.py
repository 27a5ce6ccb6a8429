"""Paired comparison of two scaffolds on the same instances.

Each instance gives a pair (resolved by the candidate?, resolved by the baseline?). From the pairs:

- the resolved delta (candidate rate minus baseline rate) with a paired bootstrap 95% interval
  (instances resampled with replacement, seeded so a report can be reproduced);
- McNemar's exact two-sided p-value: under "no difference" each discordant pair is a fair coin,
  so the count of pairs won by the candidate is Binomial(b + c, 1/2);
- a verdict: ``better`` / ``worse`` only when McNemar rejects at ``alpha`` *and* the bootstrap
  interval excludes zero on the same side; otherwise ``no evidence``.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from math import comb

BETTER, NO_EVIDENCE, WORSE = "better", "no evidence", "worse"


@dataclass(frozen=True)
class Pair:
    instance_id: str
    candidate: bool
    baseline: bool


@dataclass(frozen=True)
class Comparison:
    n: int
    candidate_resolved: int
    baseline_resolved: int
    wins: int  # candidate resolved, baseline not (McNemar's b)
    losses: int  # baseline resolved, candidate not (McNemar's c)
    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    verdict: str
    alpha: float
    resamples: int
    seed: int

    def to_json(self) -> dict:
        return asdict(self)


def pair_outcomes(candidate: dict[str, bool], baseline: dict[str, bool]) -> list[Pair]:
    """Pairs for the instances both sides have, in sorted id order (missing counts as unresolved
    only when the other side has the instance: an instance that crashed is a failure, not a gap)."""
    ids = sorted(set(candidate) | set(baseline))
    return [Pair(i, bool(candidate.get(i, False)), bool(baseline.get(i, False))) for i in ids]


def mcnemar_exact(wins: int, losses: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts b (wins) and c (losses)."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def bootstrap_interval(diffs: list[int], *, resamples: int = 10000, seed: int = 0,
                       level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of the mean per-instance difference (-1, 0 or +1), resampling instances."""
    n = len(diffs)
    if n == 0:
        return 0.0, 0.0
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
    low_index = int((1 - level) / 2 * resamples)
    high_index = min(resamples - 1, int((1 + level) / 2 * resamples))
    return means[low_index], means[high_index]


def compare(pairs: list[Pair], *, alpha: float = 0.05, resamples: int = 10000, seed: int = 0) -> Comparison:
    n = len(pairs)
    wins = sum(1 for p in pairs if p.candidate and not p.baseline)
    losses = sum(1 for p in pairs if p.baseline and not p.candidate)
    diffs = [int(p.candidate) - int(p.baseline) for p in pairs]
    delta = sum(diffs) / n if n else 0.0
    low, high = bootstrap_interval(diffs, resamples=resamples, seed=seed)
    p_value = mcnemar_exact(wins, losses)
    verdict = NO_EVIDENCE
    if p_value < alpha and low > 0 and delta > 0:
        verdict = BETTER
    elif p_value < alpha and high < 0 and delta < 0:
        verdict = WORSE
    return Comparison(
        n=n,
        candidate_resolved=sum(p.candidate for p in pairs),
        baseline_resolved=sum(p.baseline for p in pairs),
        wins=wins,
        losses=losses,
        delta=delta,
        ci_low=low,
        ci_high=high,
        p_value=p_value,
        verdict=verdict,
        alpha=alpha,
        resamples=resamples,
        seed=seed,
    )
