"""The token bucket."""

from __future__ import annotations

import time
from collections.abc import Callable


class TokenBucket:
    """Holds up to ``capacity`` tokens and gains ``rate`` tokens per second."""

    def __init__(self, rate: float, capacity: int, clock: Callable[[], float] = time.monotonic):
        if rate <= 0 or capacity <= 0:
            raise ValueError("rate and capacity must be positive")
        self.rate = rate
        self.capacity = capacity
        self._clock = clock
        self._tokens = float(capacity)
        self._last = clock()

    def _refill(self) -> None:
        now = self._clock()
        elapsed = now - self._last
        if elapsed > 0:
            self._tokens = self._tokens + elapsed * self.rate
            self._last = now

    def available(self) -> float:
        self._refill()
        return self._tokens

    def try_acquire(self, tokens: int = 1) -> bool:
        """Take ``tokens`` if the bucket holds that many; never blocks."""
        if tokens > self.capacity:
            raise ValueError(f"cannot take {tokens} tokens from a bucket of {self.capacity}")
        self._refill()
        if self._tokens >= tokens:
            self._tokens -= tokens
            return True
        return False
