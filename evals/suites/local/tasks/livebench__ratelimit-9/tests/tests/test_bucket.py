import pytest

from ratelimit import ManualClock, TokenBucket


def test_starts_full():
    bucket = TokenBucket(rate=1, capacity=3, clock=ManualClock())
    assert [bucket.try_acquire() for _ in range(4)] == [True, True, True, False]


def test_refills_over_time():
    clock = ManualClock()
    bucket = TokenBucket(rate=2, capacity=2, clock=clock)
    assert bucket.try_acquire(2)
    assert not bucket.try_acquire()
    clock.advance(1)
    assert bucket.try_acquire(2)


def test_request_larger_than_capacity():
    with pytest.raises(ValueError):
        TokenBucket(rate=1, capacity=2, clock=ManualClock()).try_acquire(3)


def test_manual_clock_refuses_to_go_back():
    with pytest.raises(ValueError):
        ManualClock().advance(-1)


def test_capacity_caps_stored_tokens_after_idle():
    clock = ManualClock()
    bucket = TokenBucket(rate=10, capacity=5, clock=clock)
    clock.advance(60)
    assert bucket.available() == 5
    assert [bucket.try_acquire() for _ in range(6)] == [True] * 5 + [False]


def test_partial_use_then_idle_refills_to_capacity_only():
    clock = ManualClock()
    bucket = TokenBucket(rate=1, capacity=4, clock=clock)
    assert bucket.try_acquire(3)
    clock.advance(100)
    assert bucket.available() == 4
