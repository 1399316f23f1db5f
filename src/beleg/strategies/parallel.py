"""Run a strategy's independent sub-searches in parallel threads, deterministically.

Sub-questions of ``decompose`` and phrasings of ``multi-query`` do not depend on one
another, so they are searched at once (the catalog gives every thread its own SQLite
connection, and numpy releases the GIL in the embedder's and the legs' matrix products).
The results, the trace's rounds, queries and steps, and ``ctx.fetched`` come out in the
order the searches were asked for, exactly as if they had run one after another, so a
trace and a fused result never depend on which thread finished first.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from beleg.index.filters import combine
from beleg.strategies.base import BudgetExhausted, Step, StrategyContext
from beleg.types import Hit

#: Threads at most; more buys nothing on a few cores and multiplies embedder memory traffic.
MAX_WORKERS = 4


@dataclass(frozen=True, slots=True)
class SubSearch:
    query: str
    step: str
    mode: str | None = None


def search_all(ctx: StrategyContext, searches: Sequence[SubSearch]) -> list[list[Hit]]:
    """One hit list per search, in order. Raises :class:`BudgetExhausted` like ``ctx.search``
    when the retrieval budget cannot cover all of them (callers trim to ``ctx.rounds_left`` first)."""
    if not searches:
        return []
    ctx._check_time()
    if len(searches) > ctx.rounds_left:
        raise BudgetExhausted(f"retrieval budget of {ctx.budget.max_rounds} rounds spent")
    self_query = ctx.inferred if ctx.inferred is not None else False

    def one(s: SubSearch) -> tuple[list[Hit], float]:
        t0 = time.perf_counter()
        hits = ctx.kb.search(s.query, mode=s.mode or ctx.mode, k=ctx.k, filters=combine(ctx.filter, None),
                             principal=ctx.principal, self_query=self_query, **ctx.search_options)
        return hits, 1000 * (time.perf_counter() - t0)

    if len(searches) == 1:
        results = [one(searches[0])]
    else:
        with ThreadPoolExecutor(max_workers=min(MAX_WORKERS, len(searches))) as pool:
            results = list(pool.map(one, searches))  # map keeps the input order
    for s, (hits, ms) in zip(searches, results):
        ctx.trace.rounds += 1
        ctx.trace.queries.append(s.query)
        ctx.trace.steps.append(Step(s.step, s.query, [h.chunk_id for h in hits], ms))
        ctx.fetched.append(hits)
    return [hits for hits, _ in results]
