"""The names of the retrieval strategies (``beleg search --strategy NAME``) and where each lives.

Each row: name → (module, class, description) in one :class:`~beleg.registry.Registry`;
modules are imported on first use, and a package adds a strategy through the
``beleg.strategies`` entry-point group or ``STRATEGIES.register``. The table sits outside
:mod:`beleg.strategies` so that a command line can list and check names, and a plain
search can run, without importing any strategy code (start-up time of every search).
"""

from __future__ import annotations

from beleg.registry import Registry

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
    "auto-llm": ("beleg.strategies.auto", "LLMRoutedStrategy", "the routes of auto, chosen by the LLM (one call)"),
    "graph": ("beleg.strategies.graph", "GraphStrategy",
              "entity graph from metadata and identifiers; bounded breadth-first traversal to evidence"),
    "agent": ("beleg.strategies.agent", "AgentStrategy",
              "an LLM agent with semantic_search, keyword_search and read_document tools, call-limited"),
}, noun="strategy")

__all__ = ["STRATEGIES"]
