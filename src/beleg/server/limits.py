"""Per-caller rate limits: a token bucket per authenticated subject."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

from beleg.errors import ConfigError


class RateLimiter:
    """``rate`` requests per second on average, bursts of up to ``burst``, per subject.

    Buckets are kept for the most recently seen ``max_subjects`` callers, so a flood of
    distinct (valid) identities cannot grow memory without bound.
    """

    def __init__(self, rate: float, burst: int, *, max_subjects: int = 10_000) -> None:
        if rate <= 0 or burst < 1:
            raise ConfigError(f"the rate limit needs rate > 0 and burst >= 1, got rate={rate}, burst={burst}")
        self.rate = rate
        self.burst = burst
        self.max_subjects = max_subjects
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # subject → (tokens, last time)
        self._lock = threading.Lock()

    def take(self, subject: str, now: float | None = None) -> float:
        """Spend one token; 0.0 when allowed, else the seconds until a token is free."""
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, last = self._buckets.pop(subject, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - last) * self.rate)
            wait = 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate
            if wait == 0.0:
                tokens -= 1.0
            self._buckets[subject] = (tokens, now)
            while len(self._buckets) > self.max_subjects:
                self._buckets.popitem(last=False)
            return wait
