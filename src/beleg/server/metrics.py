"""Prometheus text exposition (format 0.0.4), written by hand: counters and histograms."""

from __future__ import annotations

import threading
from collections import defaultdict

# Request latency buckets in seconds: search is meant to take ~25 ms, an LLM answer seconds.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    """Request counts, latency histograms, errors and cache hits, per route template."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[tuple[str, str, int], int] = defaultdict(int)
        self._errors: dict[tuple[str, str], int] = defaultdict(int)
        self._hist: dict[tuple[str, str], list[float]] = {}
        self._sum: dict[tuple[str, str], float] = defaultdict(float)
        self._cache: dict[tuple[str, str], int] = defaultdict(int)

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        with self._lock:
            self._requests[(method, route, status)] += 1
            counts = self._hist.setdefault((method, route), [0.0] * (len(BUCKETS) + 1))
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    counts[i] += 1
            counts[-1] += 1  # +Inf
            self._sum[(method, route)] += seconds

    def error(self, route: str, kind: str) -> None:
        with self._lock:
            self._errors[(route, kind)] += 1

    def cache(self, cache: str, hit: bool) -> None:
        with self._lock:
            self._cache[(cache, "hit" if hit else "miss")] += 1

    def render(self) -> str:
        with self._lock:
            lines = ["# HELP beleg_http_requests_total HTTP requests by route and status.",
                     "# TYPE beleg_http_requests_total counter"]
            lines += [f'beleg_http_requests_total{{method="{m}",route="{_esc(r)}",status="{s}"}} {n}'
                      for (m, r, s), n in sorted(self._requests.items())]
            lines += ["# HELP beleg_http_request_duration_seconds Request latency.",
                      "# TYPE beleg_http_request_duration_seconds histogram"]
            for (m, r), counts in sorted(self._hist.items()):
                labels = f'method="{m}",route="{_esc(r)}"'
                for bound, n in zip((*(f"{b:g}" for b in BUCKETS), "+Inf"), counts):
                    lines.append(f'beleg_http_request_duration_seconds_bucket{{{labels},le="{bound}"}} {n:g}')
                lines.append(f"beleg_http_request_duration_seconds_sum{{{labels}}} {self._sum[(m, r)]:.6f}")
                lines.append(f"beleg_http_request_duration_seconds_count{{{labels}}} {counts[-1]:g}")
            lines += ["# HELP beleg_http_errors_total Error responses by route and error type.",
                      "# TYPE beleg_http_errors_total counter"]
            lines += [f'beleg_http_errors_total{{route="{_esc(r)}",type="{_esc(k)}"}} {n}'
                      for (r, k), n in sorted(self._errors.items())]
            lines += ["# HELP beleg_cache_requests_total Cache look-ups by cache and result.",
                      "# TYPE beleg_cache_requests_total counter"]
            lines += [f'beleg_cache_requests_total{{cache="{_esc(c)}",result="{res}"}} {n}'
                      for (c, res), n in sorted(self._cache.items())]
        return "\n".join(lines) + "\n"


def _esc(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
