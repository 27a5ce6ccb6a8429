"""Token-bucket rate limiting."""

from ratelimit.bucket import TokenBucket
from ratelimit.clock import ManualClock

__all__ = ["ManualClock", "TokenBucket"]
