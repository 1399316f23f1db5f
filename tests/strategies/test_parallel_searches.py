"""Sub-searches of decompose / multi-query run in parallel threads, with results in asked order."""

from __future__ import annotations

import threading
import time

import pytest

from beleg.strategies.base import Budget, BudgetExhausted, StrategyContext
from beleg.strategies.parallel import SubSearch, search_all
from beleg.types import Hit


class SlowKB:
    """Answers each query after a delay that makes later queries finish first."""

    def __init__(self) -> None:
        self.threads: set[int] = set()
        self.running = 0
        self.most_at_once = 0
        self.lock = threading.Lock()

    def search(self, query: str, **kwargs) -> list[Hit]:
        with self.lock:
            self.threads.add(threading.get_ident())
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        time.sleep(0.05 * (4 - int(query[-1])))
        with self.lock:
            self.running -= 1
        return [Hit(f"c-{query}", "d", "s", "t", (), 0, 1, 1.0, "x", {"mode": kwargs.get("mode")})]


def test_results_and_trace_keep_the_asked_order_although_threads_finish_in_reverse() -> None:
    kb = SlowKB()
    ctx = StrategyContext(kb, self_query=False, k=3)  # type: ignore[arg-type]
    subs = [SubSearch(f"q{i}", f"sub-{i}", mode="bm25" if i == 3 else None) for i in range(4)]
    results = search_all(ctx, subs)
    assert [r[0].chunk_id for r in results] == ["c-q0", "c-q1", "c-q2", "c-q3"]
    assert ctx.trace.queries == ["q0", "q1", "q2", "q3"] and ctx.trace.rounds == 4
    assert [s.name for s in ctx.trace.steps] == ["sub-0", "sub-1", "sub-2", "sub-3"]
    assert results[3][0].metadata["mode"] == "bm25" and results[0][0].metadata["mode"] == "hybrid"
    assert kb.most_at_once > 1 and len(kb.threads) > 1  # really concurrent


def test_the_round_budget_is_checked_before_any_search() -> None:
    kb = SlowKB()
    ctx = StrategyContext(kb, self_query=False, budget=Budget(max_rounds=2))  # type: ignore[arg-type]
    with pytest.raises(BudgetExhausted):
        search_all(ctx, [SubSearch(f"q{i}", "s") for i in range(3)])
    assert kb.threads == set() and ctx.trace.rounds == 0
