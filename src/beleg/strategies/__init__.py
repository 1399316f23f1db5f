"""Retrieval strategies, looked up by name (``beleg search --strategy NAME``).

Each row: name → (module, class, description) in one :class:`~beleg.registry.Registry`;
modules are imported on first use, and a package adds a strategy through the
``beleg.strategies`` entry-point group or ``STRATEGIES.register``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from beleg.errors import NeedsLLMError
from beleg.registry import Registry
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

if TYPE_CHECKING:
    from beleg.kb import KnowledgeBase

STRATEGIES = Registry("strategies", {
    "hybrid": ("beleg.strategies.plain", "PlainSearch", "one hybrid search with the question as asked"),
    "rewrite": ("beleg.strategies.rewrite", "RewriteStrategy",
                "rewrite the question into a search query (conversation-aware); keeps constraints"),
    "multi-query": ("beleg.strategies.multi_query", "MultiQueryStrategy",
                    "several phrasings (LLM) or pseudo-relevance-feedback expansions (offline), fused with RRF"),
    "hyde": ("beleg.strategies.hyde", "HydeStrategy", "search with a hypothetical answer written by an LLM"),
    "decompose": ("beleg.strategies.decompose", "DecomposeStrategy",
                  "split into independent sub-questions, searched separately and kept apart"),
    "multi-hop": ("beleg.strategies.multi_hop", "MultiHopStrategy",
                  "facts found in hop 1 build the query of hop 2, with a version consistency check"),
    "iterative": ("beleg.strategies.iterative", "IterativeStrategy",
                  "search for what the evidence does not cover yet, until covered or out of budget"),
    "auto": ("beleg.strategies.auto", "AutoStrategy", "route: no retrieval / single / decomposed / iterative"),
    "graph": ("beleg.strategies.graph", "GraphStrategy",
              "entity graph from metadata and identifiers; bounded breadth-first traversal to evidence"),
    "agent": ("beleg.strategies.agent", "AgentStrategy",
              "an LLM agent with semantic_search, keyword_search and read_document tools, call-limited"),
}, noun="strategy")


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
