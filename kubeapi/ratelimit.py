"""Client-side rate limiting: a token bucket, as client-go's ``--kube-client-qps/-burst``.

Every request the adapter makes (LISTs, watches, writes) takes one token; ``burst``
tokens may be spent at once, then ``qps`` per second are refilled. It reads a
monotonic clock: this paces I/O, it never decides anything.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["TokenBucket"]


class TokenBucket:
    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], object] = time.sleep) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"qps must be > 0 and burst >= 1 (got qps={qps}, burst={burst})")
        self.qps, self.burst = qps, burst
        self._clock, self._sleep = clock, sleep
        self._tokens = float(burst)
        self._last = clock()
        self._lock = threading.Lock()
        #: Seconds callers waited for a token, in total (a throttling signal for metrics).
        self.waited = 0.0

    def _reserve(self) -> float:
        """Take a token (possibly going into debt); the seconds to wait before using it."""
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            wait = -self._tokens / self.qps if self._tokens < 0 else 0.0
            self.waited += wait
            return wait

    def acquire(self) -> None:
        wait = self._reserve()
        if wait > 0:
            self._sleep(wait)
