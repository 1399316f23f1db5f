"""Retrieval strategies, looked up by name (``beleg search --strategy NAME``).

The names live in :data:`beleg.strategy_registry.STRATEGIES` (re-exported here); modules
are imported on first use, and a package adds a strategy through the ``beleg.strategies``
entry-point group or ``STRATEGIES.register``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from beleg.errors import NeedsLLMError
from beleg.strategies.base import (
    Budget,
    BudgetExhausted,
    Step,
    Strategy,
    StrategyContext,
    StrategyResult,
    Trace,
    fuse,
)
from beleg.strategy_registry import STRATEGIES

if TYPE_CHECKING:
    from beleg.kb import KnowledgeBase


def load_strategy(name: str) -> Strategy:
    strategy: Strategy = STRATEGIES.load(name)()
    return strategy


def offline_strategies() -> list[str]:
    """Names of the strategies that have an honest method without an LLM."""
    out = []
    for name in STRATEGIES:
        try:
            if load_strategy(name).offline:
                out.append(name)
        except ImportError:
            continue
    return out


def run_strategy(kb: KnowledgeBase, name: str, question: str, **context: Any) -> StrategyResult:
    """Run a strategy; a spent budget ends the run with the hits fetched so far, fused, and a note."""
    strategy = load_strategy(name)
    if not strategy.offline and context.get("llm") is None:
        raise NeedsLLMError(f"strategy {name!r} has no offline method: it needs an LLM (--llm PROVIDER:MODEL); "
                            f"offline strategies: {', '.join(offline_strategies())}")
    ctx = StrategyContext(kb, strategy=strategy.name, question=question, **context)
    try:
        result = strategy.run(question, ctx)
    except BudgetExhausted as exc:
        ctx.note(f"stopped: {exc}")
        if not any(ctx.fetched):
            ctx.fallback_search(str(exc))
        result = StrategyResult(fuse(ctx.fetched, ctx.k), ctx.trace)
    result.trace.latency_ms = 1000 * ctx.elapsed()
    return result


__all__ = ["Budget", "BudgetExhausted", "STRATEGIES", "Step", "Strategy", "StrategyContext", "StrategyResult",
           "Trace", "fuse", "load_strategy", "run_strategy"]
