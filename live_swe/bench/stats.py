"""Confidence intervals for resolve rates."""

from __future__ import annotations

import math

Z_95 = 1.959963984540054  # the 97.5th percentile of the standard normal distribution


def wilson_interval(successes: int, total: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95% by default).

    Unlike the normal approximation it stays inside [0, 1] and is sound for small samples and for
    rates of 0 or 1, which are common on small benchmark slices. With no trials nothing is known,
    so the interval is the whole of [0, 1].
    """
    if total < 0 or successes < 0 or successes > total:
        raise ValueError(f"need 0 <= successes <= total, got {successes} of {total}")
    if total == 0:
        return 0.0, 1.0
    p = successes / total
    z2 = z * z
    denominator = 1 + z2 / total
    centre = (p + z2 / (2 * total)) / denominator
    half_width = z * math.sqrt(p * (1 - p) / total + z2 / (4 * total * total)) / denominator
    low, high = centre - half_width, centre + half_width
    # At a rate of 0 or 1 the bound is exactly 0 or 1; float arithmetic misses it by an ulp.
    if successes == 0:
        low = 0.0
    if successes == total:
        high = 1.0
    return max(0.0, low), min(1.0, high)
