"""SIGTERM and SIGHUP (``timeout``, a closed terminal, CI cancelling a job) stop a run the way
Ctrl-C does: the command is killed, the container removed, the session ends ``interrupted`` and
can be resumed. Without this, Python's default action kills the process with no ``end`` event."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


@contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    """Within the block (main thread only), the first SIGTERM or SIGHUP raises KeyboardInterrupt;
    later ones are ignored, so the run's own cleanup finishes. The previous handlers come back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def interrupt(signum, frame) -> None:
        if not received:
            received.append(signum)
            raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")

    previous = {sig: signal.signal(sig, interrupt) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
